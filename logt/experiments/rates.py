"""Measured convergence rates of the projection-free baselines (``python -m logt.experiments.rates``).

For each (method, problem) pair, ``repeats`` runs at every budget ``T`` of a
geometric grid; the table gives the mean excess ``F(x_T) - F*`` and the fitted
slope of ``log(mean excess)`` against ``log T`` over ``T >= fit_from``
(published: Frank-Wolfe ``-1/3`` in oracle calls, i.e. ``O(1/K)`` in its ``K``
iterations; SGD with one projection ``-1`` up to a log factor, ``O(log T / T)``).

Problems (``F*`` from the closed-form projection of ``A`` or an accelerated
projected gradient method run to convergence):

* ``trace_face``: ``0.5||W - A||^2`` (the compiled ``PSDQuadratic``, noise 1) over
  ``TraceBoundedPSD(5, 1)``, ``A = diag(0.6, 0.5, 0.4, -1, -3)``: ``W*`` has rank 3
  (the relative interior of a face, not an extreme point).
* ``trace_vertex``: the same with ``A = diag(2, 1, 0.5, -1, -3)``: ``W* = e1 e1^T``
  is an extreme point.
* ``ball``: ``kappa``'s ball problem at ``L/lam = 10`` (``W*`` on the sphere).
* ``psd``: ``0.5||W - A||^2`` over the PSD cone, ``A = diag(2, 1, 0.5, -1, -2)``
  (``W*`` has rank 3), for one-projection SGD with ``penalty = 2||grad F(W*)||``.
"""
import argparse
import math
import sys
import time

import numpy as np

from logt._minimize import minimize
from logt.domains import PSDCone, TraceBoundedPSD
from logt.experiments import kappa as _kappa
from logt.experiments._parallel import default_jobs, run_tasks
from logt.experiments.report import Progress, format_table, write_records
from logt.oracles import PSDQuadratic


def make(problem):
    """``(oracle, domain, f_star, options for one_projection_sgd)``."""
    if problem in ("trace_face", "trace_vertex"):
        a = [0.6, 0.5, 0.4, -1.0, -3.0] if problem == "trace_face" else [2.0, 1.0, 0.5, -1.0, -3.0]
        oracle, dom = PSDQuadratic(np.diag(a)), TraceBoundedPSD(5, 1.0)
        w = dom.project(np.diag(a))
        return oracle, dom, oracle.value(w), {}
    if problem == "psd":
        A = np.diag([2.0, 1.0, 0.5, -1.0, -2.0])
        oracle = PSDQuadratic(A)
        w = PSDCone(5).project(A)
        return oracle, PSDCone(5), oracle.f_star, {"penalty": 2.0 * float(np.linalg.norm(w - A))}
    if problem == "ball":
        oracle, dom = _kappa.make_problem("ball", 10)
        w, f = _kappa.reference_solution(oracle, dom)
        return oracle, dom, f, {"penalty": 2.0 * float(np.linalg.norm(oracle.grad(w)))}
    raise ValueError(problem)


PAIRS = (("frank_wolfe", "trace_face"), ("frank_wolfe", "trace_vertex"), ("frank_wolfe", "ball"),
         ("one_projection_sgd", "psd"), ("one_projection_sgd", "ball"))


def _one(task):
    method, problem, T, rep, seed = task
    oracle, dom, f_star, opts = make(problem)
    if method != "one_projection_sgd":
        opts = {}
    rng = np.random.default_rng(np.random.SeedSequence([seed, PAIRS.index((method, problem)), T, rep]))
    res = minimize(oracle, dom, T, method=method, options=opts, rng=rng)
    return {"method": method, "problem": problem, "T": T, "repeat": rep, "excess": res.fun - f_star,
            "n_calls": res.n_calls, "n_projections": res.n_projections,
            "n_lmo": res.params.get("n_lmo", 0)}


def run(T_min=10**3, T_max=10**6, per_decade=2, repeats=10, seed=0, pairs=PAIRS, n_jobs=None, progress=True):
    n = int(round(per_decade * math.log10(T_max / T_min))) + 1
    grid = [int(round(t)) for t in np.geomspace(T_min, T_max, n)]
    tasks = [(m, p, T, r, seed) for (m, p) in pairs for T in grid for r in range(repeats)]
    bar = Progress(len(tasks), "rates", enabled=progress)
    return run_tasks(_one, tasks, n_jobs or default_jobs(), lambda t, r: bar.update(1))


def summarize(recs, fit_from=10**4):
    out, slopes = [], {}
    for (m, p) in PAIRS:
        rows = [r for r in recs if r["method"] == m and r["problem"] == p]
        if not rows:
            continue
        Ts = sorted({r["T"] for r in rows})
        means = []
        for T in Ts:
            ex = [r["excess"] for r in rows if r["T"] == T]
            means.append(float(np.mean(ex)))
            out.append({"method": m, "problem": p, "T": T, "mean_excess": means[-1],
                        "sem_excess": float(np.std(ex, ddof=1) / math.sqrt(len(ex))) if len(ex) > 1 else 0.0,
                        "n_calls": int(np.mean([r["n_calls"] for r in rows if r["T"] == T])),
                        "n_projections": int(np.mean([r["n_projections"] for r in rows if r["T"] == T])),
                        "n_lmo": int(np.mean([r["n_lmo"] for r in rows if r["T"] == T]))})
        sel = [(T, v) for T, v in zip(Ts, means) if T >= fit_from and v > 0]
        if len(sel) >= 2:
            slopes[(m, p)] = float(np.polyfit(np.log10([s[0] for s in sel]), np.log10([s[1] for s in sel]), 1)[0])
    return out, slopes


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m logt.experiments.rates", description=__doc__.split("\n")[0])
    ap.add_argument("--T-min", type=lambda s: int(float(s)), default=10**3)
    ap.add_argument("--T-max", type=lambda s: int(float(s)), default=10**6)
    ap.add_argument("--per-decade", type=int, default=2)
    ap.add_argument("--fit-from", type=lambda s: int(float(s)), default=10**4)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--out", default="results/rates")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    recs = run(args.T_min, args.T_max, args.per_decade, args.repeats, args.seed, n_jobs=args.jobs,
               progress=not args.quiet)
    summary, slopes = summarize(recs, args.fit_from)
    body = [[s["method"], s["problem"], f"{s['T']:,}", f"{s['mean_excess']:.3g}", f"{s['sem_excess']:.2g}",
             f"{s['n_projections']:,}", f"{s['n_lmo']:,}"] for s in summary]
    print(format_table(["method", "problem", "T", "mean excess", "sem", "projections", "LMO calls"], body))
    print()
    print(format_table(["method", "problem", f"slope of log excess vs log T (T >= {args.fit_from:,})",
                        "published"],
                       [[m, p, f"{v:.2f}", "-1/3 (O(1/K), K ~ T^(1/3))" if m == "frank_wolfe"
                         else "-1 up to log T (O(log T / T))"] for (m, p), v in slopes.items()]))
    files = write_records(summary, args.out, "rates_summary")
    print(f"\nwrote {', '.join(files)}  ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
