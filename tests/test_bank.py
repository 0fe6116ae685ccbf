"""The problem bank (logt.bench.bank): reference optima verified independently; quick mode runs without divergence."""
import math

import numpy as np
import pytest

from logt.bench import bank
from logt.oracles import LinearModel


@pytest.mark.parametrize("name", bank.PROBLEM_NAMES)
def test_reference_optimum_is_verified(name):
    p = bank.make_problem(name)
    x, f = p.x_star, p.f_star
    # fixed point of the projected gradient (first-order optimality over the domain)
    assert p.residual(x) <= 1e-8 * (1 + np.linalg.norm(x))
    assert np.allclose(p.project(x), x, atol=1e-12)
    # no feasible point nearby is better (random feasible perturbations)
    rng = np.random.default_rng(0)
    for _ in range(20):
        e = rng.normal(size=x.shape)
        if e.ndim == 2:
            e = 0.5 * (e + e.T)
        y = p.project(x + 1e-3 * e * max(1.0, np.linalg.norm(x)))
        assert p.value(y) >= f - 1e-12 * max(1.0, abs(f))
    if y.ndim == 2:    # PSD cone: KKT, W* PSD, G = grad F(W*) PSD, <W*, G> = 0
        G = p.grad(x)
        assert np.linalg.eigvalsh(x).min() >= -1e-10
        assert np.linalg.eigvalsh(0.5 * (G + G.T)).min() >= -1e-7
        assert abs(np.vdot(x, G)) <= 1e-7 * (1 + np.linalg.norm(x) * np.linalg.norm(G))
    cf = p.closed_form()
    if cf is not None:      # an independent solver / closed form
        xc, fc = cf
        assert abs(fc - f) <= 1e-9 * max(1.0, abs(f))
        assert np.linalg.norm(xc - x) <= 1e-4 * max(1.0, np.linalg.norm(x))


def test_bank_spans_the_issue():
    ps = bank.problems(solve=False)
    kappas = [p.kappa for p in ps]
    assert len(ps) >= 8 and min(kappas) == 1.0 and max(kappas) >= 1e4
    assert {p.where for p in ps} == {"inside", "boundary"}
    assert {type(p.domain).__name__ for p in ps} >= {"PSDCone", "EuclideanBall", "Box"}
    assert any(not p.pass_L_to_auto and getattr(p.oracle, "L", None) is None for p in ps)  # FunctionOracle
    assert {p.lam for p in ps if p.name.startswith("metric")} == {0.1, 0.01, 0.001}


def test_metric_objective_matches_the_learner_reference():
    """The bank's exact pair objective agrees with logt.metric_learning.reference (uniform pairs, b = 1)."""
    from logt.metric_learning.reference import objective, pair_distribution
    X, y = bank.metric_data()
    obj = bank._PairObjective(X, y, 0.01)
    P, Y = pair_distribution(y, "uniform")
    rng = np.random.default_rng(1)
    W = rng.normal(size=(10, 10))
    W = W @ W.T / 10
    ref = objective(X, P, Y, W, 1.0, 0.01, learn_threshold=False)
    assert obj.value(W) == pytest.approx(ref, rel=1e-12)
    # gradient against central differences of the value
    E = rng.normal(size=(10, 10))
    E = 0.5 * (E + E.T)
    h = 1e-6
    fd = (obj.value(W + h * E) - obj.value(W - h * E)) / (2 * h)
    assert np.vdot(obj.grad(W), E) == pytest.approx(fd, rel=1e-6)


def test_linear_model_oracle_against_numpy():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(50, 4))
    for loss, b in (("squared", rng.normal(size=50)), ("logistic", np.sign(rng.normal(size=50)))):
        o = LinearModel(A, b, loss, 0.1)
        x = rng.normal(size=4)
        # one row: the stochastic gradient is the exact one
        o1 = LinearModel(A[:1], b[:1], loss, 0.1)
        g1 = o1.mean_grad(x, 7, np.random.default_rng(0))
        assert np.allclose(g1, o1.grad(x), rtol=1e-13, atol=1e-13)
        u = A[0] @ x
        dl = (u - b[0]) if loss == "squared" else -b[0] / (1 + math.exp(b[0] * u))
        assert np.allclose(g1, dl * A[0] + 0.1 * x, rtol=1e-12)
        # unbiased: the mean of many draws approaches the full gradient; same seed, same draw
        g = o.mean_grad(x, 400_000, np.random.default_rng(1))
        assert np.linalg.norm(g - o.grad(x)) <= 0.02 * (1 + np.linalg.norm(o.grad(x)))
        assert np.array_equal(g, o.mean_grad(x, 400_000, np.random.default_rng(1)))
        # gradient and Hessian against differences of value / gradient
        e = np.eye(4)
        fd = np.array([(o.value(x + 1e-6 * v) - o.value(x - 1e-6 * v)) / 2e-6 for v in e])
        assert np.allclose(fd, o.grad(x), rtol=1e-6, atol=1e-8)
        Hfd = np.array([(o.grad(x + 1e-6 * v) - o.grad(x - 1e-6 * v)) / 2e-6 for v in e])
        assert np.allclose(Hfd, o.hessian(x), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="labels"):
        LinearModel(A, np.zeros(50), "logistic", 0.1)
    with pytest.raises(ValueError, match="NaN"):
        LinearModel(np.full((2, 2), np.nan), np.zeros(2))
    with pytest.raises(ValueError, match="rows"):
        LinearModel(A, np.zeros(3))


def test_quick_bank_no_method_diverges():
    recs = bank.run_bank(bank.PROBLEM_NAMES, Ts=(20_000,), seeds=range(1))
    for r in recs:
        assert r["error"] is None, r
        if r["skipped"] is None:
            assert math.isfinite(r["excess"]) and r["excess"] >= -1e-9, r
            assert r["n_calls"] <= 20_000
    rows = bank.summarize(recs)
    assert len(rows) == len(bank.PROBLEM_NAMES)
    table = bank.bank_table(rows)
    assert table.count("| default |") == len(bank.PROBLEM_NAMES)
    assert all(r["chosen"] in ("logt", "logt_acc") for r in recs if r["method"] == "default")


def test_quick_section_renders():
    text = bank.named_section(quick=True, log=lambda m: None)
    assert "### Named problems" in text and "| default |" in text and "| toy |" in text
