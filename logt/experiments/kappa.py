"""How the projection count grows with the condition number ``L/lam`` (``python -m logt kappa``).

Problems (compiled oracle :class:`logt.oracles.DiagonalQuadratic`,
``F(x) = 0.5 * sum h (x - a)^2`` with ``lam = min h = 1`` and ``L = max h = kappa``,
noise uniform on ``[-1, 1]`` per entry, start at 0):

* ``psd``: 5x5 symmetric matrices over the PSD cone; the 15 weights ``h_ij``
  are ``kappa**u`` for ``u`` evenly spaced in ``[0, 1]`` (fixed shuffle),
  ``a = Q diag(2, 1, 0.5, -1, -2) Q^T`` (fixed random ``Q``): the constraint is
  active (``W*`` has rank 3).
* ``ball``: vectors of length 20 over the unit ball, ``h_i = kappa**(i/19)``,
  ``a`` a fixed random vector of norm 2 (the constraint is active).

``F*`` comes from an accelerated projected gradient method with exact
gradients run to convergence (an independent reference).

For every ``kappa`` in ``{1, 10, 100, 1000, 10^4}`` and every method row, ``repeats``
runs at the same budget ``T``. Rows: logT with Theorem 1 (``logt``), ``logt_acc`` with
its theory rule and the oracle's ``L``, the default call (``auto``: logT's epochs or the
accelerated stages, chosen after the estimate at ``x0``; ``--methods auto``), and the
baselines. The best baseline's mean final excess ``E_best``
(over SGD variants, Epoch-GD, mini-batch SGD, one-projection SGD, Frank-Wolfe)
sets the target; for each method, "projections needed" is the projection count
at the first trace row where the mean excess (over repeats) is at most
``tol * E_best``. A method that does not get there within ``T`` is rerun with
budgets ``4T``, ``16T``, ... up to ``max_extend * T`` (except one-projection SGD and
Frank-Wolfe, whose projection counts do not grow with ``T``). Outputs: a CSV/JSON
of the runs and of the summary, a PNG of projections needed against ``L/lam``
(log-log) and the fitted log-log slopes.
"""
import math
import time

import numpy as np

from logt._minimize import minimize
from logt.domains import EuclideanBall, PSDCone
from logt.domains._lmo import constraint_function
from logt.experiments._parallel import default_jobs, run_tasks
from logt.experiments.report import Progress, format_table, write_records
from logt.oracles import DiagonalQuadratic

KAPPAS = (1, 10, 100, 1000, 10**4)
DOMAINS = ("psd", "ball")


def make_problem(domain, kappa, noise=1.0):
    """``(oracle, domain)`` of the ``psd`` or ``ball`` problem at ``L/lam = kappa``."""
    r = np.random.default_rng(20130616)
    if domain == "psd":
        d = 5
        Q, _ = np.linalg.qr(r.standard_normal((d, d)))
        A = (Q * np.array([2.0, 1.0, 0.5, -1.0, -2.0])) @ Q.T
        A = 0.5 * (A + A.T)
        iu = np.triu_indices(d)
        u = np.linspace(0.0, 1.0, len(iu[0]))
        r.shuffle(u)
        H = np.zeros((d, d))
        H[iu] = float(kappa) ** u
        H = np.maximum(H, H.T)
        return DiagonalQuadratic(H, A, noise=noise), PSDCone(d)
    if domain == "ball":
        n = 20
        a = r.standard_normal(n)
        a *= 2.0 / np.linalg.norm(a)
        h = float(kappa) ** (np.arange(n) / (n - 1))
        return DiagonalQuadratic(h, a, noise=noise), EuclideanBall(n, 1.0)
    raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")


def reference_solution(oracle, domain, tol=1e-15, max_iter=10**6):
    """``(x*, F*)`` by accelerated projected gradient (step ``1/L``, momentum
    ``(sqrt(k)-1)/(sqrt(k)+1)``, exact gradients) until the iterate moves less than ``tol``."""
    L, lam = oracle.L, oracle.lam
    q = math.sqrt(L / lam)
    beta = (q - 1.0) / (q + 1.0)
    x = domain.project(np.zeros(oracle.shape))
    prev = x.copy()
    for i in range(max_iter):
        y = x + beta * (x - prev)
        prev = x
        x = domain.project(y - oracle.grad(y) / L)
        if i > 50 and float(np.max(np.abs(x - prev))) <= tol * max(1.0, float(np.max(np.abs(x)))):
            break
    return x, oracle.value(x)


def method_rows(domain, oracle, dom, x_star):
    """``row -> (method, options, label, is_baseline)`` for a problem (options may use ``L``, ``w*``)."""
    L, lam = oracle.L, oracle.lam
    rho = constraint_function(dom).rho
    gstar = float(np.linalg.norm(oracle.grad(x_star)))
    rows = {
        "logt": ("logt", {"params": "theorem1"}, "logT (Thm 1)", False),
        "logt_acc": ("logt_acc", {"params": "theory"}, "logT-acc", False),
        "auto": ("auto", {}, "default (auto)", False),
        "sgd": ("sgd", {}, "SGD 1/(lam t)", True),
        "sgd_capped": ("minibatch_sgd", {"B": 1}, "SGD min(1/L, 1/(lam t))", True),
        "sgd_suffix": ("minibatch_sgd", {"B": 1, "average": "suffix"}, "SGD capped, suffix avg", True),
        "epoch_gd": ("epoch_gd", {"eta1": 1.0 / L, "T1": int(math.ceil(4 * L / lam))},
                     "EP_GD (eta1=1/L, T1=4L/lam)", True),
        "minibatch_sgd": ("minibatch_sgd", {}, "mini-batch SGD, B=sqrt(T)", True),
        "one_projection_sgd": ("one_projection_sgd", {"penalty": max(2.0 * gstar / rho, 1e-3)},
                               "1-proj SGD", True),
    }
    if domain == "ball":
        rows["frank_wolfe"] = ("frank_wolfe", {}, "SFW", True)
    return rows


ALL_ROWS = ("logt", "logt_acc", "sgd", "sgd_capped", "sgd_suffix", "epoch_gd", "minibatch_sgd",
            "one_projection_sgd", "frank_wolfe", "auto")
FIXED_PROJECTIONS = ("one_projection_sgd", "frank_wolfe")      # counts do not grow with T: no extension

_CACHE = {}


def _problem(domain, kappa):
    key = (domain, kappa)
    if key not in _CACHE:
        oracle, dom = make_problem(domain, kappa)
        x_star, f_star = reference_solution(oracle, dom)
        _CACHE[key] = (oracle, dom, x_star, f_star)
    return _CACHE[key]


def _one_run(task):
    domain, kappa, row, T, rep, seed = task
    oracle, dom, x_star, f_star = _problem(domain, kappa)
    method, opts, _, _ = method_rows(domain, oracle, dom, x_star)[row]
    rng = np.random.default_rng(np.random.SeedSequence(
        [seed, DOMAINS.index(domain), int(kappa), ALL_ROWS.index(row), T, rep]))
    t0 = time.perf_counter()
    try:
        res = minimize(oracle, dom, T, method=method, options=opts, rng=rng)
    except FloatingPointError as exc:
        return {"domain": domain, "kappa": kappa, "row": row, "T": T, "repeat": rep, "diverged": True,
                "error": str(exc)[:200], "excess": float("nan"), "n_projections": -1, "n_calls": -1,
                "seconds": time.perf_counter() - t0, "trace_proj": [], "trace_excess": []}
    return {"domain": domain, "kappa": kappa, "row": row, "T": T, "repeat": rep, "diverged": False,
            "error": "", "excess": res.fun - f_star, "n_projections": res.n_projections,
            "n_calls": res.n_calls, "seconds": time.perf_counter() - t0,
            "trace_proj": res.trace["n_projections"].tolist(),
            "trace_excess": (res.trace["fun"] - f_star).tolist()}


def _mean_trace(recs):
    """Mean excess per trace row over the runs that did not diverge (rows align: counts are deterministic)."""
    ok = [r for r in recs if not r["diverged"]]
    if not ok:
        return None, None
    n = min(len(r["trace_proj"]) for r in ok)
    proj = np.asarray(ok[0]["trace_proj"][:n])
    exc = np.mean([r["trace_excess"][:n] for r in ok], axis=0)
    return proj, exc


def _needed(row, recs, target):
    """Projections at the first trace row whose mean excess is <= target (None if never)."""
    proj, exc = _mean_trace(recs)
    if proj is None:
        return None
    if row in FIXED_PROJECTIONS:       # only the final, projected point counts
        return int(proj[-1]) if exc[-1] <= target else None
    hit = np.nonzero(exc <= target)[0]
    return int(proj[hit[0]]) if hit.size else None


def run(T=2 * 10**5, kappas=KAPPAS, domains=DOMAINS, rows=ALL_ROWS, repeats=5, seed=0, tol=1.0,
        max_extend=16, n_jobs=None, progress=True):
    """Run the sweep; returns ``(records, summary)`` (lists of flat dicts)."""
    n_jobs = n_jobs or default_jobs()
    for dom in domains:                       # reference solutions once, in this process
        for k in kappas:
            _problem(dom, k)

    def tasks_for(keys, budget):
        return [(d, k, r, budget, rep, seed) for (d, k, r) in keys for rep in range(repeats)]

    keys = [(d, k, r) for d in domains for k in kappas for r in rows
            if r in method_rows(d, *_problem(d, k)[:3])]
    tasks = tasks_for(keys, T)
    bar = Progress(len(tasks), "kappa", enabled=progress)
    recs = run_tasks(_one_run, tasks, n_jobs, lambda t, r: bar.update(1))
    by = {}
    for r in recs:
        by.setdefault((r["domain"], r["kappa"], r["row"]), {}).setdefault(T, []).append(r)

    summary = []
    for d in domains:
        for k in kappas:
            table = method_rows(d, *_problem(d, k)[:3])
            finals = {}
            for r in table:
                if r not in rows:
                    continue
                ok = [x["excess"] for x in by[(d, k, r)][T] if not x["diverged"]]
                finals[r] = float(np.mean(ok)) if ok else float("nan")
            base = [v for r, v in finals.items() if table[r][3] and math.isfinite(v)]
            best = min(base) if base else float("nan")
            best_row = min((r for r in finals if table[r][3] and math.isfinite(finals[r])),
                           key=lambda r: finals[r], default=None)
            target = tol * best
            for r in finals:
                budget, need = T, _needed(r, by[(d, k, r)][T], target)
                while need is None and r not in FIXED_PROJECTIONS and budget * 4 <= T * max_extend \
                        and not all(x["diverged"] for x in by[(d, k, r)][budget]):
                    budget *= 4
                    more = tasks_for([(d, k, r)], budget)
                    bar2 = Progress(len(more), f"kappa: {r} at T={budget:,}", enabled=progress)
                    got = run_tasks(_one_run, more, n_jobs, lambda t, x: bar2.update(1))
                    recs.extend(got)
                    by[(d, k, r)][budget] = got
                    need = _needed(r, got, target)
                first = by[(d, k, r)][T]
                summary.append({
                    "domain": d, "kappa": k, "row": r, "method": table[r][0], "label": table[r][2],
                    "baseline": table[r][3], "T": T, "mean_excess": finals[r],
                    "excess_times_T": finals[r] * T, "ratio_to_best": finals[r] / best if best > 0 else float("nan"),
                    "best_baseline": best_row, "best_excess": best, "target": target,
                    "n_projections_at_T": int(np.median([x["n_projections"] for x in first])),
                    "diverged": sum(x["diverged"] for x in first),
                    "projections_needed": need if need is not None else float("nan"),
                    "budget_needed": budget if need is not None else float("nan"),
                })
    return recs, summary


def slopes(summary):
    """``(domain, row) -> slope`` of log(projections needed) vs log(L/lam) (least squares, >= 2 points)."""
    out = {}
    for d in sorted({s["domain"] for s in summary}):
        for r in ALL_ROWS:
            pts = [(s["kappa"], s["projections_needed"]) for s in summary
                   if s["domain"] == d and s["row"] == r and math.isfinite(s["projections_needed"])
                   and s["projections_needed"] > 0]
            if len(pts) >= 2 and len({p[0] for p in pts}) >= 2:
                x, y = np.log10([p[0] for p in pts]), np.log10([p[1] for p in pts])
                out[(d, r)] = float(np.polyfit(x, y, 1)[0])
    return out


def tables(summary, sl):
    parts = []
    for d in sorted({s["domain"] for s in summary}, key=DOMAINS.index):
        kappas = sorted({s["kappa"] for s in summary if s["domain"] == d})
        rows = [r for r in ALL_ROWS if any(s["row"] == r and s["domain"] == d for s in summary)]
        get = {(s["kappa"], s["row"]): s for s in summary if s["domain"] == d}
        body = []
        for r in rows:
            lab = next(s["label"] for s in summary if s["domain"] == d and s["row"] == r)
            cells = [lab]
            for k in kappas:
                s = get.get((k, r))
                if s is None:
                    cells.append("")
                    continue
                p = s["projections_needed"]
                if not math.isfinite(p):
                    cells.append("not reached")
                else:
                    extra = "" if s["budget_needed"] == s["T"] else f" (T x{s['budget_needed'] // s['T']})"
                    cells.append(f"{int(p):,}{extra}")
            cells.append(f"{sl[(d, r)]:.2f}" if (d, r) in sl else "-")
            body.append(cells)
        T = summary[0]["T"]
        parts.append(f"{d}: projections needed to reach the best baseline's excess at T = {T:,}\n"
                     + format_table(["method"] + [f"L/lam={k:g}" for k in kappas] + ["slope"], body))
        body = []
        for r in rows:
            lab = next(s["label"] for s in summary if s["domain"] == d and s["row"] == r)
            cells = [lab]
            for k in kappas:
                s = get.get((k, r))
                if s is None:
                    cells.append("")
                elif s["diverged"]:
                    cells.append(f"diverged x{s['diverged']}")
                else:
                    cells.append(f"{s['excess_times_T']:.3g} ({s['ratio_to_best']:.2f}x)")
            body.append(cells)
        parts.append(f"{d}: mean (F - F*) * T at T = {T:,} (ratio to the best baseline)\n"
                     + format_table(["method"] + [f"L/lam={k:g}" for k in kappas], body))
    return "\n\n".join(parts)


def verdict(summary, sl):
    lines = []
    for d in sorted({s["domain"] for s in summary}, key=DOMAINS.index):
        acc = [s for s in summary if s["domain"] == d and s["row"] == "logt_acc"]
        if not acc:
            continue
        worst = max(s["ratio_to_best"] for s in acc)
        line = (f"{d}: logT-acc slope {sl.get((d, 'logt_acc'), float('nan')):.2f} "
                f"(logT {sl.get((d, 'logt'), float('nan')):.2f}); its excess at equal T is at most "
                f"{worst:.2f}x the best baseline's")
        get = {(s["kappa"], s["row"]): s for s in summary if s["domain"] == d}
        a, b = get.get((1000, "logt_acc")), get.get((1000, "logt"))
        if a and b and math.isfinite(a["projections_needed"]):
            if math.isfinite(b["projections_needed"]):
                line += (f"; at L/lam = 1000: logT needs {b['projections_needed'] / a['projections_needed']:.0f}x "
                         "the projections of logT-acc")
            else:
                line += "; at L/lam = 1000 logT does not reach the target within the largest budget"
        lines.append(line)
    return "\n".join(lines)


def plot(summary, sl, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    import os
    doms = sorted({s["domain"] for s in summary}, key=DOMAINS.index)
    fig, axes = plt.subplots(1, len(doms), figsize=(5.5 * len(doms), 4.5), squeeze=False)
    for ax, d in zip(axes[0], doms):
        for r in ALL_ROWS:
            pts = sorted((s["kappa"], s["projections_needed"], s["label"]) for s in summary
                         if s["domain"] == d and s["row"] == r and math.isfinite(s["projections_needed"])
                         and s["projections_needed"] > 0)
            if not pts:
                continue
            lab = pts[0][2] + (f" (slope {sl[(d, r)]:.2f})" if (d, r) in sl else "")
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=lab)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("L / lam")
        ax.set_ylabel("projections to reach the best baseline's excess")
        ax.set_title(f"{d} (T = {summary[0]['T']:,})")
        ax.legend(fontsize=7)
    fig.tight_layout()
    p = os.path.join(out_dir, "kappa_projections.png")
    os.makedirs(out_dir, exist_ok=True)
    fig.savefig(p, dpi=120)
    plt.close(fig)
    return [p]


def main(args):
    t0 = time.perf_counter()
    rows = ALL_ROWS if not args.methods else tuple(args.methods.split(","))
    bad = [r for r in rows if r not in ALL_ROWS]
    if bad:
        raise ValueError(f"--methods: unknown row(s) {bad}; choose from {', '.join(ALL_ROWS)}")
    kappas = tuple(float(k) if float(k) != int(float(k)) else int(float(k)) for k in args.kappas.split(","))
    domains = tuple(args.domains.split(","))
    recs, summary = run(T=args.T, kappas=kappas, domains=domains, rows=rows, repeats=args.repeats,
                        seed=args.seed, tol=args.tol, max_extend=args.max_extend, n_jobs=args.jobs,
                        progress=not args.quiet)
    sl = slopes(summary)
    print(tables(summary, sl))
    print("\n" + verdict(summary, sl))
    flat = [{k: v for k, v in r.items() if not k.startswith("trace_")} for r in recs]
    files = write_records(flat, args.out, "kappa_runs") + write_records(summary, args.out, "kappa_summary")
    files += plot(summary, sl, args.out)
    print(f"\nwrote {', '.join(files)}  ({time.perf_counter() - t0:.1f} s)")
    return 0
