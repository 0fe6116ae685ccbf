"""MetricLearner: parameters protocol, scaling, metric consistency, errors, pickling, scikit-learn checks."""
import pickle
import textwrap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from logt import DegenerateMetricWarning
from logt.metric_learning import MetricLearner, NotFittedError, practical_metric_params
from logt.metric_learning.reference import objective, pair_distribution
from logt.metric_learning.scaling import apply_scaling, fit_scaling
from logt.oracles import MetricLearning
from _child import run_python

# check=False: these tests pin the learned metric itself (the default's check against plain Euclidean
# distances, which can replace it, is tested in tests/test_full_rank_check.py)
# the pair loss's model (the default on sparse input); the softmax, the default on dense input:
# tests/test_metric_learner_softmax.py
FAST = dict(T=20_000, n_eval_pairs=2000, n_threads=1, check=False, loss="pairs")


def _raw(n=240, d=6, seed=0, classes=3):
    """Raw (unscaled) features: very different magnitudes and offsets per column."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    X = rng.normal(size=(n, d))
    X[:, 0] += 2.5 * y
    X[:, 1] -= 1.5 * (y == 1)
    X = X * np.array([1e3, 0.01, 5.0, 1.0, 200.0, 1e-4])[:d] + np.array([1e4, -3, 0, 7, 0, 1])[:d]
    return X, y


@pytest.fixture(scope="module")
def data():
    return _raw()


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    return MetricLearner(rng=0, **FAST).fit(X, y)


def test_get_set_params_round_trip():
    est = MetricLearner(T=123, params={"eta": 0.5, "M": 3, "B1": 2}, rng=7)
    p = est.get_params()
    assert set(p) == {"sampling", "n_neighbors", "threshold", "lam", "T", "scaling", "method", "params",
                      "options", "n_eval_pairs", "n_threads", "rng", "threshold_scale", "impostor_radius",
                      "loss", "triplet_neighbors", "whiten", "n_components", "check"}
    assert p["T"] == 123 and p["rng"] == 7 and p["params"] == {"eta": 0.5, "M": 3, "B1": 2}
    other = MetricLearner().set_params(**p)
    assert other.get_params() == p
    assert est.set_params(lam=0.5) is est and est.lam == 0.5
    with pytest.raises(ValueError, match="Invalid parameter 'foo'"):
        est.set_params(foo=1)
    assert "T=123" in repr(est) and "lam=0.5" in repr(est)
    paper = MetricLearner.paper(T=50)
    assert (paper.sampling, paper.threshold, paper.lam, paper.scaling, paper.T) == \
        ("uniform", 1.0, 0.1, "max_norm", 50)


def test_practical_params_rule():
    p = practical_metric_params(4.1, 0.1, 10**6)
    assert (p.M, p.B1) == (8, 4) and p.eta == pytest.approx(4 / 4.1)
    assert practical_metric_params(4.1, 0.1, 20).B1 == 1      # one epoch still fits
    with pytest.raises(ValueError, match="below one epoch"):
        practical_metric_params(4.1, 0.1, 15)


def test_raw_data_fit_and_components_in_original_space(data, fitted):
    X, y = data
    W = fitted.get_mahalanobis_matrix()
    assert W.shape == (6, 6) and np.allclose(W, W.T)
    assert np.linalg.eigvalsh(W).min() >= -1e-12 * np.abs(W).max()
    # W in the original space = S^-1 A W_learned A^T S^-1 (A: the whitening; the centre cancels in differences)
    Zs = fitted.result_.x
    A = fitted.whitening_
    Ws = A @ Zs[:6, :6] @ A.T
    S = fitted.scale_
    assert np.allclose(W, Ws / np.outer(S, S), rtol=1e-9, atol=1e-12 * np.abs(W).max())
    assert fitted.b_ == pytest.approx(fitted.threshold_scale_ * Zs[6, 6]) and fitted.b_ >= 0
    # the default params="auto": every epoch makes 2*M_k projections and projects its mean once
    epochs = fitted.result_.params["epochs"]
    assert fitted.result_.params["retries"] == 0 and len(epochs) == fitted.n_epochs_
    assert fitted.n_projections_ == fitted.result_.n_projections == sum(2 * M + 1 for _, M, _ in epochs)
    assert fitted.n_calls_ <= FAST["T"]
    # every scaled (and whitened) training row is in the unit ball (the oracle's precondition)
    assert np.linalg.norm(apply_scaling(X, fitted.center_, fitted.scale_), axis=1).max() <= 1.0
    assert np.linalg.norm(apply_scaling(X, fitted.center_, fitted.scale_) @ A, axis=1).max() <= 1.0
    assert list(fitted.classes_) == [0, 1, 2]


def test_distances_agree_everywhere(data, fitted):
    X, _ = data
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, len(X), 60), rng.integers(0, len(X), 60)
    pairs = np.stack([X[a], X[b]], axis=1)
    d = fitted.pair_distance(pairs)
    Z = fitted.transform(X)
    assert np.allclose(d, np.linalg.norm(Z[a] - Z[b], axis=1), rtol=1e-9, atol=0)
    D = X[a] - X[b]
    W = fitted.get_mahalanobis_matrix()
    ref = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", D, W, D), 0))
    assert np.allclose(d, ref, rtol=1e-6)
    assert np.array_equal(fitted.pair_score(pairs), -d)
    metric = fitted.get_metric()
    assert metric(X[a[0]], X[b[0]]) == pytest.approx(d[0], rel=1e-12)
    assert metric(X[a[0]], X[b[0]], squared=True) == pytest.approx(d[0] ** 2, rel=1e-12)
    assert np.abs(fitted.transform(sp.csr_matrix(X)) - Z).max() <= 1e-9 * np.abs(Z).max()


def test_get_metric_works_in_kneighbors(data, fitted):
    pytest.importorskip("sklearn")
    from sklearn.neighbors import KNeighborsClassifier
    X, y = data
    knn_m = KNeighborsClassifier(3, metric=fitted.get_metric(), algorithm="brute").fit(X[:150], y[:150])
    knn_t = KNeighborsClassifier(3).fit(fitted.transform(X[:150]), y[:150])
    assert np.array_equal(knn_m.predict(X[150:]), knn_t.predict(fitted.transform(X[150:])))


def test_scaling_by_1000_changes_nothing(data):
    """Raw data scaled by 1000: same k-NN predictions and transform distances within 1e-9 relative."""
    pytest.importorskip("sklearn")
    from sklearn.neighbors import KNeighborsClassifier
    X, y = data
    for kw in ({}, {"sampling": "balanced"}, {"scaling": "max_norm"}):
        e1 = MetricLearner(rng=3, **FAST, **kw).fit(X, y)
        e2 = MetricLearner(rng=3, **FAST, **kw).fit(1000 * X, y)
        Z1, Z2 = e1.transform(X), e2.transform(1000 * X)
        i, j = np.triu_indices(len(X), 1)
        d1 = np.linalg.norm(Z1[i] - Z1[j], axis=1)
        d2 = np.linalg.norm(Z2[i] - Z2[j], axis=1)
        assert np.abs(d1 - d2).max() <= 1e-9 * d1.max()
        p1 = KNeighborsClassifier(5).fit(Z1[:160], y[:160]).predict(Z1[160:])
        p2 = KNeighborsClassifier(5).fit(Z2[:160], y[:160]).predict(Z2[160:])
        assert np.array_equal(p1, p2)
        assert e2.b_ == pytest.approx(e1.b_, rel=1e-9)


@pytest.mark.parametrize("factor", [1e-200, 1e-160, 1e160, 1e200])
def test_data_far_outside_float64s_comfortable_range(data, factor):
    """Raw data of 1e200 (squares overflow) or 1e-200 (squares underflow): the scaling is fitted on the data
    divided by a power of two (exact), so the same learned metric, check and predictions as on the data itself;
    before, the variance was infinite or zero and the learner warned of a zero metric."""
    from logt.metric_learning.scaling import extreme_unit, fit_scaling
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = MetricLearner(rng=3, **FAST).fit(X, y)
        b = MetricLearner(rng=3, **FAST).fit(factor * X, y)
    assert a.metric_choice_ == b.metric_choice_ and a.check_accuracy_ == b.check_accuracy_
    Za, Zb = a.transform(X), b.transform(factor * X)
    assert np.isfinite(Zb).all() and np.allclose(Za, Zb, rtol=1e-9, atol=1e-9 * np.abs(Za).max())
    c, s = fit_scaling(X)
    cf, sf = fit_scaling(factor * X)
    # as close as for a factor of 1000 (the rounding of factor * X, amplified by the features' spread: ~1e-12)
    assert np.allclose(cf, factor * c, rtol=1e-10, atol=0) and np.allclose(sf, factor * s, rtol=1e-10, atol=0)
    u = extreme_unit(factor * X)
    assert u != 1.0 and np.log2(u) == round(np.log2(u)) and 0.5 <= np.abs(factor * X).max() / u <= 1.0
    assert extreme_unit(X) == extreme_unit(1e100 * X) == extreme_unit(np.zeros((3, 2))) == 1.0


@pytest.mark.parametrize("factor", [1e-250, 1e-170, 1e170, 1e290])
@pytest.mark.parametrize("n_components", [None, 2])
def test_features_in_extreme_units_among_ordinary_ones(data, factor, n_components):
    """Two features in units of 1e-170 (their squares underflow) or 1e170 next to ordinary ones: each extreme
    feature's spread is taken after an exact power-of-two division, so the same metric as on the data itself
    (dense and sparse). Before, features of 1e-170 had a zero spread and were left out as constant (distances
    22% off) and features of 1e170 an infinite one (the check fell back to Euclidean with infinite distances)."""
    X, y = data
    m = np.ones(X.shape[1])
    m[[0, 2]] = factor
    a = MetricLearner(rng=3, n_components=n_components, **FAST).fit(X, y)
    b = MetricLearner(rng=3, n_components=n_components, **FAST).fit(X * m, y)
    assert a.metric_choice_ == b.metric_choice_ and a.check_accuracy_ == b.check_accuracy_
    Za, Zb = a.transform(X), b.transform(X * m)
    assert np.allclose(Za, Zb, rtol=1e-9, atol=1e-9 * np.abs(Za).max())
    Xs = np.abs(X[:, :4])                                           # sparse input: "standardize" spreads
    c, s = fit_scaling(sp.csr_matrix(Xs), "standardize")
    cf, sf = fit_scaling(sp.csr_matrix(Xs * m[:4]), "standardize")
    assert np.array_equal(c, cf) and np.allclose(sf, s * m[:4], rtol=1e-12, atol=0)


@pytest.mark.parametrize("factor", [1e-200, 1e-160, 1e160, 1e200])
def test_mahalanobis_matrix_outside_float64s_range_says_so(data, factor):
    """W scales with the inverse square of the data's units: at 1e+-160 and beyond its entries (1e-+320) are not
    float64 numbers, and get_mahalanobis_matrix() raises instead of returning zeros or NaN (what it did); at
    1e+-100 it is W of the data itself times factor^-2."""
    X, y = data
    a = MetricLearner(rng=3, **FAST).fit(X, y)
    b = MetricLearner(rng=3, **FAST).fit(factor * X, y)
    with pytest.raises(ValueError, match=r"outside float64's range.*components_ or transform"):
        b.get_mahalanobis_matrix()
    for f in (1e-100, 1e100):
        W = MetricLearner(rng=3, **FAST).fit(f * X, y).get_mahalanobis_matrix()
        Wa = a.get_mahalanobis_matrix()
        assert np.allclose(W * f * f, Wa, rtol=1e-9, atol=1e-9 * np.abs(Wa).max())


@pytest.mark.parametrize("factor", [2.0 ** 1000 / 1.01, 1e-300])
def test_fit_at_the_edges_of_the_supported_range(data, factor):
    """The largest |x| a fit takes is MAX_FIT_MAGNITUDE = 2^1000; down to scales of 1e-300 the fit is the one on the
    data itself. Beyond (tests/test_bad_inputs.py): clear ValueErrors, not an OverflowError or a NaN check."""
    X, y = data
    Xf = factor * X / np.abs(X).max()
    a = MetricLearner(rng=3, **FAST).fit(X / np.abs(X).max(), y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = MetricLearner(rng=3, **FAST).fit(Xf, y)
    assert a.metric_choice_ == b.metric_choice_ and a.check_accuracy_ == b.check_accuracy_
    Za, Zb = a.transform(X / np.abs(X).max()), b.transform(Xf)
    assert np.allclose(Za, Zb, rtol=1e-9, atol=1e-9 * np.abs(Za).max())


def test_learned_metric_separates_classes(data, fitted):
    X, y = data
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, len(X), 3000), rng.integers(0, len(X), 3000)
    d = fitted.pair_distance(np.stack([X[a], X[b]], axis=1))
    same = y[a] == y[b]
    assert d[same].mean() < 0.7 * d[~same].mean()


def test_determinism_and_sparse_equivalence(data, fitted):
    X, y = data
    again = MetricLearner(rng=0, **FAST).fit(X, y)
    assert np.array_equal(again.components_, fitted.components_)
    other = MetricLearner(rng=1, **FAST).fit(X, y)
    assert not np.array_equal(other.components_, fitted.components_)
    # sparse input: the same problem with scaling="max_norm" on non-negative data (sparse input is not whitened)
    Xp = np.abs(X[:, :3]) / np.abs(X[:, :3]).max(0)
    dense = MetricLearner(rng=0, scaling=None, whiten=None, sampling="balanced", **FAST).fit(Xp / 2, y)
    sparse = MetricLearner(rng=0, scaling=None, sampling="balanced", **FAST).fit(sp.csr_matrix(Xp / 2), y)
    assert np.abs(sparse.get_mahalanobis_matrix() - dense.get_mahalanobis_matrix()).max() <= 1e-9


def test_fit_reaches_the_reference_optimum():
    """Small problem: logT's F is close to the full-batch optimum of the SAME objective (dense formula)."""
    from logt.metric_learning.reference import solve
    X, y = _raw(n=60, d=4, seed=5)
    est = MetricLearner(rng=0, T=400_000, sampling="balanced", n_threads=1, lam=0.1).fit(X, y)
    A = apply_scaling(X, est.center_, est.scale_) @ est.whitening_      # the rows the oracle saw
    codes = np.unique(y, return_inverse=True)[1]
    P, Y = pair_distribution(codes, "balanced")
    s = est.threshold_scale_
    W, b, Fstar, info = solve(A, P, Y, 0.1, learn_threshold=True, tol=1e-10, threshold_scale=s)
    Z = est.result_.x
    F = objective(A, P, Y, Z[:4, :4], Z[4, 4], 0.1, threshold_scale=s)
    F0 = objective(A, P, Y, np.zeros((4, 4)), 0.0, 0.1, threshold_scale=s)
    assert est.b_ == pytest.approx(s * Z[4, 4], rel=1e-15)
    assert Fstar <= F <= Fstar + 0.02 * (F0 - Fstar)


@pytest.mark.parametrize("method,params,options", [
    ("sgd", "practical", None), ("epoch_gd", "practical", None), ("logt", "theorem1", None),
    ("logt", {"eta": 0.5, "M": 4, "B1": 2}, None), ("sgd", "practical", {"average": "uniform"})])
def test_optimizer_pass_through(data, method, params, options):
    X, y = data
    est = MetricLearner(method=method, params=params, options=options, rng=0, **FAST).fit(X, y)
    assert est.result_.method == method
    assert est.result_.fun < np.log(2)                     # below F(0) = log 2 (learned threshold)
    if method == "sgd":
        assert est.n_projections_ == FAST["T"]
        assert est.result_.params["average"] == (options or {}).get("average", "last")
    if isinstance(params, dict):
        assert est.result_.params["M"] == 4 and est.n_projections_ == 8 * est.n_epochs_


def test_theorem2_needs_delta_and_options_are_checked(data):
    X, y = data
    with pytest.raises(ValueError, match="delta"):
        MetricLearner(params="theorem2", T=10**5, n_threads=1).fit(X, y)
    # delta arrives through options: Theorem 2's first epoch then needs T >= 2*M*B1 (> 10**5 here)
    with pytest.raises(ValueError, match="below one epoch of Algorithm 1"):
        MetricLearner(params="theorem2", options={"delta": 0.1}, T=10**5, n_threads=1, rng=0).fit(X, y)
    with pytest.raises(ValueError, match="options may not set"):
        MetricLearner(options={"eta": 1.0}).fit(X, y)
    with pytest.raises(TypeError, match="options"):
        MetricLearner(options=[1]).fit(X, y)


def test_paper_setting_is_the_fig2_objective():
    """MetricLearner.paper on unit-norm non-negative data = the paper's oracle (uniform pairs, b = 1)."""
    rng = np.random.default_rng(0)
    X = np.abs(rng.normal(size=(80, 5)))
    X /= np.linalg.norm(X, axis=1, keepdims=True)          # equal norms: max_norm scaling is then a no-op
    y = rng.integers(0, 2, 80)
    est = MetricLearner.paper(scaling=None, rng=0, **FAST).fit(X, y)
    assert est.b_ == 1.0 and est.result_.x.shape == (5, 5)
    o = MetricLearning(X, y, 0.1, n_eval_pairs=20_000, eval_rng=3)
    assert o.value(est.result_.x) < o.value(np.zeros((5, 5))) - 1e-3


def test_not_fitted():
    est = MetricLearner()
    for call in (lambda: est.transform(np.zeros((2, 3))), est.get_mahalanobis_matrix, est.get_metric,
                 lambda: est.pair_distance(np.zeros((1, 2, 3)))):
        with pytest.raises(NotFittedError, match="not fitted"):
            call()
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)


def test_bad_inputs(data, fitted):
    X, y = data
    est = MetricLearner(**FAST)
    with pytest.raises(ValueError, match="at least 2 classes"):
        est.fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match=r"got 1 class: 'a'$"):        # the label itself, not np.str_('a')
        est.fit(X, np.array(["a"] * len(X)))
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(Xn, y)
    with pytest.raises(ValueError, match="240 samples but y has 239"):
        est.fit(X, y[:-1])
    with pytest.raises(ValueError, match="y must be 1-D"):
        est.fit(X, y[:, None])                               # (n, 1) is rejected, not silently raveled
    with pytest.raises(ValueError, match="2D"):
        est.fit(X[0], y[:1])
    with pytest.raises(ValueError, match="every label in y is unique"):
        est.fit(X[:5], np.arange(5))
    with pytest.raises(TypeError, match="y mixes label types"):
        est.fit(X[:6], np.array([1, "a", 1, "a", 2, "b"], dtype=object))
    with pytest.raises(ValueError, match="MAX_INPUT_FEATURES"):
        MetricLearner(T=2000).fit(sp.csr_matrix((3, 2**31 + 5)), [0, 1, 1])
    for bad in (dict(method="adam"), dict(params="fast"), dict(lam=-1.0), dict(sampling="knn"),
                dict(n_neighbors=0), dict(threshold="auto"), dict(threshold=-1.0), dict(scaling="l2"),
                dict(T=0), dict(n_eval_pairs=0), dict(threshold_scale=0.0), dict(threshold_scale="learn"),
                dict(threshold_scale=float("nan"))):
        with pytest.raises((ValueError, TypeError)):
            MetricLearner(**bad).fit(X, y)
    with pytest.raises(ValueError, match="6 features"):
        fitted.transform(np.zeros((2, 5)))
    with pytest.raises(ValueError, match=r"shape \(n_pairs, 2, n_features\)"):
        fitted.pair_distance(np.zeros((4, 6)))
    with pytest.raises(ValueError, match="NaN"):
        fitted.pair_distance(np.full((1, 2, 6), np.nan))
    with pytest.raises(ValueError, match="vectors of 6"):
        fitted.get_metric()(np.zeros(5), np.zeros(5))


@pytest.mark.parametrize("y", [np.linspace(-1, 1, 240),                       # a regression target
                               np.tile([0.5, 1.5], 120),                       # floats that are not whole numbers
                               np.tile(np.array([1, 2.5], dtype=object), 120),
                               np.round(np.linspace(0, 3, 240), 1)])          # a rounded target: 31 values
def test_continuous_labels_are_an_error_not_classes(data, y):
    # scikit-learn's type_of_target "continuous" (its classifiers and NCA reject it): a target mistaken for classes
    # would be fitted silently as dozens or hundreds of classes
    X, _ = data
    with pytest.raises(ValueError, match=r"Unknown label type: continuous\. y holds float values .* \(e\.g\. "):
        MetricLearner(**FAST).fit(X, y)


@pytest.mark.parametrize("y", [np.tile([0.0, 1.0, 2.0], 80), np.tile([-3.0, 7.0], 120),
                               np.tile(np.array([1, 2.0], dtype=object), 120)])
def test_whole_number_float_labels_are_classes(data, y):
    X, _ = data
    est = MetricLearner(rng=0, **FAST).fit(X, y)
    ref = MetricLearner(rng=0, **FAST).fit(X, y.astype(float).astype(int))
    assert [float(c) for c in est.classes_] == sorted({float(v) for v in y})
    np.testing.assert_array_equal(est.components_, ref.components_)


def test_pickle_and_clone_of_fitted(data, fitted):
    X, _ = data
    for c in (pickle.loads(pickle.dumps(fitted)),):
        assert np.array_equal(c.transform(X), fitted.transform(X))
        assert c.get_params() == fitted.get_params()
    import copy
    c = copy.deepcopy(fitted)
    assert np.array_equal(c.components_, fitted.components_)


@pytest.mark.filterwarnings("ignore::logt.DegenerateMetricWarning")
def test_sklearn_check_estimator():
    """Every scikit-learn estimator check passes (seeded: check_fit_idempotent needs a fixed rng). Some
    checks fit random labels, whose optimum is the zero metric (DegenerateMetricWarning, expected)."""
    pytest.importorskip("sklearn")
    from sklearn.utils.estimator_checks import check_estimator
    check_estimator(MetricLearner(rng=0, T=4000, n_eval_pairs=500, n_threads=1))


def test_pipeline_and_clone():
    sk = pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    X, y = _raw(seed=4)
    pipe = make_pipeline(MetricLearner(rng=0, **FAST), KNeighborsClassifier(3)).fit(X[:180], y[:180])
    assert pipe.score(X[180:], y[180:]) > 0.6
    c = clone(MetricLearner(T=777, rng=3))
    assert c.get_params()["T"] == 777 and sk is not None


_NO_SKLEARN = textwrap.dedent("""
    import sys, pickle
    import importlib.abc
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "sklearn" or name.startswith("sklearn."):
                raise ImportError("scikit-learn hidden for this test")
    sys.meta_path.insert(0, Block())
    import numpy as np
    import logt
    from logt.metric_learning import HAVE_SKLEARN, MetricLearner, PairsMetricLearner, NotFittedError
    assert not HAVE_SKLEARN
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 100); X = rng.normal(size=(100, 3)) * 50; X[:, 0] += 100 * y
    est = MetricLearner(T=5000, rng=0, n_threads=1)
    try:
        est.transform(X)
    except NotFittedError:
        pass
    est.fit(X, y)
    Z = est.transform(X)
    p = est.get_params(); assert p["T"] == 5000
    assert "T=5000" in repr(est)
    est2 = MetricLearner().set_params(**p).fit(X, y)
    assert np.array_equal(est2.transform(X), Z)
    pairs = np.stack([X[:50], X[50:]], axis=1); yp = np.where(y[:50] == y[50:], 1, -1)
    pl = PairsMetricLearner(T=5000, rng=0, n_threads=1).fit(pairs, yp)
    assert 0.5 < pl.score(pairs, yp) <= 1.0 and set(pl.predict(pairs)) <= {{-1, 1}}
    pickle.loads(pickle.dumps(est))
    print("ok", "sklearn" in sys.modules)
""")


def test_works_without_sklearn():
    out = run_python(["-c", _NO_SKLEARN.format()])
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "False"]


def test_auto_budget_from_lam():
    # T="auto" (the default): max(1e5, 200 / lam), capped at 1e8; an int T is used as given
    from logt.metric_learning import auto_budget
    assert [auto_budget(lam) for lam in (1.0, 0.1, 2e-3, 1e-3, 1e-4, 1e-9)] == \
        [100_000, 100_000, 100_000, 200_000, 2_000_000, 100_000_000]
    X, y = _raw(n=60, d=4)
    assert MetricLearner().T == "auto"
    m = MetricLearner(lam=1e-3, rng=0, loss="pairs").fit(X, y)
    assert m.n_calls_ <= 200_000 and m.n_calls_ >= 0.9 * 200_000
    m = MetricLearner(lam=1e-3, rng=0).fit(X, y)       # the softmax (dense input): a fifth as many anchors
    assert m.loss_ == "softmax" and 0.9 * 40_000 <= m.n_calls_ <= 40_000
    m = MetricLearner(T=30_000, rng=0).fit(X, y)
    assert m.n_calls_ <= 30_000
    with pytest.raises(TypeError, match="'auto'"):
        MetricLearner(T="fast").fit(X, y)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_constant_features_are_left_out_exactly(data, kind):
    """Constant columns add 0 to every pair difference: the fit on X with constant columns inserted is
    the fit on X (bit for bit: the optimizer sees the same numbers), with W = 0 on those columns."""
    X, y = data
    if kind == "dense":
        Xa = np.column_stack([X[:, :2], np.full(len(X), 5.0), X[:, 2:], np.zeros(len(X))])
        base, aug = X, Xa
        kw = {}
    else:                  # non-negative data, one all-zero column (common in one-hot data)
        Xp = np.abs(X) / np.abs(X).max(0)
        base = sp.csr_matrix(Xp)
        aug = sp.csr_matrix(np.column_stack([Xp[:, :2], np.zeros(len(X)), Xp[:, 2:], np.zeros(len(X))]))
        kw = {"sampling": "balanced"}
    active = np.ones(aug.shape[1], dtype=bool)
    active[[2, aug.shape[1] - 1]] = False
    e0 = MetricLearner(rng=4, **FAST, **kw).fit(base, y)
    e1 = MetricLearner(rng=4, **FAST, **kw).fit(aug, y)
    assert np.array_equal(e1.active_features_, active) and e0.active_features_.all()
    W0, W1 = e0.get_mahalanobis_matrix(), e1.get_mahalanobis_matrix()
    assert np.all(W1[~active] == 0.0) and np.all(W1[:, ~active] == 0.0)
    assert np.array_equal(e0.result_.x, e1.result_.x) and e0.n_projections_ == e1.n_projections_
    assert np.allclose(W1[np.ix_(active, active)], W0, rtol=1e-12, atol=1e-14 * np.abs(W0).max())
    assert e1.transform(aug).shape == e0.transform(base).shape
    assert e1.b_ == e0.b_


def test_all_constant_features_still_fit():
    X = np.ones((20, 3))
    y = np.repeat([0, 1], 10)
    with pytest.warns(DegenerateMetricWarning, match="metric is zero"):       # every pair difference is 0
        est = MetricLearner(rng=0, T=2000, n_eval_pairs=100).fit(X, y)
    assert est.active_features_.all()
    assert np.allclose(est.transform(X), est.transform(X)[0])


def test_defaults_dict_matches_the_constructor():
    import inspect
    from logt.metric_learning.supervised import DEFAULTS
    sig = inspect.signature(MetricLearner.__init__).parameters
    assert {k: sig[k].default for k in DEFAULTS} == DEFAULTS


def _outlier_problem(seed=0, n=240, d=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.standard_normal((n, d)) + 1.5 * np.eye(3, d)[y]
    Xo = X.copy()
    Xo[0] *= 1e4                                   # one row 1e4 times larger than the rest
    return X, Xo, y


@pytest.mark.parametrize("mode", ["standardize", "max_norm"])
def test_scaling_fits_around_an_outlier_row(mode):
    """The outlier row is flagged, the map is fitted on the other rows (bit for bit), scale free."""
    from logt.metric_learning.scaling import OUTLIER_FACTOR, clip_rows, fit_scaling
    X, Xo, _ = _outlier_problem()
    c, s, out = fit_scaling(Xo, mode, return_outliers=True)
    assert out[0] and out.sum() == 1
    c_ref, s_ref = fit_scaling(Xo[1:], mode)                  # the same map without the row
    assert np.array_equal(c, c_ref) and np.array_equal(s, s_ref)
    Z = apply_scaling(Xo, c, s)
    norms = np.linalg.norm(Z, axis=1)
    assert norms[1:].max() <= 1.0 and norms[0] > OUTLIER_FACTOR
    Zc, k = clip_rows(Z, out)
    assert k == 1 and np.linalg.norm(Zc, axis=1).max() <= 1.0
    assert np.allclose(Zc[0] / np.linalg.norm(Zc[0]), Z[0] / norms[0])      # direction kept
    assert np.array_equal(Zc[1:], Z[1:])
    c2, s2, out2 = fit_scaling(1000.0 * Xo, mode, return_outliers=True)    # scale free
    assert np.array_equal(out2, out) and np.allclose(s2, 1000.0 * s, rtol=1e-12)
    # sparse input: the same rule on the row norms (max_norm mode, no centring)
    Xs = sp.csr_matrix(np.abs(Xo))
    _, _, out_s = fit_scaling(Xs, "max_norm", return_outliers=True)
    assert out_s[0] and out_s.sum() == 1


def test_scaling_leaves_clean_data_alone():
    """No row flagged on clean, heavy-tailed or tiny data: the map is the plain formula, bit for bit."""
    from logt.metric_learning.scaling import fit_scaling
    rng = np.random.default_rng(3)
    for X in (rng.standard_normal((300, 6)), rng.standard_cauchy((1000, 8)), rng.lognormal(0, 1, (500, 4)),
              rng.standard_normal((2, 3))):
        c, s, out = fit_scaling(X, "standardize", return_outliers=True)
        assert not out.any()
        sd = X.std(0)
        sd = np.where(sd <= 1e3 * np.finfo(float).eps * np.abs(X).max(0), 1.0, sd)
        r = np.linalg.norm((X - X.mean(0)) / sd, axis=1).max()
        assert np.array_equal(c, X.mean(0)) and np.array_equal(s, sd * (r * (1 + 8 * np.finfo(float).eps)))
    # sparse rows that are nearly all empty: the 99th-percentile norm is 0, so nothing is an outlier
    Xs = sp.csr_matrix(np.vstack([np.zeros((200, 3)), np.ones((1, 3))]))
    assert not fit_scaling(Xs, "max_norm", return_outliers=True)[2].any()


def test_estimator_metric_survives_an_outlier_row():
    """With one row 1e4 times larger, the learned metric stays that of the data without it; with the
    rule switched off (monkeypatched) it does not (the test has power)."""
    import logt.metric_learning.scaling as scaling
    X, Xo, y = _outlier_problem(seed=1)
    kw = dict(rng=0, **FAST)
    clean = MetricLearner(**kw).fit(X[1:], y[1:]).get_mahalanobis_matrix()
    est = MetricLearner(**kw).fit(Xo, y)
    assert est.n_clipped_ == 1
    assert MetricLearner(**kw).fit(X, y).n_clipped_ == 0

    def cos(A, B):
        return float(np.vdot(A, B) / (np.linalg.norm(A) * np.linalg.norm(B)))

    assert cos(est.get_mahalanobis_matrix(), clean) > 0.95
    old = scaling.OUTLIER_FACTOR
    scaling.OUTLIER_FACTOR = np.inf
    try:
        off = MetricLearner(**kw).fit(Xo, y)
    finally:
        scaling.OUTLIER_FACTOR = old
    assert off.n_clipped_ == 0 and cos(off.get_mahalanobis_matrix(), clean) < 0.8


@pytest.mark.parametrize("n_components", [None, 2])
def test_scaling_none_says_what_it_needs(n_components):
    # rows the oracle cannot take (norm > 1) under scaling=None: the estimator's own error and remedy, not the
    # oracle's (which pointed at MetricLearner itself)
    from logt import PairsMetricLearner
    X = np.random.default_rng(0).standard_normal((60, 5)) * 3.0
    y = np.arange(60) % 3
    with pytest.raises(ValueError, match="scaling=None needs training .* of norm <= 1.*scaling='auto'"):
        MetricLearner(scaling=None, n_components=n_components).fit(X, y)
    i = np.arange(30)
    j = np.where(i < 15, i + 30, i + 1)                       # similar pairs (i, i + 30), then dissimilar ones
    pairs, yp = np.stack([X[i], X[j]], axis=1), np.where(y[i] == y[j], 1, -1)
    with pytest.raises(ValueError, match="scaling=None needs training"):
        PairsMetricLearner(scaling=None, n_components=n_components).fit(pairs, yp)
    Xn = X / (np.linalg.norm(X, axis=1).max() * 1.01)          # rows inside the unit ball: fitted as they are
    assert MetricLearner(scaling=None, rng=0, T=5_000, check=False).fit(Xn, y).get_mahalanobis_matrix().shape == (5, 5)
