"""Every method beyond logT and Epoch-GD: logt_acc, minibatch_sgd, one_projection_sgd, frank_wolfe, SGD suffix averaging.

Counts against closed forms on a grid of T (counted by wrappers around the oracle
and domain, independently of the driver), bit-reproducibility, compiled vs Python
loops, convergence to a reference solution, errors.
"""
import math

import numpy as np
import pytest

import logt
from logt.domains import CallableDomain, EuclideanBall, PSDCone, TraceBoundedPSD
from logt.methods import FrankWolfe, LogTAcc, MinibatchSGD, OneProjectionSGD
from logt.methods.logt_acc import theory_N
from logt.oracles import DiagonalQuadratic, FunctionOracle, PSDQuadratic

GRID = [1, 5, 6, 7, 99, 100, 101, 1000, 4321, 65432]


def eigh_projection(v):
    lam, V = np.linalg.eigh((v + v.T) / 2)
    P = (V * np.maximum(lam, 0)) @ V.T
    return (P + P.T) / 2


class Counting:
    """Python oracle + domain wrappers that count what the driver really asked for."""

    def __init__(self, oracle, domain):
        self.oracle, self.domain = oracle, domain
        self.shape = oracle.shape
        self.L, self.lam, self.G = oracle.L, oracle.lam, oracle.G
        self.value = oracle.value
        self.calls = self.projections = self.lmos = 0

    def mean_grad(self, w, B, rng, out=None):
        self.calls += B
        return self.oracle.mean_grad(w, B, rng, out=out)

    def project(self, v, out=None):
        self.projections += 1
        return self.domain.project(v, out=out)

    def lmo(self, g, out=None):
        self.lmos += 1
        return logt.domains.lmo(self.domain, g, out=out)


def counting_domain(c):
    return CallableDomain(lambda v: c.project(v), c.shape)


def toy(d=5):
    return PSDQuadratic(np.zeros((d, d))), PSDCone(d)


# ---- closed forms, computed here independently of the modules --------------------------------
def acc_closed_form(T, N, N_last=None, B1=1, r=4):
    """K = max{K : N*S(K) + N_last*B1*r**(K-1) <= T}, S(K) = B1 (r**(K-1) - 1)/(r - 1);
    calls = N*S(K) + N_last*floor((T - N*S(K))/N_last); projections = N*(K-1) + N_last."""
    N_last = N if N_last is None else N_last
    S = lambda K: B1 * (r ** (K - 1) - 1) // (r - 1)                       # noqa: E731
    fits = [K for K in range(1, 64) if N * S(K) + N_last * B1 * r ** (K - 1) <= T]
    if not fits:
        return 0, 0, 0
    K = max(fits)
    return K, N * S(K) + N_last * ((T - N * S(K)) // N_last), N * (K - 1) + N_last


def fw_closed_form(T):
    """c = 1: batches (k+1)^2, sum_{k<=K} (k+1)^2 = (K+1)(K+2)(2K+3)/6 - 1 <= T."""
    K = 0
    while (K + 2) * (K + 3) * (2 * K + 5) // 6 - 1 <= T:
        K += 1
    return K, (K + 1) * (K + 2) * (2 * K + 3) // 6 - 1


@pytest.mark.parametrize("kappa", [1, 2, 10, 41, 1000, 12345.6])
def test_theory_N_is_the_smallest_with_N_N1_at_least_32_kappa(kappa):
    N = theory_N(kappa, 1.0)
    assert N * (N + 1) >= 32 * kappa > (N - 1) * N
    assert N == theory_N(3.0 * kappa, 3.0)
    n = theory_N(kappa, 1.0, 2.0)
    assert n * (n + 1) >= 2 * kappa > (n - 1) * n


@pytest.mark.parametrize("T", GRID + [10**5])
def test_logt_acc_exact_counts(T):
    oracle, domain = toy()
    c = Counting(oracle, domain)
    N, N_last = 6, 1            # the smallest n with n(n+1) >= 32, resp. >= 2 (L/lam = 1)
    K, calls, proj = acc_closed_form(T, N, N_last)
    theory = {"params": "theory"}
    if K == 0:
        with pytest.raises(ValueError, match=f"minimum T is N_last\\*B1 = {N_last}"):
            logt.minimize(c, counting_domain(c), T, method="logt_acc", options=theory, rng=0)
        return
    res = logt.minimize(c, counting_domain(c), T, method="logt_acc", options=theory, rng=0)
    assert (res.n_epochs, res.n_calls, res.n_projections) == (K, calls, proj)
    assert c.calls == calls and c.projections - 1 == proj         # minus the setup projection of x0
    assert T - N_last < res.n_calls <= T
    assert len(res.trace["n_calls"]) == K and res.trace["n_projections"][-1] == proj
    # the compiled oracle and domain give the same counts
    r2 = logt.minimize(oracle, domain, T, method="logt_acc", options=theory, rng=0)
    assert (r2.n_calls, r2.n_projections) == (calls, proj)


@pytest.mark.parametrize("opts", [{"N": 3, "B1": 2, "growth": 2}, {"N": 7, "growth": 7},
                                  {"N": 1, "B1": 5, "growth": 3, "average": "last"},
                                  {"N": 9, "N_last": 2, "B1": 3, "growth": 5}])
@pytest.mark.parametrize("T", [7, 100, 4321, 65432])
def test_logt_acc_explicit_counts(opts, T):
    oracle, domain = toy(3)
    K, calls, proj = acc_closed_form(T, opts["N"], opts.get("N_last"), opts.get("B1", 1), opts["growth"])
    if K == 0:
        with pytest.raises(ValueError, match="minimum T"):
            logt.minimize(oracle, domain, T, method="logt_acc", options=opts, rng=0)
        return
    res = logt.minimize(oracle, domain, T, method="logt_acc", options=opts, rng=0)
    assert (res.n_epochs, res.n_calls, res.n_projections) == (K, calls, proj)
    b = res.params["batches"]
    assert b[:-1] == [opts.get("B1", 1) * opts["growth"] ** k for k in range(K - 1)]
    N_last = opts.get("N_last", opts["N"])
    assert b[-1] >= opts.get("B1", 1) * opts["growth"] ** (K - 1)
    assert opts["N"] * sum(b[:-1]) + N_last * b[-1] == calls > T - N_last


def test_logt_acc_projections_grow_like_sqrt_kappa():
    """At fixed T, projections N*K with N ~ sqrt(32 kappa): a log-log slope near 1/2 in kappa."""
    T = 10**6
    proj = []
    kappas = [1, 10, 100, 1000, 10**4]
    for k in kappas:
        oracle = DiagonalQuadratic(np.array([1.0, float(k)]), np.zeros(2), noise=0.1)
        proj.append(logt.minimize(oracle, EuclideanBall(2, 1.0), T, method="logt_acc", options={"params": "theory"},
                                  rng=0).n_projections)
    slope = np.polyfit(np.log(kappas), np.log(proj), 1)[0]
    assert 0.35 < slope < 0.5, (proj, slope)


@pytest.mark.parametrize("T", GRID)
@pytest.mark.parametrize("B", [None, 1, 3, 10])
def test_minibatch_sgd_exact_counts(T, B):
    oracle, domain = toy()
    c = Counting(oracle, domain)
    Bx = B if B is not None else math.ceil(math.sqrt(T))
    opts = {} if B is None else {"B": B}
    if Bx > T:
        with pytest.raises(ValueError, match="exceeds the budget"):
            logt.minimize(c, counting_domain(c), T, method="minibatch_sgd", options=opts, rng=0)
        return
    res = logt.minimize(c, counting_domain(c), T, method="minibatch_sgd", options=opts, rng=0)
    assert res.n_calls == c.calls == Bx * (T // Bx)
    assert res.n_projections == c.projections - 1 == T // Bx
    assert res.params["B"] == Bx and res.trace["n_calls"][-1] == res.n_calls


@pytest.mark.parametrize("T", GRID)
def test_one_projection_sgd_exact_counts(T):
    oracle, domain = toy()
    c = Counting(oracle, domain)
    c.constraint = lambda x: logt.domains.constraint_function(domain).value_and_grad(x)
    c_dom = _ConstrainedCallable(c)
    res = logt.minimize(c, c_dom, T, method="one_projection_sgd", options={"penalty": 1.0}, rng=0)
    assert res.n_calls == c.calls == T
    assert res.n_projections == 1 == c.projections - 1
    assert res.trace["n_projections"][-1] == 1 and res.trace["n_calls"][-1] == T
    assert np.linalg.eigvalsh(res.x).min() >= -1e-12
    assert c_dom.constraint_calls == T


class _ConstrainedCallable(CallableDomain):
    """A Python domain with a constraint function (counts its calls)."""

    def __init__(self, c):
        super().__init__(lambda v: c.project(v), c.shape)
        self._c = c
        self.constraint_calls = 0

    def constraint(self, x):
        self.constraint_calls += 1
        return self._c.constraint(x)


@pytest.mark.parametrize("T", GRID + [10**5])
def test_frank_wolfe_exact_counts(T):
    oracle = PSDQuadratic(np.diag([1.0, -1.0, 0.5]))
    dom = TraceBoundedPSD(3, 1.0)
    c = Counting(oracle, dom)
    K, calls = fw_closed_form(T)
    pydom = CallableDomain(lambda v: c.project(v), (3, 3))
    pydom.lmo = c.lmo
    if K == 0:
        with pytest.raises(ValueError, match="minimum T is ceil"):
            logt.minimize(c, pydom, T, method="frank_wolfe", rng=0)
        return
    res = logt.minimize(c, pydom, T, method="frank_wolfe", rng=0)
    assert res.n_calls == c.calls == calls <= T
    assert res.n_projections == 0 and c.projections == 1            # only the uncounted setup projection
    assert res.params["n_lmo"] == K == c.lmos
    r2 = logt.minimize(oracle, dom, T, method="frank_wolfe", rng=0)
    assert (r2.n_calls, r2.n_projections, r2.params["n_lmo"]) == (calls, 0, K)


@pytest.mark.parametrize("T", [1, 2, 3, 1000, 4099, 70001])
def test_sgd_suffix_average_is_the_mean_of_the_last_half(T):
    """Independent reference: run SGD step by step through a callback-free Python loop on the same draws."""
    oracle = FunctionOracle(lambda w, rng: w - 1.0 + rng.standard_normal(w.shape), (2,), L=1.0, lam=1.0)
    dom = EuclideanBall(2, 0.5)
    res = logt.minimize(oracle, dom, T, method="sgd", options={"average": "suffix"}, rng=3)
    rng = np.random.default_rng(3)
    x = np.zeros(2)
    iterates = []
    for t in range(1, T + 1):
        g = x - 1.0 + rng.standard_normal(2)
        x = dom.project(x - g / t)
        iterates.append(x)
    np.testing.assert_allclose(res.x, np.mean(iterates[T // 2:], axis=0), rtol=1e-12, atol=1e-14)
    assert res.n_calls == res.n_projections == T


NEW = [("logt_acc", {}), ("minibatch_sgd", {}), ("minibatch_sgd", {"B": 1, "average": "suffix"}),
       ("one_projection_sgd", {}), ("sgd", {"average": "suffix"})]


@pytest.mark.parametrize("method,opts", NEW + [("frank_wolfe", {})])
def test_same_seed_bit_identical(method, opts):
    oracle, domain = toy()
    if method == "frank_wolfe":
        domain = TraceBoundedPSD(5, 2.0)
    a = logt.minimize(oracle, domain, 20000, method=method, options=opts, rng=123)
    b = logt.minimize(oracle, domain, 20000, method=method, options=opts, rng=123)
    c = logt.minimize(oracle, domain, 20000, method=method, options=opts, rng=124)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.trace["fun"], b.trace["fun"])
    assert not np.array_equal(a.x, c.x)


@pytest.mark.parametrize("method,opts", [("minibatch_sgd", {}), ("minibatch_sgd", {"B": 1, "average": "suffix"}),
                                         ("sgd", {"average": "suffix"}), ("one_projection_sgd", {"radius": 3.0})])
def test_compiled_loop_matches_python_loop(method, opts):
    """Same draws: compiled oracle + compiled domain vs compiled oracle + Python domain."""
    oracle = PSDQuadratic(np.diag([1.0, -0.5, 0.3, -2.0, 0.0]))
    a = logt.minimize(oracle, PSDCone(5), 3000, method=method, options=opts, rng=9)
    pydom = _ConstrainedCallable.__new__(_ConstrainedCallable)
    CallableDomain.__init__(pydom, eigh_projection, (5, 5))
    pydom.constraint_calls = 0

    def constraint(x):
        lam, V = np.linalg.eigh(x)
        return -lam[0], -np.outer(V[:, 0], V[:, 0])

    pydom._c = type("C", (), {"constraint": staticmethod(constraint)})
    b = logt.minimize(oracle, pydom, 3000, method=method, options=opts, rng=9)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-9, atol=1e-12)
    assert a.n_projections == b.n_projections and a.n_calls == b.n_calls


def test_frank_wolfe_compiled_lmo_matches_python_lmo():
    oracle = PSDQuadratic(np.diag([1.0, -0.5, 0.3, -2.0, 0.0]))
    dom = TraceBoundedPSD(5, 1.5)
    a = logt.minimize(oracle, dom, 50000, method="frank_wolfe", rng=9)
    pydom = CallableDomain(lambda v: dom.project(v), (5, 5))

    def lmo(g, out=None):
        lam, V = np.linalg.eigh(g)
        return 1.5 * np.outer(V[:, 0], V[:, 0]) if lam[0] < 0 else np.zeros((5, 5))

    pydom.lmo = lmo
    b = logt.minimize(oracle, pydom, 50000, method="frank_wolfe", rng=9)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-8, atol=1e-11)
    assert a.n_calls == b.n_calls


@pytest.mark.parametrize("method,opts,tol", [("logt_acc", {}, 0.05), ("minibatch_sgd", {}, 0.05),
                                             ("one_projection_sgd", {"penalty": 10.0}, 0.05),
                                             ("sgd", {"average": "suffix"}, 0.05)])
def test_converges_to_projection_of_A(method, opts, tol):
    A = np.diag([2.0, 1.0, -1.0, -3.0]) + 0.1
    oracle = PSDQuadratic(A, noise=0.5)
    res = logt.minimize(oracle, PSDCone(4), 200_000, method=method, options=opts, rng=3)
    assert np.linalg.norm(res.x - eigh_projection(A)) < tol
    assert 0 <= res.fun - oracle.f_star < 2e-3
    assert np.linalg.eigvalsh(res.x).min() > -1e-12


def test_frank_wolfe_converges_on_trace_bounded_set():
    """Reference: the projection of A onto {PSD, tr <= tau} minimizes 0.5||W - A||^2 there."""
    A = np.diag([2.0, 1.0, 0.5, -1.0, -3.0])
    oracle = PSDQuadratic(A, noise=0.5)
    dom = TraceBoundedPSD(5, 1.0)
    W_star = dom.project(A)
    f_star = oracle.value(W_star)
    errs = [logt.minimize(oracle, dom, T, method="frank_wolfe", rng=1).fun - f_star for T in (10**4, 10**6)]
    assert 0 <= errs[1] < errs[0] / 3 and errs[1] < 2e-3


@pytest.mark.parametrize("method", ["logt_acc", "minibatch_sgd"])
def test_toy_rate_is_one_over_T(method):
    oracle, domain = toy()
    means = []
    for T in [10**3, 10**4, 10**5]:
        means.append(np.mean([logt.minimize(oracle, domain, T, method=method, rng=1000 * T + r).fun * T
                              for r in range(8)]))
    assert all(0.3 <= m <= 40 for m in means), means
    assert max(means) / min(means) < 6.0, means


def test_logt_acc_uses_the_L_option_and_errors_clearly():
    f = FunctionOracle(lambda w, rng: w + rng.standard_normal(w.shape), (3,), lam=1.0)
    dom = EuclideanBall(3, 1.0)
    with pytest.raises(ValueError, match="needs L"):
        logt.minimize(f, dom, 1000, method="logt_acc", options={"params": "theory"}, rng=0)
    r = logt.minimize(f, dom, 1000, method=LogTAcc(params="theory", L=4.0), rng=0)
    assert r.params["L_used"] == 4.0 and r.params["N"] == theory_N(4.0, 1.0)
    assert r.params["N_last"] == 3 and r.params["N"] == 11   # n(n+1) >= 2*4, >= 32*4
    with pytest.raises(ValueError, match="L must be >= lam"):
        logt.minimize(f, dom, 1000, method=LogTAcc(params="theory", L=0.5), rng=0)
    with pytest.raises(ValueError, match="growth must be in"):
        LogTAcc(growth=8)
    with pytest.raises(ValueError, match="needs N"):
        LogTAcc(params="explicit")
    with pytest.raises(ValueError, match="not both"):
        LogTAcc(params="theory", N=3)
    with pytest.raises(TypeError, match="method 'logt_acc' has no option"):
        LogTAcc(eta=0.1)
    # params="auto" is wired (tests/test_auto.py): L comes from logT's curvature estimate
    r = logt.minimize(f, dom, 1000, method="logt_acc", options={"params": "auto"}, rng=0)
    assert r.params["L_est"] > 0 and r.n_calls <= 1000
    with pytest.raises(ValueError, match="params must be one of 'auto', 'theory', 'explicit'"):
        LogTAcc(params="theorem1")


def test_baseline_errors_are_clear():
    oracle, domain = toy()
    with pytest.raises(TypeError, match="unbounded"):
        logt.minimize(oracle, domain, 1000, method="frank_wolfe", rng=0)
    f = FunctionOracle(lambda w, rng: w + rng.standard_normal(w.shape), (3,), L=1.0, lam=1.0)
    with pytest.raises(ValueError, match="needs options=\\{'penalty'"):
        logt.minimize(f, EuclideanBall(3, 1.0), 1000, method="one_projection_sgd", rng=0)
    with pytest.raises(ValueError, match="step_cap"):
        MinibatchSGD(step_cap="big")
    with pytest.raises(ValueError, match="batch_scale"):
        FrankWolfe(batch_scale=0.0)
    with pytest.raises(ValueError, match="average must be one of"):
        OneProjectionSGD(average="last")


@pytest.mark.parametrize("method,opts", [("minibatch_sgd", {"B": 4}), ("one_projection_sgd", {"penalty": 1.0}),
                                         ("frank_wolfe", {})])
def test_nan_gradient_in_the_compiled_loops_is_reported(method, opts):
    """A compiled oracle whose gradient overflows to Inf: the compiled loops stop with a clear error."""
    oracle = DiagonalQuadratic(np.full(3, 1e300), np.array([1e10, 0.0, 0.0]), noise=0.0)
    dom = EuclideanBall(3, 1e12)
    with pytest.raises(FloatingPointError, match=f"non-finite.*method '{method}'"):
        logt.minimize(oracle, dom, 1000, method=method, options=opts, L=1e300, lam=1e300, rng=0)


def test_capped_sgd_survives_where_plain_sgd_diverges():
    oracle = DiagonalQuadratic(np.array([1.0, 1e4]), np.array([0.5, 0.5]), noise=0.1)
    with pytest.raises(FloatingPointError, match="diverged|non-finite"):
        logt.minimize(oracle, CallableDomain(lambda v: v, (2,)), 10**4,
                      method="sgd", options={"cap": False}, rng=0)
    r = logt.minimize(oracle, CallableDomain(lambda v: v, (2,)), 10**5, method="sgd", rng=0)
    assert r.params["step_cap"] == 1e-4 and r.fun < 1e-3 < oracle.value(np.zeros(2))
    r = logt.minimize(oracle, CallableDomain(lambda v: v, (2,)), 10**5, method="minibatch_sgd",
                      options={"B": 1}, rng=0)
    assert r.fun < 1e-3 < oracle.value(np.zeros(2))


INTERRUPT = """
import sys, time, numpy as np, logt
from logt.domains import PSDCone, TraceBoundedPSD
from logt.oracles import PSDQuadratic
method = sys.argv[1]
dom = TraceBoundedPSD(5, 1.0) if method == "frank_wolfe" else PSDCone(5)
print("ready", flush=True)
try:
    logt.minimize(PSDQuadratic(np.eye(5)), dom, 10**12 if method == "frank_wolfe" else 10**9,
                  method=method, options={"minibatch_sgd": {"B": 1}}.get(method, {}), rng=0)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
    sys.exit(0)
print("finished", flush=True)
"""


@pytest.mark.parametrize("method", ["one_projection_sgd", "frank_wolfe", "minibatch_sgd"])
def test_sigint_stops_the_new_compiled_loops(method):
    import signal
    import subprocess
    import time

    from _child import popen_python
    from _sigint import default_sigint
    proc = popen_python(["-c", INTERRUPT, method], stdout=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(1.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
    assert "interrupted" in lines, out
    assert float(lines["interrupted"]) - sent < 5.0


@pytest.mark.parametrize("domain", ["psd", "ball"])
def test_logt_acc_matches_suffix_sgd_at_equal_T_when_ill_conditioned(domain):
    """Issue 9's target at L/lam = 1000 (kappa's problems): logt_acc's mean excess at equal T is at most
    the capped suffix-averaged SGD's (measured ratios 0.74 psd, 0.60 ball; 1.25 and 1.72 with the former
    last stage N_last(N_last+1) >= 8 L/lam), with
    fewer than 1% of its projections. F* from kappa's independent reference solver."""
    from logt.experiments.kappa import make_problem, reference_solution
    oracle, dom = make_problem(domain, 1000)
    f_star = reference_solution(oracle, dom)[1]
    T, seeds = 200_000, range(12)
    acc = [logt.minimize(oracle, dom, T, method="logt_acc", options={"params": "theory"}, rng=s) for s in seeds]
    sgd = [logt.minimize(oracle, dom, T, method="minibatch_sgd", options={"B": 1, "average": "suffix"}, rng=s)
           for s in seeds]
    e_acc = np.mean([r.fun - f_star for r in acc])
    e_sgd = np.mean([r.fun - f_star for r in sgd])
    assert 0 < e_acc <= e_sgd, (e_acc * T, e_sgd * T)
    assert acc[0].n_projections * 100 < sgd[0].n_projections
