"""The metric learners on more wide families, defined after the defaults were settled: spectra and
expression profiles (``python -m logt.bench.learners_families --spectra N`` or ``--expression N``), and two from a
probe of unseen kinds of data: classes made of several clusters (``--multimodal N``) and dense data with a few
outlier rows (``--outliers N``).

:func:`family_problem` draws one problem with random parameters from
:func:`logt.experiments.highdim_data.spectra` (smooth curves whose classes differ by small narrow peaks under
baseline, scatter and band nuisance) or :func:`~logt.experiments.highdim_data.expression` (tens to hundreds of
samples of thousands of co-expressed genes, a few informative genes, a batch effect; as log2 values or, on 40%
of the problems, as raw counts), and ``FAMILY_TEST_ROWS`` test rows of the same distribution, so that one
problem's accuracy is measured to about +-0.01 (a 70/30 split of a few hundred rows is measured to +-0.05).
:func:`family_sweep` compares ``MetricLearner()``, ``MetricLearner(n_components=8)`` and ``(n_components=64)``
with Euclidean k-NN, PCA + k-NN and scikit-learn's NCA; on count problems also the default and Euclidean
distances on ``log1p`` of the counts. :func:`pairs_family_sweep` compares ``PairsMetricLearner()`` with
Euclidean distances on pairs of the same problems. Results: docs/guide/high-dimensional.md, "Spectra and
expression profiles".
"""
import warnings

import numpy as np

from logt.bench.learners import _timed_fit, knn_accuracy as _knn, sweep_summary

__all__ = ["FAMILIES", "FAMILY_TEST_ROWS", "family_problem", "family_sweep", "pairs_family_sweep"]

FAMILIES = ("spectra", "expression", "multimodal", "outliers")
FAMILY_TEST_ROWS = 2000


def family_problem(kind, rng, n_test=FAMILY_TEST_ROWS):
    """``(description, Xtr, ytr, Xte, yte)``: one problem of the family ``kind`` with random parameters and
    ``n_test`` test rows drawn from the same distribution; ``rng`` a ``numpy.random.Generator``.

    ``"spectra"``: 200-1,999 training rows, 300-2,499 wavelengths, 2-6 classes, class peaks of amplitude
    0.02-0.15 (1-3 per class), noise 0.5-5 times that amplitude. ``"expression"``: 60-499 training rows,
    1,000-11,999 genes, 2-5 classes, 5-59 informative genes shifted by 0.4-1.5 standard deviations, batch
    offsets 0, 0.5 or 1, raw counts with probability 0.4. ``"multimodal"``
    (:func:`~logt.experiments.highdim_data.multimodal`): 200-1,999 training rows, 500-2,999 features, 2-4 classes
    of 2-4 clusters in 2-6 informative coordinates, ``sep`` 2-5, noise 0.5-2. ``"outliers"``:
    :func:`~logt.experiments.highdim_data.dense_classification` (200-1,999 training rows, 300-1,999 features,
    5-29 informative, 2-5 classes, ``class_sep`` 0.8-2, heavy-tailed with probability 0.3), then 0.5-3% of all
    rows with 1-10% of their entries scaled by 10^2-10^6
    (:func:`~logt.experiments.highdim_data.with_outlier_rows`)."""
    from logt.experiments import highdim_data as H
    if kind == "spectra":
        n, d, c = int(rng.integers(200, 2000)), int(rng.integers(300, 2500)), int(rng.integers(2, 7))
        p = dict(peak=float(rng.uniform(0.02, 0.15)), n_class_peaks=int(rng.integers(1, 4)),
                 noise=float(rng.uniform(0.5, 5.0)))
        X, y = H.spectra(n + n_test, d, c, rng=int(rng.integers(2**31)), **p)
        desc = f"spectra n={n} d={d} classes={c}"
    elif kind == "expression":
        n, d, c = int(rng.integers(60, 500)), int(rng.integers(1000, 12000)), int(rng.integers(2, 6))
        p = dict(n_informative=int(rng.integers(5, 60)), shift=float(rng.uniform(0.4, 1.5)),
                 batch=float(rng.choice([0.0, 0.5, 1.0])), counts=bool(rng.random() < 0.4))
        X, y = H.expression(n + n_test, d, c, rng=int(rng.integers(2**31)), **p)
        desc = f"expression{' counts' if p['counts'] else ''} n={n} d={d} classes={c}"
    elif kind == "multimodal":
        n, d, c = int(rng.integers(200, 2000)), int(rng.integers(500, 3000)), int(rng.integers(2, 5))
        p = dict(n_clusters=int(rng.integers(2, 5)), n_informative=int(rng.integers(2, 7)),
                 sep=float(rng.uniform(2.0, 5.0)), noise=float(rng.uniform(0.5, 2.0)))
        X, y = H.multimodal(n + n_test, d, c, rng=int(rng.integers(2**31)), **p)
        desc = f"multimodal n={n} d={d} classes={c} clusters={p['n_clusters']}"
    elif kind == "outliers":
        n, d, c = int(rng.integers(200, 2000)), int(rng.integers(300, 2000)), int(rng.integers(2, 6))
        X, y = H.dense_classification(n + n_test, d, n_informative=int(rng.integers(5, 30)), n_classes=c,
                                      class_sep=float(rng.uniform(0.8, 2.0)), heavy_tailed=bool(rng.random() < 0.3),
                                      rng=int(rng.integers(2**31)))
        frac = float(rng.uniform(0.005, 0.03))
        X, _ = H.with_outlier_rows(X, frac, 10.0 ** rng.uniform(2, 6), float(rng.uniform(0.01, 0.1)),
                                   rng=int(rng.integers(2**31)))
        desc = f"outliers {frac:.1%} n={n} d={d} classes={c}"
    else:
        raise ValueError(f"kind must be one of {FAMILIES}, got {kind!r}")
    return desc, X[:n], y[:n], X[n:], y[n:]


def _fitted(est, Xtr, ytr):
    """``(est fitted on one BLAS thread with its warnings recorded, seconds, warning messages)``; the messages leave
    out :class:`~logt.GlitchedRowsWarning` (a repair of the data, not a verdict on the fit: ``warned{k}``)."""
    from logt import GlitchedRowsWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = _timed_fit(est, Xtr, ytr)
    return est, t, [str(w.message) for w in caught if issubclass(w.category, UserWarning)
                    and not issubclass(w.category, GlitchedRowsWarning)]


def _chance(ytr, yte):
    """The test 1-NN accuracy of a neighbour drawn at random among the training rows (the check's
    :func:`logt.metric_learning.subspace.chance_hits`, ``sum_c p_train(c) p_test(c)``)."""
    from logt.metric_learning.subspace import chance_hits
    codes = np.unique(np.concatenate([ytr, yte]), return_inverse=True)[1].ravel()
    train = np.arange(codes.size) < len(ytr)
    return chance_hits(codes, train, ~train)


def family_sweep(kind, n_problems=30, seed=303, nca=True, log=print):
    """Rows for :func:`family_problem` ``0..n_problems-1`` of ``kind``: ``dict(problem, euclid, default,
    choice, seconds, rank8, rank64, pca8, pca64, nca64, warned8, warned64)`` ([1-NN, 5-NN] test accuracies;
    ``choice`` the default's ``metric_choice_``; ``rank{k}`` ``MetricLearner(n_components=k)``, ``k = 64``
    capped at ``n - 1``, and ``pca{k}`` PCA to ``k``; ``nca64`` scikit-learn's NCA with ``n_components=64,
    max_iter=50`` on the raw input, with ``nca``; ``warned{k}`` whether the rank-``k`` fit warned; ``chance`` a
    random training neighbour's test accuracy); count problems add ``euclid_log1p`` and ``default_log1p`` (on
    ``numpy.log1p`` of the counts). Logs one line per problem and :func:`~logt.bench.learners.sweep_summary`
    lines at the end."""
    from sklearn.decomposition import PCA

    from logt import MetricLearner
    g = np.random.default_rng(seed)
    rows = []
    for i in range(n_problems):
        desc, Xtr, ytr, Xte, yte = family_problem(kind, g)
        est, t, _ = _fitted(MetricLearner(rng=0), Xtr, ytr)
        r = dict(problem=desc, euclid=_knn(Xtr, ytr, Xte, yte), default=_knn(est.transform(Xtr), ytr,
                                                                          est.transform(Xte), yte),
                 choice=est.metric_choice_, seconds=t, chance=_chance(ytr, yte))
        for k in (8, 64):
            k_ = min(k, len(ytr) - 1)
            est_k, _, caught = _fitted(MetricLearner(n_components=k_, rng=0), Xtr, ytr)
            r[f"rank{k}"] = _knn(est_k.transform(Xtr), ytr, est_k.transform(Xte), yte)
            r[f"warned{k}"] = bool(caught)
            pca = PCA(k_, random_state=0).fit(Xtr)
            r[f"pca{k}"] = _knn(pca.transform(Xtr), ytr, pca.transform(Xte), yte)
        if nca:
            from sklearn.neighbors import NeighborhoodComponentsAnalysis
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = NeighborhoodComponentsAnalysis(min(64, Xtr.shape[1]), max_iter=50, random_state=0)
                r["nca_seconds"] = _timed_fit(m, Xtr, ytr)
            r["nca64"] = _knn(m.transform(Xtr), ytr, m.transform(Xte), yte)
        if "counts" in desc:
            Ltr, Lte = np.log1p(Xtr), np.log1p(Xte)
            est_l, _, _ = _fitted(MetricLearner(rng=0), Ltr, ytr)
            r["euclid_log1p"] = _knn(Ltr, ytr, Lte, yte)
            r["default_log1p"] = _knn(est_l.transform(Ltr), ytr, est_l.transform(Lte), yte)
        log(f"{i:2d} {desc:40s} Euclidean {r['euclid'][0]:.3f}/{r['euclid'][1]:.3f} default "
            f"{r['default'][0]:.3f}/{r['default'][1]:.3f} ({r['choice']}, {t:.2f} s) rank8 "
            f"{r['rank8'][0]:.3f}/{r['rank8'][1]:.3f} rank64 {r['rank64'][0]:.3f}/{r['rank64'][1]:.3f}"
            + (f" NCA {r['nca64'][0]:.3f}/{r['nca64'][1]:.3f}" if nca else "")
            + "".join(f" [rank-{k} warned]" for k in (8, 64) if r[f"warned{k}"])
            + (f" | log1p: Euclidean {r['euclid_log1p'][0]:.3f}/{r['euclid_log1p'][1]:.3f} default "
               f"{r['default_log1p'][0]:.3f}/{r['default_log1p'][1]:.3f}" if "euclid_log1p" in r else ""))
        rows.append(r)
    for key in ("default", "rank8", "rank64", "pca8", "pca64") + (("nca64",) if nca else ()):
        log(sweep_summary(rows, key=key))
    for key in ("rank8", "rank64"):
        log(sweep_summary(rows, key=key, euclid=f"pca{key[4:]}").replace(f"{key}:", f"{key} against PCA:")
            .replace("Euclidean", "PCA"))
    if nca:
        log(sweep_summary(rows, key="default", euclid="nca64").replace("default:", "default against NCA:")
            .replace("Euclidean", "NCA"))
    for k in (8, 64):
        for warned in (True, False):
            some = [r for r in rows if r[f"warned{k}"] == warned]
            if some:
                log(f"rank{k} {'warned' if warned else 'did not warn'} on {len(some)}: test 1-NN accuracy above a "
                    f"random neighbour's by {np.mean([r[f'rank{k}'][0] - r['chance'] for r in some]):+.3f} (mean), "
                    f"at most {max(r[f'rank{k}'][0] - r['chance'] for r in some):+.3f}")
    counts = [r for r in rows if "euclid_log1p" in r]
    if counts:
        log(f"count problems ({len(counts)}), on the raw counts and on log1p of them:")
        log(sweep_summary(counts, key="default"))
        log(sweep_summary(counts, key="default_log1p", euclid="euclid_log1p"))
        log(sweep_summary(counts, key="default_log1p", euclid="default").replace("default_log1p:", "default_log1p "
            "against the default on the counts:").replace("Euclidean", "that"))
    return rows


def pairs_family_sweep(kind, n_problems=30, seed=303, log=print):
    """``PairsMetricLearner()`` (and ``check=False``) against Euclidean distances on pairs of
    :func:`family_problem` ``0..n_problems-1``, each with 1,000 test rows: ``logt.bench.learners_pairs.PAIRS``
    pairs among the training rows and as many among the test rows, drawn with ``numpy.random.default_rng(i)``,
    +1 for one class. Rows and summary as :func:`logt.bench.learners_pairs.pairs_sweep`'s
    (``python -m logt.bench.learners_families --spectra N --pairs``)."""
    from logt.bench.learners_pairs import PAIRS, _draw_pairs, pairs_row, pairs_summary
    g = np.random.default_rng(seed)
    rows = []
    for i in range(n_problems):
        desc, Xtr, ytr, Xte, yte = family_problem(kind, g, n_test=1000)
        gp = np.random.default_rng(i)
        Ptr, pytr = _draw_pairs(Xtr, ytr, gp, PAIRS)
        Pte, pyte = _draw_pairs(Xte, yte, gp, PAIRS)
        rows.append(pairs_row(i, desc, Ptr, pytr, Pte, pyte, log))
    log(pairs_summary(rows))
    return rows


if __name__ == "__main__":  # python -m logt.bench.learners_families --spectra N | ... [--seed S] [--pairs]
    import sys
    argv = sys.argv
    kinds = [k for k in FAMILIES if f"--{k}" in argv]
    if len(kinds) != 1:
        sys.exit("usage: python -m logt.bench.learners_families --spectra N | --expression N | --multimodal N | "
                 "--outliers N [--seed S] [--pairs] [--no-nca]")
    kind = kinds[0]
    n = int(argv[argv.index(f"--{kind}") + 1])
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 303
    if "--pairs" in argv:
        pairs_family_sweep(kind, n, seed=seed)
    else:
        family_sweep(kind, n, seed=seed, nca="--no-nca" not in argv)
