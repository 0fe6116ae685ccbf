"""The repair of glitched rows, before and after: dense rows (``python -m logt.bench.glitched_rows --dense N [--seed S]
[--many]``), dense two-valued and categorical rows (``--binary N``, the same glitches on
:func:`logt.bench.learners_lowdim.binary_problem`'s kinds) and sparse rows (``--sparse N [--seed S] [--data-dir
DIR]``). ``--sd-fallback`` (dense): the robust norms as before their scale was floored at each feature's typical
departure from its median (:func:`sd_fallback`).

:func:`dense_problem` draws one dense problem with random parameters from seven kinds (dense classification,
shifted raw-pixel digits, multimodal classes, rendered shapes, spectra, expression profiles, and the digits 8x8,
breast cancer or wine sets of scikit-learn), then glitches 1-10% of all its rows (``--many``: 10-25%) by
10^1.5-10^6: a 1-20% share of their entries, all of them, or (a quarter of the problems) added spikes of that
factor times the feature's standard deviation.

:func:`sparse_problem` draws one sparse problem with random parameters: bag-of-words counts (``"bow"``: counts,
``log1p`` of them or tf-idf), one-hot blocks beside log-normal numeric columns (``"mixed"``), or rows of the
Mushrooms or Adult (a9a) LIBSVM files (``"mushrooms"``, ``"a9a"``; from ``--data-dir``, ``LOGT_DATA_DIR`` or
``../shared/data``), then glitches 2-25% of all its rows by 10^1.5-10^5: a share of their nonzeros, every one of
them, or a few added entries. :func:`glitch_sweep` fits ``MetricLearner()`` on the training rows three times: on
the data without glitches (``clean``), with glitches and the repair switched off (``before``), and with glitches
(``now``), and scores 1-NN / 5-NN on the test rows that are not glitched. Results: docs/guide/high-dimensional.md,
"Sparse rows" (seeds 3 and 4, 40 problems each).
"""
import functools
import warnings
from unittest import mock

import numpy as np
import scipy.sparse as sp

from logt.bench.learners import _timed_fit, knn_accuracy as _knn

__all__ = ["DENSE_KINDS", "BINARY_GLITCH_KINDS", "SPARSE_KINDS", "GLITCHES", "DENSE_TEST_ROWS", "SPARSE_TEST_ROWS",
           "dense_problem", "sparse_problem", "glitch_sweep", "glitch_summary", "sd_fallback"]

DENSE_KINDS = ("dense", "digits", "multimodal", "shapes", "spectra", "lowdim", "expression")
BINARY_GLITCH_KINDS = ("categorical", "mixed", "bernoulli")     # learners_lowdim.binary_problem's kinds
SPARSE_KINDS = ("bow", "mixed", "mushrooms", "a9a")
GLITCHES = ("entries", "whole", "spikes")
DENSE_TEST_ROWS = 1000
SPARSE_TEST_ROWS = 800


def _libsvm(name, data_dir):
    """``(X_csr, y)`` of the LIBSVM file ``name``.gz (raw values; shared, not to be changed in place)."""
    from logt.bench.references import find_data_dir
    d = find_data_dir(data_dir)
    if d is None or not (d / f"{name}.gz").is_file():
        raise FileNotFoundError(f"{name}.gz not found: pass data_dir (--data-dir) or set LOGT_DATA_DIR")
    return _read_libsvm(str(d / f"{name}.gz"))


@functools.lru_cache(maxsize=4)
def _read_libsvm(path):
    from logt.datasets import load_libsvm
    X, y = load_libsvm(path)[:2]
    return sp.csr_matrix(X), y


def _base(kind, g, n_test, data_dir):
    """``(description, X, y, n)``: the clean rows of one problem, the first ``n`` of them for training."""
    from logt.experiments import highdim_data as H
    if kind == "bow":
        n, d, c = int(g.integers(300, 2500)), int(g.integers(1000, 9000)), int(g.integers(2, 8))
        X, y = H.sparse_classification(n + n_test, d, c, doc_length=int(g.integers(10, 200)),
                                       topic_share=float(g.uniform(0.03, 0.3)), rng=int(g.integers(2**31)))
        post = int(g.integers(3))
        if post == 1:
            X = X.copy()
            X.data = np.log1p(X.data)
        elif post == 2:
            idf = np.log((1 + X.shape[0]) / (1 + np.bincount(X.indices, minlength=d))) + 1
            X = sp.csr_matrix(X.multiply(idf[None, :]))
        return f"bow n={n} d={d} c={c} post={['counts', 'log1p', 'tfidf'][post]}", X, y, n
    if kind == "mixed":
        n, c = int(g.integers(300, 2500)), int(g.integers(2, 5))
        N = n + n_test
        y = g.integers(c, size=N)
        blocks = []
        for _ in range(int(g.integers(5, 30))):
            m = int(g.integers(2, 40))
            p = g.dirichlet(np.ones(m), size=c)                   # each class's distribution over the m levels
            v = np.array([g.choice(m, p=p[k]) for k in y])
            blocks.append(sp.csr_matrix((np.ones(N), (np.arange(N), v)), shape=(N, m)))
        k = int(g.integers(2, 10))
        num = np.exp(g.normal(g.uniform(0, 8, k), g.uniform(0.3, 1.5, k), (N, k))
                     + 0.5 * y[:, None] * (g.random(k) < 0.5))
        num *= g.random((N, k)) < 0.6
        X = sp.hstack(blocks + [sp.csr_matrix(num)]).tocsr()
        return f"mixed n={n} d={X.shape[1]} c={c}", X, y, n
    if kind in ("mushrooms", "a9a"):
        X0, y0 = _libsvm(kind, data_dir)
        n = int(g.integers(300, 3000))
        idx = g.choice(X0.shape[0], n + n_test, replace=False)
        return f"{kind} n={n}", X0[idx], y0[idx], n
    raise ValueError(f"kind must be one of {SPARSE_KINDS}, got {kind!r}")


def sparse_problem(kind, rng, n_test=SPARSE_TEST_ROWS, data_dir=None):
    """``(description, Xtr, Xtr_glitched, ytr, Xte, yte, glitched)``: one problem of ``kind`` (``SPARSE_KINDS``;
    ``rng`` a ``numpy.random.Generator``), CSR rows. 2-25% of all rows are glitched by a factor 10^1.5-10^5, one
    of ``GLITCHES``: ``"entries"`` multiplies a random 5-50% share of a row's nonzeros (each with that
    probability), ``"whole"`` all of them, ``"spikes"`` adds ``max(1, floor(20 share))`` entries of the factor
    times the median absolute nonzero at random features. ``Xte, yte`` are the test rows (of ``n_test``) that are
    not glitched; ``glitched`` (n,) bool marks the glitched training rows."""
    desc, X, y, n = _base(kind, rng, n_test, data_dir)
    frac, scale = float(rng.uniform(0.02, 0.25)), float(10 ** rng.uniform(1.5, 5))
    glitch, share = int(rng.integers(3)), float(rng.uniform(0.05, 0.5))
    N, d = X.shape
    rows = np.sort(rng.choice(N, max(1, int(frac * N)), replace=False))
    Xg = sp.csr_matrix(X, copy=True)
    Xg.sort_indices()
    if GLITCHES[glitch] == "spikes":
        med = float(np.median(np.abs(X.data)))
        r_, c_ = [], []
        for r in rows:
            cols = rng.choice(d, max(1, int(share * 20)), replace=False)
            r_ += [r] * cols.size
            c_ += list(cols)
        Xg = (Xg + sp.csr_matrix((np.full(len(r_), scale * med), (r_, c_)), shape=X.shape)).tocsr()
    else:
        p = 1.0 if GLITCHES[glitch] == "whole" else share
        for r in rows:
            a, b = Xg.indptr[r], Xg.indptr[r + 1]
            Xg.data[a:b][rng.random(b - a) < p] *= scale
    bad = np.zeros(N, dtype=bool)
    bad[rows] = True
    desc += f" glitch={GLITCHES[glitch]} frac={frac:.3f} scale={scale:.0e} share={share:.2f}"
    return desc, X[:n], Xg[:n], y[:n], X[n:][~bad[n:]], y[n:][~bad[n:]], bad[:n]


def _dense_base(kind, g, n_test):
    """``(X, y, n_test)``: the clean rows of one dense problem, shuffled; the last ``n_test`` of them for testing
    (the low-dimensional sets: 30% of their rows)."""
    from logt.experiments import highdim_data as H

    def r():
        return int(g.integers(2**31))
    if kind == "dense":
        n, d, c = int(g.integers(300, 1500)), int(g.integers(300, 1500)), int(g.integers(2, 6))
        X, y = H.dense_classification(n + n_test, d, n_informative=int(g.integers(5, 20)), n_classes=c,
                                      class_sep=float(g.uniform(1.5, 3.0)), heavy_tailed=bool(g.random() < 0.3),
                                      rng=r())
    elif kind == "digits":
        n = int(g.integers(600, 2000))
        X, y = H.shifted_digits(n + n_test, canvas=28, size=int(g.integers(14, 20)), max_shift=int(g.integers(2, 5)),
                                noise=float(g.choice([0.0, 0.1])), rng=r())
    elif kind == "multimodal":
        n, d, c = int(g.integers(300, 1500)), int(g.integers(500, 2000)), int(g.integers(2, 4))
        X, y = H.multimodal(n + n_test, d, c, n_clusters=int(g.integers(2, 4)), n_informative=int(g.integers(2, 5)),
                            sep=float(g.uniform(3, 5)), noise=float(g.uniform(0.5, 1.0)), rng=r())
    elif kind == "shapes":
        n = int(g.integers(600, 2000))
        X, y = H.shapes(n + n_test, rng=r())
    elif kind == "spectra":
        n = int(g.integers(300, 1500))
        X, y = H.spectra(n + n_test, int(g.integers(300, 1500)), int(g.integers(2, 5)),
                         peak=float(g.uniform(0.05, 0.15)), noise=float(g.uniform(0.5, 2.0)), rng=r())
    elif kind == "expression":
        n = int(g.integers(150, 500))
        X, y = H.expression(n + n_test, int(g.integers(1000, 4000)), int(g.integers(2, 5)),
                            n_informative=int(g.integers(10, 60)), shift=float(g.uniform(0.8, 1.5)), rng=r())
    elif kind == "lowdim":
        from sklearn.datasets import load_breast_cancer, load_digits, load_wine
        X, y = [load_digits, load_breast_cancer, load_wine][int(g.integers(3))](return_X_y=True)
        n_test = len(y) - int(0.7 * len(y))
    elif kind in BINARY_GLITCH_KINDS:
        from logt.bench.learners_lowdim import BINARY_KINDS, binary_problem
        _, Xtr, ytr, Xte, yte = binary_problem(BINARY_KINDS.index(kind), g)
        X, y = np.vstack([Xtr, Xte]), np.concatenate([ytr, yte])
        n_test = len(yte)
    else:
        raise ValueError(f"kind must be one of {DENSE_KINDS + BINARY_GLITCH_KINDS}, got {kind!r}")
    perm = g.permutation(len(y))
    return X[perm].astype(float), y[perm], n_test


def dense_problem(kind, rng, share=(0.01, 0.10), n_test=DENSE_TEST_ROWS):
    """``(description, Xtr, Xtr_glitched, ytr, Xte, yte, glitched)`` as :func:`sparse_problem`'s, dense rows, for
    ``kind`` in ``DENSE_KINDS`` or ``BINARY_GLITCH_KINDS``: a uniform ``share`` (low, high) of all rows glitched
    by a factor 10^1.5-10^6, on a quarter of the problems added spikes (a 1-20% share of the row's entries plus or
    minus the factor times the feature's standard deviation; ``share`` in the description negative), else
    products (a 1-20% share of the entries, or on a quarter of those the whole row, times the factor;
    :func:`~logt.experiments.highdim_data.with_outlier_rows`). ``n_test`` test rows (the low-dimensional sets:
    30% of theirs), those not glitched returned."""
    from logt.experiments import highdim_data as H
    X, y, n_test = _dense_base(kind, rng, n_test)
    frac, scale = float(rng.uniform(*share)), float(10.0 ** rng.uniform(1.5, 6))
    ent = 1.0 if rng.random() < 0.25 else float(rng.uniform(0.01, 0.2))
    if rng.random() < 0.25:
        sub = np.random.default_rng(int(rng.integers(2**31)))
        rows = np.sort(sub.choice(len(y), max(1, int(frac * len(y))), replace=False))
        Xg = X.copy()
        sd = X.std(0) + 1e-12
        for q in rows:
            cols = sub.choice(X.shape[1], max(1, int(min(ent, 0.2) * X.shape[1])), replace=False)
            Xg[q, cols] += sub.choice([-1, 1], cols.size) * scale * sd[cols]
        ent = -ent
    else:
        Xg, rows = H.with_outlier_rows(X, frac, scale, ent, rng=int(rng.integers(2**31)))
    bad = np.zeros(len(y), dtype=bool)
    bad[rows] = True
    n = len(y) - n_test
    desc = f"{kind} n={n} d={X.shape[1]} frac={frac:.3f} scale={scale:.0e} share={ent:.2f}"
    return desc, X[:n], Xg[:n], y[:n], X[n:][~bad[n:]], y[n:][~bad[n:]], bad[:n]


def sd_fallback():
    """Within the block, the robust row norms divide a feature whose 10-90th percentile spread is 0 by its standard
    deviation and take the spread as it is otherwise (``logt.metric_learning.outliers.DEPARTURE_FLOOR`` False, the
    release before the typical departure floored the scale): a bench arm, restored on exit."""
    from logt.bench.learners_lowdim import _swapped
    from logt.metric_learning import outliers
    return _swapped(outliers, "DEPARTURE_FLOOR", False)


def _fit(Xtr, ytr, repair=True):
    """``(MetricLearner(rng=0) fitted, seconds)``, warnings silenced; ``repair=False``: the glitched-rows rule off."""
    from logt import MetricLearner
    from logt.metric_learning import outliers
    off = (lambda X, codes=None: (X, np.zeros(X.shape[0], dtype=bool)))
    with warnings.catch_warnings(), mock.patch.object(outliers, "glitched_rows",
                                                      outliers.glitched_rows if repair else off):
        warnings.simplefilter("ignore")
        est = MetricLearner(rng=0)
        t = _timed_fit(est, Xtr, ytr)
    return est, t


def glitch_sweep(n_problems=40, seed=3, kinds=SPARSE_KINDS, data_dir=None, share=(0.01, 0.10), log=print):
    """Rows ``dict(problem, n_glitched, euclid, clean, before, now, repaired, clean_repaired, seconds_before,
    seconds_now)`` for problems ``0..n_problems-1`` of ``kinds`` in turn (:func:`sparse_problem` for
    ``SPARSE_KINDS``, reading ``data_dir``; :func:`dense_problem` with ``share`` for the dense kinds): [1-NN, 5-NN]
    test accuracies of
    Euclidean distances on the glitched rows, and of ``MetricLearner()`` fitted on the rows without glitches, on
    the glitched rows with the repair off, and with it; ``repaired`` / ``clean_repaired`` the fits' ``n_repaired_``.
    Logs one line per problem and :func:`glitch_summary`."""
    g = np.random.default_rng(seed)
    rows = []
    for i in range(n_problems):
        kind = kinds[i % len(kinds)]
        desc, Xtr, Xg, ytr, Xte, yte, bad = (sparse_problem(kind, g, data_dir=data_dir) if kind in SPARSE_KINDS
                                             else dense_problem(kind, g, share))
        r = dict(problem=desc, n_glitched=int(bad.sum()), euclid=_knn(Xg, ytr, Xte, yte))
        est, _ = _fit(Xtr, ytr)
        r.update(clean=_knn(est.transform(Xtr), ytr, est.transform(Xte), yte), clean_repaired=est.n_repaired_)
        for arm, repair in (("before", False), ("now", True)):
            est, t = _fit(Xg, ytr, repair)
            r[arm] = _knn(est.transform(Xg), ytr, est.transform(Xte), yte)
            r[f"seconds_{arm}"] = t
        r["repaired"] = est.n_repaired_
        rows.append(r)
        log(f"{i} {desc} glitched {r['n_glitched']} repaired {r['repaired']}: 1-NN Euclidean {r['euclid'][0]:.3f} "
            f"clean {r['clean'][0]:.3f} before {r['before'][0]:.3f} now {r['now'][0]:.3f}")
    log(glitch_summary(rows))
    return rows


def glitch_summary(rows):
    """Means of 1-NN / 5-NN (Euclidean, before, now, clean), fits better / worse than before by more than 0.01
    and the worst change, fits below Euclidean by more than 0.02 before and now, problems repaired, clean fits
    that repaired something, median fit seconds before and now."""
    def col(key, j):
        return np.array([r[key][j] for r in rows])
    lines = [f"{len(rows)} problems"]
    for j, name in ((0, "1-NN"), (1, "5-NN")):
        eu, before, now, clean = (col(k, j) for k in ("euclid", "before", "now", "clean"))
        lines.append(f"{name}: Euclidean {eu.mean():.3f}, before {before.mean():.3f}, now {now.mean():.3f}, "
                     f"clean {clean.mean():.3f}; better {int(np.sum(now > before + 0.01))}, worse "
                     f"{int(np.sum(now < before - 0.01))} (worst {np.min(now - before):+.3f}); below Euclidean by "
                     f"> 0.02: {int(np.sum(before < eu - 0.02))} -> {int(np.sum(now < eu - 0.02))}")
    rep = np.array([r["repaired"] for r in rows])
    lines.append(f"repaired on {int(np.sum(rep > 0))} of {len(rows)}; clean fits that repaired rows: "
                 f"{int(sum(r['clean_repaired'] > 0 for r in rows))}; median fit "
                 f"{np.median([r['seconds_before'] for r in rows]):.2f} s before, "
                 f"{np.median([r['seconds_now'] for r in rows]):.2f} s now")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m logt.bench.glitched_rows --dense N | --binary N | --sparse N [...]
    import contextlib
    import sys
    argv = sys.argv
    kind = next((k for k in ("--dense", "--binary", "--sparse") if k in argv), None)
    if kind is None:
        sys.exit("usage: python -m logt.bench.glitched_rows --dense N [--seed S] [--many] [--sd-fallback] | "
                 "--binary N [--seed S] [--many] [--sd-fallback] | --sparse N [--seed S] [--data-dir DIR]")
    with sd_fallback() if "--sd-fallback" in argv else contextlib.nullcontext():
        glitch_sweep(int(argv[argv.index(kind) + 1]),
                     seed=(int(argv[argv.index("--seed") + 1]) if "--seed" in argv
                           else {"--dense": 31, "--binary": 41, "--sparse": 3}[kind]),
                     kinds={"--dense": DENSE_KINDS, "--binary": BINARY_GLITCH_KINDS, "--sparse": SPARSE_KINDS}[kind],
                     data_dir=argv[argv.index("--data-dir") + 1] if "--data-dir" in argv else None,
                     share=(0.10, 0.25) if "--many" in argv else (0.01, 0.10))
