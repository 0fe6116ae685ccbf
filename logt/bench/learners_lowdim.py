"""The metric learner's default on few features (the full-rank path) against plain Euclidean k-NN.

``python -m logt.bench.learners_lowdim --random N [--seed S]``: ``N`` seeded random problems with at most 120
features and 1 to 60 rows per feature (:func:`lowdim_problem`), each fitted twice on one BLAS thread:
``MetricLearner()`` (the default: the learned metric checked against plain Euclidean distances) and
``MetricLearner(check=False)`` (the learned metric as is); 1-NN and 5-NN accuracy on up to 1,500 test rows of
the same distribution, and the raw features' Euclidean k-NN. See docs/guide/metric-learning.md, "The check on
few features". ``--large``: :func:`largen_problem` instead (2,700-20,000 training rows, 8-127 features, 2-12
classes), where the check holds rows out instead of cross-fitting. ``--multicluster``: :func:`multicluster_problem`
instead (4-20 classes of 1-3 clusters each at 5-60 features). ``--noisy``: :func:`noisy_problem` instead (few
classes of two clusters among many noise features in unrelated units). ``--manycluster``:
:func:`manycluster_problem` instead (2-4 classes of 6-29 small clusters each, 1,500-12,000 rows). ``--loss L``:
both fits with ``loss=L`` (e.g. ``pairs``, the default on dense input before the neighbour softmax);
``--targets K``: both fits with ``triplet_neighbors=K`` (the softmax's targets per point; ``--targets 5`` is the
default before the count grew with the class size). ``--rows N`` (with ``--noisy`` or ``--manycluster``): every
problem with ``N`` training rows (its other draws unchanged). ``--search-cap C``: the softmax's neighbour search
with a fixed cap of ``C`` candidates per class (:func:`fixed_search_cap`; ``--search-cap 2000`` is the release
before ``logt.oracles.neighbors.search_cap``). ``--imbalanced``: :func:`imbalanced_problem` instead (one large
class and 1-4 rare ones). ``--single-run``: ``T="auto"`` runs each fit once, as before its re-run of a fit that
falls short (:func:`single_run_budget`). ``--binary``: :func:`binary_problem` instead (one-hot categorical
variables with rare levels, alone or beside numeric columns, and independent 0/1 features). ``--standardize-binary``:
``scaling="auto"`` divides two-valued features by their standard deviation, as before half their range
(:func:`standardized_binary`). Each sweep ends with how many fits said ``success=False`` and how many
``T="auto"`` re-ran.
"""
import contextlib
import math
import warnings

import numpy as np

from logt.bench.learners import _timed_fit, knn_accuracy as _knn, sweep_summary

__all__ = ["LOWDIM_KINDS", "LOWDIM_TEST_ROWS", "LARGEN_KINDS", "LARGEN_TEST_ROWS", "lowdim_problem",
           "largen_problem", "multicluster_problem", "MULTICLUSTER_TEST_ROWS", "noisy_problem", "NOISY_TEST_ROWS",
           "manycluster_problem", "MANYCLUSTER_TEST_ROWS", "imbalanced_problem", "IMBALANCED_TEST_ROWS",
           "binary_problem", "BINARY_KINDS", "BINARY_TEST_ROWS", "lowdim_sweep", "fixed_search_cap",
           "single_run_budget", "standardized_binary"]

LOWDIM_KINDS = ("digits", "dense_scaled", "dense_std", "noise", "blobs", "onehot", "real")
LOWDIM_TEST_ROWS = 1500
LARGEN_KINDS = ("dense_scaled", "dense_std", "blobs", "noise", "onehot", "dense_many")
LARGEN_TEST_ROWS = 2000
MULTICLUSTER_TEST_ROWS = 1500
NOISY_TEST_ROWS = 1500
MANYCLUSTER_TEST_ROWS = 1500
IMBALANCED_TEST_ROWS = 1500
BINARY_KINDS = ("categorical", "mixed", "bernoulli")
BINARY_TEST_ROWS = 1500


def _onehot(m, d, rng):
    """``(X, y)``: ``d // 4`` categorical variables of 4 levels, one-hot (``4 (d // 4)`` 0/1 features), each
    level's probability depending on the class (2-3 classes, Dirichlet(0.5) per class and variable)."""
    C = int(rng.integers(2, 4))
    y = rng.integers(C, size=m)
    nv, levels = max(1, d // 4), 4
    P = rng.dirichlet(np.full(levels, 0.5), size=(C, nv))
    X = np.zeros((m, nv * levels))
    for v in range(nv):
        X[np.arange(m), v * levels + _draw_levels(rng, P[y, v])] = 1.0
    return X, y


def _draw_levels(rng, P_rows):
    """(m,) one level per row, row ``i`` drawn from the probabilities ``P_rows[i]`` ((m, levels)) with one
    uniform of ``rng`` each."""
    return (rng.random(len(P_rows))[:, None] > np.cumsum(P_rows, axis=1)).sum(1).clip(0, P_rows.shape[1] - 1)


def _classification(m, d, k, C, scaled, rng):
    """``(X, y)``: ``make_classification`` with ``k`` informative of ``d`` features and ``C`` classes (one
    cluster each, class separation 0.5-2, 2% flipped labels; drawn with ``rng``), then per-feature scales
    0.1-10 (``scaled``) or standardized."""
    from sklearn.datasets import make_classification
    X, y = make_classification(m, d, n_informative=k, n_redundant=0, n_classes=C, n_clusters_per_class=1,
                               class_sep=float(rng.uniform(0.5, 2.0)), flip_y=0.02,
                               random_state=int(rng.integers(2**31)))
    if scaled:
        return X * np.exp(rng.uniform(np.log(0.1), np.log(10), d)), y
    return (X - X.mean(0)) / X.std(0), y


def _blobs(m, d, C, max_std, rng):
    """``(X, y)``: isotropic ``make_blobs`` with ``C`` centres, spread 1-``max_std`` (drawn with ``rng``)."""
    from sklearn.datasets import make_blobs
    return make_blobs(m, d, centers=C, cluster_std=float(rng.uniform(1.0, max_std)),
                      random_state=int(rng.integers(2**31)))


def lowdim_problem(i, rng):
    """``(kind, Xtr, ytr, Xte, yte)``, the ``i``-th problem drawn with ``rng`` (a ``numpy.random.Generator``),
    its kind ``LOWDIM_KINDS[i % 7]``: scikit-learn's 8 x 8 digits, raw 0..16 pixels (70-1,300 training rows);
    ``make_classification`` with 2-7 informative of 3-120 features, 2-4 classes, per-feature scales 0.1-10
    ("dense_scaled") or standardized ("dense_std"); labels independent of features of scales e^-2..e^2
    ("noise"); isotropic ``make_blobs`` (2-5 centres, spread 1-6); one-hot categorical variables ("onehot");
    raw wine, breast cancer or iris ("real_<name>", up to 70% of the rows for training). Generated kinds:
    ``n`` log-uniform from ``d + 2`` (at least 25) to ``60 d``; test rows from the same distribution (the
    rest of the real sets, at most ``LOWDIM_TEST_ROWS``)."""
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
    kind = LOWDIM_KINDS[i % len(LOWDIM_KINDS)]
    if kind == "digits":
        Xd, yd = load_digits(return_X_y=True)
        p = rng.permutation(len(yd))
        X, y = Xd[p], yd[p]
        n = int(np.exp(rng.uniform(np.log(70), np.log(1300))))
    elif kind == "real":
        name = ("wine", "bc", "iris")[int(rng.integers(3))]
        X0, y0 = {"wine": load_wine, "bc": load_breast_cancer, "iris": load_iris}[name](return_X_y=True)
        p = rng.permutation(len(y0))
        X, y = X0[p].astype(np.float64), y0[p]
        n = int(np.exp(rng.uniform(np.log(max(X.shape[1] + 2, 25)), np.log(0.7 * len(y)))))
        kind = "real_" + name
    else:
        d = int(np.exp(rng.uniform(np.log(3), np.log(120))))
        n = max(int(np.exp(rng.uniform(np.log(d + 2), np.log(60 * d)))), 25)
        m = n + LOWDIM_TEST_ROWS
        if kind in ("dense_scaled", "dense_std"):
            k = min(d, int(rng.integers(2, 8)))
            X, y = _classification(m, d, k, int(rng.integers(2, 5)), kind == "dense_scaled", rng)
        elif kind == "noise":
            X = rng.standard_normal((m, d)) * np.exp(rng.uniform(-2, 2, d))
            y = rng.integers(int(rng.integers(2, 4)), size=m)
        elif kind == "blobs":
            X, y = _blobs(m, d, int(rng.integers(2, 6)), 6.0, rng)
        else:
            X, y = _onehot(m, d, rng)
    return kind, X[:n], y[:n], X[n:n + LOWDIM_TEST_ROWS], y[n:n + LOWDIM_TEST_ROWS]


def largen_problem(i, rng):
    """``(kind, Xtr, ytr, Xte, yte)``, the ``i``-th many-rows problem drawn with ``rng``: ``n`` log-uniform in
    2,700-20,000 training rows, ``d`` log-uniform in 8-127 features, 2-12 classes, kind ``LARGEN_KINDS[i % 6]``:
    ``make_classification`` with 2-11 informative directions, per-feature scales 0.1-10 ("dense_scaled") or
    standardized ("dense_std"), or half the features informative and scaled ("dense_many"); isotropic blobs
    (spread 1-8); labels independent of the features ("noise"); one-hot categories (``_onehot``, 2-3 classes).
    ``LARGEN_TEST_ROWS`` test rows from the same distribution."""
    kind = LARGEN_KINDS[i % len(LARGEN_KINDS)]
    d = int(np.exp(rng.uniform(np.log(8), np.log(128))))
    n = int(np.exp(rng.uniform(np.log(2700), np.log(20000))))
    C = int(rng.integers(2, 13))
    m = n + LARGEN_TEST_ROWS
    if kind.startswith("dense"):
        k = min(d, int(rng.integers(2, 12)) if kind != "dense_many" else max(2, d // 2))
        X, y = _classification(m, d, k, min(C, 2 ** k // 2 if k < 6 else C), kind != "dense_std", rng)
    elif kind == "noise":
        X = rng.standard_normal((m, d)) * np.exp(rng.uniform(-2, 2, d))
        y = rng.integers(C, size=m)
    elif kind == "blobs":
        X, y = _blobs(m, d, C, 8.0, rng)
    else:
        X, y = _onehot(m, d, rng)
    return kind, X[:n], y[:n], X[n:], y[n:]


def multicluster_problem(i, rng):
    """``(kind, Xtr, ytr, Xte, yte)``: many classes, each of one to three clusters, at few features (what the
    other kinds lack and real sets such as vowels or letters have): ``make_classification`` with 4-20 classes of
    1-3 clusters (fewer where ``2**k`` cannot hold them), ``k`` = 3-16 informative of ``d`` log-uniform in 5-60
    features, class separation 0.8-2.5, 1% flipped labels; on half of the problems per-feature scales 0.1-10
    ("scaled"). ``n`` log-uniform from ``max(10 C, 100)`` to 4,000 training rows, ``MULTICLUSTER_TEST_ROWS`` test
    rows of the same distribution. ``i`` is unused (the signature of :func:`lowdim_problem`)."""
    d = int(np.exp(rng.uniform(np.log(5), np.log(60))))
    k = min(d, int(rng.integers(3, 17)))
    C, clusters = int(rng.integers(4, 21)), int(rng.integers(1, 4))
    while clusters > 1 and C * clusters > 2 ** k:
        clusters -= 1
    C = min(C, 2 ** k)
    n = int(np.exp(rng.uniform(np.log(max(10 * C, 100)), np.log(4000))))
    return _clustered("multicluster", n, d, k, C, clusters, MULTICLUSTER_TEST_ROWS, rng)


def _clustered(name, n, d, k, C, clusters, test_rows, rng):
    """The draw shared by :func:`multicluster_problem` and :func:`manycluster_problem`: ``make_classification``
    with ``C`` classes of ``clusters`` clusters (separation 0.8-2.5, 1% flipped labels), on half of the problems
    per-feature scales 0.1-10; ``(kind, Xtr, ytr, Xte, yte)`` with ``n`` training and ``test_rows`` test rows."""
    from sklearn.datasets import make_classification
    X, y = make_classification(n + test_rows, d, n_informative=k, n_redundant=0, n_classes=C,
                               n_clusters_per_class=clusters, class_sep=float(rng.uniform(0.8, 2.5)), flip_y=0.01,
                               random_state=int(rng.integers(2**31)))
    scaled = bool(rng.random() < 0.5)
    if scaled:
        X = X * np.exp(rng.uniform(np.log(0.1), np.log(10), d))
    return f"{name}{'_scaled' if scaled else ''} C={C}x{clusters}", X[:n], y[:n], X[n:], y[n:]


def noisy_problem(i, rng, rows=None):
    """``(kind, Xtr, ytr, Xte, yte)``: few classes among many noise features, in unrelated units (tabular data
    with many uninformative columns): ``make_classification`` with ``d`` = 10-59 features of which 4-9 are
    informative (no redundant ones), 2-7 classes of two clusters each, class separation 0.6-1.5, 1% flipped
    labels, every feature multiplied by ``exp(U(-2, 2))``; ``n`` log-uniform from 800 to 6,000 training rows
    (``rows``: that many instead, the other draws unchanged), ``NOISY_TEST_ROWS`` test rows. ``i`` is unused (the
    signature of :func:`lowdim_problem`)."""
    from sklearn.datasets import make_classification
    d = int(rng.integers(10, 60))
    k, C = int(rng.integers(4, 10)), int(rng.integers(2, 8))
    n = int(np.exp(rng.uniform(np.log(800), np.log(6000))))
    n = n if rows is None else int(rows)
    X, y = make_classification(n + NOISY_TEST_ROWS, d, n_informative=k, n_redundant=0, n_classes=C,
                               class_sep=float(rng.uniform(0.6, 1.5)), random_state=int(rng.integers(2**31)))
    X = X * np.exp(rng.uniform(-2.0, 2.0, d))
    return f"noisy C={C} k={k}", X[:n], y[:n], X[n:], y[n:]


def manycluster_problem(i, rng, rows=None):
    """``(kind, Xtr, ytr, Xte, yte)``: few classes, each of many small clusters, many rows (where the softmax's
    targets per point, which grow with the class, could reach into other clusters): ``make_classification`` with
    2-4 classes of 6-29 clusters, ``k`` = ``ceil(log2(C clusters))`` + 0-3 informative of ``k`` + 0-29 features,
    class separation 0.8-2.5, 1% flipped labels; on half of the problems per-feature scales 0.1-10 ("scaled").
    ``n`` log-uniform from 1,500 to 12,000 training rows (13-1,000 rows per cluster; ``rows``: that many instead,
    the other draws unchanged), ``MANYCLUSTER_TEST_ROWS`` test rows. ``i`` is unused (the signature of
    :func:`lowdim_problem`)."""
    C, clusters = int(rng.integers(2, 5)), int(rng.integers(6, 30))
    k = math.ceil(math.log2(C * clusters)) + int(rng.integers(0, 4))
    d = k + int(rng.integers(0, 30))
    n = int(np.exp(rng.uniform(np.log(1500), np.log(12000))))
    n = n if rows is None else int(rows)
    return _clustered("manycluster", n, d, k, C, clusters, MANYCLUSTER_TEST_ROWS, rng)


def imbalanced_problem(i, rng):
    """``(kind, Xtr, ytr, Xte, yte)``: one large class and 1-4 rare ones, each rare class drawn with
    probability 0.5%, 1%, 2% or 5% of the large one's (where the softmax's curvature at ``W = 0`` can be
    1e3-1e6 times ``lam``): class means ``N(0, s^2 I)`` with ``s`` uniform in 0.3-4, unit Gaussian noise,
    features scaled by ``exp(U(0, log r))`` with ``r`` one of 1, 1e2, 1e4; ``d`` one of 2, 4, 8, 16, 32, 64;
    300-5,000 training rows and ``IMBALANCED_TEST_ROWS`` test rows of the same draw (a class may have no test
    row). ``i`` is unused (the signature of :func:`lowdim_problem`)."""
    n = int(rng.integers(300, 5000))
    d = int(rng.choice([2, 4, 8, 16, 32, 64]))
    C = int(rng.integers(2, 6))
    rare = float(rng.choice([0.005, 0.01, 0.02, 0.05]))
    p = np.r_[np.full(C - 1, rare), 1.0]
    y = rng.choice(C, n + IMBALANCED_TEST_ROWS, p=p / p.sum())
    X = rng.normal(size=(C, d)) * float(rng.uniform(0.3, 4.0))
    X = (X[y] + rng.normal(size=(y.size, d))) * np.exp(rng.uniform(0.0, np.log(float(rng.choice([1, 1e2, 1e4]))), d))
    return f"imbalanced C={C} rare={rare:g}", X[:n], y[:n], X[n:], y[n:]


def _categorical(rng, y, C, m, levels, informative):
    """(m, levels) one-hot block of one categorical variable: level frequencies ``1 / rank^a`` (``a`` in
    0.5-2, so some levels are rare), shifted per class by a Dirichlet draw when ``informative``."""
    base = 1.0 / np.arange(1, levels + 1) ** rng.uniform(0.5, 2.0)
    base /= base.sum()
    P = (rng.dirichlet(base * float(rng.uniform(2, 20)) + 1e-3, size=C) if informative
         else np.tile(base, (C, 1)))
    B = np.zeros((m, levels))
    B[np.arange(m), _draw_levels(rng, P[y])] = 1.0
    return B


def _numeric_column(rng, y, C, m, informative):
    """(m, 1) numeric column in its own units (``e^-4 .. e^6``): Gaussian, log-normal or a rounded count,
    its location shifted per class when ``informative``."""
    mu = rng.standard_normal(C) * (rng.uniform(0.3, 1.5) if informative else 0.0)
    kind = int(rng.integers(3))
    z = rng.standard_normal(m) + mu[y]
    x = (z + rng.uniform(-5, 5)) if kind == 0 else (np.exp(0.7 * z) if kind == 1 else np.round(np.exp(z) * 3))
    return (x * np.exp(rng.uniform(-4, 6)))[:, None]


def binary_problem(i, rng):
    """``(kind, Xtr, ytr, Xte, yte)``: dense two-valued features, kind ``BINARY_KINDS[i % 3]``, 2-4 classes,
    150-3,000 training rows (log-uniform) and ``BINARY_TEST_ROWS`` test rows of the same draw.
    "categorical": 3-12 categorical variables of 2-19 levels, one-hot (some levels rare), 40% of them
    informative; "mixed": 2-8 such variables beside 1-7 numeric columns in unrelated units; "bernoulli": 5-119
    independent 0/1 features of frequencies 0.5%-50% (log-uniform), a third at most shifting with the class.
    Columns constant over the training rows are dropped."""
    kind = BINARY_KINDS[i % len(BINARY_KINDS)]
    C = int(rng.integers(2, 5))
    n = int(np.exp(rng.uniform(np.log(150), np.log(3000))))
    m = n + BINARY_TEST_ROWS
    y = rng.integers(C, size=m)
    cols = []
    if kind == "bernoulli":
        d = int(np.exp(rng.uniform(np.log(5), np.log(120))))
        p = np.exp(rng.uniform(np.log(0.005), np.log(0.5), d))
        k = int(rng.integers(1, max(2, d // 3)))
        shift = np.zeros((C, d))
        shift[:, :k] = rng.uniform(-1.5, 1.5, (C, k))
        P = 1.0 / (1.0 + np.exp(-(np.log(p / (1 - p))[None, :] + shift)))
        cols.append((rng.random((m, d)) < P[y]).astype(np.float64))
    else:
        n_var, top = (int(rng.integers(3, 13)), 20) if kind == "categorical" else (int(rng.integers(2, 9)), 15)
        for _ in range(n_var):
            cols.append(_categorical(rng, y, C, m, int(np.exp(rng.uniform(np.log(2), np.log(top)))),
                                     rng.random() < 0.4))
        if kind == "mixed":
            for _ in range(int(rng.integers(1, 8))):
                cols.append(_numeric_column(rng, y, C, m, rng.random() < 0.4))
    X = np.hstack(cols)
    X = X[:, X[:n].std(axis=0) > 0]
    return kind, X[:n], y[:n], X[n:], y[n:]


@contextlib.contextmanager
def _swapped(module, name, value):
    """Within the block, ``module.name`` is ``value`` (a bench arm's patch), restored on exit."""
    kept = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, kept)


def single_run_budget():
    """Within the block, ``T="auto"`` runs each fit once (``logt.metric_learning._base.REGROW_MAX_FACTOR`` set to
    0: no re-run of a fit that falls short, the release before that rule): a bench arm, restored on exit."""
    from logt.metric_learning import _base
    return _swapped(_base, "REGROW_MAX_FACTOR", 0)


def standardized_binary():
    """Within the block, ``scaling="auto"`` divides a two-valued dense feature by its standard deviation like
    any other (``logt.metric_learning.scaling.BALANCED_BINARY`` False, the release before half its range):
    a bench arm, restored on exit."""
    from logt.metric_learning import scaling
    return _swapped(scaling, "BALANCED_BINARY", False)


def fixed_search_cap(cap):
    """Within the block, the neighbour softmax's search draws at most ``cap`` candidates per class whatever the
    search's cost (:func:`logt.oracles.neighbors.search_cap` replaced by the constant; ``cap=2000`` is the release
    before that rule): a bench arm, restored on exit."""
    from logt.oracles import neighbors
    return _swapped(neighbors, "search_cap", lambda class_sizes, n_features, **kw: int(cap))


def lowdim_sweep(n_problems=140, seed=3, log=print, problem=lowdim_problem, loss=None, **params):
    """Rows ``dict(problem, n, active, euclid, learned, default, choice, how, seconds_learned, seconds, success,
    regrown)`` (the last two: the default fit's ``result_.success`` and whether ``T="auto"`` re-ran it) for
    ``problem`` (:func:`lowdim_problem`, :func:`largen_problem`, :func:`multicluster_problem`,
    :func:`noisy_problem`, :func:`manycluster_problem`, :func:`imbalanced_problem` or
    :func:`binary_problem`) ``0..n_problems-1``
    (skipped: no class with two rows,
    fewer than 30 test rows, or wide enough for the subspace path); 1-NN / 5-NN pairs. The fits take ``rng=i``,
    ``loss`` (None: the default's) and the learner's parameters ``params`` (e.g. ``triplet_neighbors``)."""
    from logt import MetricLearner
    from logt._threads import single_threaded_blas
    g = np.random.default_rng(seed)
    rows = []
    for i in range(n_problems):
        kind, Xtr, ytr, Xte, yte = problem(i, g)
        if np.bincount(ytr).max() < 2 or len(np.unique(ytr)) < 2 or Xte.shape[0] < 30:
            continue
        with single_threaded_blas(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plain = MetricLearner(rng=i, check=False, loss=loss, **params)
            t0 = _timed_fit(plain, Xtr, ytr)
            if plain.subspace_ is not None:
                continue
            est = MetricLearner(rng=i, loss=loss, **params)
            t1 = _timed_fit(est, Xtr, ytr)
        active = int(plain.active_features_.sum())
        how = est.check_accuracy_["how"] if est.check_accuracy_ else "zero metric"
        r = dict(problem=f"{kind} n={len(ytr)} d={active}", n=len(ytr), active=active, choice=est.metric_choice_,
                 how=how, euclid=_knn(Xtr, ytr, Xte, yte), seconds_learned=t0, seconds=t1,
                 learned=_knn(plain.transform(Xtr), ytr, plain.transform(Xte), yte),
                 default=_knn(est.transform(Xtr), ytr, est.transform(Xte), yte),
                 success=bool(est.result_.success), regrown="regrown" in est.result_.params)
        log(f"{i:3d} {r['problem']:34s} Euclidean {r['euclid'][0]:.3f}/{r['euclid'][1]:.3f} learned "
            f"{r['learned'][0]:.3f}/{r['learned'][1]:.3f} default {r['default'][0]:.3f}/{r['default'][1]:.3f} "
            f"({r['choice']}, {how}; {t0:.2f} s / {t1:.2f} s)")
        rows.append(r)
    for key in ("learned", "default"):
        log(sweep_summary(rows, key))
    t = np.array([r["seconds"] / r["seconds_learned"] for r in rows])
    log(f"fit time with the check / without: median {np.median(t):.2f}x, max {t.max():.1f}x")
    log(f"default fits with success=False: {sum(not r['success'] for r in rows)} of {len(rows)}; "
        f"re-run by T='auto': {sum(r['regrown'] for r in rows)}")
    return rows


if __name__ == "__main__":
    # python -m logt.bench.learners_lowdim --random N [--seed S] [--large | --multicluster | --noisy | --manycluster]
    #                                      [--imbalanced] [--loss L] [--targets K] [--rows N] [--search-cap C]
    #                                      [--single-run] [--binary] [--standardize-binary]
    import functools
    import sys
    argv = sys.argv
    families = {"--large": largen_problem, "--multicluster": multicluster_problem, "--noisy": noisy_problem,
                "--manycluster": manycluster_problem, "--imbalanced": imbalanced_problem, "--binary": binary_problem}
    extra = {"triplet_neighbors": int(argv[argv.index("--targets") + 1])} if "--targets" in argv else {}
    problem = next((f for flag, f in families.items() if flag in argv), lowdim_problem)
    if "--rows" in argv:
        if problem not in (noisy_problem, manycluster_problem):
            sys.exit("--rows needs --noisy or --manycluster")
        problem = functools.partial(problem, rows=int(argv[argv.index("--rows") + 1]))
    cap = (fixed_search_cap(int(argv[argv.index("--search-cap") + 1])) if "--search-cap" in argv
           else contextlib.nullcontext())
    once = single_run_budget() if "--single-run" in argv else contextlib.nullcontext()
    binary = standardized_binary() if "--standardize-binary" in argv else contextlib.nullcontext()
    with cap, once, binary:
        lowdim_sweep(int(argv[argv.index("--random") + 1]) if "--random" in argv else 140,
                     seed=int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 3, problem=problem,
                     loss=argv[argv.index("--loss") + 1] if "--loss" in argv else None, **extra)
