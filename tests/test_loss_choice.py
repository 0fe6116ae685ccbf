"""MetricLearner's loss choice (logt.metric_learning.loss_choice) and its triplet loss end to end."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from logt.metric_learning import MetricLearner
from logt.metric_learning import loss_choice as lc


def _blobs(n_per=30, d=4, classes=3, sep=3.0, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(classes), n_per)
    X = rng.standard_normal((len(y), d)) * 5.0
    X[:, 0] = X[:, 0] * 0.1 + sep * y                # one informative feature among noisy ones
    return X * 7.0 + 3.0, y                          # raw, unscaled units


def test_knn_correct_against_a_brute_force_vote():
    rng = np.random.default_rng(0)
    Ztr, Zte = rng.standard_normal((50, 3)), rng.standard_normal((20, 3))
    ctr, cte = rng.integers(0, 3, 50), rng.integers(0, 3, 20)
    for k in (1, 3, 5, 50, 80):
        got = lc.knn_correct(Ztr, ctr, Zte, cte, k)
        want = []
        for z, c in zip(Zte, cte):
            near = np.argsort(((Ztr - z) ** 2).sum(1), kind="stable")[:min(k, 50)]
            votes = np.bincount(ctr[near], minlength=3)
            want.append(np.argmax(votes) == c)               # ties: the lower code
        assert np.array_equal(got, want)
    assert lc.knn_accuracy(Ztr, ctr, Zte, cte, 1) == np.mean(lc.knn_correct(Ztr, ctr, Zte, cte, 1))


def test_knn_correct_agrees_with_scikit_learn():
    neighbors = pytest.importorskip("sklearn.neighbors", reason="scikit-learn (the [test] extra) not installed")
    rng = np.random.default_rng(1)
    Ztr, Zte = rng.standard_normal((80, 4)), rng.standard_normal((40, 4))
    ctr, cte = rng.integers(0, 4, 80), rng.integers(0, 4, 40)
    for k in (1, 5):
        ref = neighbors.KNeighborsClassifier(k).fit(Ztr, ctr).predict(Zte) == cte
        assert np.array_equal(lc.knn_correct(Ztr, ctr, Zte, cte, k), ref)


def test_stratified_folds_deal_each_class_evenly():
    codes = np.repeat([0, 1, 2], [7, 3, 11])
    fold = lc.stratified_folds(codes, 3, np.random.default_rng(0))
    for c in range(3):
        counts = np.bincount(fold[codes == c], minlength=3)
        assert counts.max() - counts.min() <= 1 and counts.sum() == np.sum(codes == c)
    again = lc.stratified_folds(codes, 3, np.random.default_rng(0))
    assert np.array_equal(fold, again)


def test_cv_applies_only_to_cheap_dense_problems_with_three_per_class():
    X = np.zeros((100, 10))
    codes = np.repeat([0, 1], 50)
    assert lc.cv_applies(X, codes)
    assert not lc.cv_applies(sp.csr_matrix(X), codes)
    assert not lc.cv_applies(np.zeros((int(lc.CV_MAX_WORK / 100) + 1, 10)), np.arange(10486) % 2)
    assert not lc.cv_applies(X, np.r_[np.zeros(98, int), 1, 1])           # a class of 2 points


def test_auto_is_one_of_the_two_losses_bit_for_bit():
    """The choice's folds draw from a spawned generator: the final fit is exactly that loss's fit."""
    X, y = _blobs()
    auto = MetricLearner(rng=3, T=20_000, loss="auto").fit(X, y)
    assert auto.loss_ in ("pairs", "triplets")
    sc = auto.loss_scores_
    assert set(sc) == {"pairs", "triplets", "se"} and 0 <= sc["pairs"] <= 1 and 0 <= sc["triplets"] <= 1
    gain = sc["triplets"] - sc["pairs"]
    assert (auto.loss_ == "triplets") == (gain > 0 and gain > lc.CV_SE_MARGIN * sc["se"] * (1 - 1e-12))
    fixed = MetricLearner(rng=3, T=20_000, loss=auto.loss_).fit(X, y)
    assert np.array_equal(auto.components_, fixed.components_)
    assert fixed.loss_scores_ is None
    again = MetricLearner(rng=3, T=20_000, loss="auto").fit(X, y)
    assert np.array_equal(again.components_, auto.components_) and again.loss_scores_ == sc


def test_auto_is_the_pair_loss_where_cross_validation_is_too_costly():
    X, y = _blobs(n_per=300, d=40)            # n d^2 = 1.44e6 > CV_MAX_WORK
    a = MetricLearner(rng=0, T=5000, n_eval_pairs=100, loss="auto").fit(X, y)
    b = MetricLearner(rng=0, T=5000, n_eval_pairs=100, loss="pairs").fit(X, y)
    assert a.loss_ == "pairs" and a.loss_scores_ is None
    assert np.array_equal(a.components_, b.components_)


def test_triplet_loss_learns_a_useful_metric_and_reports_no_threshold():
    X, y = _blobs(n_per=40, sep=2.0, seed=1)
    rng = np.random.default_rng(0)
    test = rng.random(len(y)) < 0.3
    est = MetricLearner(loss="triplets", rng=0).fit(X[~test], y[~test])
    assert est.loss_ == "triplets" and math.isnan(est.b_) and est.threshold_scale_ == 1.0
    Z = est.transform(X)
    learned = lc.knn_accuracy(Z[~test], y[~test], Z[test], y[test], 1)
    euclid = lc.knn_accuracy(X[~test], y[~test], X[test], y[test], 1)
    assert learned > euclid + 0.1                  # 3 noise features of 4 drown the Euclidean 1-NN
    W = est.get_mahalanobis_matrix()
    assert np.all(np.linalg.eigvalsh(W) >= -1e-10 * np.abs(W).max())


def test_triplet_loss_is_invariant_to_the_input_scale():
    X, y = _blobs(seed=2)
    a = MetricLearner(loss="triplets", rng=0).fit(X, y)
    b = MetricLearner(loss="triplets", rng=0).fit(X * 1000.0, y)
    da = np.linalg.norm(a.transform(X)[:, None] - a.transform(X)[None], axis=-1)
    db = np.linalg.norm(b.transform(X * 1000.0)[:, None] - b.transform(X * 1000.0)[None], axis=-1)
    assert np.abs(da - db).max() <= 1e-9 * da.max()


def test_loss_parameters_are_checked():
    X, y = _blobs()
    with pytest.raises(ValueError, match="loss must be None or one of"):
        MetricLearner(loss="hinge").fit(X, y)
    for k in (0, 257, 2.5, True, "3"):
        with pytest.raises(ValueError, match="triplet_neighbors must be None or an int"):
            MetricLearner(triplet_neighbors=k).fit(X, y)
    with pytest.raises(TypeError, match="dense"):
        MetricLearner(loss="triplets").fit(sp.csr_matrix(X), y)
    with pytest.raises(ValueError, match="loss='triplets' needs a class with at least 2"):
        MetricLearner(loss="triplets").fit(X[:3], y[:3] * 0 + np.arange(3))
    with pytest.raises(TypeError, match="dense"):
        MetricLearner(loss="softmax").fit(sp.csr_matrix(X), y)
    with pytest.raises(ValueError, match="loss='softmax' needs a class with at least 2"):
        MetricLearner(loss="softmax").fit(X[:3], y[:3] * 0 + np.arange(3))
    assert MetricLearner.paper().loss == "pairs" and MetricLearner().loss is None
    # the default on dense input is the softmax (few features, an int n_components there too, and a subspace);
    # on sparse few features, or with a parameter of the pair loss set, the pair loss
    assert MetricLearner(rng=0, T=5000).fit(X, y).loss_ == "softmax"
    assert MetricLearner(rng=0, T=5000, n_components=2).fit(X, y).loss_ == "softmax"
    wide = np.c_[X, np.random.default_rng(1).standard_normal((X.shape[0], X.shape[0]))]     # d > n
    assert MetricLearner(rng=0, T=5000, n_components=2).fit(wide, y).loss_ == "softmax"
    assert MetricLearner(rng=0, T=5000).fit(sp.csr_matrix(np.abs(X)), y).loss_ == "pairs"
    for kw in ({"sampling": "uniform"}, {"sampling": "balanced"}, {"threshold": 1.0}, {"threshold_scale": 1.0}):
        assert MetricLearner(rng=0, T=5000, **kw).fit(X, y).loss_ == "pairs"
        assert MetricLearner(rng=0, T=5000, loss="softmax", **kw).fit(X, y).loss_ == "softmax"   # asked for
    # a pair parameter at its default value does not ask for the pair loss
    assert MetricLearner(rng=0, T=5000, sampling="neighbors", threshold="learn").fit(X, y).loss_ == "softmax"


def test_sparse_input_with_auto_fits_the_pair_loss():
    X, y = _blobs()
    est = MetricLearner(rng=0, T=5000, n_eval_pairs=100, loss="auto").fit(sp.csr_matrix(X), y)
    assert est.loss_ == "pairs" and est.loss_scores_ is None
