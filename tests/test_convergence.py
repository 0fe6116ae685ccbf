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


# ---- where the noise grows with the error: the start comparison and the progress test -------------------------

def test_an_end_mapping_above_the_start_gradient_fails_whatever_R():
    rng = np.random.default_rng(4)
    st = _segment(rng, 20, 5, 3.0, mean=1.0)         # ||G|| ~ 2.2, noise ~ 1.5: R ~ 2, the check alone passes
    G = st["chk_gsum"] / st["chk_m"]
    g = float(np.linalg.norm(G))
    assert C.mapping_verdict(G, st, eta=1.0, where="t", solved=0.0)["ok"]
    v = C.mapping_verdict(G, st, eta=1.0, where="t", solved=0.0, start_norm=0.5 * g)
    assert v["R"] <= C.R_MAX and v["above_start"] and not v["ok"]
    v = C.mapping_verdict(G, st, eta=1.0, where="t", solved=0.0, start_norm=2.0 * g)
    assert not v["above_start"] and v["ok"]
    assert "above the largest mean gradient drawn at x0" in C.above_start_cause(
        C.mapping_verdict(G, st, eta=1.0, where="t", solved=0.0, start_norm=0.5 * g))
    # without a noise estimate the comparison still holds; every gradient at x0 exactly 0 says nothing of
    # where the optimum is (an optimal start, or samples that carry no gradient: the blind estimate's case)
    st1 = C.new_state((5,))
    C.add_gradient(st1, np.zeros(5), np.ones(5))
    v = C.mapping_verdict(np.ones(5), st1, eta=1.0, where="t", solved=0.0, start_norm=1.0)
    assert v["R"] is None and v["above_start"] and not v["ok"]
    v = C.mapping_verdict(np.ones(5), st1, eta=1.0, where="t", solved=0.0, start_norm=0.0)
    assert not v["above_start"] and v["ok"]


def test_noise_growth_is_the_segment_batch_noise_over_the_start():
    rng = np.random.default_rng(5)
    st = _segment(rng, 400, 20, 2.0)                 # per-batch noise 20 * 4 = 80 (pairs of independent draws)
    G = st["chk_gsum"] / st["chk_m"]
    v = C.mapping_verdict(G, st, eta=1.0, where="t", solved=0.0, batch_noise=8.0)
    assert v["noise_growth"] == pytest.approx(10.0, rel=0.1)
    assert C.mapping_verdict(G, st, eta=1.0, where="t", solved=0.0, batch_noise=0.0)["noise_growth"] is None
    assert C.needs_progress_test({"convergence": {"ok": True, "check": v}})
    v = C.mapping_verdict(G, st, eta=1.0, where="t", solved=0.0, batch_noise=40.0)      # 2x: no test
    assert not C.needs_progress_test({"convergence": {"ok": True, "check": v}})
    few = _segment(rng, C.MIN_PAIRS, 20, 2.0)        # fewer pairs than MIN_PAIRS: the start's noise is used
    assert C.mapping_verdict(few["chk_gsum"] / few["chk_m"], few, eta=1.0, where="t", solved=0.0,
                             batch_noise=8.0)["noise_growth"] is None


class _QuadRun:
    """The part of logt._run.Run that progress_test uses, on F(x) = 0.5 (x - c)' H (x - c) with gradient noise
    sd per entry drawn from the run's generator."""

    def __init__(self, sd, value=True, T=10_000):
        self.H, self.c = np.diag([4.0, 1.0, 0.1]), np.array([1.0, -2.0, 3.0])
        self.x0, self.T, self.shape, self.sd = np.zeros(3), T, (3,), sd
        self.rng = np.random.default_rng(8)
        self.n_calls = 0
        self.value = self._value if value else (lambda x: None)

    def _value(self, x):
        return 0.5 * float((x - self.c) @ self.H @ (x - self.c))

    def grad(self, w, B, out, phase=None):
        out[:] = self.H @ (w - self.c) + self.sd * self.rng.standard_normal((B, 3)).mean(axis=0)
        self.n_calls += B
        return out


def test_progress_test_is_exact_for_a_quadratic_and_leaves_the_stream_as_it_was():
    x = np.array([3.0, 1.0, -4.0])
    run = _QuadRun(sd=0.0, value=False)
    exact = run._value(x) - run._value(run.x0)
    state = run.rng.bit_generator.state
    t = C.progress_test(run, x)                      # the two-point Gauss rule: exact along a quadratic
    assert t["delta"] == pytest.approx(exact, rel=1e-12) and t["se"] == pytest.approx(0.0, abs=1e-9)
    assert run.rng.bit_generator.state == state and run.n_calls == t["samples"] > 0
    assert t["samples"] <= C.PROGRESS_FRAC * run.T and not t["exact"]
    assert t["worse"] == (exact > 0) and t["better"] == (exact < 0)
    # with the oracle's value: the exact difference, no draw
    run = _QuadRun(sd=0.0, value=True)
    t = C.progress_test(run, x, run._value(x))
    assert t["exact"] and t["delta"] == exact and run.n_calls == 0
    # noisy: the estimate's standard error covers the truth
    run = _QuadRun(sd=5.0, value=False)
    t = C.progress_test(run, x)
    assert abs(t["delta"] - exact) < 4 * t["se"] and t["se"] > 0


def _ridge(inst, n=3000, d=150, lam=0.033):
    """Ridge regression whose single samples are ~d times stiffer than F (Gaussian rows): the probe's case."""
    from logt.oracles import LinearModel
    rng = np.random.default_rng(inst)
    A = rng.normal(size=(n, d))
    b = A @ (rng.normal(size=d) / np.sqrt(d) * 3) + rng.normal(size=n)
    xs = np.linalg.solve(A.T @ A / n + lam * np.eye(d), A.T @ b / n)
    orc = LinearModel(A, b, lam=lam)
    return orc, orc.value(xs), orc.value(np.zeros(d)) - orc.value(xs), lam


@pytest.mark.parametrize("inst", range(3))
def test_stiff_single_samples_no_confident_wrong_answer(inst):
    """Before: T = 4,000 returned success=True 34-89x further from the optimum than the start, with the
    estimate capped at the given L (F's smoothness, 1/50 of a single row's); the check's R stayed O(1)."""
    from logt.domains import EuclideanBall
    orc, f_star, gap0, lam = _ridge(inst)
    ball = EuclideanBall(150, 1e6)
    r = logt.minimize(orc, ball, 4000, lam=lam, rng=0)
    assert r.fun - f_star < 0.05 * gap0                        # the steps follow the single samples' curvature
    assert r.params["L_est"] > 4 * orc.L
    assert not (r.success and r.fun - f_star > 0.5 * gap0)
    r = logt.minimize(orc, ball, 20_000, lam=lam, rng=0)
    assert r.success and r.fun - f_star < 0.02 * gap0


def test_sparse_rows_whose_sampled_gradients_were_all_zero_use_the_given_L():
    """0/1 features at 10% density on 2 columns: 81% of the rows are 0, and the curvature estimate's few
    samples at x0 can all be 0 (a 'blind' estimate): before, L_est = lam, a step of 0.75 / lam and
    success=True 1e11x further from the optimum than the start."""
    from logt.domains import EuclideanBall
    from logt.oracles import LinearModel
    rng = np.random.default_rng(0)
    n, lam = 20_000, 1e-5
    A = (rng.random((n, 2)) < 0.1).astype(float)
    b = A @ (rng.normal(size=2) * 2) + rng.normal(size=n)
    orc = LinearModel(A, b, lam=lam)
    xs = np.linalg.solve(A.T @ A / n + lam * np.eye(2), A.T @ b / n)
    gap0 = orc.value(np.zeros(2)) - orc.value(xs)
    r = logt.minimize(orc, EuclideanBall(2, 1e6), 1000, lam=lam, rng=0)
    assert r.params["L_est"] == pytest.approx(orc.L)
    assert r.fun - orc.value(xs) < 0.1 * gap0
    assert not (r.success and r.fun - orc.value(xs) > gap0)


def test_a_blind_curvature_estimate_without_L_is_unverified():
    """A gradient carried by samples of probability 1e-3: every sample of the estimate at x0 is 0, so nothing
    sets the step; the run must not claim success."""
    from logt.domains import EuclideanBall
    from logt.oracles import FunctionOracle
    h, c = np.array([1.0, 0.1]), np.array([1.0, -2.0])

    def g(w, rng):
        return h * (w - c) / 1e-3 if rng.random() < 1e-3 else np.zeros(2)

    for seed in (1, 2):
        with pytest.warns(logt.ConvergenceWarning):
            r = logt.minimize(FunctionOracle(g, 2), EuclideanBall(2, 100.0), 2000, lam=0.1, rng=seed)
        assert not r.success and "every gradient drawn for the curvature estimate at x0" in r.message
        assert "pass L" in r.params["rescue"]


def test_epochs_whose_step_was_cut_report_their_realized_contraction():
    """The structural verdict of logT's auto rule with the epochs that ran: a step cut 10x along the run (the
    probe's ridge on 1,000 features: 8 epochs at M eta lam = 0.095 where 1.01 was planned) leaves a worst-case
    bias above BIAS_RATIO_MAX times the noise; as planned it does not."""
    from logt.methods import logt as L
    from logt.methods.auto import BIAS_RATIO_MAX
    lam, M = 0.1, 37
    params = {"noise_sigma2": 11127.0, "noise_mean_sq": 32.7, "contraction": 1.01, "planned_epochs": 8,
              "eta": 1.01 / (M * lam), "M": M}
    planned = [[2 ** k, M, params["eta"]] for k in range(8)]
    assert L._realized_structure(params, planned, lam, 100_000) is None
    # re-estimates move the step by a little, and an epoch fewer than planned is not a cut (the held-out family's
    # j045: 13 of 14 epochs at 0.99999x the planned step)
    moved = [[1, M, params["eta"] * (1 - 1e-5)]]
    assert L.realized_bias_ratio(params, [M * lam * e for _, _, e in moved], 100_000) > BIAS_RATIO_MAX
    assert L._realized_structure(params, moved, lam, 100_000) is None
    cut = [[2 ** k, M, params["eta"] / 10.6] for k in range(8)]
    s = L._realized_structure(params, cut, lam, 100_000)
    assert s is not None and not s["ok"] and s["realized_bias_ratio"] > BIAS_RATIO_MAX and "was cut" in s["cause"]
    rho = (-np.expm1(-0.0953) / 0.0953) ** 2                   # the ratio written out (auto.epochs_bias_ratio)
    assert s["realized_bias_ratio"] == pytest.approx(rho ** 8 * 32.7 * 100_000 / (8 / 3 * 11127.0), rel=1e-2)


class _ValueRun:
    """What logt._minimize._progress_verdict reads of a run: x0, stopped, value()."""

    def __init__(self, f):
        self.x0, self.stopped, self.value = np.zeros(2), False, f


@pytest.mark.parametrize("mean_sq, resolved", [(0.5, True), (0.01, False), (0.0, False)])
def test_an_end_worse_than_a_resolved_start_fails(mean_sq, resolved):
    """With the oracle's value: F(x) > F(x0) fails the run when the mean gradient at x0 stood out of its noise
    (x0 not stationary); not when it did not (x0 may be the optimum: the paper's toy starts there)."""
    from logt._minimize import _progress_verdict
    f = lambda x: float(x @ x)                                   # noqa: E731
    x = np.array([0.1, 0.0])
    params = {"convergence": {"ok": True, "check": {"ok": True, "noise_growth": 1.0, "solved": False}},
              "noise_mean_sq": mean_sq, "noise_sigma2": 1.0, "noise_calls": 100}
    _progress_verdict(_ValueRun(f), params, x, f(x))
    v = params["convergence"]
    assert v["ok"] is (not resolved)
    if resolved:
        assert v["progress"]["delta"] == pytest.approx(0.01) and "worse than the start" in v["cause"]
    params["convergence"] = {"ok": True, "check": {"ok": True, "noise_growth": 1.0, "solved": False}}
    _progress_verdict(_ValueRun(f), params, np.zeros(2), 0.0)    # not above the start: passes either way
    assert params["convergence"]["ok"]
