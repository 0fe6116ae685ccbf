"""Target-pair whitening (logt.metric_learning.whitening) against dense NumPy formulas and the estimator."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from logt.metric_learning import MetricLearner
from logt.oracles import neighbors as nb
from logt.metric_learning import whitening as wh
from logt.metric_learning.scaling import apply_scaling

FAST = dict(T=20_000, n_eval_pairs=2000, n_threads=1)


def _problem(seed=0, n=150, d=5, classes=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    X = rng.standard_normal((n, d)) * np.array([3.0, 1.0, 0.3, 1.0, 2.0])[:d]
    X[:, 2] += 0.6 * y                 # small within-class spread, small class shift: a good 1-NN axis
    X = (X - X.mean(0)) / X.std(0)
    return X / np.sqrt((X * X).sum(1)).max(), y


@pytest.mark.parametrize("cap", [2000, 17])
def test_target_tables_are_the_same_class_half_of_the_full_search(cap):
    X, y = _problem(1, n=200)
    sim, dsim = nb.target_tables(X, y, 7, max_candidates=cap, rng=3)
    full, _, dfull, _ = nb.neighbor_tables(X, y, 7, max_candidates=cap, rng=3, return_distances=True)
    assert np.array_equal(sim, full)
    assert np.allclose(dsim, dfull, rtol=1e-12, atol=1e-15)
    ref, _ = nb.neighbor_tables_numpy(X, y, 7, max_candidates=cap, rng=3)
    assert np.array_equal(np.sort(sim, 1), np.sort(ref, 1))
    with pytest.raises(TypeError, match="dense"):
        nb.target_tables(sp.csr_matrix(X), y, 3)


def test_pair_covariance_matches_the_dense_formula():
    X, y = _problem(2)
    sim, _ = nb.target_tables(X, y, 5)
    S, i, j = wh.pair_covariance(X, sim)
    rows, cols = np.nonzero(sim >= 0)
    assert np.array_equal(i, rows) and np.array_equal(j, sim[rows, cols])
    D = X[rows] - X[sim[rows, cols]]
    ref = D.T @ D / (2 * len(D))
    assert np.allclose(S, ref, rtol=1e-10, atol=1e-14) and np.array_equal(S, S.T)


def test_ledoit_wolf_shrinkage_matches_the_direct_formula():
    X, y = _problem(3)
    sim, dsim = nb.target_tables(X, y, 5)
    S, i, j = wh.pair_covariance(X, sim)
    s, U = np.linalg.eigh(S)
    D = (X[i] - X[j]) / np.sqrt(2)
    m, d = D.shape
    qS = 2 * np.einsum("pi,ij,pj->p", D, S, D)
    a = wh.ledoit_wolf_shrinkage(s, dsim[sim >= 0], qS, m)
    # Ledoit and Wolf (2004) on the samples D_p (second moment about 0), term by term
    mu = np.trace(S) / d
    d2 = np.sum((S - mu * np.eye(d)) ** 2) / d
    b2 = np.mean([np.sum((np.outer(v, v) - S) ** 2) for v in D]) / (d * m)
    assert a == pytest.approx(min(b2, d2) / d2, rel=1e-9)
    try:
        from sklearn.covariance import ledoit_wolf_shrinkage
    except ImportError:
        return
    assert a == pytest.approx(ledoit_wolf_shrinkage(D, assume_centered=True), rel=1e-9)


def test_whitening_makes_the_shrunk_target_covariance_the_identity():
    X, y = _problem(4)
    A, a = wh.fit_whitening(X, y, 5)
    assert wh.MIN_SHRINKAGE <= a <= 1
    sim, _ = nb.target_tables(X, y, 5)
    S, _, _ = wh.pair_covariance(X, sim)
    d = len(S)
    Cr = (1 - a) * S + a * np.trace(S) / d * np.eye(d)
    assert np.allclose(A.T @ Cr @ A, np.eye(d), atol=1e-10)
    Xw, f, n_clipped = wh.whiten_rows(X, A)
    assert n_clipped == 0 and np.sqrt((Xw * Xw).sum(1)).max() <= 1.0
    assert np.allclose(Xw, X @ A / f, rtol=1e-14, atol=1e-15)


def test_nothing_to_whiten():
    X = np.vstack([np.ones((3, 2)), -np.ones((3, 2))]) * 0.5       # every target pair a duplicate
    y = np.repeat([0, 1], 3)
    A, a = wh.fit_whitening(X, y, 2)
    assert A is None and np.isnan(a)
    A, a = wh.fit_whitening(X[[0, 3]], y[[0, 3]], 2)                 # no class-mate at all
    assert A is None


def test_estimator_learns_in_the_whitened_space_and_maps_back():
    """transform distances equal the learned W on the whitened rows; the map refers to the original features."""
    rng = np.random.default_rng(5)
    X, y = _problem(5)
    Xraw = X * np.array([10.0, 0.1, 3.0, 1.0, 1e3]) + 7.0
    est = MetricLearner(rng=0, **FAST).fit(Xraw, y)
    assert est.whitening_ is not None and est.whitening_.shape == (5, 5)
    Xs = apply_scaling(Xraw, est.center_, est.scale_)
    Xw = Xs @ est.whitening_
    assert np.sqrt((Xw * Xw).sum(1)).max() <= 1.0 + 1e-12
    W = est.result_.x[:5, :5]
    p, q = rng.integers(0, len(X), 50), rng.integers(0, len(X), 50)
    D = Xw[p] - Xw[q]
    ref = np.einsum("pi,ij,pj->p", D, W, D)
    got = np.sum(((Xraw[p] - Xraw[q]) @ est.components_.T) ** 2, 1)
    assert np.allclose(got, ref, rtol=1e-8, atol=1e-12 * ref.max())
    M = est.get_mahalanobis_matrix()
    assert np.allclose(np.einsum("pi,ij,pj->p", Xraw[p] - Xraw[q], M, Xraw[p] - Xraw[q]), ref,
                       rtol=1e-8, atol=1e-12 * ref.max())


def test_whitening_is_scale_free_and_reproducible():
    X, y = _problem(6)
    e1 = MetricLearner(rng=2, **FAST).fit(X, y)
    e2 = MetricLearner(rng=2, **FAST).fit(1000 * X, y)
    e3 = MetricLearner(rng=2, **FAST).fit(X, y)
    assert np.array_equal(e1.components_, e3.components_)
    assert np.allclose(e1.whitening_, e2.whitening_, rtol=1e-9, atol=1e-12)
    Z1, Z2 = e1.transform(X), e2.transform(1000 * X)
    assert np.allclose(Z1, Z2, rtol=1e-9, atol=1e-9 * np.abs(Z1).max())


def test_whiten_none_is_the_previous_model_and_sparse_is_not_whitened():
    X, y = _problem(7)
    e = MetricLearner(rng=0, whiten=None, **FAST).fit(X, y)
    assert e.whitening_ is None and np.isnan(e.whitening_shrinkage_)
    Xp = np.abs(X)
    es = MetricLearner(rng=0, **FAST).fit(sp.csr_matrix(Xp), y)
    assert es.whitening_ is None
    ed = MetricLearner(rng=0, whiten=None, scaling="max_norm", **FAST).fit(sp.csr_matrix(Xp), y)
    assert np.array_equal(es.components_, ed.components_)
    assert MetricLearner.paper().whiten is None
    with pytest.raises(ValueError, match="whiten must be one of"):
        MetricLearner(whiten="pca").fit(X, y)


def _fisher_ratio(X, y, u):
    means = np.array([X[y == c].mean(0) for c in np.unique(y)])
    return np.var(means @ u) / np.var((X - means[y]) @ u)


@pytest.mark.parametrize("loss", ["pairs", "triplets"])
def test_whitening_finds_the_direction_of_best_ratio(loss):
    """Rotated data: one direction separates the classes by a shift small against another direction's
    within-class spread but large against its own. Whitened, the metric's leading direction comes within
    10% of the best between / within-class variance ratio (LDA's, the generalized eigenproblem), and
    above the leading direction learned without whitening (per-feature scaling cannot undo a rotation)."""
    import scipy.linalg as sl
    rng = np.random.default_rng(8)
    n = 300
    y = np.repeat([0, 1, 2], n // 3)
    Z = rng.standard_normal((n, 4)) * np.array([3.0, 1.0, 0.15, 1.0])
    Z[:, 2] += 0.35 * y
    Z[:, 0] += 1.0 * y
    X = Z @ np.linalg.qr(rng.standard_normal((4, 4)))[0].T
    means = np.array([X[y == c].mean(0) for c in range(3)])
    Xc = X - means[y]
    Sb = (means - X.mean(0)).T @ (means - X.mean(0)) / 3
    best = sl.eigh(Sb, Xc.T @ Xc / n, eigvals_only=True)[-1]
    ratios = {}
    for whiten in ("targets", None):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            M = MetricLearner(rng=0, loss=loss, whiten=whiten, **FAST).fit(X, y).get_mahalanobis_matrix()
        ratios[whiten] = _fisher_ratio(X, y, np.linalg.eigh(M)[1][:, -1])
    assert ratios["targets"] >= 0.9 * best
    assert ratios["targets"] > ratios[None]
