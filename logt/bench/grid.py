"""The bank grid and the held-out family: random problems across ``L/lam`` and ``T`` for the default call.

Two generators of seeded random problems, each with an exact objective, its
gradient, the domain's projection and a reference optimum (:func:`logt.bench.bank.fista`,
a deterministic full-batch solver, or a closed form):

* :func:`grid_instances` -- the **grid**: every cell ``(L/lam, T)`` of
  ``GRID_KAPPAS x GRID_TS`` holds ``INSTANCES_PER_CELL`` random instances
  (drawn from the cell's own seed): weighted quadratics over the PSD cone, a
  ball, a box and a trace-bounded PSD set (the compiled
  :class:`logt.oracles.DiagonalQuadratic`, uniform noise), a rotated quadratic
  as a Python :class:`logt.oracles.FunctionOracle` without ``L`` (Gaussian noise;
  ``T <= 1e5``, a compiled quadratic at ``1e6``), and least squares
  (:class:`logt.oracles.LinearModel`, rotated Hessian, the rows' sampling noise).
  Spectra (log-spaced, two clusters, one stiff or one weak direction) are
  shuffled over the coordinates; the minimizer is inside or on the boundary; the
  noise is none to dominant (``sqrt(sigma^2) / ||grad F(x0)||`` in
  ``NOISE_RATIOS``); dimensions up to 200. It was used to choose the default's
  rule.
* :func:`family_problems` -- the **held-out family** (``FAMILY_SIZE`` problems
  from another seed and other kinds: logistic regression, Huber regression as a
  Python oracle, metric learning, rotated PSD quadratics with heavy-tailed noise,
  quadratics started away from 0, power-law spectra; ``L/lam`` and ``T``
  log-uniform). Never used to choose anything: the final check.

:func:`run_records` runs the default call ``logt.minimize(oracle, domain, T,
lam=lam, rng=seed)`` and the baselines (SGD with suffix averaging and Epoch-GD,
both given the single-sample smoothness bound ``L`` so that their step caps
apply) on every problem and seed; :func:`summarize` compares them (the excess
below ``FLOOR_REL`` of the start's excess counts as solved), and
:func:`grid_section` / :func:`family_section` print the report of
``python -m logt.bench --only bank``.
"""
import math
import time

import numpy as np

from logt.bench.bank import Problem, _PairObjective, fista
from logt.domains import Box, EuclideanBall, PSDCone, TraceBoundedPSD, project_psd
from logt.oracles import DiagonalQuadratic, FunctionOracle, LinearModel, MetricLearning

__all__ = ["GRID_KAPPAS", "GRID_TS", "INSTANCES_PER_CELL", "NOISE_RATIOS", "FAMILY_SIZE", "Spec",
           "grid_specs", "family_specs", "build", "grid_instances", "family_problems", "run_records",
           "large_specs", "summarize", "grid_section", "family_section", "large_section"]

GRID_KAPPAS = (1.0, 10.0, 1e2, 1e3, 1e4, 1e5)
GRID_TS = (10**4, 10**5, 10**6)
INSTANCES_PER_CELL = 6
NOISE_RATIOS = (0.0, 1e-3, 0.03, 1.0, 30.0)
SHAPES = ("log", "two_cluster", "one_stiff", "one_weak")
GRID_SEED = 2513
FAMILY_SEED = 9071
FAMILY2_SEED = 4242               # a second family, drawn after the first had informed the stages' tail
FAMILY_SIZE = 120
LARGE_SEED = 6151                 # the large-dimension family: drawn after both families, used for no rule
FAMILY3_SEED = 31337              # a third family, drawn after every rule of this release, used for no rule
LARGE_SIZE = 30
LARGE_MATRIX_T_MAX = 5 * 10**4    # its baselines project every step (a 60x60 eigh): T capped for matrices
PYTHON_T_MAX = 2 * 10**5          # Python oracles make one call per sample: larger T only compiled
FLOOR_REL = 1e-9                  # an excess below FLOOR_REL * (F(x0) - F*) counts as solved
SEEDS = 3


class Spec(dict):
    """The recipe of one problem (a dict of plain values: name, kind, domain, kappa, T, dims, seed...)."""

    @property
    def name(self):
        return self["name"]


# ---------------------------------------------------------------- spectra and centres
def spectrum(rng, n, kappa, shape, lam):
    """``n`` curvatures in ``[lam, kappa lam]``, both ends present, shuffled."""
    if n == 1:
        return np.array([lam * kappa])
    if shape == "log":
        u = np.linspace(0.0, 1.0, n)
    elif shape == "two_cluster":
        u = np.where(np.arange(n) < n // 2, 0.0, 1.0)
        u = np.where(u == 0, rng.uniform(0, 0.1, n), rng.uniform(0.9, 1.0, n))
        u[0], u[-1] = 0.0, 1.0
    elif shape == "one_stiff":
        u = rng.uniform(0.0, 0.3, n)
        u[0], u[-1] = 0.0, 1.0
    elif shape == "one_weak":
        u = rng.uniform(0.7, 1.0, n)
        u[0], u[-1] = 0.0, 1.0
    elif shape == "power":
        u = 1.0 - np.linspace(0.0, 1.0, n) ** 0.3
    else:
        raise ValueError(f"unknown spectrum shape {shape!r}")
    h = lam * float(kappa) ** u
    rng.shuffle(h)
    return h


def _sym(rng, n):
    Z = rng.normal(size=(n, n))
    return 0.5 * (Z + Z.T)


def _orth(rng, n):
    return np.linalg.qr(rng.normal(size=(n, n)))[0]


def _psd_center(rng, n, where, scale=1.0):
    """A symmetric matrix: PD (minimizer inside the cone) or with negative eigenvalues (boundary)."""
    Q = _orth(rng, n)
    if where == "inside":
        ev = rng.uniform(0.3, 1.5, n)
    else:
        ev = rng.uniform(-1.5, 1.5, n)
        ev[0], ev[-1] = -abs(ev[0]) - 0.3, abs(ev[-1]) + 0.3
    C = scale * (Q * ev) @ Q.T
    return 0.5 * (C + C.T)


# ---------------------------------------------------------------- domains
def _domain(kind, shape, where, center, rng):
    """``(domain, project)`` so that the unconstrained minimizer ``center`` is inside or outside."""
    if kind == "psd":
        return PSDCone(shape[0]), project_psd
    if kind == "trace_psd":
        n = shape[0]
        tr = float(np.trace(project_psd(center)))
        tau = max(tr, 1e-3) * (1.6 if where == "inside" else 0.5)
        dom = TraceBoundedPSD(n, tau)
        return dom, (lambda x, d=dom: d.project(np.array(x, dtype=float)))
    if kind == "ball":
        nrm = float(np.linalg.norm(center))
        r = nrm * (1.6 if where == "inside" else 0.5)
        dom = EuclideanBall(shape[0], r)
        return dom, (lambda x, d=dom: d.project(np.array(x, dtype=float)))
    if kind == "box":
        m = float(np.max(np.abs(center)))
        c = m * (1.3 if where == "inside" else rng.uniform(0.3, 0.7))
        dom = Box(-c, c, shape=shape)
        return dom, (lambda x, c=c: np.clip(x, -c, c))
    raise ValueError(f"unknown domain {kind!r}")


def _noise_for(ratio, g0_norm, n_entries):
    """Half-width ``s`` of uniform noise per entry with ``sqrt(n s^2 / 3) = ratio * ||g0||``."""
    return ratio * g0_norm / math.sqrt(n_entries / 3.0)


# ---------------------------------------------------------------- problem kinds
def _diag(spec):
    """Compiled weighted quadratic ``0.5 sum h (x - a)^2`` with uniform noise (``DiagonalQuadratic``)."""
    rng = np.random.default_rng(spec["seed"])
    lam, kappa, dom_kind = spec["lam"], spec["kappa"], spec["domain"]
    if dom_kind in ("psd", "trace_psd"):
        n = spec["n"]
        iu = np.triu_indices(n)
        h = np.zeros((n, n))
        h[iu] = spectrum(rng, len(iu[0]), kappa, spec["shape"], lam)
        h = np.maximum(h, h.T)
        a = _psd_center(rng, n, spec["where"])
        shape = (n, n)
    else:
        n = spec["n"]
        h = spectrum(rng, n, kappa, spec["shape"], lam)
        a = rng.normal(size=n) / math.sqrt(n) * 2.0
        shape = (n,)
    dom, proj = _domain(dom_kind, shape, spec["where"], a, rng)
    x0 = np.zeros(shape)
    if spec.get("x0") == "random":          # a feasible start away from 0
        z = rng.normal(size=shape) * float(np.linalg.norm(a)) / math.sqrt(a.size)
        x0 = np.array(proj(a + (0.5 * (z + z.T) if len(shape) == 2 else z)), dtype=float)
    g0 = h * (x0 - a)
    s = _noise_for(spec["noise"], float(np.linalg.norm(g0)), h.size)
    o = DiagonalQuadratic(h, a, noise=s)
    L = float(h.max())
    return Problem(spec["name"], _describe(spec), o, dom, float(h.min()), L, o.value,
                   lambda x: h * (np.asarray(x, dtype=float) - a), proj, spec["where"], x0=x0)


def _rotated_quadratic(spec, dist="normal"):
    """Python oracle of ``0.5 <x - a, H (x - a)>`` with a rotated ``H``; vectors or symmetric matrices."""
    rng = np.random.default_rng(spec["seed"])
    lam, kappa, dom_kind = spec["lam"], spec["kappa"], spec["domain"]
    if dom_kind in ("psd", "trace_psd"):
        n = spec["n"]
        U = _orth(rng, n)
        iu = np.triu_indices(n)
        w = np.zeros((n, n))
        w[iu] = spectrum(rng, len(iu[0]), kappa, spec["shape"], lam)
        w = np.maximum(w, w.T)
        a = _psd_center(rng, n, spec["where"])

        def grad(x):
            return U @ (w * (U.T @ (np.asarray(x, dtype=float) - a) @ U)) @ U.T

        def value(x):
            D = U.T @ (np.asarray(x, dtype=float) - a) @ U
            return 0.5 * float(np.sum(w * D * D))
        shape = (n, n)
        hmin, hmax = float(w.min()), float(w.max())
    else:
        n = spec["n"]
        Q = _orth(rng, n)
        hv = spectrum(rng, n, kappa, spec["shape"], lam)
        a = rng.normal(size=n) * 2.0 / math.sqrt(n)

        def grad(x):
            return Q @ (hv * (Q.T @ (np.asarray(x, dtype=float) - a)))

        def value(x):
            y = Q.T @ (np.asarray(x, dtype=float) - a)
            return 0.5 * float(np.dot(hv * y, y))
        shape = (n,)
        hmin, hmax = float(hv.min()), float(hv.max())
    dom, proj = _domain(dom_kind, shape, spec["where"], a, rng)
    x0 = np.zeros(shape)
    g0n = float(np.linalg.norm(grad(x0)))
    size = int(np.prod(shape))
    sd = spec["noise"] * g0n / math.sqrt(size)           # per-entry standard deviation
    df = spec.get("df")
    t_scale = math.sqrt((df - 2.0) / df) if df else 1.0
    sym = len(shape) == 2

    def fn(x, r):
        if df:
            Z = r.standard_t(df, size=shape) * (sd * t_scale)
        else:
            Z = r.normal(0.0, sd, size=shape)
        if sym:
            Z = np.triu(Z) + np.triu(Z, 1).T
        return grad(x) + Z

    o = FunctionOracle(fn, shape, value=value, lam=hmin)
    return Problem(spec["name"], _describe(spec), o, dom, hmin, hmax, value, grad, proj, spec["where"],
                   pass_L_to_auto=False, x0=x0)


def _least_squares(spec, loss="squared"):
    """Compiled least squares or logistic regression (``LinearModel``) with a rotated data spectrum."""
    rng = np.random.default_rng(spec["seed"])
    kappa, d, lam = spec["kappa"], spec["n"], spec["lam"]
    n_rows = spec.get("rows", 2000)
    s2 = spectrum(rng, d, kappa, spec["shape"], 1.0 / kappa) - 0.5 / kappa       # in [1/(2k), 1 - 1/(2k)]
    s2 = np.maximum(s2, 0.0)
    U = np.linalg.qr(rng.normal(size=(n_rows, d)))[0]
    V = _orth(rng, d)
    A = math.sqrt(n_rows) * (U * np.sqrt(s2)) @ V.T
    x_true = rng.normal(size=d) * 2.0 / math.sqrt(d) * 3.0
    lam = spec["lam"] = 0.5 / kappa * spec.get("lam_scale", 1.0)
    if loss == "squared":
        b = A @ x_true + spec["noise"] * rng.normal(size=n_rows)
    else:
        p = 1.0 / (1.0 + np.exp(-A @ x_true))
        b = np.where(rng.random(n_rows) < p, 1.0, -1.0)
    o = LinearModel(A, b, loss, lam)
    hess = (A.T @ A / n_rows) * (1.0 if loss == "squared" else 0.25) + lam * np.eye(d)
    ev = np.linalg.eigvalsh(hess)
    center = np.linalg.solve(hess, A.T @ b / n_rows) if loss == "squared" else x_true
    dom, proj = _domain(spec["domain"], (d,), spec["where"], center, rng)
    row = (1.0 if loss == "squared" else 0.25) * float(np.max(np.einsum("ij,ij->i", A, A))) + lam
    return Problem(spec["name"], _describe(spec), o, dom, lam, float(ev[-1]), o.value, o.grad, proj,
                   spec["where"], L_sample=row)


def _huber(spec):
    """Huber regression (delta = 1) as a Python oracle without ``L``; t(2) label noise."""
    rng = np.random.default_rng(spec["seed"])
    kappa, d = spec["kappa"], spec["n"]
    n_rows = 400
    s2 = spectrum(rng, d, kappa, spec["shape"], 1.0 / kappa) - 0.5 / kappa
    s2 = np.maximum(s2, 0.0)
    U = np.linalg.qr(rng.normal(size=(n_rows, d)))[0]
    A = math.sqrt(n_rows) * (U * np.sqrt(s2)) @ _orth(rng, d).T
    x_true = rng.normal(size=d) * 2.0 / math.sqrt(d)
    b = A @ x_true + rng.standard_t(2, size=n_rows)
    lam = spec["lam"] = 0.5 / kappa

    def fn(w, r):
        i = int(r.integers(n_rows))
        res = float(A[i] @ w) - b[i]
        return min(max(res, -1.0), 1.0) * A[i] + lam * w

    def value(w):
        res = np.abs(A @ w - b)
        return float(np.where(res <= 1, 0.5 * res * res, res - 0.5).mean()) + 0.5 * lam * float(w @ w)

    def grad(w):
        return A.T @ np.clip(A @ w - b, -1.0, 1.0) / n_rows + lam * w

    dom, proj = _domain(spec["domain"], (d,), spec["where"], x_true, rng)
    L = float(np.linalg.eigvalsh(A.T @ A / n_rows)[-1]) + lam
    o = FunctionOracle(fn, (d,), value=value, lam=lam)
    row = float(np.max(np.einsum("ij,ij->i", A, A))) + lam
    return Problem(spec["name"], _describe(spec), o, dom, lam, L, value, grad, proj, spec["where"],
                   pass_L_to_auto=False, L_sample=row)


def _metric(spec):
    """Metric learning (compiled ``MetricLearning``, uniform pairs) on random clusters; ``lam = 1/kappa``."""
    rng = np.random.default_rng(spec["seed"])
    n, d = 120, spec["n"]
    k = max(1, d // 3)
    y = rng.integers(0, 3, n)
    X = 0.5 * rng.normal(size=(n, d))
    X[:, :k] += rng.normal(size=(3, k))[y]
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    lam = spec["lam"] = 0.4 / spec["kappa"]
    o = MetricLearning(X, y, lam, n_eval_pairs=100, eval_rng=0, n_threads=1)
    obj = _PairObjective(X, y, lam)
    return Problem(spec["name"], _describe(spec), o, PSDCone(d), lam, o.L, obj.value, obj.grad, project_psd,
                   "boundary")


_KINDS = {"diag": _diag, "python": _rotated_quadratic, "ls": _least_squares,
          "logistic": lambda s: _least_squares(s, "logistic"), "huber": _huber, "metric": _metric,
          "python_t": lambda s: _rotated_quadratic(s, "t")}


def _describe(spec):
    dims = f"{spec['n']}x{spec['n']}" if spec["domain"] in ("psd", "trace_psd") else f"d={spec['n']}"
    return (f"{spec['kind']} on {spec['domain']} ({dims}), L/lam={spec['kappa']:g}, {spec['shape']} spectrum, "
            f"minimizer {spec['where']}, noise ratio {spec['noise']:g}")


def build(spec):
    """The :class:`logt.bench.bank.Problem` of a spec (not solved: call ``solve()``)."""
    return _KINDS[spec["kind"]](spec)


# ---------------------------------------------------------------- the two generators
def _kappa_tag(k):
    return f"{k:.0e}".replace("e+0", "e").replace("e+", "e")


def grid_specs(kappas=GRID_KAPPAS, Ts=GRID_TS, per_cell=INSTANCES_PER_CELL):
    """The grid's problem recipes, cell by cell (each cell from its own seed)."""
    out = []
    for kappa in kappas:
        ki = GRID_KAPPAS.index(kappa) if kappa in GRID_KAPPAS else int(round(10 * math.log10(kappa))) + 100
        for T in Ts:
            rng = np.random.default_rng(np.random.SeedSequence([GRID_SEED, ki, int(T)]))
            for i in range(per_cell):
                slot = i % 6
                if slot < 4:
                    kind, dom = "diag", ("psd", "ball", "box", "trace_psd")[slot]
                elif slot == 4:
                    dom = ("psd", "ball", "box")[(ki + i) % 3]
                    kind = "python" if T <= PYTHON_T_MAX else "diag"
                else:
                    kind, dom = "ls", ("ball", "box")[(ki + int(math.log10(T))) % 2]
                matrix = dom in ("psd", "trace_psd")
                n = int(rng.integers(3, 15)) if matrix else int(round(math.exp(rng.uniform(math.log(5),
                                                                                            math.log(200)))))
                if kind == "python":
                    n = min(n, 8) if matrix else min(n, 40)
                spec = Spec(
                    kind=kind, domain=dom, kappa=float(kappa), T=int(T), n=n,
                    shape=SHAPES[(i + ki) % len(SHAPES)],
                    where=("inside", "boundary")[(i + ki + int(math.log10(T))) % 2],
                    noise=NOISE_RATIOS[(i + 2 * ki + int(math.log10(T))) % len(NOISE_RATIOS)] if kind != "ls"
                    else float(rng.choice([0.0, 0.1, 0.5, 2.0])),
                    lam=float(10.0 ** rng.uniform(-2, 1)),
                    seed=int(rng.integers(2**31)))
                spec["name"] = f"k{_kappa_tag(kappa)}_T{_kappa_tag(T)}_{i}_{kind}_{dom}"
                out.append(spec)
    return out


def _random_head(rng, kinds, vector_only):
    """A generated problem's kind (from ``kinds``), ``L/lam`` (log-uniform in ``[1, 1e5]``), ``T``
    (log-uniform in ``[1e4, 1e6]``, two significant digits) and domain (a ball or a box for the kinds in
    ``vector_only``, the PSD cone for metric learning, any of the four otherwise), drawn in this order."""
    kind = kinds[int(rng.integers(len(kinds)))]
    kappa = float(10.0 ** rng.uniform(0.0, 5.0))
    T = int(float(f"{10.0 ** rng.uniform(4.0, 6.0):.2g}"))
    if kind in vector_only:
        dom = ("ball", "box")[int(rng.integers(2))]
    elif kind == "metric":
        dom = "psd"
    else:
        dom = ("psd", "ball", "box", "trace_psd")[int(rng.integers(4))]
    return kind, kappa, T, dom


def _random_spec(rng, kind, dom, kappa, T, n):
    """A generated family's recipe once kind, domain, ``L/lam``, ``T`` and size are drawn: spectrum shape,
    minimizer, noise, ``lam``, seed and start drawn from ``rng`` (in this order)."""
    spec = Spec(kind=kind, domain=dom, kappa=kappa, T=T, n=n,
                shape=("log", "power", "two_cluster", "one_stiff", "one_weak")[int(rng.integers(5))],
                where=("inside", "boundary")[int(rng.integers(2))],
                noise=float(10.0 ** rng.uniform(-2, 2)) if rng.random() < 0.85 else 0.0,
                lam=float(10.0 ** rng.uniform(-3, 2)), seed=int(rng.integers(2**31)),
                x0="random" if rng.random() < 0.3 else "zero", df=3.0 if kind == "python_t" else None)
    if kind == "ls":
        spec["noise"] = float(rng.choice([0.0, 0.2, 1.0, 3.0]))
    return spec


def family_specs(size=FAMILY_SIZE, seed=FAMILY_SEED):
    """The held-out family's recipes: ``size`` problems, ``L/lam`` log-uniform in ``[1, 1e5]``,
    ``T`` log-uniform in ``[1e4, 1e6]`` (two significant digits), kinds and domains at random."""
    rng = np.random.default_rng(np.random.SeedSequence([seed]))
    prefix = {FAMILY_SEED: "f", FAMILY2_SEED: "g", FAMILY3_SEED: "j"}.get(seed, f"s{seed}-")  # names key the cache
    kinds = ("diag", "diag", "python_t", "logistic", "huber", "metric", "ls", "python")
    out = []
    for i in range(size):
        kind, kappa, T, dom = _random_head(rng, kinds, vector_only=("logistic", "ls", "huber"))
        if kind in ("python", "python_t", "huber"):
            T = min(T, PYTHON_T_MAX)
        matrix = dom in ("psd", "trace_psd")
        n = int(rng.integers(3, 13)) if matrix else int(rng.integers(4, 120))
        if kind in ("python", "python_t", "huber"):
            n = min(n, 7) if matrix else min(n, 30)
        if kind == "metric":
            n = int(rng.integers(4, 11))
        spec = _random_spec(rng, kind, dom, kappa, T, n)
        spec["name"] = f"{prefix}{i:03d}_{kind}_{dom}"
        out.append(spec)
    return out


def large_specs(size=LARGE_SIZE, seed=LARGE_SEED):
    """The large-dimension family's recipes: ``size`` problems drawn like :func:`family_specs` (``L/lam``
    log-uniform in ``[1, 1e5]``, ``T`` in ``[1e4, 1e6]``) in dimensions the families do not reach:
    weighted quadratics with ``d`` log-uniform in ``[500, 5000]`` (vectors) or ``n x n`` matrices with
    ``n`` in ``[20, 60]`` (400 to 3,600 entries), least squares and logistic regression with ``d`` in
    ``[200, 1000]`` (``2d`` rows at least), Python rotated quadratics with ``d`` in ``[200, 500]``,
    metric learning with ``d`` in ``[20, 40]``. Matrix problems have ``T <= LARGE_MATRIX_T_MAX`` and Python
    ones ``T <= 5e4``: the baselines project (or call Python) at every step."""
    rng = np.random.default_rng(np.random.SeedSequence([seed]))
    kinds = ("diag", "diag", "diag", "ls", "logistic", "python", "metric")
    out = []
    for i in range(size):
        kind, kappa, T, dom = _random_head(rng, kinds, vector_only=("ls", "logistic", "python"))
        matrix = dom in ("psd", "trace_psd")
        if kind == "metric":
            n = int(rng.integers(20, 41))
        elif matrix:
            n = int(rng.integers(20, 61))
        else:
            lo, hi = {"diag": (500, 5000), "python": (200, 500)}.get(kind, (200, 1000))
            n = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
        if matrix:
            T = min(T, LARGE_MATRIX_T_MAX)
        if kind == "python":
            T = min(T, 5 * 10**4)
        spec = _random_spec(rng, kind, dom, kappa, T, n)
        if kind in ("ls", "logistic"):
            spec["rows"] = max(2000, 2 * n)
        spec["name"] = f"h{i:03d}_{kind}_{dom}"
        out.append(spec)
    return out


_CACHE = {}


def problem(spec, solve=True):
    """The problem of ``spec`` (built once per process; solved when ``solve``)."""
    key = spec["name"]
    if key not in _CACHE:
        _CACHE[key] = build(spec)
    p = _CACHE[key]
    if solve:
        p.solve()
    return p


def grid_instances(**kw):
    return [problem(s) for s in grid_specs(**kw)]


def family_problems(**kw):
    return [problem(s) for s in family_specs(**kw)]


# ---------------------------------------------------------------- running
RUN_KEYS = ("default", "sgd", "epoch_gd")
BASELINES = ("sgd", "epoch_gd")


def _call(p, key, T, rng):
    from logt import minimize
    if key == "default":
        return minimize(p.oracle, p.domain, T, lam=p.lam, x0=p.x0, rng=rng)
    opts = {"average": "suffix"} if key == "sgd" else None
    return minimize(p.oracle, p.domain, T, method=key, options=opts, L=p.L_sample, lam=p.lam, x0=p.x0,
                    rng=rng)


def run_one(task):
    """One run: ``task = (spec, key, seed, f_star, gap0)``; returns a record (dict). The default's record
    also keeps what it measured and planned (``L_est``, ``lam``, ``diag``: the gradient noise at ``x0``,
    the stages, the tail and the end-of-run check), for the analysis of a miss."""
    import warnings
    spec, key, seed, f_star, gap0 = task
    p = problem(spec, solve=False)
    T = spec["T"]
    rng = np.random.default_rng(np.random.SeedSequence([seed, RUN_KEYS.index(key), T, 25]))
    rec = {"problem": spec["name"], "key": key, "seed": seed, "T": T, "kappa": spec["kappa"],
           "excess": math.nan, "n_projections": -1, "n_calls": -1, "method": key, "success": None,
           "error": None, "seconds": math.nan, "warned": False}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = _call(p, key, T, rng)
    except (FloatingPointError, ValueError) as exc:
        rec["error"] = f"{type(exc).__name__}: {exc}"[:300]
        return rec
    rec["seconds"] = time.perf_counter() - t0
    rec["excess"] = float(p.value(res.x) - f_star)
    rec["n_projections"], rec["n_calls"] = int(res.n_projections), int(res.n_calls)
    rec["method"] = res.method
    rec["success"] = bool(res.success)
    rec["message"] = res.message
    rec["warned"] = any(type(w.message).__name__ == "ConvergenceWarning" for w in caught)
    if key == "default":
        prm = res.params
        rec["L_est"] = prm.get("L_est")
        rec["chosen_by"] = prm.get("chosen_by")
        rec["lam"] = float(p.lam)
        chk = (prm.get("convergence") or {}).get("check") or {}
        rec["diag"] = {k: prm.get(k) for k in ("noise_sigma2", "noise_mean_sq", "K_need", "stages", "tail",
                                               "proj_budget", "fallback", "bias_limited")}
        rec["diag"]["check"] = {k: chk.get(k) for k in ("R", "grad_map_norm", "noise_norm", "n_batches")}
    return rec


def run_records(specs, keys=RUN_KEYS, seeds=range(SEEDS), n_jobs=1, log=None):
    """Solve each problem's reference (here), then run every ``(problem, key, seed)``; returns records."""
    from logt.experiments._parallel import run_tasks
    log = log or (lambda msg: None)
    tasks = []
    refs = {}
    for s in specs:
        t0 = time.perf_counter()
        p = problem(s)
        refs[s["name"]] = (p.f_star, float(p.value(p.x0) - p.f_star))
        log(f"{s['name']}: reference in {time.perf_counter() - t0:.1f} s ({p.ref['iterations']} iterations)")
        for key in keys:
            for seed in seeds:
                tasks.append((s, key, int(seed), p.f_star, refs[s["name"]][1]))
    done = [0]

    def on_done(t, r):
        done[0] += 1
        if done[0] % 50 == 0 or done[0] == len(tasks):
            log(f"{done[0]}/{len(tasks)} runs")
    recs = run_tasks(run_one, tasks, n_jobs, on_done)
    for r in recs:
        r["gap0"] = refs[r["problem"]][1]
        r["f_star"] = refs[r["problem"]][0]
    return recs


def _floor(r):
    return FLOOR_REL * max(r["gap0"], 0.0) + 1e-13 * max(1.0, abs(r["f_star"]))


def effective_excess(r):
    """The run's excess, floored at ``FLOOR_REL`` of the start's (an excess below it counts as solved)."""
    return max(r["excess"], _floor(r)) if math.isfinite(r["excess"]) else math.inf


def summarize(records):
    """Per problem: the default's mean excess over the best baseline's (both floored), its choice,
    projections, success count; per run the ratio to that best baseline. Returns a list of dicts."""
    by = {}
    for r in records:
        by.setdefault(r["problem"], {}).setdefault(r["key"], []).append(r)
    rows = []
    for name, d in by.items():
        base = {}
        for k in BASELINES:
            rs = d.get(k, [])
            ok = [effective_excess(r) for r in rs if r["error"] is None]
            base[k] = float(np.mean(ok)) if ok and len(ok) == len(rs) else math.inf
        best_key = min(base, key=base.get)
        best = base[best_key]
        runs = d.get("default", [])
        ex = [effective_excess(r) for r in runs]
        mean = float(np.mean(ex)) if ex else math.nan
        first = runs[0] if runs else {}
        rows.append({
            "problem": name, "T": first.get("T"), "kappa": first.get("kappa"),
            "ratio": mean / best if best > 0 else math.inf, "best_baseline": best_key,
            "default_excess": mean, "best_excess": best,
            "methods": sorted({r["method"] for r in runs}),
            "proj_frac": max((r["n_projections"] / r["T"] for r in runs), default=math.nan),
            "n_projections": float(np.mean([r["n_projections"] for r in runs])) if runs else math.nan,
            "successes": sum(bool(r["success"]) for r in runs), "runs": len(runs),
            "errors": sum(r["error"] is not None for r in runs),
            "run_ratios": [effective_excess(r) / best if best > 0 else math.inf for r in runs],
            "run_success": [bool(r["success"]) for r in runs],
        })
    return rows


def headline(rows):
    """``(worst ratio, 90th percentile, success=True runs at >= 10x, worst projection share)``."""
    ratios = np.array([r["ratio"] for r in rows], dtype=float)
    bad = sum(1 for r in rows for q, s in zip(r["run_ratios"], r["run_success"]) if s and q >= 10.0)
    worst_proj = max((r["proj_frac"] for r in rows), default=math.nan)
    return float(np.max(ratios)), float(np.percentile(ratios, 90)), bad, worst_proj


# ---------------------------------------------------------------- the report
QUICK_KAPPAS = GRID_KAPPAS
QUICK_TS = (10**4,)
SEEDS_FULL = 5
SEEDS_QUICK = 3


def _fmt(v, fmt=".3g"):
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)


def _choice(row):
    return "+".join(m.replace("logt_acc", "stages").replace("logt", "epochs") for m in row["methods"])


def problem_table(rows, specs):
    """One Markdown row per problem: the default's mean excess over the best baseline's, its choice,
    projections (largest share of ``T`` over the seeds), success count, and the problem's recipe."""
    by = {s["name"]: s for s in specs}
    lines = ["| problem | L/lam | T | domain (dims) | spectrum | minimizer | noise | default / best baseline | "
             "best baseline | chose | projections (max % of T) | success |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = by[r["problem"]]
        dims = f"{s['n']}x{s['n']}" if s["domain"] in ("psd", "trace_psd") else f"d={s['n']}"
        lines.append(f"| {r['problem']} | {s['kappa']:.3g} | {s['T']:.0e} | {s['kind']} {s['domain']} ({dims}) | "
                     f"{s['shape']} | {s['where']} | {_fmt(s['noise'])} | {_fmt(r['ratio'], '.2f')} | "
                     f"{'SGD' if r['best_baseline'] == 'sgd' else 'Epoch-GD'} | {_choice(r)} | "
                     f"{_fmt(100 * r['proj_frac'], '.2f')}% | {r['successes']}/{r['runs']} |")
    return "\n".join(lines)


def cell_table(rows, specs):
    """One Markdown row per cell ``(L/lam, T)`` of the grid: worst and median ratio over its problems,
    the choices, the largest projection share, successes, and successes at 10x or more."""
    by = {s["name"]: s for s in specs}
    cells = {}
    for r in rows:
        s = by[r["problem"]]
        cells.setdefault((s["kappa"], s["T"]), []).append(r)
    lines = ["| L/lam | T | problems | worst ratio | median ratio | chose (epochs / stages) | "
             "max projections | success | success at >= 10x |", "|---|---|---|---|---|---|---|---|---|"]
    for (k, T), rs in sorted(cells.items()):
        ratios = [r["ratio"] for r in rs]
        ep = sum(r["methods"] == ["logt"] for r in rs)
        bad = sum(1 for r in rs for q, ok in zip(r["run_ratios"], r["run_success"]) if ok and q >= 10)
        lines.append(f"| {k:.0e} | {T:.0e} | {len(rs)} | {max(ratios):.2f} | {float(np.median(ratios)):.2f} | "
                     f"{ep} / {len(rs) - ep} | {100 * max(r['proj_frac'] for r in rs):.2f}% | "
                     f"{sum(r['successes'] for r in rs)}/{sum(r['runs'] for r in rs)} | {bad} |")
    return "\n".join(lines)


def summary_line(rows):
    w, p90, bad, wp = headline(rows)
    within = sum(r["ratio"] <= 3.0 for r in rows)
    honest = sum(r["ratio"] <= 3.0 or r["successes"] == 0 for r in rows)
    return (f"**Summary** ({len(rows)} problems): worst ratio {w:.3g}, 90th percentile {p90:.3g}; within 3x of the "
            f"best baseline: {within}/{len(rows)} (within 3x or success=False on every seed: {honest}/{len(rows)}); "
            f"runs with success=True at >= 10x: {bad}; largest projection share {100 * wp:.2f}% of T.")


def _run_and_summarize(specs, seeds, log, n_jobs):
    recs = run_records(specs, seeds=seeds, log=log, n_jobs=n_jobs)
    rows = summarize(recs)
    order = {s["name"]: i for i, s in enumerate(specs)}
    rows.sort(key=lambda r: order[r["problem"]])
    return recs, rows


def grid_section(quick=False, log=print, n_jobs=1):
    """The grid part of ``python -m logt.bench --only bank``: per cell and per problem, the default call
    against the best of SGD (suffix averaging) and Epoch-GD, and the summary line."""
    t0 = time.perf_counter()
    if quick:
        specs = grid_specs(QUICK_KAPPAS, QUICK_TS)
        seeds = range(SEEDS_QUICK)
    else:
        specs = grid_specs()
        seeds = range(SEEDS_FULL)
    recs, rows = _run_and_summarize(specs, seeds, log, n_jobs)
    return "\n".join([
        "### The grid: the default call `logt.minimize(oracle, domain, T, lam=lam)` at every L/lam and T",
        "",
        f"Each problem: the mean over {len(seeds)} seeds of the default's exact excess `F(x_T) - F*` over the best "
        "baseline's (SGD with suffix averaging or Epoch-GD, both given the single-sample smoothness `L`, step "
        f"caps on); an excess below {FLOOR_REL:g} of the start's counts as solved. Target: within 3x, at most "
        "2% of T in projections, no success=True run at 10x or more. \"chose\": logT's epochs or the accelerated "
        "stages (`result.method` logt / logt_acc).",
        "",
        summary_line(rows),
        "",
        cell_table(rows, specs),
        "",
        problem_table(rows, specs),
        "",
        f"_Grid time: {time.perf_counter() - t0:.0f} s ({len(recs)} runs)._",
    ])


def _generated_section(specs, title, description, label, log, n_jobs):
    """A generated family's report: runs (``SEEDS_QUICK`` seeds), summary line and problem table."""
    t0 = time.perf_counter()
    seeds = range(SEEDS_QUICK)
    recs, rows = _run_and_summarize(specs, seeds, log, n_jobs)
    return "\n".join([
        f"## {title}", "", f"{description} Means over {len(seeds)} seeds; the same comparison as the grid.", "",
        summary_line(rows), "", problem_table(rows, specs), "",
        f"_{label} time: {time.perf_counter() - t0:.0f} s ({len(recs)} runs)._",
    ])


def family_section(quick=False, log=print, n_jobs=1, seed=FAMILY_SEED):
    """``python -m logt.bench --only family``: the held-out family (never used to choose a rule);
    ``--only family2`` (``seed=FAMILY2_SEED``): the second one, drawn after the first had informed a rule;
    ``--only family3`` (``seed=FAMILY3_SEED``): the third, drawn after every rule of this release."""
    specs = family_specs(seed=seed)
    if quick:
        specs = [s for s in specs if s["T"] <= 30_000][:12]
    number = {FAMILY_SEED: "", FAMILY2_SEED: " 2", FAMILY3_SEED: " 3"}.get(seed, f" (seed {seed})")
    return _generated_section(
        specs, f"Held-out family{number}: {len(specs)} generated problems never used to choose a rule",
        f"Generated by `logt.bench.grid.family_specs(seed={seed})`: L/lam log-uniform in [1, 1e5], T "
        "log-uniform in [1e4, 1e6] (Python oracles at most 2e5), kinds: weighted quadratics (compiled), rotated "
        "quadratics with Gaussian or Student-t noise (Python), logistic and least-squares regression "
        "(compiled), Huber regression (Python), metric learning (compiled); 30% start away from 0.",
        "Family", log, n_jobs)


def large_section(quick=False, log=print, n_jobs=1):
    """``python -m logt.bench --only large``: the large-dimension family (:func:`large_specs`)."""
    specs = large_specs()
    if quick:
        specs = [s for s in specs if s["T"] <= 25_000][:3]
    return _generated_section(
        specs, f"Large dimensions: {len(specs)} generated problems in 200 to 5,000 dimensions",
        f"Generated by `logt.bench.grid.large_specs()` (seed {LARGE_SEED}), drawn after the families and used "
        "for no rule: L/lam log-uniform in [1, 1e5], T in [1e4, 1e6] (matrices and Python oracles at most 5e4: "
        "the baselines project or call Python at every step); weighted quadratics with d in [500, 5000] or "
        "n x n matrices with n in [20, 60], least squares and logistic regression with d in [200, 1000], "
        "Python rotated quadratics with d in [200, 500], metric learning with d in [20, 40].",
        "Large-dimension family", log, n_jobs)
