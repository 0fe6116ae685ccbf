"""The toy experiment (the paper's Fig. 1a and 1b).

``F(W) = 0.5*||W||_F^2`` over the cone of 5x5 PSD matrices, oracle ``W + Z``
with ``Z`` symmetric uniform on ``[-1, 1]`` (``L = lam = 1``, ``F_* = 0``).
For each method (logt, epoch_gd, sgd) and each budget ``T`` on a geometric
grid, ``repeats`` independent runs; the table gives the mean and std of
``(F(W_T) - F_*) * T`` (flat in T means the O(1/T) rate) and the projections.
"""
import time

import numpy as np

from logt._minimize import minimize
from logt.domains import PSDCone
from logt.experiments._parallel import default_jobs, run_tasks
from logt.experiments.report import Progress, format_table, write_records
from logt.oracles import PSDQuadratic

METHODS = ("logt", "epoch_gd", "sgd")
LABELS = {"logt": "logT", "epoch_gd": "EP_GD", "sgd": "SGD"}
# optional rows (``--methods``): row -> (method, options)
EXTRA = {"logt_acc": ("logt_acc", {"params": "theory"}), "minibatch_sgd": ("minibatch_sgd", {}),
         "one_projection_sgd": ("one_projection_sgd", {}), "sgd_suffix": ("sgd", {"average": "suffix"})}
ALL_METHODS = METHODS + tuple(EXTRA)
LABELS.update({"logt_acc": "logT-acc", "minibatch_sgd": "mini-batch SGD", "one_projection_sgd": "1-proj SGD",
               "sgd_suffix": "SGD suffix avg"})


def T_grid(T_min=10**3, T_max=10**6, per_decade=2):
    """Geometric grid of budgets from ``T_min`` to ``T_max`` (``per_decade`` points per decade)."""
    n = int(round(per_decade * np.log10(T_max / T_min))) + 1
    return [int(round(t)) for t in np.geomspace(T_min, T_max, max(n, 1))]


def _one_run(task):
    method, T, rep, seed, d = task
    oracle = PSDQuadratic(np.zeros((d, d)), noise=1.0)
    domain = PSDCone(d)
    rng = np.random.default_rng(np.random.SeedSequence([seed, ALL_METHODS.index(method), T, rep]))
    name, opts = EXTRA.get(method, (method, {}))
    t0 = time.perf_counter()
    res = minimize(oracle, domain, T, method=name, options=opts, rng=rng)
    sec = time.perf_counter() - t0
    excess = res.fun - oracle.f_star
    return {"method": method, "T": T, "repeat": rep, "fun": res.fun, "excess": excess,
            "excess_times_T": excess * T, "n_calls": res.n_calls,
            "n_projections": res.n_projections, "n_epochs": res.n_epochs, "seconds": sec}


def run(T_max=10**6, T_min=10**3, per_decade=2, repeats=10, methods=METHODS, seed=0,
        n_jobs=None, d=5, progress=True):
    """Run the grid; returns the list of per-run records (dicts)."""
    grid = T_grid(T_min, T_max, per_decade)
    tasks = [(m, T, r, seed, d) for T in sorted(grid, reverse=True) for m in methods
             for r in range(repeats)]
    # the baselines cost ~T projections, logT ~log T: weigh progress by work
    work = {t: (t[1] if t[0] not in ("logt", "logt_acc", "minibatch_sgd") else t[1] / 50) for t in tasks}
    total = sum(work.values())
    bar = Progress(len(tasks), "toy", enabled=progress)
    recs = run_tasks(_one_run, tasks, n_jobs or default_jobs(),
                     lambda t, r: bar.update(1, work[t], total))
    recs.sort(key=lambda r: (ALL_METHODS.index(r["method"]), r["T"], r["repeat"]))
    return recs


def summarize(records):
    """Per (method, T): mean/std of (F - F*)*T, mean F, projections and calls."""
    out = []
    for m in ALL_METHODS:
        for T in sorted({r["T"] for r in records if r["method"] == m}):
            rs = [r for r in records if r["method"] == m and r["T"] == T]
            v = np.array([r["excess_times_T"] for r in rs])
            out.append({"method": m, "T": T, "repeats": len(rs),
                        "mean_excess_times_T": float(v.mean()),
                        "std_excess_times_T": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
                        "mean_fun": float(np.mean([r["fun"] for r in rs])),
                        "n_projections": int(np.mean([r["n_projections"] for r in rs])),
                        "n_calls": int(np.mean([r["n_calls"] for r in rs])),
                        "mean_seconds": float(np.mean([r["seconds"] for r in rs]))})
    return out


def tables(summary):
    """A markdown table per method."""
    parts = []
    for m in ALL_METHODS:
        rows = [s for s in summary if s["method"] == m]
        if not rows:
            continue
        body = [[f"{s['T']:,}", f"{s['mean_excess_times_T']:.3f}", f"{s['std_excess_times_T']:.3f}",
                 f"{s['n_projections']:,}", f"{s['n_calls']:,}", f"{s['mean_seconds']:.3f}"] for s in rows]
        parts.append(f"{LABELS[m]} ({m})\n" + format_table(
            ["T", "mean (F-F*)*T", "std", "projections", "oracle calls", "s/run"], body))
    return "\n\n".join(parts)


def verdict(summary):
    """Two readable lines: flatness of (F - F*)*T per method, projections at the largest T."""
    flat, proj = [], []
    for m in ALL_METHODS:
        rows = [s for s in summary if s["method"] == m]
        if not rows:
            continue
        v = [s["mean_excess_times_T"] for s in rows]
        flat.append(f"{LABELS[m]} {min(v):.1f}-{max(v):.1f}")
        proj.append(f"{LABELS[m]} {rows[-1]['n_projections']:,}")
    T = max(s["T"] for s in summary)
    return (f"(F - F*)*T over T = {min(s['T'] for s in summary):,}..{T:,} (flat = O(1/T)): "
            + ", ".join(flat) + f"\nprojections at T = {T:,}: " + ", ".join(proj))


def plot(summary, out_dir):
    """Fig. 1a ((F-F*)*T vs T) and Fig. 1b (F vs projections) as PNG; returns paths (none without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    import os
    paths = []
    for name, xkey, ykey, xl, yl in [
            ("fig1a_excess_times_T.png", "T", "mean_excess_times_T", "T (oracle calls)", "(F(W_T) - F*) * T"),
            ("fig1b_fun_vs_projections.png", "n_projections", "mean_fun", "projections P", "F(W_T)")]:
        fig, ax = plt.subplots(figsize=(5, 4))
        for m in ALL_METHODS:
            rows = [s for s in summary if s["method"] == m]
            if not rows:
                continue
            xs, ys = [s[xkey] for s in rows], [s[ykey] for s in rows]
            if ykey == "mean_excess_times_T":   # mean +- std over the repeats
                ax.errorbar(xs, ys, yerr=[s["std_excess_times_T"] for s in rows], fmt="o-",
                            capsize=3, label=LABELS[m])
            else:
                ax.plot(xs, ys, "o-", label=LABELS[m])
        ax.set_xscale("log")
        if ykey == "mean_fun":
            ax.set_yscale("log")
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.set_title("toy 5x5 PSD problem")
        ax.legend()
        fig.tight_layout()
        p = os.path.join(out_dir, name)
        fig.savefig(p, dpi=120)
        plt.close(fig)
        paths.append(p)
    return paths


def main(args):
    t0 = time.perf_counter()
    methods = METHODS + tuple(m for m in (getattr(args, "methods", None) or "").split(",") if m)
    bad = [m for m in methods if m not in ALL_METHODS]
    if bad:
        raise ValueError(f"unknown --methods row(s) {bad}; the optional rows are {', '.join(EXTRA)}")
    recs = run(T_max=args.T_max, T_min=args.T_min, per_decade=args.per_decade, methods=methods,
               repeats=args.repeats, seed=args.seed, n_jobs=args.jobs, progress=not args.quiet)
    summary = summarize(recs)
    print(tables(summary))
    print("\n" + verdict(summary))
    files = write_records(recs, args.out, "toy_runs") + write_records(summary, args.out, "toy_summary")
    files += plot(summary, args.out)
    print(f"\nwrote {', '.join(files)}  ({time.perf_counter() - t0:.1f} s)")
    return 0
