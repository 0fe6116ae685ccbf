"""The metric-learning experiment (the paper's Fig. 2).

Regularized distance metric learning (``logt.oracles.MetricLearning``, ``lam =
0.1``) over the d x d PSD cone: ``F(W_T)`` on 10^4 fixed test pairs against the
number of projections ``P`` for

* ``logt_auto``: Algorithm 1 with ``params="auto"`` (logt's default: the curvature
  estimated from the oracle, epochs sized from ``L_est/lam``, the whole budget used);
* ``logt_theorem1``: Algorithm 1 with Theorem 1's parameters (``M = 402``,
  ``B1 = 1`` for ``L = 4.1``, ``lam = 0.1``: 804 projections per epoch);
* ``epoch_gd`` (Hazan-Kale, ``T1 = 4``, ``eta1 = 1/lam``) and ``sgd`` (step
  ``1/(lam t)``, last iterate): one projection per oracle call;
* optional rows (``--methods``, :data:`EXTRA`): ``logt_practical`` (the former
  data-tuned default, :func:`logt.metric_learning.practical_metric_params`: ``eta = 4/L``,
  ``M = 8``, ``B1 = 4``), ``logt_acc`` (theory rule with the oracle's ``L``), ``minibatch_sgd`` (``B = sqrt(T)``),
  ``one_projection_sgd`` (penalty ``2 G``) and ``sgd_suffix``.

The objective is the paper's (``MetricLearning``'s defaults: uniformly random
pairs, fixed threshold 1, ``lam = 0.1``, rows scaled to unit norm); the
estimator's extensions (neighbour pairs, learned threshold, internal scaling:
:mod:`logt.metric_learning`) are not used here. ``MetricLearner.paper()`` is
the same objective behind the estimator API.

Every method gets the same budget ``T`` of pair gradients and ``repeats``
seeded runs; each curve is the per-epoch (logT, Epoch-GD) or per-grid-point
(SGD) trace of those runs, so one run per repeat gives the whole curve.

Data (``--data-dir``, default ``$LOGT_DATA_DIR``):

* mushrooms (8124 x 112): rows scaled to unit norm, a seeded random 2/3 train
  - 1/3 test split (:func:`logt.datasets.train_test_split_seeded` with
  ``rng=seed``); the 10^4 evaluation pairs are drawn from the test third;
* adult: train on a9a (32561 x 123), 10^4 evaluation pairs from a9a.t;
* synthetic: two seeded Gaussian classes (n = 600, d = 10), for smoke tests.

Runtimes of the defaults (``T = 2*10^5``, 10 repeats, 2 worker processes on 2
cores): mushrooms ~105 s, adult ~310 s. Each baseline step is one PSD
projection (~50 us on mushrooms, ~130-170 us on a9a for the near-PSD iterates);
logT's runs take 0.1-2 s. logT uses complete epochs only (doubling batches), so
it may leave up to half of ``T`` unused (131,008 of 200,000 calls here).

The evaluation pairs are drawn once (``eval_rng = seed + 1``) and shared by all
methods and repeats; run ``r`` of method ``m`` uses
``SeedSequence([seed, index of m, r])``.
"""
import os
import time

import numpy as np

from logt._minimize import minimize
from logt.datasets import load_adult, load_mushrooms, normalize_rows, train_test_split_seeded
from logt.domains import PSDCone
from logt.metric_learning import practical_metric_params
from logt.experiments._parallel import default_jobs, run_tasks
from logt.experiments.report import Progress, format_table, write_records
from logt.oracles import MetricLearning

METHODS = ("logt_auto", "logt_theorem1", "epoch_gd", "sgd")
LABELS = {"logt_auto": "logT (auto)", "logt_practical": "logT (practical)", "logt_theorem1": "logT (Theorem 1)",
          "epoch_gd": "EP_GD", "sgd": "SGD"}
# optional rows (``--methods``): row -> (method, options); the PSD cone has no LMO (no Frank-Wolfe)
EXTRA = {"logt_practical": ("logt", {}), "logt_acc": ("logt_acc", {"params": "theory"}),
         "minibatch_sgd": ("minibatch_sgd", {}), "one_projection_sgd": ("one_projection_sgd", {}),
         "sgd_suffix": ("sgd", {"average": "suffix"})}
ALL_METHODS = METHODS + tuple(EXTRA)
LABELS.update({"logt_acc": "logT-acc", "minibatch_sgd": "mini-batch SGD", "one_projection_sgd": "1-proj SGD",
               "sgd_suffix": "SGD suffix avg"})
BASELINES = ("epoch_gd", "sgd", "minibatch_sgd", "one_projection_sgd", "sgd_suffix")
DATASETS = ("mushrooms", "adult", "synthetic")

_CACHE = {}     # per worker process: the oracle of (dataset, data_dir, lam, seed, n_eval_pairs, max_train)


def synthetic_data(n=600, d=10, seed=0):
    """Two Gaussian classes (means +-0.5 on the first coordinate), rows scaled to unit norm.

    Returns ``X_train, y_train, X_test, y_test`` (2/3 - 1/3).
    """
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d))
    X[:, 0] += np.where(y == 1, 2.0, -2.0)
    X = normalize_rows(X)
    k = (2 * n) // 3
    return X[:k], y[:k], X[k:], y[k:]


def load_problem(dataset, data_dir=None, seed=0, max_train=None):
    """``X_train, y_train, X_test, y_test`` for ``dataset`` (see the module docstring).

    ``max_train`` keeps a seeded random subset of the training rows (for quick tests).
    """
    if dataset == "mushrooms":
        X, y = load_mushrooms(data_dir)
        Xtr, Xte, ytr, yte = train_test_split_seeded(X, y, 1 / 3, rng=seed)
    elif dataset == "adult":
        Xtr, ytr, Xte, yte = load_adult(data_dir)
    elif dataset == "synthetic":
        Xtr, ytr, Xte, yte = synthetic_data(seed=seed)
    else:
        raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}")
    if max_train is not None and max_train < Xtr.shape[0]:
        keep = np.sort(np.random.default_rng([seed, 7]).permutation(Xtr.shape[0])[:max_train])
        Xtr, ytr = Xtr[keep], ytr[keep]
    return Xtr, ytr, Xte, yte


def _oracle(dataset, data_dir, lam, seed, n_eval_pairs, max_train, n_threads):
    key = (dataset, data_dir, lam, seed, n_eval_pairs, max_train, n_threads)
    if key not in _CACHE:
        Xtr, ytr, Xte, yte = load_problem(dataset, data_dir, seed, max_train)
        _CACHE.clear()
        _CACHE[key] = MetricLearning(Xtr, ytr, lam, X_eval=Xte, y_eval=yte, n_eval_pairs=n_eval_pairs,
                                     eval_rng=seed + 1, n_threads=n_threads)
    return _CACHE[key]


def method_kwargs(method, oracle, T):
    """``logt.minimize`` arguments of an experiment method."""
    if method == "logt_practical":
        p = practical_metric_params(oracle.L, oracle.lam, T)
        return {"method": "logt", "options": {"eta": p.eta, "M": p.M, "B1": p.B1}}
    if method == "logt_theorem1":
        return {"method": "logt", "options": {"params": "theorem1"}}
    if method == "logt_auto":
        return {"method": "logt", "options": {"params": "auto"}}
    if method in ("epoch_gd", "sgd"):
        return {"method": method}
    if method in EXTRA:
        return {"method": EXTRA[method][0], "options": dict(EXTRA[method][1])}
    raise ValueError(f"method must be one of {ALL_METHODS}, got {method!r}")


def _one_run(task):
    dataset, data_dir, lam, method, T, rep, seed, n_eval_pairs, max_train, n_threads = task
    oracle = _oracle(dataset, data_dir, lam, seed, n_eval_pairs, max_train, n_threads)
    rng = np.random.default_rng(np.random.SeedSequence([seed, ALL_METHODS.index(method), rep]))
    t0 = time.perf_counter()
    res = minimize(oracle, PSDCone(oracle.n_features), T, rng=rng, **method_kwargs(method, oracle, T))
    sec = time.perf_counter() - t0
    tr = res.trace
    rows = list(zip(tr["n_projections"], tr["n_calls"], tr["fun"]))
    if method == "one_projection_sgd":      # earlier rows are unprojected averages (not in D): the end only
        rows = rows[-1:]
    return [{"dataset": dataset, "method": method, "T": T, "repeat": rep, "point": i,
             "n_projections": int(p), "n_calls": int(c), "fun": float(f), "seconds": sec}
            for i, (p, c, f) in enumerate(rows)]


def _expected_work(method, T):
    """Rough cost in projection-equivalents (a projection ~ 2000 pair gradients)."""
    if method in ("sgd", "epoch_gd", "sgd_suffix", "one_projection_sgd"):
        return T
    if method == "minibatch_sgd":
        return 2 * np.sqrt(T)
    if method == "logt_auto":
        return 0.0075 * T + T / 2000
    return (208 if method == "logt_practical" else 804 * np.log2(T / 804 + 1)) + T / 2000


def run(dataset="mushrooms", data_dir=None, T=200_000, repeats=10, methods=METHODS, seed=0,
        n_jobs=None, lam=0.1, n_eval_pairs=10_000, max_train=None, progress=True):
    """Run every (method, repeat); returns per-trace-point records (dicts).

    Each record: dataset, method, T, repeat, point (trace index), n_projections,
    n_calls, fun (``F`` on the evaluation pairs) and seconds (of the whole run).
    """
    for m in methods:
        if m not in ALL_METHODS:
            raise ValueError(f"unknown method {m!r}; choose from {ALL_METHODS}")
    if data_dir is None and dataset != "synthetic":
        data_dir = os.environ.get("LOGT_DATA_DIR")
        if not data_dir:
            raise ValueError("pass data_dir (--data-dir) or set LOGT_DATA_DIR")
    n_jobs = n_jobs or default_jobs()
    n_threads = 1 if n_jobs > 1 else None
    tasks = [(dataset, data_dir, float(lam), m, int(T), r, seed, n_eval_pairs, max_train, n_threads)
             for m in sorted(methods, key=lambda m: -_expected_work(m, T)) for r in range(repeats)]
    work = {t: _expected_work(t[3], t[4]) for t in tasks}
    total = sum(work.values())
    bar = Progress(len(tasks), f"metric/{dataset}", enabled=progress)
    out = run_tasks(_one_run, tasks, n_jobs, lambda t, r: bar.update(1, work[t], total))
    recs = [r for rs in out for r in rs]
    recs.sort(key=lambda r: (ALL_METHODS.index(r["method"]), r["repeat"], r["point"]))
    return recs


def summarize(records):
    """Per (method, P): mean and std over repeats of ``F`` after ``P`` projections, oracle calls, s/run.

    A repeat's value at ``P`` is its last trace point with at most ``P`` projections
    (the point the run would return had it stopped there), so repeats whose schedules
    differ (logT-auto sizes its epochs from estimates) are averaged at every ``P``,
    from the first ``P`` at which every repeat has a point; the last row is every
    repeat's final point. With identical schedules this is the plain per-``P`` mean.
    """
    out = []
    for m in ALL_METHODS:
        rs = [r for r in records if r["method"] == m]
        if not rs:
            continue
        reps = {}
        for r in rs:
            reps.setdefault(r["repeat"], []).append(r)
        runs = [sorted(v, key=lambda r: (r["n_projections"], r["point"])) for v in reps.values()]
        start = max(run[0]["n_projections"] for run in runs)
        for P in sorted({r["n_projections"] for r in rs if r["n_projections"] >= start}):
            pts = [[r for r in run if r["n_projections"] <= P][-1] for run in runs]
            f = np.array([r["fun"] for r in pts])
            out.append({"dataset": rs[0]["dataset"], "method": m, "T": rs[0]["T"],
                        "n_projections": int(P), "repeats": len(pts),
                        "mean_fun": float(f.mean()),
                        "std_fun": float(f.std(ddof=1)) if len(f) > 1 else 0.0,
                        "n_calls": int(np.mean([r["n_calls"] for r in pts])),
                        "mean_seconds": float(np.mean([r["seconds"] for r in pts]))})
    return out


def _thin(rows, max_rows):
    """At most ``max_rows`` rows on a geometric grid of indices, always the first and the last."""
    if len(rows) <= max_rows:
        return rows
    idx = np.unique(np.round(np.geomspace(1, len(rows), max_rows)).astype(int) - 1)
    return [rows[i] for i in idx]


def tables(summary, max_rows=12):
    """A markdown table per method (``max_rows`` points of its curve, geometric in P)."""
    parts = []
    for m in ALL_METHODS:
        rows = [s for s in summary if s["method"] == m]
        if not rows:
            continue
        body = [[f"{s['n_projections']:,}", f"{s['mean_fun']:.5f}", f"{s['std_fun']:.5f}",
                 f"{s['n_calls']:,}"] for s in _thin(rows, max_rows)]
        parts.append(f"{LABELS[m]} ({m}), T = {rows[0]['T']:,}, {rows[-1]['mean_seconds']:.2f} s/run\n"
                     + format_table(["P (projections)", "mean F", "std F", "oracle calls"], body))
    return "\n\n".join(parts)


def reach(summary, method, target):
    """Fewest projections after which ``method``'s mean F is <= ``target`` (None if never)."""
    for s in summary:
        if s["method"] == method and s["mean_fun"] <= target:
            return s["n_projections"]
    return None


def verdict(summary, tol=1e-4):
    """One line: the equal-accuracy ratio, as README reports it.

    The target is the best final mean F of all methods plus ``tol``; for each logT
    variant and each baseline the fewest projections whose mean F reaches the
    target; the ratio is (projections the baseline needs) / (projections logT
    needs) for the same accuracy, not the baseline's whole budget.
    """
    finals = {}
    for m in ALL_METHODS:
        rows = [s for s in summary if s["method"] == m]
        if rows:
            finals[m] = rows[-1]
    base = [m for m in BASELINES if m in finals]
    if not base:
        return "no baseline run: nothing to compare"
    best = min(f["mean_fun"] for f in finals.values())
    target = best + tol
    need = {m: reach(summary, m, target) for m in finals}
    head = f"equal accuracy (mean F <= best final {best:.5f} + {tol:g}): "
    parts = []
    for m in ("logt_auto", "logt_practical", "logt_theorem1", "logt_acc"):
        if m not in finals:
            continue
        P = need[m]
        if P is None:
            parts.append(f"{LABELS[m]} does not reach it (ends at F = {finals[m]['mean_fun']:.5f})")
            continue
        cmp = []
        for b in base:
            Pb = need[b]
            if Pb is None:
                cmp.append(f"{LABELS[b]} never does in {finals[b]['n_projections']:,}")
            else:
                cmp.append(f"{Pb / P:,.0f}x fewer than {LABELS[b]} ({Pb:,})")
        parts.append(f"{LABELS[m]} needs {P:,} projections, " + ", ".join(cmp))
    return head + "; ".join(parts)


def plot(summary, out_dir, dataset):
    """F vs projections (log x) as ``fig2_<dataset>.png``; returns the paths (none without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    os.makedirs(out_dir, exist_ok=True)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for m in ALL_METHODS:
        rows = [s for s in summary if s["method"] == m]
        if not rows:
            continue
        P = np.array([s["n_projections"] for s in rows])
        f = np.array([s["mean_fun"] for s in rows])
        sd = np.array([s["std_fun"] for s in rows])
        line, = ax.plot(P, f, "o-" if len(P) < 30 else "-", ms=3, label=LABELS[m])
        ax.fill_between(P, f - sd, f + sd, color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xscale("log")
    # SGD's first iterates (step 1/lam) are far above F(0): zoom on the interesting range
    lo = min(s["mean_fun"] for s in summary)
    firsts = [next(s for s in summary if s["method"] == m)["mean_fun"]
              for m in ("logt_auto", "logt_practical", "logt_theorem1") if any(s["method"] == m for s in summary)]
    hi = max(firsts) if firsts else float(np.percentile([s["mean_fun"] for s in summary], 90))
    if hi > lo:
        ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.1 * (hi - lo))
    ax.set_xlabel("projections P")
    ax.set_ylabel("F(W) on 10^4 test pairs")
    ax.set_title(f"metric learning, {dataset} (T = {summary[0]['T']:,})")
    ax.legend()
    fig.tight_layout()
    p = os.path.join(out_dir, f"fig2_{dataset}.png")
    fig.savefig(p, dpi=120)
    plt.close(fig)
    return [p]


def main(args):
    t0 = time.perf_counter()
    methods = METHODS + tuple(m for m in (getattr(args, "methods", None) or "").split(",") if m)
    bad = [m for m in methods if m not in ALL_METHODS]
    if bad:
        raise ValueError(f"unknown --methods row(s) {bad}; the optional rows are {', '.join(EXTRA)}")
    recs = run(dataset=args.dataset, data_dir=args.data_dir, T=args.T, repeats=args.repeats, methods=methods,
               seed=args.seed, n_jobs=args.jobs, lam=args.lam, progress=not args.quiet)
    summary = summarize(recs)
    print(tables(summary))
    print("\n" + verdict(summary))
    stem = f"metric_{args.dataset}"
    files = write_records(recs, args.out, stem + "_runs") + write_records(summary, args.out, stem + "_summary")
    files += plot(summary, args.out, args.dataset)
    print(f"\nwrote {', '.join(files)}  ({time.perf_counter() - t0:.1f} s)")
    return 0
