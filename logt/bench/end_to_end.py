"""End-to-end cases: whole runs of logT, SGD and Epoch-GD (``logt.minimize``) and of
projected SGD written in NumPy, with their wall-clock and final ``F``.

Budgets (named so the lead can switch them):

* Toy (5 x 5 PSD, ``F(W) = 0.5 ||W||_F^2``): every contender at ``TOY_T = 10^6``
  oracle calls; logT (its default, ``params="auto"``) also at ``TOY_T_LOGT_MATCH``,
  where its F is at least as good as SGD's at 10^6 (at equal T its constant is
  1-1.6x SGD's; Theorem 1's is ~5x, the paper's Fig. 1a).
* Adult (a9a train, F on 10^4 a9a.t pairs): SGD, Epoch-GD and the NumPy SGD at
  ``ADULT_T_SGD = 2*10^4`` (each NumPy step: one 123 x 123 eigh, ~1 ms); logT at
  ``ADULT_T_LOGT = 10^5`` with its default ``params="auto"`` (at most 0.75% of T
  projections), which reaches an F at least as good as SGD's at 2*10^4
  (Theorem 1 would give M = 402, i.e. 804 projections per epoch).
* ``quick=True`` scales everything down (a smoke run of a few seconds).
"""
import time

import numpy as np

import logt
from logt.bench import references as ref
from logt.domains import PSDCone
from logt.oracles import PSDQuadratic
from logt.oracles.metric import MetricLearning

TOY_T = 10**6
TOY_T_LOGT_MATCH = 10**7
ADULT_T_SGD = 2 * 10**4
ADULT_T_LOGT = 10**5
ADULT_EVAL_PAIRS = 10**4

QUICK_TOY_T = 10**4
QUICK_TOY_T_LOGT_MATCH = 10**5
QUICK_ADULT_T_SGD = 200
QUICK_ADULT_T_LOGT = 10**4

SEED = 0


def toy_problem():
    """``(oracle, domain, numpy_sgd)`` of the paper's toy: A = 0, noise 1, d = 5."""
    oracle = PSDQuadratic(np.zeros((ref.TOY_D, ref.TOY_D)), 1.0)
    return oracle, PSDCone(ref.TOY_D), lambda T, rng: ref.numpy_projected_sgd_toy(T, rng)


_ADULT = {}


def adult_problem(data_dir=None):
    """``(oracle, domain, numpy_sgd, source)`` for Adult: train on a9a, ``F`` on 10^4
    pairs of a9a.t; synthetic a9a-like train/eval sets when the files are absent."""
    key = str(data_dir)
    if key not in _ADULT:
        d = ref.find_data_dir(data_dir)
        if d is not None and (d / "a9a.gz").is_file() and (d / "a9a.t.gz").is_file():
            from logt.datasets import load_adult
            X, y, Xe, ye = load_adult(d)
            src = "real"
        else:
            (X, y), (Xe, ye), src = ref.a9a_like(0), ref.a9a_like(2), "synthetic"
        oracle = MetricLearning(X, y, ref.METRIC_LAM, X_eval=Xe, y_eval=ye, n_eval_pairs=ADULT_EVAL_PAIRS)
        Xd = X.toarray()
        _ADULT[key] = (oracle, PSDCone(X.shape[1]),
                       lambda T, rng: ref.numpy_projected_sgd_metric(Xd, y, T, rng), src)
    return _ADULT[key]


def cases(quick=False, problems=("toy", "adult"), data_dir=None):
    """List of case dicts: ``problem``, ``contender``, ``T`` and ``run()`` -> ``(W, n_projections)``.

    Contenders: "logT" (and on the toy "logT (equal F)" at the larger budget),
    "SGD", "Epoch-GD" (compiled, via ``logt.minimize``), "NumPy SGD" (the outside
    reference). ``oracle`` evaluates ``F`` for all of them.
    """
    out = []

    def add(problem, oracle, domain, numpy_sgd, rows):
        for contender, method, T, kw in rows:
            if method == "numpy":
                run = (lambda f, T: lambda: (f(T, np.random.default_rng(SEED)), T))(numpy_sgd, T)
            else:
                run = (lambda m, T, kw: lambda: _minimize(oracle, domain, T, m, kw))(method, T, kw)
            out.append({"problem": problem, "contender": contender, "T": T, "run": run,
                        "oracle": oracle, "method": method, "params": kw})

    if "toy" in problems:
        o, dom, npsgd = toy_problem()
        T, Tm = (QUICK_TOY_T, QUICK_TOY_T_LOGT_MATCH) if quick else (TOY_T, TOY_T_LOGT_MATCH)
        add("toy", o, dom, npsgd, [("logT", "logt", T, {}), ("logT (equal F)", "logt", Tm, {}),
                                   ("SGD", "sgd", T, {}), ("Epoch-GD", "epoch_gd", T, {}),
                                   ("NumPy SGD", "numpy", T, {})])
    if "adult" in problems:
        o, dom, npsgd, src = adult_problem(data_dir)
        Ts, Tl = (QUICK_ADULT_T_SGD, QUICK_ADULT_T_LOGT) if quick else (ADULT_T_SGD, ADULT_T_LOGT)
        add(f"adult ({src})", o, dom, npsgd, [("logT", "logt", Tl, adult_logt_params(o, Tl)),
                                              ("SGD", "sgd", Ts, {}), ("Epoch-GD", "epoch_gd", Ts, {}),
                                              ("NumPy SGD", "numpy", Ts, {})])
    return out


def adult_logt_params(oracle, T):
    """logT's options on Adult: its default rule, ``params="auto"`` (no tuning on this data)."""
    return {"params": "auto"}


def _minimize(oracle, domain, T, method, kw):
    r = logt.minimize(oracle, domain, T, method=method, options=kw, rng=SEED)
    return r.x, r.n_projections


def timed(case):
    """Run a case once: ``{"seconds", "F", "n_projections"}`` (F evaluated outside the timing)."""
    t0 = time.perf_counter()
    W, n_proj = case["run"]()
    sec = time.perf_counter() - t0
    return {"seconds": sec, "F": float(case["oracle"].value(W)), "n_projections": int(n_proj)}
