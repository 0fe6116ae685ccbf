"""MetricLearner: parameters protocol, fit properties, metric consistency, errors, sklearn checks."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from logt.datasets import normalize_rows
from logt.estimator import MetricLearner, NotFittedError, practical_metric_params
from logt.oracles import MetricLearning

FAST = dict(T=4000, n_eval_pairs=2000, n_threads=1)


def _two_classes(n=200, d=6, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d))
    X[:, 0] += np.where(y == 1, 2.0, -2.0)
    return normalize_rows(X), y


@pytest.fixture(scope="module")
def data():
    return _two_classes()


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    return MetricLearner(rng=0, **FAST).fit(X, y)


def test_get_set_params_round_trip():
    est = MetricLearner(T=123, params={"eta": 0.5, "M": 3, "B1": 2}, rng=7)
    p = est.get_params()
    assert set(p) == {"method", "T", "lam", "params", "delta", "n_eval_pairs", "n_threads",
                      "normalize", "rng"}
    assert p["T"] == 123 and p["rng"] == 7 and p["params"] == {"eta": 0.5, "M": 3, "B1": 2}
    other = MetricLearner().set_params(**p)
    assert other.get_params() == p
    assert est.set_params(lam=0.5) is est and est.lam == 0.5
    with pytest.raises(ValueError, match="Invalid parameter 'foo'"):
        est.set_params(foo=1)
    assert "T=123" in repr(est) and "lam=0.5" in repr(est) and "method" not in repr(est)


def test_practical_params_rule():
    p = practical_metric_params(4.1, 0.1, 10**6)
    assert (p.M, p.B1) == (8, 4) and p.eta == pytest.approx(4 / 4.1)
    assert practical_metric_params(4.1, 0.1, 20).B1 == 1      # one epoch still fits
    with pytest.raises(ValueError, match="below one epoch"):
        practical_metric_params(4.1, 0.1, 15)


def test_fit_decreases_objective_and_W_is_psd(data, fitted):
    X, y = data
    W = fitted.W_
    assert W.shape == (6, 6) and np.array_equal(W, W.T)
    assert np.linalg.eigvalsh(W).min() >= -1e-12
    # independent check of F on fresh pairs: F(W_) < F(0)
    o = MetricLearning(X, y, 0.1, n_eval_pairs=20_000, eval_rng=123, n_threads=1)
    assert o.value(W) < o.value(np.zeros((6, 6))) - 0.02
    # dense NumPy formula for F on the same pairs as the oracle
    i, j = o.eval_pairs
    D = X[i] - X[j]
    yy = np.where(y[i] == y[j], 1.0, -1.0)
    z = yy * (1 - np.einsum("ij,jk,ik->i", D, W, D))
    F = np.mean(np.logaddexp(0, -z)) + 0.05 * np.sum(W * W)
    assert o.value(W) == pytest.approx(F, rel=1e-10)
    assert fitted.n_features_in_ == 6
    assert fitted.n_projections_ == fitted.result_.n_projections == 2 * 8 * fitted.n_epochs_
    assert fitted.n_calls_ <= 4000


def test_components_and_distances(data, fitted):
    X, _ = data
    Lm = fitted.components_
    assert Lm.shape[1] == 6 and 1 <= Lm.shape[0] <= 6
    assert np.abs(Lm.T @ Lm - fitted.W_).max() <= 1e-10
    assert np.abs(fitted.W_ - fitted.result_.x).max() <= 1e-10
    assert np.array_equal(fitted.get_mahalanobis_matrix(), fitted.W_)
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, len(X), 50), rng.integers(0, len(X), 50)
    pairs = np.stack([X[a], X[b]], axis=1)
    d = fitted.pair_distance(pairs)
    Z = fitted.transform(X)
    assert np.abs(d - np.linalg.norm(Z[a] - Z[b], axis=1)).max() <= 1e-10
    D = X[a] - X[b]
    ref = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", D, fitted.W_, D), 0))
    assert np.abs(d - ref).max() <= 1e-7
    assert np.array_equal(fitted.pair_score(pairs), -d)
    dec = fitted.decision_function(pairs)
    assert np.allclose(dec, 1 - d**2, atol=1e-12)
    assert set(np.unique(fitted.predict(pairs))) <= {-1, 1}
    assert np.array_equal(fitted.predict(pairs), np.where(dec > 0, 1, -1))
    # sparse input gives the same transform
    assert np.abs(fitted.transform(sp.csr_matrix(X)) - Z).max() <= 1e-12


def test_learned_metric_separates_classes(data, fitted):
    """Same-label pairs end up closer than different-label pairs (on average)."""
    X, y = data
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, len(X), 2000), rng.integers(0, len(X), 2000)
    d = fitted.pair_distance(np.stack([X[a], X[b]], axis=1))
    same = y[a] == y[b]
    assert d[same].mean() < 0.7 * d[~same].mean()


def test_determinism_and_sparse_equivalence(data, fitted):
    X, y = data
    again = MetricLearner(rng=0, **FAST).fit(X, y)
    assert np.array_equal(again.W_, fitted.W_)
    other = MetricLearner(rng=1, **FAST).fit(X, y)
    assert not np.array_equal(other.W_, fitted.W_)
    sparse = MetricLearner(rng=0, **FAST).fit(sp.csr_matrix(X), y)
    assert np.abs(sparse.W_ - fitted.W_).max() <= 1e-10


@pytest.mark.parametrize("method,params", [("sgd", "practical"), ("epoch_gd", "practical"),
                                           ("logt", "theorem1"),
                                           ("logt", {"eta": 0.5, "M": 4, "B1": 2})])
def test_other_methods_and_params(data, method, params):
    X, y = data
    est = MetricLearner(method=method, params=params, rng=0, **FAST).fit(X, y)
    o = MetricLearning(X, y, 0.1, n_eval_pairs=5000, eval_rng=5, n_threads=1)
    assert o.value(est.W_) < o.value(np.zeros((6, 6)))
    if method == "sgd":
        assert est.n_projections_ == 4000
    if isinstance(params, dict):
        assert est.result_.params["M"] == 4 and est.n_projections_ == 8 * est.n_epochs_


def test_theorem2_needs_delta(data):
    X, y = data
    with pytest.raises(ValueError, match="delta"):
        MetricLearner(params="theorem2", T=10**5, n_threads=1).fit(X, y)


def test_normalize_option():
    X, y = _two_classes()
    Xbig = 3.0 * X
    with pytest.raises(ValueError, match="normalize_rows"):
        MetricLearner(rng=0, **FAST).fit(Xbig, y)
    est = MetricLearner(rng=0, normalize=True, **FAST).fit(Xbig, y)
    ref = MetricLearner(rng=0, **FAST).fit(X, y)
    assert np.abs(est.W_ - ref.W_).max() <= 1e-12
    assert np.abs(est.transform(Xbig) - ref.transform(X)).max() <= 1e-12


def test_not_fitted():
    est = MetricLearner()
    for call in (lambda: est.transform(np.zeros((2, 3))), est.get_mahalanobis_matrix,
                 lambda: est.pair_distance(np.zeros((1, 2, 3)))):
        with pytest.raises(NotFittedError, match="not fitted"):
            call()
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)


def test_bad_inputs(data, fitted):
    X, y = data
    est = MetricLearner(**FAST)
    with pytest.raises(ValueError, match="two classes"):
        est.fit(X, np.zeros(len(X)))
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(Xn, y)
    with pytest.raises(ValueError, match="200 samples but y has 199"):
        est.fit(X, y[:-1])
    with pytest.raises(ValueError, match="2-D"):
        est.fit(X[0], y[:1])
    with pytest.raises(ValueError, match="method"):
        MetricLearner(method="adam").fit(X, y)
    with pytest.raises(ValueError, match="params"):
        MetricLearner(params="fast").fit(X, y)
    with pytest.raises(ValueError, match="lam"):
        MetricLearner(lam=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="6 features"):
        fitted.transform(np.zeros((2, 5)))
    with pytest.raises(ValueError, match=r"shape \(n_pairs, 2, n_features\)"):
        fitted.pair_distance(np.zeros((4, 6)))
    with pytest.raises(ValueError, match="NaN"):
        fitted.pair_distance(np.full((1, 2, 6), np.nan))



def test_sklearn_clone_and_checks(data):
    pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.utils import estimator_checks as ec
    est = MetricLearner(T=777, params={"eta": 0.5, "M": 3, "B1": 2}, rng=3)
    c = clone(est)
    assert c is not est and c.get_params() == est.get_params()
    name = type(est).__name__
    for check in (ec.check_get_params_invariance, ec.check_set_params,
                  ec.check_no_attributes_set_in_init, ec.check_parameters_default_constructible,
                  ec.check_estimator_repr, ec.check_estimator_cloneable,
                  ec.check_do_not_raise_errors_in_init_or_set_params):
        check(name, est)
    # checks that fit on generic data: rows need scaling, so use normalize=True
    fast = MetricLearner(normalize=True, rng=0, **FAST)
    for check in (ec.check_estimators_fit_returns_self, ec.check_fit_check_is_fitted,
                  ec.check_n_features_in, ec.check_dont_overwrite_parameters,
                  ec.check_estimators_unfitted, ec.check_transformers_unfitted,
                  ec.check_fit2d_1sample, ec.check_fit2d_1feature, ec.check_fit1d,
                  ec.check_estimators_empty_data_messages, ec.check_estimators_overwrite_params,
                  ec.check_transformer_general, ec.check_transformer_data_not_an_array,
                  ec.check_transformer_preserve_dtypes, ec.check_readonly_memmap_input,
                  ec.check_complex_data, ec.check_requires_y_none, ec.check_supervised_y_no_nan,
                  ec.check_pipeline_consistency, ec.check_fit_score_takes_y,
                  ec.check_estimator_sparse_tag, ec.check_valid_tag_types):
        check(name, clone(fast))
    # Not applicable: checks that call predict/decision_function on X (n, d); a pair
    # learner's take pairs (n, 2, d) -- e.g. check_estimators_nan_inf, check_fit_idempotent.
