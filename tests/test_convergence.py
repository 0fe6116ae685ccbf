"""The auto rules' end-of-run check (logt.methods.convergence): the gradient mapping against its noise level."""
import numpy as np
import pytest

import logt
from logt.domains import Box, PSDCone
from logt.methods import convergence as C
from logt.oracles import PSDQuadratic


def _segment(rng, m, d, sd, mean=0.0):
    """The check's accumulators over a segment of m batch gradients with per-batch noise sd per entry."""
    st = C.new_state((d,))
    prev = None
    for _ in range(m):
        g = mean + sd * rng.standard_normal(d)
        C.add_gradient(st, np.zeros(d), g)
        if prev is not None:
            C.add_pair(st, g, prev)
        prev = g
    return st


@pytest.mark.parametrize("d", [1, 5, 50])
def test_pure_noise_gives_R_near_one_and_rarely_fails(d):
    rng = np.random.default_rng(0)
    Rs = []
    for _ in range(400):
        st = _segment(rng, 20, d, 0.3)
        G = st["chk_gsum"] / st["chk_m"]          # the mapping in the interior is the mean gradient
        Rs.append(C.mapping_verdict(G, st, eta=1.0, where="t", solved=0.0)["R"])
    Rs = np.array(Rs)
    # R = ||g_bar||^2 / (estimated noise / m) is F(d, 19 d)-distributed: mean 19 d / (19 d - 2), sd of the
    # mean of 400 draws below 0.09
    mean = 19 * d / (19 * d - 2)
    assert abs(Rs.mean() - mean) < 0.4
    assert np.mean(Rs > C.R_MAX) < 0.01


def test_a_gradient_well_above_the_noise_fails():
    rng = np.random.default_rng(1)
    st = _segment(rng, 20, 5, 0.3, mean=0.5)       # ||grad|| = 1.1 vs noise sqrt(5 * 0.09 / 20) = 0.15
    G = st["chk_gsum"] / st["chk_m"]
    v = C.mapping_verdict(G, st, eta=1.0, where="t", solved=0.0)
    assert not v["ok"] and v["R"] > C.R_MAX and v["noise_norm"] == pytest.approx(0.15, rel=0.3)


def test_noise_sources_and_the_unchecked_case():
    st = C.new_state((3,))
    C.add_gradient(st, np.zeros(3), np.ones(3))
    G = np.full(3, 0.1)
    assert C.mapping_verdict(G, st, eta=1.0, where="t", solved=0.0)["R"] is None          # no noise estimate
    v = C.mapping_verdict(G, st, eta=1.0, where="t", solved=0.0, batch_noise=0.03)          # sigma2 / B from x0
    assert v["R"] == pytest.approx(0.03 / 0.03) and v["ok"]
    v = C.mapping_verdict(G, st, eta=1.0, where="t", solved=0.0, batch_noise=0.03, shift=0.5)
    assert v["R"] == pytest.approx((np.sqrt(0.03) + 0.5) ** 2 / 0.03)
    st2 = C.new_state((3,))                                    # noise-free pairs: only "solved" passes
    for _ in range(5):
        C.add_gradient(st2, np.zeros(3), np.ones(3))
        C.add_pair(st2, np.ones(3), np.ones(3))
    solved = C.solved_norm(2.0, 0.01, 1.0)
    assert solved == pytest.approx(np.sqrt(1e-9 * 0.01) * 2.0)
    assert C.mapping_verdict(np.full(3, 0.5 * solved / np.sqrt(3)), st2, eta=1.0, where="t", solved=solved)["ok"]
    assert not C.mapping_verdict(np.full(3, 2 * solved / np.sqrt(3)), st2, eta=1.0, where="t", solved=solved)["ok"]
    # solved passes whatever the noise says: an excess below 1e-9 of the start's (curvature >= lam = 0.01,
    # start excess >= ||g0||^2 / (2 L))
    v = C.mapping_verdict(np.full(3, 0.5 * solved / np.sqrt(3)), st, eta=1.0, where="t", solved=solved,
                          batch_noise=1e-30)
    assert v["R"] > C.R_MAX and v["ok"]


def test_logt_epoch_mean_is_a_projected_gradient_step_from_the_mean_point():
    """The identity the free check rests on: for a quadratic, the epoch's projected mean of
    y_t = w_t - eta g(w_t) is Pi(w_bar - eta grad F(w_bar)), so (w_bar - Pi(mean y)) / eta = G_eta(w_bar)."""
    rng = np.random.default_rng(3)
    H = np.diag([3.0, 1.0, 0.2])
    a = np.array([2.0, -3.0, 0.5])
    W = rng.normal(size=(7, 3))
    eta = 0.2
    y = W - eta * (W - a) @ H
    proj = lambda v: np.clip(v, -1.0, 1.0)             # noqa: E731
    wbar = W.mean(axis=0)
    G_free = (wbar - proj(y.mean(axis=0))) / eta
    G_map = (wbar - proj(wbar - eta * H @ (wbar - a))) / eta
    np.testing.assert_allclose(G_free, G_map, rtol=1e-13, atol=1e-13)


def test_converged_runs_pass_and_report_the_check():
    for method in ("logt", "logt_acc"):
        r = logt.minimize(PSDQuadratic(np.zeros((5, 5))), PSDCone(5), 100_000, method=method, rng=2)
        chk = r.params["convergence"]["check"]
        assert r.success and chk["ok"] and chk["R"] < C.R_MAX and chk["noise_norm"] > 0


def test_theorem_rules_are_not_checked():
    r = logt.minimize(PSDQuadratic(np.zeros((3, 3))), Box(-1, 1, shape=(3, 3)), 20_000, method="logt",
                      options={"params": "theorem1"}, rng=0)
    assert "convergence" not in r.params and r.success
