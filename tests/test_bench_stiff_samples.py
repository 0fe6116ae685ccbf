"""The stiff-samples sweep (logt.bench.stiff_samples): seeded draws, references by first-order optimality, the
previous rule's arm, and the summary's counts."""
import math

import numpy as np
import pytest

import logt
from logt.bench import stiff_samples as S
from logt.domains import Box, EuclideanBall


@pytest.mark.parametrize("i", range(5))
def test_draws_are_seeded_and_of_their_kind(i):
    a = S.stiff_problem(i, np.random.default_rng(3))
    b = S.stiff_problem(i, np.random.default_rng(3))
    assert a["kind"] == S.STIFF_KINDS[i] and a["desc"] == b["desc"] and a["T"] == b["T"]
    w = np.full(a["x0"].size, 0.01)
    np.testing.assert_array_equal(a["oracle"].grad(w), b["oracle"].grad(w))
    assert 3e3 <= a["T"] <= 1e5 and a["lam"] > 0 and a["L_sample"] >= a["oracle"].L - a["lam"]


@pytest.mark.parametrize("domain", ["box", "ball"])
def test_reference_is_a_fixed_point_of_the_projected_gradient(domain):
    from logt.oracles import LinearModel
    g = np.random.default_rng(5)
    A = g.normal(size=(300, 8))
    b = A @ g.normal(size=8) * 2 + g.normal(size=300)
    orc = LinearModel(A, b, lam=0.05)
    free = S.reference_optimum(orc, None, 8)
    np.testing.assert_allclose(orc.grad(free), 0.0, atol=1e-8)
    dom = Box(-0.3, 0.3, shape=8) if domain == "box" else EuclideanBall(8, 0.5 * float(np.linalg.norm(free)))
    x = S.reference_optimum(orc, dom, 8)
    eta = 1.0 / orc.L
    y = x - eta * orc.grad(x)
    np.testing.assert_allclose(dom.project(y), x, atol=1e-7)       # an active constraint, and optimal on it
    assert not np.allclose(free, x)


def test_previous_rule_caps_the_estimate_and_is_undone_on_exit():
    from logt.methods import convergence as C
    from logt.methods import logt as LG
    from logt.oracles import LinearModel
    g = np.random.default_rng(0)
    A = g.normal(size=(3000, 150))
    orc = LinearModel(A, A @ g.normal(size=150) / 4 + g.normal(size=3000), lam=0.033)
    ball = EuclideanBall(150, 1e6)
    now = logt.minimize(orc, ball, 4000, lam=0.033, rng=0)
    with S.previous_rule():
        assert LG.SAMPLED_STIFF == math.inf and C.START_REL == math.inf and C.NOISE_GROWTH == math.inf
        before = logt.minimize(orc, ball, 4000, lam=0.033, rng=0)
    assert LG.SAMPLED_STIFF == 10.0 and C.START_REL == 1.0 and C.NOISE_GROWTH == 4.0
    assert before.params["L_est"] == pytest.approx(orc.L) and now.params["L_est"] > 10 * orc.L


def test_summary_counts():
    def rec(now, before, sgd, s_now=True, s_before=True):
        return {"now": {"excess": now, "success": s_now}, "before": {"excess": before, "success": s_before},
                "sgd": {"excess": sgd, "success": True}}
    recs = [rec(0.01, 0.5, 0.01), rec(0.02, 2.0, 0.01), rec(0.5, 0.5, 0.01, s_now=False), rec(1e-12, 1e-12, 1e-13)]
    s = S.stiff_summary(recs)
    assert s["before"]["confident_wrong"] == 3 and s["before"]["success_beyond_start"] == 1
    assert s["now"]["confident_wrong"] == 0 and s["now"]["success_false"] == 1
    assert s["now"]["within_3x"] == 3 and s["before"]["within_3x"] == 1        # solved runs compare as equal
