"""Comparison report of metric learners (``python -m logt.bench --only learners``).

Contenders: Euclidean k-NN (no metric), ``MetricLearner()`` (defaults), ``MetricLearner(check=False)``
(the learned metric without the default's check against plain distances: the same final fit),
``MetricLearner.paper()`` (the paper's Fig. 2 objective), scikit-learn's
``NeighborhoodComponentsAnalysis`` and metric-learn's LMNN, ITML, MMC and SCML
(supervised variants, their default parameters).

metric-learn 0.7.0 (its last release) fails on current scikit-learn, so its
contenders run in a separate Python with a scikit-learn it supports (here
scikit-learn 1.5.2, numpy 2.0): set ``LOGT_METRIC_LEARN_PYTHON`` (default
``/work/venvs/learner-ml/bin/python`` when it exists). Each fit runs in a
subprocess with a time limit; without that Python the rows say so.

Data: wine, breast cancer, digits (scikit-learn's copies; 70/30 stratified
split, features standardized on the training part, as in the issue's table),
mushrooms (70/30 stratified split, the 0/1 one-hot features as distributed)
and Adult (a9a train / a9a.t test, 0/1 one-hot). On mushrooms and Adult the
peers train on a seeded stratified subsample (``SUBSAMPLE``) that fits their
time limit; the learned map is applied to the whole training set for k-NN.
k-NN accuracy: scikit-learn's ``KNeighborsClassifier`` on the transformed
points (1-NN and 5-NN on the test part). Fit times: one run each, wall clock,
in the same session, every contender on one BLAS thread (the machine is shared: expect +-20%).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

DATASETS = ("wine", "breast_cancer", "digits", "mushrooms", "adult")
PEERS = ("LMNN", "ITML", "MMC", "SCML")
# training rows given to a contender that cannot take all of a large data set within its time limit
SUBSAMPLE = {"mushrooms": {"LMNN": 2000, "ITML": 2000, "MMC": 1000, "SCML": 2000},
             "adult": {"NCA": 2000, "LMNN": 2000, "ITML": 2000, "MMC": 1000, "SCML": 2000}}
TIME_LIMIT = 600.0
DEFAULT_ML_PYTHON = "/work/venvs/learner-ml/bin/python"

_PEER_SCRIPT = r"""
import sys, time, json, warnings
import numpy as np
warnings.filterwarnings("ignore")
import metric_learn, sklearn
name, path = sys.argv[1], sys.argv[2]
z = np.load(path)
X, y = z["X"], z["y"]
est = {"LMNN": lambda: metric_learn.LMNN(random_state=0),
       "ITML": lambda: metric_learn.ITML_Supervised(random_state=0),
       "MMC": lambda: metric_learn.MMC_Supervised(random_state=0),
       "SCML": lambda: metric_learn.SCML_Supervised(random_state=0)}[name]()
t0 = time.perf_counter()
est.fit(X, y)
sec = time.perf_counter() - t0
np.save(path + ".L.npy", est.components_)
print(json.dumps({"seconds": sec, "metric_learn": metric_learn.__version__, "sklearn": sklearn.__version__}))
"""


def ml_python():
    p = os.environ.get("LOGT_METRIC_LEARN_PYTHON", DEFAULT_ML_PYTHON)
    return p if p and os.path.exists(p) else None


SMALL = ("wine", "breast_cancer", "digits")


def load(name, data_dir=None, split=0):
    """``(Xtr, ytr, Xte, yte, note)``; dense float64 for the small sets, CSR for mushrooms / adult.

    split : the ``random_state`` of the 70/30 stratified split (wine, breast cancer, digits,
    mushrooms; Adult has its fixed a9a / a9a.t split)."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    if name in SMALL:
        from sklearn import datasets as skd
        X, y = getattr(skd, f"load_{name}")(return_X_y=True)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=split)
        sc = StandardScaler().fit(Xtr)
        return sc.transform(Xtr), ytr, sc.transform(Xte), yte, "standardized"
    from logt.datasets import load_adult, load_mushrooms
    if name == "mushrooms":
        X, y = load_mushrooms(data_dir, normalize=False)
        idx = np.arange(X.shape[0])
        tr, te = train_test_split(idx, test_size=0.3, stratify=y, random_state=split)
        return X[tr], y[tr], X[te], y[te], "one-hot 0/1"
    if name == "adult":
        Xtr, ytr, Xte, yte = load_adult(data_dir, normalize=False)
        return Xtr, ytr, Xte, yte, "one-hot 0/1"
    raise ValueError(f"dataset must be one of {DATASETS}, got {name!r}")


def _subsample(X, y, m, seed=0):
    if m is None or m >= X.shape[0]:
        return X, y
    from sklearn.model_selection import train_test_split
    idx, _ = train_test_split(np.arange(X.shape[0]), train_size=m, stratify=y, random_state=seed)
    idx = np.sort(idx)
    return X[idx], y[idx]


def knn_accuracy(Ztr, ytr, Zte, yte, sample_weight=None):
    """``[1-NN, 5-NN]`` accuracy of scikit-learn's k-NN on the test rows (weighted by ``sample_weight``, (m,), if
    given)."""
    from sklearn.neighbors import KNeighborsClassifier
    out = []
    for k in (1, 5):
        clf = KNeighborsClassifier(k, algorithm="brute" if Ztr.shape[1] > 30 else "auto")
        out.append(float(clf.fit(Ztr, ytr).score(Zte, yte, sample_weight=sample_weight)))
    return out


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def run_peer(name, X, y, python, time_limit=TIME_LIMIT):
    """Fit a metric-learn contender in ``python``; returns (components (r, d), seconds, versions) or raises."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(path, X=_dense(X), y=np.asarray(y))
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        out = subprocess.run([python, "-c", _PEER_SCRIPT, name, path], capture_output=True, text=True,
                             timeout=time_limit, env=env)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed")
        info = json.loads(out.stdout.strip().splitlines()[-1])
        return np.load(path + ".L.npy"), info["seconds"], info


def contenders(include_peers=True):
    names = ["Euclidean", "MetricLearner()", "MetricLearner(check=False)", "MetricLearner.paper()", "NCA"]
    return names + (list(PEERS) if include_peers else [])


def sweep_summary(rows, key="default", euclid="euclid"):
    """One line on a sweep's rows (each with ``key`` and ``euclid``: 1-NN and 5-NN accuracy): on how many
    ``key`` is at least Euclidean in both, below it by more than 0.02 in either, the worst difference and the
    mean gain (mean of 1-NN and 5-NN); :mod:`logt.bench.learners_highdim` and :mod:`logt.bench.learners_lowdim`."""
    worst = [min(a - b for a, b in zip(r[key], r[euclid])) for r in rows]
    gain = [np.mean(r[key]) - np.mean(r[euclid]) for r in rows]
    return (f"{key}: {len(rows)} problems: >= Euclidean in 1-NN and 5-NN on {sum(w >= 0 for w in worst)}, "
            f"below by more than 0.02 on {sum(w < -0.02 for w in worst)}, worst {min(worst):+.3f}, "
            f"mean gain {np.mean(gain):+.4f}")


def _our_learner(name, seed):
    """The ``MetricLearner`` contender called ``name`` (``"MetricLearner()"``, ``"MetricLearner(check=False)"`` or
    ``"MetricLearner.paper()"``), seeded."""
    from logt.metric_learning import MetricLearner
    if name == "MetricLearner.paper()":
        return MetricLearner.paper(rng=seed)
    return MetricLearner(rng=seed, check=name == "MetricLearner()")


def _nca_map(Xtr, ytr, Xte, m, seed):
    """``(seconds, Ztr, Zte)``: scikit-learn's NCA (``random_state=seed``, dense input) fitted on a stratified
    subsample of ``m`` training rows (None: all of them; :func:`_subsample` with ``seed``), its map applied to
    every training and test row."""
    from sklearn.neighbors import NeighborhoodComponentsAnalysis
    Xs, ys = _subsample(Xtr, ytr, m, seed=seed)
    nca = NeighborhoodComponentsAnalysis(random_state=seed)
    sec = _timed_fit(nca, _dense(Xs), ys)
    return sec, nca.transform(_dense(Xtr)), nca.transform(_dense(Xte))


def _timed_fit(est, X, y):
    """``est.fit(X, y)`` on one BLAS thread; returns its wall-clock seconds (the fit only)."""
    from logt._threads import single_threaded_blas
    with single_threaded_blas():
        t0 = time.perf_counter()
        est.fit(X, y)
        return time.perf_counter() - t0


def evaluate(dataset, data_dir=None, log=print, quick=False, peers=PEERS):
    """One row per contender: dict(dataset, method, n_train, acc1, acc5, seconds, note)."""
    if peers is True:
        peers = PEERS
    elif not peers:
        peers = ()
    Xtr, ytr, Xte, yte, kind = load(dataset, data_dir)
    rows = []
    py = ml_python()
    for name in contenders(bool(peers)):
        if name in PEERS and name not in peers:
            continue
        m = SUBSAMPLE.get(dataset, {}).get(name)
        if quick and dataset in SUBSAMPLE and name != "Euclidean" and not name.startswith("MetricLearner"):
            m = min(m or 10**9, 500)
        row = {"dataset": dataset, "method": name, "n_train": int(Xtr.shape[0] if m is None else min(m, Xtr.shape[0])),
               "features": kind, "note": ""}
        log(f"learners {dataset} {name}")
        try:
            if name == "Euclidean":
                sec, Ztr, Zte = 0.0, _dense(Xtr), _dense(Xte)
            elif name.startswith("MetricLearner"):
                est = _our_learner(name, 0)
                sec = _timed_fit(est, Xtr, ytr)
                Ztr, Zte = est.transform(Xtr), est.transform(Xte)
                row["note"] = f"{est.n_projections_} projections"
            elif name == "NCA":
                sec, Ztr, Zte = _nca_map(Xtr, ytr, Xte, m, 0)
            else:
                if py is None:
                    row.update(acc1=None, acc5=None, seconds=None,
                               note="metric-learn environment not found (set LOGT_METRIC_LEARN_PYTHON)")
                    rows.append(row)
                    continue
                Xs, ys = _subsample(Xtr, ytr, m)
                Lm, sec, info = run_peer(name, Xs, ys, py)
                Ztr, Zte = _dense(Xtr) @ Lm.T, _dense(Xte) @ Lm.T
                row["note"] = f"metric-learn {info['metric_learn']}, scikit-learn {info['sklearn']}"
            a1, a5 = knn_accuracy(Ztr, ytr, Zte, yte)
            row.update(acc1=a1, acc5=a5, seconds=sec)
            log(f"  -> 1-NN {a1:.3f} 5-NN {a5:.3f} fit {sec:.2f} s")
        except subprocess.TimeoutExpired:
            row.update(acc1=None, acc5=None, seconds=None, note=f"no fit within {TIME_LIMIT:.0f} s")
        except Exception as exc:       # a failing contender is reported, not hidden
            row.update(acc1=None, acc5=None, seconds=None, note=f"failed: {type(exc).__name__}: {str(exc)[:80]}")
        rows.append(row)
    return rows


def section(quick=False, log=print, data_dir=None, datasets=DATASETS, peers=PEERS):
    """The markdown section: one table over all data sets."""
    rows = []
    for ds in datasets:
        try:
            rows += evaluate(ds, data_dir, log=log, quick=quick, peers=peers)
        except (OSError, ValueError) as exc:      # missing data files
            rows.append({"dataset": ds, "method": "-", "n_train": 0, "acc1": None, "acc5": None,
                         "seconds": None, "features": "-", "note": f"skipped: {exc}"})
    return format_section(rows, quick), rows


def _f(v, fmt):
    return "-" if v is None else format(v, fmt)


def format_section(rows, quick=False):
    head = ["data", "method", "train rows", "1-NN", "5-NN", "fit time", "NCA time / this", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        nca = next((q for q in rows if q["dataset"] == r["dataset"] and q["method"] == "NCA"), None)
        ratio = "-"
        if nca and nca.get("seconds") and r.get("seconds") and r["method"].startswith("MetricLearner"):
            ratio = f"{nca['seconds'] / r['seconds']:.1f}x"
            if nca["n_train"] < r["n_train"]:
                ratio += f" (NCA on {nca['n_train']:,} rows)"
        lines.append("| " + " | ".join([r["dataset"], r["method"], f"{r['n_train']:,}", _f(r.get("acc1"), ".3f"),
                                        _f(r.get("acc5"), ".3f"),
                                        "-" if r.get("seconds") is None else f"{r['seconds']:.2f} s", ratio,
                                        r.get("note", "")]) + " |")
    note = ("k-NN test accuracy on the learned map (scikit-learn KNeighborsClassifier); fit time of the metric "
            "only (one run, seed 0). wine / breast cancer / digits: 70/30 stratified split, standardized "
            "features; mushrooms: 70/30 stratified split; adult: a9a / a9a.t; both one-hot 0/1. "
            "MetricLearner: defaults (dense input: the neighbour softmax, 5-12 targets per point by class size "
            "against 20 other-class candidates, T = 'auto' (2e4 anchors here); sparse input (mushrooms, adult): "
            "neighbour pairs with impostors within 1.5x the target radius, learned threshold, T = 'auto' (1e5 "
            "pairs); lam = 0.1, minimize's method='auto'); paper: uniform pairs, threshold 1, lam = 0.1. Peers on "
            "mushrooms / adult train on the stratified subsample in 'train rows' (learned map applied to all "
            "training rows).")
    if quick:
        note += " QUICK run: peers limited to 500 training rows."
    return "### Metric learners: k-NN accuracy and fit time\n\n" + "\n".join(lines) + "\n\n" + note


def evaluate_splits(dataset, n_splits=10, data_dir=None, log=print):
    """Euclidean, ``MetricLearner()`` and NCA over ``n_splits`` stratified 70/30 splits
    (``random_state`` from 0 to ``n_splits - 1``, the learners seeded with the same number; NCA on Adult on
    a stratified 2,000-row subsample drawn with the same seed, ``SUBSAMPLE``: on all 32,561 rows its
    ``n x n`` matrices need tens of GB).

    Returns one dict per contender: ``method``, ``acc1``/``acc5`` (arrays, one entry per
    split), ``seconds`` (array). One test set is small (wine: 54 points, one point = 1.85
    accuracy points), so the mean over splits is the figure to compare.
    """
    res = {m: {"method": m, "acc1": [], "acc5": [], "seconds": []}
           for m in ("Euclidean", "MetricLearner()", "MetricLearner(check=False)", "NCA")}
    for s in range(n_splits):
        log(f"learners {dataset} split {s}")
        Xtr, ytr, Xte, yte, _ = load(dataset, data_dir, split=s)
        for m in res:
            sec = 0.0
            if m == "Euclidean":
                Ztr, Zte = _dense(Xtr), _dense(Xte)
            elif m == "NCA":       # on Adult a stratified subsample (SUBSAMPLE, as in evaluate())
                sec, Ztr, Zte = _nca_map(Xtr, ytr, Xte, SUBSAMPLE.get(dataset, {}).get("NCA"), s)
            else:
                est = _our_learner(m, s)
                sec = _timed_fit(est, Xtr, ytr)             # the fit only, as in evaluate()
                Ztr, Zte = est.transform(Xtr), est.transform(Xte)
            a1, a5 = knn_accuracy(Ztr, ytr, Zte, yte)
            res[m]["acc1"].append(a1)
            res[m]["acc5"].append(a5)
            res[m]["seconds"].append(sec)
    return [{k: (np.array(v) if isinstance(v, list) else v) for k, v in r.items()} for r in res.values()]


def format_splits(results):
    """Markdown table of :func:`evaluate_splits` results: ``{dataset: rows}``."""
    head = ["data", "method", "splits", "1-NN mean (se)", "5-NN mean (se)", "fit time (median)",
            "NCA time / this"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]

    def ms(a):
        return f"{a.mean():.3f} ({a.std(ddof=1) / np.sqrt(len(a)) if len(a) > 1 else 0:.3f})"
    for ds, rows in results.items():
        nca = next(r for r in rows if r["method"] == "NCA")
        for r in rows:
            t = np.median(r["seconds"])
            ratio = f"{np.median(nca['seconds']) / t:.1f}x" if r["method"].startswith("MetricLearner") else "-"
            lines.append("| " + " | ".join([ds, r["method"], str(len(r["acc1"])), ms(r["acc1"]), ms(r["acc5"]),
                                            "-" if r["method"] == "Euclidean" else f"{t:.3f} s", ratio]) + " |")
    return ("### Metric learners over repeated splits\n\n" + "\n".join(lines) + "\n\nStratified 70/30 "
            "splits random_state = 0 .. splits - 1 (features standardized on the training part), learners "
            "seeded with the split number; fit times on one BLAS thread."
            + (" Adult: a9a / a9a.t, NCA on a stratified 2,000-row subsample." if "adult" in results else ""))


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python -m logt.bench.learners")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--data-dir")
    ap.add_argument("--dataset", action="append", choices=DATASETS)
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    ap.add_argument("--peers", default=",".join(PEERS), help="metric-learn contenders to run (comma list, '' for none)")
    ap.add_argument("--splits", type=int, default=0,
                    help="instead: Euclidean / MetricLearner() / NCA over this many 70/30 splits (mean, se); "
                         "Adult keeps its a9a / a9a.t split (only the seeds vary)")
    args = ap.parse_args(argv)
    if args.splits < 0:
        ap.error(f"--splits must be >= 1 (0: the single-split table), got {args.splits}")
    if args.splits:
        log = lambda m: print(f"[learners] {m}", file=sys.stderr, flush=True)   # noqa: E731
        res = {ds: evaluate_splits(ds, args.splits, args.data_dir, log)
               for ds in (args.dataset or ("wine", "breast_cancer", "digits", "mushrooms"))}
        print(format_splits(res))
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({ds: [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in r.items()}
                                for r in rows] for ds, rows in res.items()}, fh, indent=1)
        return 0
    text, rows = section(args.quick, lambda m: print(f"[learners] {m}", file=sys.stderr, flush=True),
                         args.data_dir, tuple(args.dataset or DATASETS),
                         tuple(p for p in args.peers.split(",") if p))
    print(text)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
