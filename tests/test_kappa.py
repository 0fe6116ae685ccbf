"""The conditioned quadratic oracle (DiagonalQuadratic) and the kappa experiment (python -m logt kappa)."""
import argparse
import os

import numpy as np
import pytest
from scipy.optimize import minimize as sp_minimize

from logt.experiments import kappa
from logt.oracles import DiagonalQuadratic


def test_diagonal_quadratic_gradient_is_unbiased_and_noise_is_uniform():
    rng = np.random.default_rng(0)
    h = np.array([[1.0, 3.0], [3.0, 10.0]])
    a = np.array([[0.5, -1.0], [-1.0, 2.0]])
    o = DiagonalQuadratic(h, a, noise=2.0)
    assert o.symmetric and o.L == 10.0 and o.lam == 1.0 and o.m == 3
    x = np.array([[1.0, 0.25], [0.25, -1.0]])
    exact = h * (x - a)
    np.testing.assert_array_equal(o.grad(x), exact)
    for B in (1, 2, 3, 200_001):
        g = o.mean_grad(x, B, rng)
        assert np.array_equal(g, g.T)
        sd = 2.0 / np.sqrt(3 * B)
        assert np.all(np.abs(g - exact) < 7 * sd + 1e-12)
    samples = np.array([o.mean_grad(x, 1, rng) - exact for _ in range(20000)])
    assert np.all(np.abs(samples) < 2.0)
    assert samples[:, 0, 1].var() == pytest.approx(4.0 / 3, rel=0.05)       # uniform on [-2, 2]
    assert o.value(x) == pytest.approx(0.5 * np.sum(h * (x - a) ** 2))
    v = DiagonalQuadratic(np.array([1.0, 4.0, 9.0]), np.zeros(3), noise=1.0)
    assert not v.symmetric and v.m == 3
    g1 = v.mean_grad(np.zeros(3), 5, np.random.default_rng(4))
    g2 = v.mean_grad(np.zeros(3), 5, np.random.default_rng(4))
    assert np.array_equal(g1, g2) and len(set(g1)) == 3


def _reference_noise_mean(seed, m, B, noise):
    """NumPy re-implementation of the documented stream (pairs of samples per next_uint64, odd tail)."""
    bg = np.random.PCG64(seed)
    as_int = lambda r: r.astype(np.uint32).view(np.int32).astype(np.int64)          # noqa: E731
    raw = bg.random_raw((B // 2) * m).reshape(B // 2, m)
    S = as_int(raw & 0xFFFFFFFF).sum(0) + as_int(raw >> np.uint64(32)).sum(0)
    if B % 2:
        r = bg.random_raw((m + 1) // 2)
        S = S + np.stack([as_int(r & 0xFFFFFFFF), as_int(r >> np.uint64(32))], 1).reshape(-1)[:m]
    return (noise * 2.0 ** -31) * (S.astype(np.float64) * (1.0 / B) + 0.5), bg


@pytest.mark.parametrize("B", [1, 2, 3, 10, 101])
@pytest.mark.parametrize("shape", [(1,), (4,), (7,), (3, 3)])
def test_diagonal_quadratic_matches_the_stream_bit_for_bit(shape, B):
    r = np.random.default_rng(len(shape) * 10 + shape[0])
    h = r.uniform(1.0, 5.0, shape)
    a, x = r.standard_normal(shape), r.standard_normal(shape)
    if len(shape) == 2:
        h, a, x = h + h.T, a + a.T, x + x.T
    o = DiagonalQuadratic(h, a, noise=1.5)
    rng = np.random.default_rng(99)
    out = o.mean_grad(x, B, rng)
    m = shape[0] * (shape[0] + 1) // 2 if len(shape) == 2 else shape[0]
    z, bg = _reference_noise_mean(99, m, B, 1.5)
    ref = h * (x - a)
    if len(shape) == 2:
        Z = np.empty(shape)
        iu = np.triu_indices(shape[0])
        Z[iu] = z
        Z.T[iu] = z
        z = Z
    np.testing.assert_array_equal(out, ref + z.reshape(shape))
    np.testing.assert_array_equal(rng.bit_generator.random_raw(3), bg.random_raw(3))


def test_diagonal_quadratic_validates():
    with pytest.raises(ValueError, match="h must be finite and > 0"):
        DiagonalQuadratic(np.array([1.0, 0.0]), np.zeros(2))
    with pytest.raises(ValueError, match="shape"):
        DiagonalQuadratic(np.ones(2), np.zeros(3))
    with pytest.raises(ValueError, match="symmetric"):
        DiagonalQuadratic(np.array([[1.0, 2.0], [3.0, 1.0]]), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="noise"):
        DiagonalQuadratic(np.ones(2), np.zeros(2), noise=-1.0)


@pytest.mark.parametrize("kap", [1, 100, 10**4])
def test_reference_solution_of_the_ball_problem_matches_scipy(kap):
    oracle, dom = kappa.make_problem("ball", kap)
    assert oracle.L / oracle.lam == pytest.approx(kap)
    x, f = kappa.reference_solution(oracle, dom)
    res = sp_minimize(oracle.value, np.zeros(20), jac=oracle.grad, method="SLSQP",
                      constraints=[{"type": "ineq", "fun": lambda z: 1.0 - z @ z, "jac": lambda z: -2 * z}],
                      options={"ftol": 1e-14, "maxiter": 1000})
    assert f <= res.fun + 1e-9
    assert np.linalg.norm(x) == pytest.approx(1.0)            # the constraint is active


@pytest.mark.parametrize("kap", [1, 1000])
def test_reference_solution_of_the_psd_problem_is_a_fixed_point(kap):
    oracle, dom = kappa.make_problem("psd", kap)
    x, f = kappa.reference_solution(oracle, dom)
    step = dom.project(x - oracle.grad(x) / oracle.L)
    assert np.max(np.abs(step - x)) < 1e-12
    assert np.linalg.matrix_rank(x, tol=1e-8) < 5                 # on the boundary of the cone
    # no feasible perturbation improves F (first-order optimality, sampled)
    rng = np.random.default_rng(0)
    for _ in range(200):
        y = dom.project(x + 0.1 * (lambda a: a + a.T)(rng.standard_normal((5, 5))))
        assert np.vdot(oracle.grad(x), y - x) >= -1e-9


def test_kappa_experiment_tiny(tmp_path):
    recs, summary = kappa.run(T=3000, kappas=(1, 30), domains=("psd", "ball"),
                              rows=("logt_acc", "sgd_suffix", "minibatch_sgd", "frank_wolfe"),
                              repeats=2, max_extend=4, n_jobs=1, progress=False)
    assert {(s["domain"], s["kappa"]) for s in summary} == {(d, k) for d in ("psd", "ball") for k in (1, 30)}
    for s in summary:
        assert s["T"] == 3000
        if s["baseline"]:
            assert s["mean_excess"] >= s["best_excess"]
        if s["row"] == s["best_baseline"]:
            assert s["ratio_to_best"] == 1.0 and s["projections_needed"] == s["n_projections_at_T"]
        if s["row"] == "frank_wolfe":
            assert s["domain"] == "ball" and s["n_projections_at_T"] == 0
    sl = kappa.slopes(summary)
    text = kappa.tables(summary, sl)
    assert "logT-acc" in text and "slope" in text
    args = argparse.Namespace(T=2000, kappas="1,10", domains="ball", methods="logt_acc,sgd_capped",
                              tol=1.0, max_extend=4, repeats=1, seed=0, jobs=1, out=str(tmp_path), quiet=True)
    assert kappa.main(args) == 0
    assert os.path.exists(tmp_path / "kappa_summary.csv")


def test_toy_optional_rows(tmp_path):
    from logt.experiments import toy
    rows = ("logt", "epoch_gd", "sgd", "logt_acc", "minibatch_sgd", "one_projection_sgd", "sgd_suffix")
    recs = toy.run(T_max=2000, T_min=1000, per_decade=1, repeats=2, methods=rows, n_jobs=1, progress=False)
    summary = toy.summarize(recs)
    assert {s["method"] for s in summary} == set(rows)
    T = max(s["T"] for s in summary)
    got = {s["method"]: s for s in summary if s["T"] == T}
    assert got["one_projection_sgd"]["n_projections"] == 1
    assert got["minibatch_sgd"]["n_projections"] == T // int(np.ceil(np.sqrt(T)))
    # fewer than Algorithm 1 with Theorem 1's parameters (logT's row now uses params="auto", itself ~24 here)
    from logt import params as P
    p = P.theorem1(1.0, 1.0)
    assert got["logt_acc"]["n_projections"] < 2 * p.M * P.n_epochs(T, p.M, p.B1)
    assert "logT-acc" in toy.tables(summary)
    # the paper's rows keep their seeds: same results with or without the optional rows
    base = toy.run(T_max=2000, T_min=1000, per_decade=1, repeats=2, n_jobs=1, progress=False)
    for r in base:
        twin = [x for x in recs if (x["method"], x["T"], x["repeat"]) == (r["method"], r["T"], r["repeat"])]
        assert twin[0]["fun"] == r["fun"]
