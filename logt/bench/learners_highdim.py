"""The metric learners on high-dimensional data (part of ``python -m logt.bench --only learners``).

Sets from :mod:`logt.experiments.highdim_data` (raw-pixel digits on a 28 x 28 canvas,
dense data with a few informative directions among thousands, sparse bag-of-words),
70/30 stratified split (seed 0), no preprocessing. Contenders: Euclidean k-NN,
PCA (64 directions) + k-NN, scikit-learn's ``NeighborhoodComponentsAnalysis``
(``n_components=64``, ``max_iter=50``; dense input only) twice: on the raw input
(as the other contenders) and on the input divided by one factor, ``max |X|`` of the
training rows (a common rescaling, e.g. 8-bit pixels / 255, which changes neither the
model class nor k-NN's neighbours but starts NCA's optimizer where its softmax is not
saturated: on raw 0..255 pixels it stops after one iteration, at its PCA
initialization), ``MetricLearner()`` (the default) and ``MetricLearner(n_components=64)``.
k-NN accuracy (1 and 5 neighbours) on the learned map; fit time of the metric only,
the learners' fits interleaved with NCA's in the same run, so the ratios NCA /
default are measured under the same load.
"""
import numpy as np
import scipy.sparse as sp

from logt.bench.learners import _timed_fit, knn_accuracy as _knn, sweep_summary

__all__ = ["HIGHDIM_SETS", "IMAGES_SETS", "named_sets", "directions_text", "evaluate_set", "section", "format_section",
           "split_means", "random_problem", "random_sweep", "tiny_problem", "tiny_sweep", "TINY_TEST_ROWS",
           "identity_problem",
           "identity_sweep", "IDENTITY_TEST_ROWS", "imbalanced_identity_problem", "few_rows_identity_problem",
           "image_problem", "image_sweep", "moderate_problem", "moderate_sweep"]

HIGHDIM_SETS = ("digits28", "dense2000", "bow5000")       # development sets; --all adds the rest and held-out
IMAGES_SETS = ("shapes28", "shapes32_ramp", "patches20", "patches24")     # highdim_data.images_sets(): --all


def directions_text(est):
    """The kinds of direction a fitted default ``MetricLearner``'s ``subspace_`` spans, as words: "principal and
    class means" (also when no check ran), "principal, class means and standardized class means", "principal
    only" or "principal only, in the data's units" (``check_accuracy_["directions"]``)."""
    directions = (est.check_accuracy_ or {}).get("directions", "principal, class means")
    units = ", in the data's units"
    tail = units if directions.endswith(units) else ""
    kinds = directions[:len(directions) - len(tail)].split(", ")
    return (f"{kinds[0]} only" if len(kinds) == 1 else ", ".join(kinds[:-1]) + " and " + kinds[-1]) + tail


def evaluate_set(name, X, y, n_components=64, nca=True, rng=0):
    """Rows ``dict(dataset, method, acc1, acc5, seconds, note)`` for one set."""
    from sklearn.decomposition import PCA, TruncatedSVD
    from sklearn.model_selection import train_test_split
    from sklearn.neighbors import NeighborhoodComponentsAnalysis

    from logt import MetricLearner
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=rng)
    k = min(n_components, X.shape[1], Xtr.shape[0] - 1)
    rows = [dict(dataset=name, method="Euclidean", seconds=None, note="",
                 **dict(zip(("acc1", "acc5"), _knn(Xtr, ytr, Xte, yte))))]
    pca = TruncatedSVD(k, random_state=rng) if sp.issparse(X) else PCA(k, random_state=rng)
    t = _timed_fit(pca, Xtr, ytr)
    rows.append(dict(dataset=name, method=f"PCA({k})", seconds=t, note="TruncatedSVD" if sp.issparse(X) else "",
                     **dict(zip(("acc1", "acc5"), _knn(pca.transform(Xtr), ytr, pca.transform(Xte), yte)))))
    for label, est in (("MetricLearner()", MetricLearner(rng=rng)),
                       (f"MetricLearner(n_components={k})", MetricLearner(n_components=k, rng=rng))):
        t = _timed_fit(est, Xtr, ytr)
        note = f"rank {est.n_components_}, {est.n_projections_} projections"
        if est.subspace_ is not None and est.n_components is None:
            note += (", plain Euclidean distances (the check's choice)" if est.metric_choice_ == "euclidean" else
                     f", {est.metric_choice_} metric on {est.subspace_.shape[0]} directions ({directions_text(est)})")
        elif est.metric_choice_ == "subspace":
            note += f", the top {k} principal directions (the check's choice)"
        elif est.metric_choice_ == "default":
            note += (f", the default's {est.subspace_.shape[0]} directions' metric truncated to rank {k} "
                     "(the check's choice)")
        rows.append(dict(dataset=name, method=label, seconds=t, note=note,
                         **dict(zip(("acc1", "acc5"), _knn(est.transform(Xtr), ytr, est.transform(Xte), yte)))))
        if nca and label == "MetricLearner()" and not sp.issparse(X):
            s = float(np.abs(Xtr).max()) or 1.0
            for method, f in ((f"NCA({k})", 1.0), (f"NCA({k}), X / max|X|", s)):
                m = NeighborhoodComponentsAnalysis(n_components=k, max_iter=50, random_state=rng)
                t = _timed_fit(m, Xtr / f, ytr)
                note = f"max_iter=50, stopped after {m.n_iter_}" + ("" if f == 1.0 else f", input / {s:.3g}")
                rows.append(dict(dataset=name, method=method, seconds=t, note=note, n_iter=int(m.n_iter_),
                                 **dict(zip(("acc1", "acc5"),
                                            _knn(m.transform(Xtr / f), ytr, m.transform(Xte / f), yte)))))
    return rows


def _nca_row(rows, dataset, rescaled):
    """The raw-input (``rescaled=False``) or rescaled NCA row of ``dataset``, or None."""
    return next((q for q in rows if q["dataset"] == dataset and q["method"].startswith("NCA")
                 and q["method"].endswith("max|X|") == rescaled), None)


def named_sets(names):
    """name -> ``(X, y)``: the sets of :mod:`logt.experiments.highdim_data` (development and both held-out
    batches, and the image sets, which need Pillow, when ``names`` asks for one of them)."""
    from logt.experiments import highdim_data as H
    data = {**H.development_sets(), **H.heldout_sets(), **H.heldout2_sets()}
    if any(name in IMAGES_SETS for name in names):
        data.update(H.images_sets())
    return data


def section(quick=False, log=print, sets=None, data=None):
    """The markdown section: one table over the high-dimensional sets (``data``: name -> ``(X, y)``, default
    :func:`named_sets`)."""
    names = sets or (HIGHDIM_SETS[:1] if quick else HIGHDIM_SETS)
    data = named_sets(names) if data is None else data
    rows = []
    for name in names:
        X, y = data[name]
        log(f"  high-d learners: {name} {X.shape}")
        rows += evaluate_set(name, X, y, nca=not quick)
    return format_section(rows), rows


def _md_row(cells):
    """One Markdown table row; a pipe inside a cell (``X / max|X|``) escaped, so it does not start a new cell."""
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def format_section(rows, title="Metric learners on high-dimensional data", note=None):
    """Markdown: ``### title``, the table of :func:`evaluate_set`'s ``rows``, and ``note`` (default: where the
    sets come from and how they were run)."""
    head = ["data", "method", "1-NN", "5-NN", "fit time", "NCA time / this", "rescaled NCA time / this", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        ratios = []
        for rescaled in (False, True):
            nca = _nca_row(rows, r["dataset"], rescaled)
            ok = nca is not None and r["method"].startswith("MetricLearner") and r["seconds"]
            ratios.append(f"{nca['seconds'] / r['seconds']:.1f}x" if ok else "-")
        lines.append(_md_row([r["dataset"], r["method"], f"{r['acc1']:.3f}", f"{r['acc5']:.3f}",
                              "-" if r["seconds"] is None else f"{r['seconds']:.2f} s", *ratios, r["note"]]))
    if note is None:
        note = ("Sets from logt.experiments.highdim_data (raw values, no preprocessing), 70/30 stratified split, "
                "seed 0; fit times on one BLAS thread, one run, the learners interleaved with NCA.")
    return f"### {title}\n\n" + "\n".join(lines) + "\n\n" + note


def split_means(names, n_splits=10, data=None, log=print):
    """Means over the splits (seeds) ``0..n_splits-1`` of :func:`evaluate_set`'s accuracies, median fit
    times and the medians of the per-split ratios NCA / default (NCA on raw and on rescaled input): one
    Markdown table (``python -m logt.bench.learners_highdim --all --splits 10``). ``data``: name -> ``(X, y)``
    (default: :func:`named_sets`)."""
    data = named_sets(names) if data is None else data
    head = ["data", "method", "1-NN", "5-NN", "median fit time", "NCA time / this (median)",
            "rescaled NCA time / this (median)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for name in names:
        X, y = data[name]
        runs = [evaluate_set(name, X, y, rng=s) for s in range(n_splits)]
        log(f"  {name}: {n_splits} splits")
        for i, r0 in enumerate(runs[0]):
            rs = [run[i] for run in runs]
            secs = [r["seconds"] for r in rs]
            ratios = []
            for rescaled in (False, True):
                ratios.append("-")
                if r0["method"].startswith("MetricLearner") and _nca_row(runs[0], name, rescaled) is not None:
                    nca = [_nca_row(run, name, rescaled)["seconds"] for run in runs]
                    ratios[-1] = f"{np.median([a / b for a, b in zip(nca, secs)]):.1f}x"
            acc1, acc5 = np.mean([r["acc1"] for r in rs]), np.mean([r["acc5"] for r in rs])
            lines.append(_md_row([name, r0["method"], f"{acc1:.3f}", f"{acc5:.3f}",
                                  "-" if secs[0] is None else f"{np.median(secs):.2f} s", *ratios]))
    return "\n".join(lines)


def random_problem(rng):
    """``(description, X, y)``: one wide problem of random kind and shape (dense with a few informative
    directions, 200-4,000 features, sometimes heavy-tailed; raw-pixel digits on a 22-32 px canvas;
    bag-of-words with 2,000-15,000 words), ``rng`` a ``numpy.random.Generator``."""
    from logt.experiments import highdim_data as H
    kind = ("dense", "dense", "digits", "bow")[int(rng.integers(4))]
    if kind == "dense":
        n, d = int(rng.integers(400, 2500)), int(rng.integers(200, 4000))
        n_inf, n_cls = int(rng.integers(3, 16)), int(rng.integers(2, 8))
        n_inf = max(n_inf, (2 * n_cls - 1).bit_length())       # two clusters per class need 2 C <= 2**n_inf
        X, y = H.dense_classification(n, d, n_informative=n_inf, n_classes=n_cls,
                                      class_sep=float(rng.uniform(0.7, 2.0)), heavy_tailed=bool(rng.random() < 0.3),
                                      rng=int(rng.integers(2**31)))
        return f"dense n={n} d={d}", X, y
    if kind == "digits":
        canvas = int(rng.integers(22, 33))
        size = int(rng.integers(12, min(canvas - 4, 20)))
        n = int(rng.integers(800, 3000))
        X, y = H.shifted_digits(n, canvas=canvas, size=size,
                                max_shift=int(min(rng.integers(1, 6), (canvas - size) // 2)),
                                noise=float(rng.choice([0, 0.05, 0.15])), blur=float(rng.choice([0, 0.5, 1.0])),
                                rng=int(rng.integers(2**31)))
        return f"digits n={n} canvas={canvas}", X, y
    n, d = int(rng.integers(500, 3000)), int(rng.integers(2000, 15000))
    X, y = H.sparse_classification(n, d, n_classes=int(rng.integers(2, 8)), topic_share=float(rng.uniform(0.05, 0.3)),
                                   rng=int(rng.integers(2**31)))
    return f"bow n={n} d={d}", X, y


def random_sweep(n_problems=24, seed=777, log=print, problem=random_problem):
    """``MetricLearner()`` against Euclidean k-NN on ``problem`` (:func:`random_problem`, or
    :func:`moderate_problem`) ``0..n_problems-1`` (one 70/30 split each, seed 0): rows ``dict(problem, euclid
    (1-NN, 5-NN), default (1-NN, 5-NN), choice, seconds)``; ``python -m logt.bench.learners_highdim --random N``."""
    from sklearn.model_selection import train_test_split
    g = np.random.default_rng(seed)
    rows = []
    for i in range(n_problems):
        desc, X, y = problem(g)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
        rows.append(_default_against_euclidean(i, desc, Xtr, ytr, Xte, yte, log))
    log(sweep_summary(rows))
    return rows


def moderate_problem(rng):
    """``(description, X, y)``: one moderately wide problem (130-512 features, mostly more than 128 varying ones:
    where the default leaves its full-rank path for the principal subspace; a small digit on a large canvas can
    fall below, on the full-rank path) of random kind and shape: dense with a few
    informative directions, raw-pixel digits on a 13-22 px canvas, one-hot letter sequences
    (:func:`logt.experiments.highdim_data.sequences`, 33-127 positions) or spectra; ``rng`` a
    ``numpy.random.Generator``."""
    from logt.experiments import highdim_data as H
    kind = ("dense", "digits", "sequences", "spectra")[int(rng.integers(4))]
    seed = int(rng.integers(2**31))
    if kind == "dense":
        n, d = int(rng.integers(400, 2500)), int(rng.integers(130, 513))
        n_inf, n_cls = int(rng.integers(3, 16)), int(rng.integers(2, 8))
        n_inf = max(n_inf, (2 * n_cls - 1).bit_length())
        X, y = H.dense_classification(n, d, n_informative=n_inf, n_classes=n_cls,
                                      class_sep=float(rng.uniform(0.7, 2.0)), heavy_tailed=bool(rng.random() < 0.3),
                                      rng=seed)
        return f"dense n={n} d={d}", X, y
    if kind == "digits":
        canvas = int(rng.integers(13, 23))
        size = int(rng.integers(8, canvas - 3))
        n = int(rng.integers(800, 3000))
        X, y = H.shifted_digits(n, canvas=canvas, size=size,
                                max_shift=int(min(rng.integers(1, 4), (canvas - size) // 2)),
                                noise=float(rng.choice([0, 0.05, 0.15])), blur=float(rng.choice([0, 0.5, 1.0])),
                                rng=seed)
        return f"digits n={n} canvas={canvas} size={size}", X, y
    if kind == "sequences":
        n, length, n_cls = int(rng.integers(600, 3000)), int(rng.integers(33, 128)), int(rng.integers(2, 5))
        X, y = H.sequences(n, length, n_cls, motif_length=int(rng.integers(4, 12)),
                           mutate=float(rng.uniform(0.2, 0.5)), bias=float(rng.uniform(0.1, 0.4)), rng=seed)
        return f"sequences n={n} length={length} C={n_cls}", X, y
    n, d = int(rng.integers(300, 2000)), int(rng.integers(130, 513))
    X, y = H.spectra(n, d, n_classes=int(rng.integers(2, 6)), peak=float(rng.uniform(0.03, 0.1)),
                     noise=float(rng.uniform(0.5, 2.0)), rng=seed)
    return f"spectra n={n} d={d}", X, y


def moderate_sweep(n_problems=40, seed=1, log=print):
    """:func:`random_sweep` on :func:`moderate_problem`; ``python -m logt.bench.learners_highdim --moderate N``."""
    return random_sweep(n_problems, seed=seed, log=log, problem=moderate_problem)


def _default_against_euclidean(i, desc, Xtr, ytr, Xte, yte, log, weights=None):
    """One sweep row: ``MetricLearner(rng=0)`` fitted on one BLAS thread (its warnings silenced) and
    Euclidean k-NN, 1-NN and 5-NN accuracy on the test rows; logged. With test-row ``weights`` also
    ``"default_weighted"`` and ``"euclid_weighted"``, the accuracies so weighted."""
    import warnings

    from logt import MetricLearner
    from logt._threads import single_threaded_blas
    with single_threaded_blas(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MetricLearner(rng=0)
        t = _timed_fit(est, Xtr, ytr)
    Ztr, Zte = est.transform(Xtr), est.transform(Xte)
    r = dict(problem=desc, euclid=_knn(Xtr, ytr, Xte, yte), seconds=t, choice=est.metric_choice_,
             default=_knn(Ztr, ytr, Zte, yte))
    if weights is not None:
        r["euclid_weighted"] = _knn(Xtr, ytr, Xte, yte, weights)
        r["default_weighted"] = _knn(Ztr, ytr, Zte, yte, weights)
    log(f"{i:2d} {desc:28s} Euclidean {r['euclid'][0]:.3f}/{r['euclid'][1]:.3f} default "
        f"{r['default'][0]:.3f}/{r['default'][1]:.3f} ({r['choice']}, {t:.2f} s)")
    return r


TINY_TEST_ROWS = 1000        # tiny_problem's test rows, drawn from the same distribution as its training rows


def tiny_problem(i, rng):
    """``(description, Xtr, ytr, Xte, yte)``: a wide problem with 30-79 training rows (too few for the
    default's held-out check: it cross-fits) and ``TINY_TEST_ROWS`` test rows of the same distribution;
    by ``i % 3`` labels independent of 300-2,999 features of scales 0.1-10 (2-3 classes), dense data with
    3-9 informative directions (:func:`logt.experiments.highdim_data.dense_classification`), or raw-pixel
    digits on a 24 px canvas. ``rng`` a ``numpy.random.Generator``."""
    from logt.experiments import highdim_data as H
    kind = ("noise", "dense", "digits")[i % 3]
    n = int(rng.integers(30, 80))
    m = n + TINY_TEST_ROWS
    if kind == "noise":
        d, c = int(rng.integers(300, 3000)), int(rng.integers(2, 4))
        X, y = rng.standard_normal((m, d)) * np.geomspace(0.1, 10, d), rng.integers(c, size=m)
    elif kind == "dense":
        d = int(rng.integers(300, 3000))
        X, y = H.dense_classification(m, d, n_informative=int(rng.integers(3, 10)), n_classes=int(rng.integers(2, 4)),
                                      class_sep=float(rng.uniform(1.0, 2.5)), rng=int(rng.integers(2**31)))
    else:
        X, y = H.shifted_digits(m, canvas=24, size=14, max_shift=2, rng=int(rng.integers(2**31)))
    p = rng.permutation(m)
    X, y = X[p], y[p]
    return f"{kind} n={n} d={X.shape[1]}", X[:n], y[:n], X[n:], y[n:]


def tiny_sweep(n_problems=30, seed=1, log=print):
    """``MetricLearner()`` against Euclidean k-NN on :func:`tiny_problem` ``0..n_problems-1`` (accuracy on
    the test rows): rows as :func:`random_sweep`'s; ``python -m logt.bench.learners_highdim --tiny N``."""
    g = np.random.default_rng(seed)
    rows = []
    for i in range(n_problems):
        desc, Xtr, ytr, Xte, yte = tiny_problem(i, g)
        if np.bincount(ytr).max() < 2:
            log(f"{i:2d} {desc}: no class with two rows, skipped")
            continue
        rows.append(_default_against_euclidean(i, desc, Xtr, ytr, Xte, yte, log))
    log(sweep_summary(rows))
    return rows


IDENTITY_TEST_ROWS = 5       # identity_problem's test rows per class


def identity_problem(rng):
    """``(description, Xtr, ytr, Xte, yte)``: :func:`logt.experiments.highdim_data.identities` of random shape
    (3-40 classes of 3-11 training rows, 300-3,999 features, 3-19 nuisance and 5-39 identity directions, nuisance
    1-5, separation 0.5-2, noise 0.5-3, raw 0..255 "pixels" on half of them) plus ``IDENTITY_TEST_ROWS`` test rows
    per class; ``rng`` a ``numpy.random.Generator``. The default's check cross-fits where a quarter of each class,
    rounded down, adds up to fewer than 20 held-out rows (always with 3 rows per class)."""
    from logt.experiments.highdim_data import identities
    C, m, d = int(rng.integers(3, 41)), int(rng.integers(3, 12)), int(rng.integers(300, 4000))
    r, q = int(rng.integers(3, 20)), int(rng.integers(5, 40))
    nuis, sep, noise = float(rng.uniform(1, 5)), float(rng.uniform(0.5, 2.0)), float(rng.uniform(0.5, 3.0))
    X, y = identities(C, m + IDENTITY_TEST_ROWS, d, n_nuisance=r, n_identity=q, nuisance=nuis, separation=sep,
                      noise=noise, pixels=bool(rng.random() < 0.5), rng=int(rng.integers(2**31)))
    test = np.tile(np.arange(m + IDENTITY_TEST_ROWS) >= m, C)
    return f"{C} classes x {m} d={d}", X[~test], y[~test], X[test], y[test]


def few_rows_identity_problem(rng):
    """``(description, Xtr, ytr, Xte, yte)``: :func:`logt.experiments.highdim_data.identities` with many classes of
    very few rows: 8-59 classes of 2-4 training rows (the default's check is cross-fitted, but where 4 rows a class
    hold one each out in 20 classes or more), 300-2,999 features, 3-19 nuisance and 5-39 identity directions
    (nuisance 1-5, separation 0.5-2, noise 0.5-3, raw 0..255 "pixels" on half of them), plus ``IDENTITY_TEST_ROWS``
    test rows per class; ``rng`` a ``numpy.random.Generator``."""
    from logt.experiments.highdim_data import identities
    C, m, d = int(rng.integers(8, 60)), int(rng.integers(2, 5)), int(rng.integers(300, 3000))
    X, y = identities(C, m + IDENTITY_TEST_ROWS, d, n_nuisance=int(rng.integers(3, 20)),
                      n_identity=int(rng.integers(5, 40)), nuisance=float(rng.uniform(1, 5)),
                      separation=float(rng.uniform(0.5, 2.0)), noise=float(rng.uniform(0.5, 3.0)),
                      pixels=bool(rng.random() < 0.5), rng=int(rng.integers(2**31)))
    test = np.tile(np.arange(m + IDENTITY_TEST_ROWS) >= m, C)
    return f"{C} classes x {m} d={d}", X[~test], y[~test], X[test], y[test]


def imbalanced_identity_problem(rng):
    """``(description, Xtr, ytr, Xte, yte, weights)``: :func:`logt.experiments.highdim_data.identities` with
    classes of unequal size: 4-24 classes of ``3 + floor(6 Pareto(1))`` training rows (at most 120), 300-2,999
    features, 3-14 nuisance and 5-29 identity directions (nuisance 1-5, separation 0.5-2, noise 0.5-3), plus
    ``IDENTITY_TEST_ROWS`` test rows per class; ``weights`` (per test row, mean 1) are the class's share of the
    training rows over its share of the test rows: weighted, an accuracy is that under the training proportions,
    unweighted that of an even mix of classes. ``rng`` a ``numpy.random.Generator``."""
    from logt.experiments.highdim_data import identities
    C, d = int(rng.integers(4, 25)), int(rng.integers(300, 3000))
    sizes = np.minimum(3 + (6 * rng.pareto(1.0, C)).astype(np.int64), 120)
    r, q = int(rng.integers(3, 15)), int(rng.integers(5, 30))
    nuis, sep, noise = float(rng.uniform(1, 5)), float(rng.uniform(0.5, 2.0)), float(rng.uniform(0.5, 3.0))
    m = int(sizes.max()) + IDENTITY_TEST_ROWS
    X, y = identities(C, m, d, n_nuisance=r, n_identity=q, nuisance=nuis, separation=sep, noise=noise,
                      rng=int(rng.integers(2**31)))
    pos = np.tile(np.arange(m), C)
    train, test = pos < sizes[y], pos >= m - IDENTITY_TEST_ROWS
    weights = sizes[y[test]] * (C / sizes.sum())
    return (f"{C} classes of {sizes.min()}-{sizes.max()} d={d}", X[train], y[train], X[test], y[test], weights)


def identity_sweep(n_problems=30, seed=78, log=print, imbalanced=False, few_rows=False):
    """``MetricLearner()`` and ``MetricLearner(n_components=min(64, n - 1))`` against Euclidean k-NN on
    :func:`identity_problem` ``0..n_problems-1`` (accuracy on the test rows): rows as :func:`random_sweep`'s plus
    ``"rank64"``; ``python -m logt.bench.learners_highdim --identities N``. ``imbalanced``: on
    :func:`imbalanced_identity_problem` instead, the rows also with the accuracies weighted to the training
    proportions (``"euclid_weighted"``, ``"default_weighted"``, ``"rank64_weighted"``);
    ``--identities N --imbalanced``. ``few_rows``: on :func:`few_rows_identity_problem` (``--identities N
    --few-rows``)."""
    import warnings

    from logt import MetricLearner
    from logt._threads import single_threaded_blas
    problem = imbalanced_identity_problem if imbalanced else few_rows_identity_problem if few_rows else identity_problem
    g = np.random.default_rng(seed)
    rows = []
    for i in range(n_problems):
        desc, Xtr, ytr, Xte, yte, *w = problem(g)
        w = w[0] if w else None
        r = _default_against_euclidean(i, desc, Xtr, ytr, Xte, yte, log, weights=w)
        with single_threaded_blas(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = MetricLearner(n_components=min(64, len(ytr) - 1), rng=0).fit(Xtr, ytr)
        Ztr, Zte = est.transform(Xtr), est.transform(Xte)
        r["rank64"] = _knn(Ztr, ytr, Zte, yte)
        if w is not None:
            r["rank64_weighted"] = _knn(Ztr, ytr, Zte, yte, w)
        rows.append(r)
    log(sweep_summary(rows))
    log(sweep_summary(rows, key="rank64"))
    if imbalanced:
        log("weighted to the training proportions:")
        log(sweep_summary(rows, key="default_weighted", euclid="euclid_weighted"))
        log(sweep_summary(rows, key="rank64_weighted", euclid="euclid_weighted"))
    return rows


def image_problem(kind, rng):
    """``(description, X, y)``: one raw-pixel problem of a family not derived from the digits, random
    parameters (1,200-3,600 images): ``kind="shapes"`` (:func:`~logt.experiments.highdim_data.shapes`: 22-32 px
    canvas, 4-8 classes, rotation, noise, blur and brightness ramp drawn) or ``"patches"``
    (:func:`~logt.experiments.highdim_data.photo_patches`: 14-28 px patches, 8 or 18 regions, brightness gain
    drawn); ``rng`` a ``numpy.random.Generator``."""
    from logt.experiments import highdim_data as H
    n = int(rng.integers(1200, 3600))
    if kind == "shapes":
        p = dict(canvas=int(rng.integers(22, 33)), n_classes=int(rng.integers(4, 9)),
                 rotation=float(rng.choice([0.0, 0.3, 0.8])), noise=float(rng.choice([0.0, 0.05, 0.1, 0.2])),
                 blur=float(rng.choice([0, 0.7, 1.2])), gradient=float(rng.choice([0, 0.5, 1.0])))
        X, y = H.shapes(n, rng=int(rng.integers(2**31)), **p)
    elif kind == "patches":
        p = dict(size=int(rng.integers(14, 29)), grid=int(rng.choice([2, 3])),
                 gain=float(rng.choice([0.0, 0.2, 0.4])))
        X, y = H.photo_patches(n, rng=int(rng.integers(2**31)), **p)
    else:
        raise ValueError(f"kind must be 'shapes' or 'patches', got {kind!r}")
    return f"{kind} n={n} " + " ".join(f"{k}={v}" for k, v in p.items()), X, y


def image_sweep(kind, n_problems=8, seed=101, log=print):
    """:func:`evaluate_set` (every contender, NCA included, one 70/30 split, seed 0) on :func:`image_problem`
    ``0..n_problems-1``; logs each table and how often the default and ``MetricLearner(n_components=64)`` are at
    least Euclidean k-NN and NCA(64) (on raw and on rescaled input) in both 1-NN and 5-NN. Returns the rows
    (``python -m logt.bench.learners_highdim --shapes N`` or ``--patches N``)."""
    g = np.random.default_rng(seed)
    rows = []
    for i in range(n_problems):
        desc, X, y = image_problem(kind, g)
        rs = evaluate_set(f"{i} {desc}", X, y)
        log(f"{i} {desc} (d = {X.shape[1]})")
        for r in rs:
            secs = "-" if r["seconds"] is None else f"{r['seconds']:.2f} s"
            log(f"   {r['method']:32s} {r['acc1']:.3f} {r['acc5']:.3f} {secs:>7s}  {r['note']}")
        rows.extend(rs)
    for label in ("MetricLearner()", "MetricLearner(n_components=64)"):
        for rival in ("Euclidean", "NCA(64)", "NCA(64), X / max|X|"):
            pairs = [(r, next(q for q in rows if q["dataset"] == r["dataset"] and q["method"] == rival))
                     for r in rows if r["method"] == label]
            ok = sum(r["acc1"] >= q["acc1"] and r["acc5"] >= q["acc5"] for r, q in pairs)
            worst = min(min(r["acc1"] - q["acc1"], r["acc5"] - q["acc5"]) for r, q in pairs)
            log(f"{label} at least {rival} (1-NN and 5-NN): {ok} of {len(pairs)}, worst {worst:+.3f}")
    return rows


if __name__ == "__main__":
    # python -m logt.bench.learners_highdim [--all] [--splits N] | --random/--moderate/--tiny/--identities N [--seed S]
    #                                       [--imbalanced | --few-rows] (with --identities)
    #                                       | --shapes/--patches N [--seed S]
    import sys
    for flag, sweep, default_seed in (("--random", random_sweep, 777), ("--moderate", moderate_sweep, 1),
                                      ("--tiny", tiny_sweep, 1),
                                      ("--identities", identity_sweep, 78)):
        if flag in sys.argv:
            seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else default_seed
            extra = {}
            if flag == "--identities":
                extra = dict(imbalanced="--imbalanced" in sys.argv, few_rows="--few-rows" in sys.argv)
            sweep(int(sys.argv[sys.argv.index(flag) + 1]), seed=seed, **extra)
            sys.exit(0)
    for kind, default_seed in (("shapes", 101), ("patches", 202)):
        if f"--{kind}" in sys.argv:
            seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else default_seed
            image_sweep(kind, int(sys.argv[sys.argv.index(f"--{kind}") + 1]), seed=seed)
            sys.exit(0)
    data = named_sets(IMAGES_SETS) if "--all" in sys.argv else None        # every set, generated once
    names = list(data) if data is not None else None
    if "--splits" in sys.argv:
        print(split_means(names or list(HIGHDIM_SETS), int(sys.argv[sys.argv.index("--splits") + 1]), data=data))
    else:
        print(section(sets=names, data=data)[0])
