"""MetricLearner's default on dense input, the neighbour softmax: which inputs get it, its metric in the original
features, invariances, reproducibility, and the case it was made the default for (many classes of several
clusters, where the pair loss's metric collapses). The pair loss's model: tests/test_metric_learner.py."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from logt.metric_learning import MetricLearner, auto_budget
from logt.metric_learning.scaling import apply_scaling
from logt.metric_learning.supervised import FULL_RANK_SOFTMAX_TARGETS, ROWS_PER_TARGET, TARGETS, softmax_targets

FAST = dict(T=4_000, n_threads=1, check=False)


def _raw(n=240, d=6, seed=0, classes=3):
    """Raw features of very different magnitudes and offsets, labels along a rotated direction."""
    g = np.random.default_rng(seed)
    y = g.integers(0, classes, n)
    Z = g.standard_normal((n, d)) + 1.5 * np.eye(d)[y % d]
    Q, _ = np.linalg.qr(g.standard_normal((d, d)))
    return (Z @ Q) * 10.0 ** np.arange(-2, d - 2) + 1e3, y


def _knn(k, A, ytr, B, yte):
    from sklearn.neighbors import KNeighborsClassifier
    return KNeighborsClassifier(k).fit(A, ytr).score(B, yte)


def test_the_default_loss_is_the_softmax_on_dense_input_and_the_pairs_on_sparse():
    X, y = _raw()
    assert MetricLearner(rng=0, **FAST).fit(X, y).loss_ == "softmax"
    Xs = sp.csr_matrix(np.abs(X - X.mean(0)) * (np.random.default_rng(1).random(X.shape) < 0.5))
    assert MetricLearner(rng=0, **FAST).fit(Xs, y).loss_ == "pairs"
    assert MetricLearner(rng=0, **FAST).fit(Xs.toarray(), y).loss_ == "softmax"
    with pytest.raises(ValueError, match=r"the default \(the neighbour softmax, or neighbour pairs\) needs a class"):
        MetricLearner(**FAST).fit(X[:5], np.arange(5))


def test_metric_in_the_original_features():
    """``W`` on the original features is ``S^-1 A W_learned A^T S^-1`` (scaling ``S``, whitening ``A``); no
    threshold; every scaled, whitened row in the unit ball; the projections within ``minimize``'s budget."""
    X, y = _raw()
    m = MetricLearner(rng=0, **FAST).fit(X, y)
    W = m.get_mahalanobis_matrix()
    Wl = m.result_.x
    assert Wl.shape == (6, 6) and np.linalg.eigvalsh(Wl).min() >= -1e-12 * np.abs(Wl).max()
    ref = m.whitening_ @ Wl @ m.whitening_.T / np.outer(m.scale_, m.scale_)
    assert np.allclose(W, ref, rtol=1e-9, atol=1e-12 * np.abs(W).max())
    assert np.isnan(m.b_) and m.threshold_scale_ == 1.0
    assert np.linalg.norm(apply_scaling(X, m.center_, m.scale_) @ m.whitening_, axis=1).max() <= 1.0
    # minimize's method="auto": at most 2% of T in projections
    assert m.n_projections_ == m.result_.n_projections <= 0.02 * FAST["T"] and m.n_calls_ <= FAST["T"]


def test_auto_budget_is_a_fifth_in_anchors():
    X, y = _raw(n=90)
    m = MetricLearner(rng=0, check=False, n_threads=1).fit(X, y)
    assert 0.9 * auto_budget(0.1) / 5 <= m.n_calls_ <= auto_budget(0.1) / 5


def test_scaling_by_1000_and_constant_features_change_nothing():
    """Scaled by 1000: the same k-NN predictions and transform distances within 1e-9 relative. Constant columns
    inserted: the optimizer sees the same numbers (the same iterate bit for bit), W = 0 on them."""
    X, y = _raw()
    a = MetricLearner(rng=3, **FAST).fit(X, y)
    b = MetricLearner(rng=3, **FAST).fit(1000.0 * X, y)
    Za, Zb = a.transform(X), b.transform(1000.0 * X)
    i, j = np.triu_indices(len(X), 1)
    da, db = np.linalg.norm(Za[i] - Za[j], axis=1), np.linalg.norm(Zb[i] - Zb[j], axis=1)
    assert np.allclose(da, db, rtol=1e-9, atol=1e-12 * da.max())
    Xc = np.column_stack([X[:, :2], np.full(len(X), 5.0), X[:, 2:], np.zeros(len(X))])
    c = MetricLearner(rng=3, **FAST).fit(Xc, y)
    assert np.array_equal(c.result_.x, a.result_.x)
    Wc = c.get_mahalanobis_matrix()
    assert not Wc[[2, 7]].any() and not Wc[:, [2, 7]].any()


def test_same_seed_same_bits_other_seed_other_fit():
    X, y = _raw()
    a = MetricLearner(rng=5, T=4_000, n_threads=1).fit(X, y)
    b = MetricLearner(rng=np.random.default_rng(5), T=4_000, n_threads=1).fit(X, y)
    c = MetricLearner(rng=6, T=4_000, n_threads=1, check=False).fit(X, y)
    assert np.array_equal(a.components_, b.components_) and a.check_accuracy_ == b.check_accuracy_
    assert not np.array_equal(c.result_.x, MetricLearner(rng=5, **FAST).fit(X, y).result_.x)


@pytest.mark.parametrize("seed", [0, 1])
def test_many_classes_of_several_clusters(seed):
    """12 classes of 3 clusters each in 6 of 8 features of unrelated units: the pair loss's metric (every
    similar pair pulled in, across a class's clusters) collapses towards chance, the softmax's (each point's
    nearest class-mates) is far above Euclidean 1-NN; measured 0.61 / 0.57 against Euclidean 0.24 / 0.34
    and the pair loss 0.08 / 0.07."""
    pytest.importorskip("sklearn")
    from sklearn.datasets import make_classification
    X, y = make_classification(900, 8, n_informative=6, n_redundant=0, n_classes=12, n_clusters_per_class=3,
                               class_sep=1.5, random_state=seed)
    X = X * np.exp(np.random.default_rng(seed).uniform(np.log(0.1), np.log(10), 8))
    Xtr, ytr, Xte, yte = X[:600], y[:600], X[600:], y[600:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = MetricLearner(rng=0).fit(Xtr, ytr)
        pairs = MetricLearner(rng=0, check=False, loss="pairs").fit(Xtr, ytr)
    euclid = _knn(1, Xtr, ytr, Xte, yte)
    soft = _knn(1, default.transform(Xtr), ytr, default.transform(Xte), yte)
    assert default.loss_ == "softmax" and default.metric_choice_ == "learned"
    assert soft > euclid + 0.15
    assert soft > _knn(1, pairs.transform(Xtr), ytr, pairs.transform(Xte), yte) + 0.3


def test_softmax_targets_grow_with_the_class_size():
    """One target per ROWS_PER_TARGET rows of the class, rounded, within FULL_RANK_SOFTMAX_TARGETS."""
    assert (FULL_RANK_SOFTMAX_TARGETS, ROWS_PER_TARGET, TARGETS) == ((5, 12), 25, 3)
    sizes = np.array([2, 50, 137, 138, 162, 163, 287, 288, 2000, 10**6])
    t = softmax_targets(sizes)
    assert t.dtype == np.int32 and t.tolist() == [5, 5, 5, 6, 6, 7, 11, 12, 12, 12]
    assert np.all(np.diff(t) >= 0) and np.all(np.abs(t - np.clip(sizes / 25, 5, 12)) <= 0.5)


def test_targets_per_point_resolve_by_path_and_loss():
    """``triplet_neighbors=None``: for the softmax on few features, per class from its size (a large class
    more, a small one 5); 3 on a subspace and for the triplet loss; an int is used everywhere; the check's fits
    resolve them as the final fit does (the same metric as ``check=False`` is checked)."""
    X, y = _raw()
    assert MetricLearner().triplet_neighbors is None
    fitted = MetricLearner(rng=0, **FAST).fit(X, y).triplet_neighbors_
    assert fitted.dtype == np.int32 and fitted.tolist() == [5, 5, 5]          # about 80 rows per class
    assert MetricLearner(rng=0, loss="triplets", **FAST).fit(X, y).triplet_neighbors_.tolist() == [3, 3, 3]
    assert MetricLearner(rng=0, triplet_neighbors=4, **FAST).fit(X, y).triplet_neighbors_.tolist() == [4, 4, 4]
    # imbalanced classes: each its own count, and the oracle lists each class's anchors with it
    big, yb = _raw(n=900, seed=1, classes=2)
    yb[:100] = 2                                                              # ~100 rows: 4 -> 5
    est = MetricLearner(rng=0, **FAST).fit(big, yb)
    sizes = np.bincount(yb)
    assert est.triplet_neighbors_.tolist() == softmax_targets(sizes).tolist() and sizes.min() < 138 < 288 < sizes.max()
    assert est.triplet_neighbors_.tolist() == [12, 12, 5]
    g = np.random.default_rng(0)
    yw = np.arange(150) % 3
    wide = g.standard_normal((150, 300))
    wide[:, :3] += 2.0 * np.eye(3)[yw]
    assert MetricLearner(rng=0, T=4_000, n_threads=1).fit(wide, yw).triplet_neighbors_.tolist() == [3, 3, 3]
    # the default's final fit is check=False's fit with the same targets: bit for bit
    a = MetricLearner(rng=2, T=4_000, n_threads=1).fit(X, y)
    b = MetricLearner(rng=2, **FAST).fit(X, y)
    assert np.array_equal(a.result_.x, b.result_.x)
    # and the check's fits use them: the default is triplet_neighbors=5 given, check included, bit for bit
    c = MetricLearner(rng=2, T=4_000, n_threads=1, triplet_neighbors=5).fit(X, y)
    assert np.array_equal(c.components_, a.components_) and c.check_accuracy_ == a.check_accuracy_
