"""A bank of generated, seeded test problems with independently computed optima.

Every problem is built from a fixed seed (no data files) and carries an exact
objective ``value(x)``, its exact full gradient ``grad(x)``, the domain's
projection, and a reference optimum ``(x_star, f_star)`` computed by a
deterministic full-batch solver (:func:`fista`: accelerated projected gradient
with backtracking and adaptive restart) run until the projected-gradient fixed
point residual ``||x - Pi(x - grad F(x)/L)||`` is below ``1e-10 (1 + ||x||)``.
Where a closed form or an independent solver exists, ``closed_form()``
returns it (the tests compare the two).

==============  =========  ==========================  ==============================  =========
problem         domain     loss                        L/lam (nominal; curvature met)  minimizer
==============  =========  ==========================  ==============================  =========
toy             PSD 5x5    0.5||W||^2 + noise (paper)  1                               boundary
psd_shift       PSD 8x8    0.5||W - A||^2, noise 2     1                               boundary
ls_ball_1e2     ball d=20  least squares               100                             boundary
ls_box_1e3      box d=20   least squares               1,000                           boundary
ls_lowrank_1e4  ball d=30  least squares, rank 10      10,000 (10 on the data's span)  inside
logreg_1e3      box d=20   logistic regression         ~1,000 (less near the optimum)  inside
huber_fn        box d=5    Huber regression (Python)   ~30 (oracle has no L)           boundary
metric_0.1      PSD 10x10  metric learning, lam 0.1    41 (worst case)                 boundary
metric_0.01     PSD 10x10  metric learning, lam 0.01   401                             boundary
metric_0.001    PSD 10x10  metric learning, lam 1e-3   4001                            boundary
==============  =========  ==========================  ==============================  =========

The metric-learning problems use :class:`logt.oracles.MetricLearning` on
synthetic clusters (n = 200 points, 3 classes that differ in 3 of 10 features,
rows scaled to unit norm); their exact objective is the mean over all
``n (n - 1) / 2`` pairs (the oracle samples pairs uniformly), computed here,
not the oracle's ``value`` on 10^4 sampled pairs.

``python -m logt.bench --only bank`` runs the default call (``method="auto"``),
logT with Theorem 1, SGD and Epoch-GD on every problem (:func:`run_bank`,
:func:`named_section`), after the grid of :mod:`logt.bench.grid`
(:func:`bank_section`).
"""
import math
import time
import warnings

import numpy as np

from logt._result import ConvergenceWarning
from logt.datasets import normalize_rows
from logt.domains import Box, EuclideanBall, PSDCone, project_psd
from logt.oracles import FunctionOracle, LinearModel, MetricLearning, PSDQuadratic

__all__ = ["Problem", "PROBLEM_NAMES", "make_problem", "problems", "fista", "run_one", "run_bank",
           "bank_section", "named_section", "summarize"]

REF_TOL = 1e-10


class Problem:
    """One bank problem: oracle, domain, exact objective, reference optimum.

    Attributes: ``name``, ``description``, ``oracle``, ``domain``, ``lam``,
    ``L`` (the smoothness of ``F``, given to Theorem 1), ``L_sample`` (a bound on the
    smoothness of every single-sample loss, ``>= L``: the step bound of one-sample SGD,
    given to SGD and Epoch-GD for their step cap ``1/L``),
    ``pass_L_to_auto`` (False for the FunctionOracle problem: auto runs without
    ``L``), ``value(x)``, ``grad(x)``, ``project(x)``, ``where`` ("boundary" or
    "inside"), ``kappa`` (nominal ``L/lam``), and, once :meth:`solve` ran,
    ``x_star``, ``f_star``, ``ref`` (solver report: iterations, residual).
    """

    def __init__(self, name, description, oracle, domain, lam, L, value, grad, project, where,
                 closed_form=None, pass_L_to_auto=True, x0=None, L_sample=None):
        self.name, self.description = name, description
        self.oracle, self.domain = oracle, domain
        self.lam, self.L = float(lam), float(L)
        self.L_sample = self.L if L_sample is None else float(L_sample)
        self.value, self.grad, self.project = value, grad, project
        self.where = where
        self._closed = closed_form
        self.pass_L_to_auto = pass_L_to_auto
        self.kappa = self.L / self.lam
        self.x0 = np.zeros(domain.shape) if x0 is None else x0
        self.x_star = self.f_star = self.ref = None

    def solve(self):
        """Compute the reference optimum (cached)."""
        if self.x_star is None:
            x, info = fista(self.value, self.grad, self.project, self.x0, self.L)
            self.x_star, self.f_star, self.ref = x, self.value(x), info
        return self.x_star, self.f_star

    def residual(self, x):
        """``||x - Pi(x - grad F(x) / L)||``: zero exactly at the constrained minimizer."""
        return float(np.linalg.norm(x - self.project(x - self.grad(x) / self.L)))

    def closed_form(self):
        """``(x, F(x))`` from a closed form or an independent solver, or None."""
        if self._closed is None:
            return None
        x = self._closed()
        return x, self.value(x)

    def __repr__(self):
        return f"Problem({self.name!r}, L/lam={self.kappa:.3g}, minimizer {self.where})"


# ---------------------------------------------------------------- the reference solver
def fista(value, grad, project, x0, L_bound, tol=REF_TOL, max_iter=200_000):
    """Accelerated projected gradient (FISTA) with backtracking and adaptive restart, to convergence.

    Deterministic full-batch solver for the references. The step ``1/Lk``
    starts at ``64/L_bound`` and ``Lk`` doubles until the gradient's Lipschitz
    test ``||grad F(x+) - grad F(y)|| <= Lk ||x+ - y||`` holds along the step
    (a test on gradients, not on ``F``, so round-off in ``F`` near the optimum
    cannot stall it); the momentum restarts when the step turns against it
    (``<y - x+, x+ - x> > 0``, O'Donoghue and Candes). Stops when the
    projected-gradient residual ``||x - Pi(x - grad F(x) / L_bound)||`` is at
    most ``tol * (1 + ||x||)``. Returns ``(x, info)`` with ``info =
    {"iterations", "residual", "L_backtracked"}``; raises ``RuntimeError`` if
    ``max_iter`` is reached first. ``value`` is not used by the iteration.
    """
    x = project(np.array(x0, dtype=np.float64, copy=True))
    y, t = x.copy(), 1.0
    Lk = L_bound / 64.0
    res = math.inf
    for it in range(1, max_iter + 1):
        gy = grad(y)
        while True:
            xn = project(y - gy / Lk)
            d = xn - y
            nd = float(np.linalg.norm(d))
            if nd == 0.0 or float(np.linalg.norm(grad(xn) - gy)) <= Lk * nd * (1 + 1e-12) or Lk >= L_bound:
                break
            Lk = min(2.0 * Lk, L_bound)
        if float(np.vdot(y - xn, xn - x)) > 0:       # restart the momentum
            t = 1.0
        tn = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        y = xn + ((t - 1.0) / tn) * (xn - x)
        x, t = xn, tn
        if it % 10 == 0:
            res = float(np.linalg.norm(x - project(x - grad(x) / L_bound)))
            if res <= tol * (1.0 + float(np.linalg.norm(x))):
                return x, {"iterations": it, "residual": res, "L_backtracked": Lk}
    raise RuntimeError(f"fista did not converge in {max_iter} iterations (residual {res:.3g})")


# ---------------------------------------------------------------- problem builders
def _toy():
    o = PSDQuadratic(np.zeros((5, 5)), noise=1.0)
    dom = PSDCone(5)
    return Problem("toy", "the paper's toy: 0.5||W||_F^2 over the 5x5 PSD cone, noise U[-1,1]",
                   o, dom, 1.0, 1.0, o.value, lambda W: np.array(W, dtype=float), project_psd,
                   "boundary", closed_form=lambda: np.zeros((5, 5)))


def _psd_shift():
    rng = np.random.default_rng(101)
    Q = np.linalg.qr(rng.normal(size=(8, 8)))[0]
    A = (Q * np.array([3.0, 2.0, 1.0, 0.5, -0.5, -1.0, -2.0, -3.0])) @ Q.T
    A = 0.5 * (A + A.T)
    o = PSDQuadratic(A, noise=2.0)
    return Problem("psd_shift", "0.5||W - A||_F^2 over the 8x8 PSD cone, A indefinite, noise U[-2,2]",
                   o, PSDCone(8), 1.0, 1.0, o.value, lambda W: W - A, project_psd, "boundary",
                   closed_form=o.minimizer)


def _spread_data(rng, n, d, s2, noise):
    """Rows a_i with A^T A / n = V diag(s2) V^T exactly; b = A x_true + noise."""
    U = np.linalg.qr(rng.normal(size=(n, d)))[0]
    V = np.linalg.qr(rng.normal(size=(d, d)))[0]
    A = math.sqrt(n) * (U * np.sqrt(s2)) @ V.T
    x_true = rng.normal(size=d)
    b = A @ x_true + noise * rng.normal(size=n)
    return A, b


def _row_bound(A, c, lam):
    """``c * max_i ||a_i||^2 + lam``: the smoothness of every single-sample loss."""
    return c * float(np.max(np.einsum("ij,ij->i", A, A))) + lam


def _ls(name, description, A, b, lam, domain, project, where, closed):
    o = LinearModel(A, b, "squared", lam)
    return Problem(name, description, o, domain, lam, o.L, o.value, o.grad, project, where,
                   closed_form=closed, L_sample=_row_bound(A, 1.0, lam))


def _ridge_interior(A, b, lam):
    n, d = A.shape
    return np.linalg.solve(A.T @ A / n + lam * np.eye(d), A.T @ b / n)


def _ridge_ball(A, b, lam, r):
    """min over ||x|| <= r of the ridge objective: x(mu) = (H + mu I)^-1 c with ||x(mu)|| = r (bisection
    on the secular equation, in the eigenbasis of H), or the interior solution."""
    n, d = A.shape
    h, V = np.linalg.eigh(A.T @ A / n + lam * np.eye(d))
    c = V.T @ (A.T @ b / n)
    if np.linalg.norm(c / h) <= r:
        return V @ (c / h)
    lo, hi = 0.0, float(np.linalg.norm(c)) / r
    for _ in range(200):
        mu = 0.5 * (lo + hi)
        if np.linalg.norm(c / (h + mu)) > r:
            lo = mu
        else:
            hi = mu
    return V @ (c / (h + hi))


def _ls_ball_1e2():
    rng = np.random.default_rng(102)
    n, d = 1000, 20
    s2 = np.geomspace(1.0, 0.01, d)
    lam = 0.01
    A, b = _spread_data(rng, n, d, s2, 0.5)
    r = 0.5 * float(np.linalg.norm(_ridge_interior(A, b, lam)))
    dom = EuclideanBall(d, r)
    proj = lambda x: dom.project(np.array(x, dtype=float))           # noqa: E731
    return _ls("ls_ball_1e2", f"least squares, d={d}, Hessian spectrum [0.02, 1.01] (L/lam=100), "
               "ball of half the unconstrained minimizer's norm", A, b, lam, dom, proj, "boundary",
               lambda: _ridge_ball(A, b, lam, r))


def _ls_box_1e3():
    rng = np.random.default_rng(103)
    n, d = 1000, 20
    lam = 1e-3
    s2 = np.geomspace(1.0, 1e-3, d)
    A, b = _spread_data(rng, n, d, s2, 0.5)
    dom = Box(-1.0, 1.0, shape=(d,))
    proj = lambda x: np.clip(x, -1.0, 1.0)                             # noqa: E731

    def closed():
        from scipy.optimize import lsq_linear
        Aa = np.vstack([A / math.sqrt(n), math.sqrt(lam) * np.eye(d)])
        ba = np.concatenate([b / math.sqrt(n), np.zeros(d)])
        return lsq_linear(Aa, ba, bounds=(-1.0, 1.0), tol=1e-14, lsmr_tol=1e-14, max_iter=10_000).x

    return _ls("ls_box_1e3", f"least squares, d={d}, Hessian spectrum [0.002, 1.001] (L/lam=1000), "
               "box [-1, 1]^d with active bounds", A, b, lam, dom, proj, "boundary", closed)


def _ls_lowrank_1e4():
    rng = np.random.default_rng(104)
    n, d, rank = 1000, 30, 10
    s2 = np.concatenate([np.geomspace(1.0, 0.1, rank), np.zeros(d - rank)])
    lam = 1e-4
    A, b = _spread_data(rng, n, d, s2, 0.5)
    dom = EuclideanBall(d, 100.0)
    proj = lambda x: dom.project(np.array(x, dtype=float))           # noqa: E731
    return _ls("ls_lowrank_1e4", f"least squares, d={d}, data of rank {rank} (spectrum [0.1, 1]), "
               "lam = 1e-4 (L/lam = 1e4), minimizer inside a ball", A, b, lam, dom, proj, "inside",
               lambda: _ridge_interior(A, b, lam))


def _logreg_1e3():
    rng = np.random.default_rng(105)
    n, d = 2000, 20
    X = rng.normal(size=(n, d)) * np.geomspace(1.0, 0.1, d)
    w_true = rng.normal(size=d) * 2.0
    p = 1.0 / (1.0 + np.exp(-X @ w_true / math.sqrt(d)))
    y = np.where(rng.random(n) < p, 1.0, -1.0)
    X = normalize_rows(X) * 2.0                                        # ||a_i|| = 2
    lam = 2e-4
    o = LinearModel(X, y, "logistic", lam)
    dom = Box(-10.0, 10.0, shape=(d,))
    proj = lambda x: np.clip(x, -10.0, 10.0)                           # noqa: E731

    def closed():
        from scipy.optimize import minimize as sp_min
        r = sp_min(o.value, np.zeros(d), jac=o.grad, method="L-BFGS-B", bounds=[(-10, 10)] * d,
                   options={"ftol": 1e-16, "gtol": 1e-12, "maxiter": 10_000, "maxcor": 30})
        return r.x

    return Problem("logreg_1e3", f"logistic regression, n={n}, d={d}, ||a_i|| = 2, lam = 2e-4 "
                   "(worst-case L/lam ~ 1e3), box [-10, 10]^d", o, dom, lam, o.L, o.value, o.grad,
                   proj, "inside", closed_form=closed, L_sample=_row_bound(X, 0.25, lam))


def _huber_fn():
    rng = np.random.default_rng(106)
    n, d, delta, lam = 200, 5, 1.0, 0.01
    A = rng.normal(size=(n, d))
    x_true = np.array([2.0, -1.5, 0.3, 0.0, 1.0])
    b = A @ x_true + rng.standard_t(2, size=n)
    lo, hi = -1.0, 1.0

    def fn(w, r):
        i = int(r.integers(n))
        res = float(A[i] @ w) - b[i]
        return min(max(res, -delta), delta) * A[i] + lam * w

    def value(w):
        res = np.abs(A @ w - b)
        h = np.where(res <= delta, 0.5 * res * res, delta * res - 0.5 * delta * delta)
        return float(h.mean()) + 0.5 * lam * float(np.dot(w, w))

    def grad(w):
        res = A @ w - b
        return A.T @ np.clip(res, -delta, delta) / n + lam * w

    o = FunctionOracle(fn, (d,), value=value, lam=lam)        # no L: auto must estimate it
    L = float(np.linalg.eigvalsh(A.T @ A / n)[-1]) + lam
    dom = Box(lo, hi, shape=(d,))
    proj = lambda x: np.clip(x, lo, hi)                        # noqa: E731

    def closed():
        from scipy.optimize import minimize as sp_min
        r = sp_min(value, np.zeros(d), jac=grad, method="L-BFGS-B", bounds=[(lo, hi)] * d,
                   options={"ftol": 1e-16, "gtol": 1e-12, "maxiter": 10_000})
        return r.x

    return Problem("huber_fn", f"Huber regression (delta=1) as a Python FunctionOracle without L, n={n}, "
                   f"d={d}, t(2) noise, lam={lam}, box [-1, 1]^d", o, dom, lam, L, value, grad, proj,
                   "boundary", closed_form=closed, pass_L_to_auto=False, L_sample=_row_bound(A, 1.0, lam))


class _PairObjective:
    """The exact metric-learning objective: mean logit loss over all unordered pairs + (lam/2)||W||^2."""

    def __init__(self, X, y, lam):
        i, j = np.triu_indices(X.shape[0], 1)
        self.D = X[i] - X[j]
        self.y = np.where(y[i] == y[j], 1.0, -1.0)
        self.lam = lam

    def _z(self, W):
        return self.y * (1.0 - ((self.D @ W) * self.D).sum(axis=1))

    def value(self, W):
        W = np.asarray(W, dtype=float)
        return float(np.logaddexp(0.0, -self._z(W)).mean()) + 0.5 * self.lam * float(np.vdot(W, W))

    def grad(self, W):
        W = np.asarray(W, dtype=float)
        z = self._z(W)
        c = self.y * 0.5 * (1.0 - np.tanh(0.5 * z))              # y * sigmoid(-z)
        G = (self.D.T * c) @ self.D / len(c) + self.lam * W
        return 0.5 * (G + G.T)


def metric_data(n=200, d=10, k_inf=3, n_classes=3, seed=107):
    """Synthetic clusters: classes differ in the first ``k_inf`` of ``d`` features; rows of unit norm."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    means = rng.normal(size=(n_classes, k_inf))
    X = 0.4 * rng.normal(size=(n, d))
    X[:, :k_inf] += means[y]
    return normalize_rows(X), y


def _metric(lam):
    X, y = metric_data()
    o = MetricLearning(X, y, lam, n_eval_pairs=2000, eval_rng=0, n_threads=1)
    obj = _PairObjective(X, y, lam)
    d = X.shape[1]
    return Problem(f"metric_{lam:g}", f"metric learning on synthetic clusters (n=200, d={d}, 3 classes, "
                   f"3 informative features), lam={lam:g}, PSD cone; F over all pairs",
                   o, PSDCone(d), lam, o.L, obj.value, obj.grad, project_psd, "boundary")


_BUILDERS = {
    "toy": _toy,
    "psd_shift": _psd_shift,
    "ls_ball_1e2": _ls_ball_1e2,
    "ls_box_1e3": _ls_box_1e3,
    "ls_lowrank_1e4": _ls_lowrank_1e4,
    "logreg_1e3": _logreg_1e3,
    "huber_fn": _huber_fn,
    "metric_0.1": lambda: _metric(0.1),
    "metric_0.01": lambda: _metric(0.01),
    "metric_0.001": lambda: _metric(0.001),
}
PROBLEM_NAMES = tuple(_BUILDERS)
METRIC_PROBLEMS = ("metric_0.1", "metric_0.01", "metric_0.001")

_CACHE = {}


def make_problem(name, solve=True):
    """The bank problem ``name`` (built once per process; ``solve`` computes its reference optimum)."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown bank problem {name!r}; the problems are: {', '.join(PROBLEM_NAMES)}")
    if name not in _CACHE:
        _CACHE[name] = _BUILDERS[name]()
    p = _CACHE[name]
    if solve:
        p.solve()
    return p


def problems(names=None, solve=True):
    """The bank problems (all, or those named), in bank order."""
    return [make_problem(n, solve) for n in (names or PROBLEM_NAMES)]


# ---------------------------------------------------------------- running the methods
METHOD_KEYS = ("default", "logt_theorem1", "sgd", "epoch_gd")
METHOD_LABELS = {"default": "default", "logt_theorem1": "logT-theorem1", "sgd": "SGD",
                 "epoch_gd": "Epoch-GD"}


def _call(problem, key, T, rng):
    from logt import minimize
    p = problem
    if key == "default":             # the default call (method="auto"): logT's epochs or the stages
        return minimize(p.oracle, p.domain, T, L=p.L if p.pass_L_to_auto else None, x0=p.x0, rng=rng)
    if key == "logt_theorem1":
        return minimize(p.oracle, p.domain, T, method="logt", options={"params": "theorem1"}, L=p.L,
                        x0=p.x0, rng=rng)
    return minimize(p.oracle, p.domain, T, method=key, L=p.L_sample, x0=p.x0, rng=rng)


def run_one(task):
    """One run: ``task = (problem name, method key, T, seed)``; returns a record (dict).

    ``excess = F(x_T) - F*`` with the problem's exact ``F`` and reference ``F*``;
    a run that cannot start (``T`` below one epoch of Theorem 1) has ``skipped``
    set; a run that raises has ``error`` set (a diverged baseline would show here).
    """
    name, key, T, seed = task
    p = make_problem(name)
    rng = np.random.default_rng(np.random.SeedSequence([seed, METHOD_KEYS.index(key), T, 8]))
    rec = {"problem": name, "method": key, "T": T, "seed": seed, "excess": math.nan,
           "n_calls": 0, "n_projections": 0, "seconds": math.nan, "skipped": None, "error": None}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)      # reported as success below
            res = _call(p, key, T, rng)
    except ValueError as exc:
        if key == "logt_theorem1" and "below one epoch" in str(exc):
            rec["skipped"] = str(exc)
            return rec
        raise
    except FloatingPointError as exc:
        rec["error"] = str(exc)
        return rec
    rec["seconds"] = time.perf_counter() - t0
    rec["excess"] = p.value(res.x) - p.f_star
    rec["n_calls"], rec["n_projections"] = int(res.n_calls), int(res.n_projections)
    if key == "default":
        rec["L_est"] = res.params.get("L_est")
        rec["L_final"] = res.params.get("L_final")
        rec["estimate_calls"] = res.params.get("estimate_calls")
        rec["chosen"] = res.method
        rec["success"] = bool(res.success)
    return rec


def run_bank(names=None, Ts=(10**5, 10**6), seeds=range(5), methods=METHOD_KEYS, log=None):
    """Run every ``(problem, method, T, seed)``; returns the list of records of :func:`run_one`."""
    log = log or (lambda msg: None)
    recs = []
    for name in (names or PROBLEM_NAMES):
        t0 = time.perf_counter()
        make_problem(name)
        log(f"bank: {name}: reference solved in {time.perf_counter() - t0:.1f} s")
        for T in Ts:
            for key in methods:
                for seed in seeds:
                    recs.append(run_one((name, key, int(T), int(seed))))
    return recs


BASELINES = ("sgd", "epoch_gd")


def summarize(records):
    """Per ``(problem, T)``: per method the mean ``(F - F*) T``, projections, calls, seconds, errors;
    and ``ratio`` = logT-auto's mean over the best baseline's (SGD, Epoch-GD), ``proj_share`` =
    logT-auto's projections over that baseline's. Returns a list of dicts in bank order."""
    out = {}
    for r in records:
        row = out.setdefault((r["problem"], r["T"]), {"problem": r["problem"], "T": r["T"], "methods": {}})
        m = row["methods"].setdefault(r["method"], {"runs": []})
        m["runs"].append(r)
    rows = []
    for row in out.values():
        T = row["T"]
        for key, m in row["methods"].items():
            ok = [r for r in m["runs"] if r["error"] is None and r["skipped"] is None]
            m["n"] = len(ok)
            m["errors"] = sum(r["error"] is not None for r in m["runs"])
            m["skipped"] = sum(r["skipped"] is not None for r in m["runs"])
            mean = (lambda k: float(np.mean([r[k] for r in ok])) if ok else math.nan)   # noqa: E731
            m["excess_T"] = mean("excess") * T if ok else math.nan
            m["excess"] = mean("excess")
            m["n_projections"], m["n_calls"], m["seconds"] = mean("n_projections"), mean("n_calls"), mean("seconds")
            if key == "default" and ok:
                m["L_est"] = float(np.mean([r["L_est"] for r in ok]))
                m["estimate_calls"] = float(np.mean([r["estimate_calls"] for r in ok]))
                m["chosen"] = sorted({r["chosen"] for r in ok})
                m["successes"] = sum(r["success"] for r in ok)
        base = [(row["methods"][k]["excess_T"], k) for k in BASELINES
                if k in row["methods"] and math.isfinite(row["methods"][k]["excess_T"])]
        row["best_baseline"] = min(base)[1] if base else None
        auto = row["methods"].get("default")
        if auto is not None and base:
            b = row["methods"][row["best_baseline"]]
            row["ratio"] = auto["excess_T"] / b["excess_T"] if b["excess_T"] > 0 else math.inf
            row["proj_share"] = auto["n_projections"] / b["n_projections"]
        else:
            row["ratio"] = row["proj_share"] = math.nan
        rows.append(row)
    return rows


def _g(v, fmt=".3g"):
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)


def bank_table(rows):
    """Markdown table of :func:`summarize`'s rows."""
    lines = ["| problem | T | method | (F-F*)*T | projections | oracle calls | s/run | errors | note |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        for key in METHOD_KEYS:
            m = row["methods"].get(key)
            if m is None:
                continue
            note = ""
            if key == "default":
                verdict = "met" if row["ratio"] <= 3 and m["n_projections"] <= 0.02 * row["T"] else "NOT met"
                chose = "+".join(m.get("chosen", []))
                note = (f"chose {chose}, success {m.get('successes', 0)}/{m['n']}; L_est {_g(m.get('L_est'))}, "
                        f"estimate {_g(m.get('estimate_calls'), '.0f')} calls; ratio to "
                        f"{METHOD_LABELS.get(row['best_baseline'], '-')} {_g(row['ratio'], '.2f')}, projections "
                        f"{_g(100 * m['n_projections'] / row['T'], '.2f')}% of T -> {verdict}")
            elif m["skipped"]:
                note = "T below one epoch"
            lines.append(f"| {row['problem']} | {row['T']:.0e} | {METHOD_LABELS[key]} | {_g(m['excess_T'])} | "
                         f"{_g(m['n_projections'], '.0f')} | {_g(m['n_calls'], '.0f')} | {_g(m['seconds'], '.3f')} | "
                         f"{m['errors']} | {note} |")
    return "\n".join(lines)


QUICK_PROBLEMS = ("toy", "ls_ball_1e2", "ls_box_1e3", "huber_fn", "metric_0.01")


def named_section(quick=False, log=print):
    """The named problems of the bank: ``(F - F*) T`` means over 5 seeds at ``T = 1e5`` and ``1e6`` of the
    default call, logT with Theorem 1, SGD and Epoch-GD (quick: 5 problems, ``T = 2e4``, 2 seeds)."""
    t0 = time.perf_counter()
    if quick:
        names, Ts, seeds = QUICK_PROBLEMS, (2 * 10**4,), range(2)
    else:
        names, Ts, seeds = PROBLEM_NAMES, (10**5, 10**6), range(5)
    rows = summarize(run_bank(names, Ts, seeds, log=log))
    refs = ["| problem | L/lam (nominal) | minimizer | F* | reference residual | iterations |",
            "|---|---|---|---|---|---|"]
    for p in problems(names):
        refs.append(f"| {p.name} | {p.kappa:.3g} | {p.where} | {p.f_star:.10g} | {p.ref['residual']:.2g} | "
                    f"{p.ref['iterations']} |")
    n_seeds = len(seeds)
    return "\n".join([
        "### Named problems: the default call against Theorem 1, SGD and Epoch-GD",
        "",
        f"Means over {n_seeds} seeds of the exact excess `(F(x_T) - F*) * T` (F* from full-batch FISTA run to a "
        "projected-gradient residual <= 1e-10). Target: the default within 3x of the best baseline (SGD, "
        "Epoch-GD) with <= 2% of T in projections. SGD and Epoch-GD get the single-sample smoothness bound as `L` "
        "(step cap 1/L); the default gets no `L` on huber_fn (a FunctionOracle without L).",
        "",
        "\n".join(refs),
        "",
        bank_table(rows),
        "",
        f"_Named problems: {time.perf_counter() - t0:.0f} s._",
    ])


def bank_section(quick=False, log=print):
    """The ``bank`` section of ``python -m logt.bench``: the grid (:func:`logt.bench.grid.grid_section`) and
    the named problems (:func:`named_section`)."""
    from logt.bench.grid import grid_section
    return "\n\n".join([
        "## Problem bank: the default call across L/lam, T, domains and noise",
        grid_section(quick=quick, log=log),
        named_section(quick=quick, log=log),
    ])
