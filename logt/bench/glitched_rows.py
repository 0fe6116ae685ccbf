"""The repair of glitched rows in sparse input, before and after (``python -m logt.bench.glitched_rows --sparse N
[--seed S] [--data-dir DIR]``).

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

__all__ = ["SPARSE_KINDS", "GLITCHES", "SPARSE_TEST_ROWS", "sparse_problem", "glitch_sweep", "glitch_summary"]

SPARSE_KINDS = ("bow", "mixed", "mushrooms", "a9a")
GLITCHES = ("entries", "whole", "spikes")
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


def glitch_sweep(n_problems=40, seed=3, kinds=SPARSE_KINDS, data_dir=None, log=print):
    """Rows ``dict(problem, n_glitched, euclid, clean, before, now, repaired, clean_repaired, seconds_before,
    seconds_now)`` for :func:`sparse_problem` ``0..n_problems-1`` (kinds in turn): [1-NN, 5-NN] test accuracies of
    Euclidean distances on the glitched rows, and of ``MetricLearner()`` fitted on the rows without glitches, on
    the glitched rows with the repair off, and with it; ``repaired`` / ``clean_repaired`` the fits' ``n_repaired_``.
    Logs one line per problem and :func:`glitch_summary`."""
    g = np.random.default_rng(seed)
    rows = []
    for i in range(n_problems):
        desc, Xtr, Xg, ytr, Xte, yte, bad = sparse_problem(kinds[i % len(kinds)], g, data_dir=data_dir)
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


if __name__ == "__main__":  # python -m logt.bench.glitched_rows --sparse N [--seed S] [--data-dir DIR]
    import sys
    argv = sys.argv
    if "--sparse" not in argv:
        sys.exit("usage: python -m logt.bench.glitched_rows --sparse N [--seed S] [--data-dir DIR]")
    glitch_sweep(int(argv[argv.index("--sparse") + 1]),
                 seed=int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 3,
                 data_dir=argv[argv.index("--data-dir") + 1] if "--data-dir" in argv else None)
