"""The principal subspace of the metric learners (logt.metric_learning.subspace) and ``n_components``."""
import numpy as np
import pytest
import scipy.sparse as sp

from logt import MetricLearner, PairsMetricLearner
from logt.metric_learning import subspace as S


def _low_rank_data(n, d, r, rng):
    g = np.random.default_rng(rng)
    scales = np.geomspace(10.0, 1.0, r)
    return (g.standard_normal((n, r)) * scales) @ np.linalg.qr(g.standard_normal((d, r)))[0].T \
        + 0.01 * g.standard_normal((n, d)) + 5.0


def _reference(X, k):
    Xc = X - X.mean(0)
    _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    return Vt[:k], s[:k] ** 2 / X.shape[0], float(np.sum(Xc ** 2) / X.shape[0])


@pytest.mark.parametrize("d", [40, S.EXACT_MAX_FEATURES + 200])        # exact path and randomized path
@pytest.mark.parametrize("sparse", [False, True])
def test_principal_subspace_matches_svd(d, sparse):
    X = _low_rank_data(300, d, 6, 1)
    Vr, vr, tr = _reference(X, 6)
    Xin = sp.csr_matrix(X) if sparse else X
    mean, V, var, total = S.principal_subspace(Xin, 6, np.random.default_rng(0))
    np.testing.assert_allclose(mean, X.mean(0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(V @ V.T, np.eye(6), atol=1e-10)
    np.testing.assert_allclose(np.abs(np.sum(V * Vr, axis=1)), 1.0, atol=1e-8)     # same directions
    np.testing.assert_allclose(var, vr, rtol=1e-8)
    assert total == pytest.approx(tr, rel=1e-10)
    Z = S.project_rows(Xin, mean, V)
    np.testing.assert_allclose(Z, (X - X.mean(0)) @ V.T, atol=1e-8)


def test_auto_rank_rule():
    v = np.array([50.0, 30.0, 10.0, 5.0, 3.0] + [0.02] * 100)
    total = float(v.sum())
    assert S.auto_rank(v, total, 10_000) == S.MIN_AUTO_RANK               # 95% in 4 directions: the floor
    flat = np.ones(200)
    assert S.auto_rank(flat[:S.MAX_AUTO_RANK], 200.0, 10_000) == S.MAX_AUTO_RANK     # not reached: the cap
    share = np.full(100, 1.0)
    assert S.auto_rank(share, 100.0, 10_000) == 95                    if 95 <= S.MAX_AUTO_RANK else True
    assert S.auto_rank(flat[:S.MAX_AUTO_RANK], 200.0, 5) == 4          # at most n - 1
    assert S.uses_subspace(1000, 2 * S.MAX_AUTO_RANK + 1) and not S.uses_subspace(1000, 2 * S.MAX_AUTO_RANK)
    assert S.uses_subspace(50, 60)                                     # d > n


def test_loo_1nn_accuracy_against_bruteforce():
    g = np.random.default_rng(3)
    Z, c = g.standard_normal((257, 5)), g.integers(3, size=257)
    D = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    assert S.loo_1nn_accuracy(Z, c, block=64) == pytest.approx(np.mean(c[D.argmin(1)] == c))


def _classes(n, d, rng, n_const=0):
    g = np.random.default_rng(rng)
    y = g.integers(3, size=n)
    X = g.standard_normal((n, d))
    X[:, :3] += 3.0 * np.eye(3)[y]
    if n_const:
        X[:, -n_const:] = 7.0
    return X, y


@pytest.mark.parametrize("k", [2, 3, 8])
def test_n_components_shapes_and_identities(k):
    X, y = _classes(200, 20, 0)
    ml = MetricLearner(n_components=k, rng=0, T=20_000).fit(X, y)
    assert ml.components_.shape == (k, 20) and ml.n_components_ == k
    assert ml.transform(X).shape == (200, k)
    W = ml.get_mahalanobis_matrix()
    np.testing.assert_allclose(W, ml.components_.T @ ml.components_, atol=1e-12)
    a, b = X[:50], X[50:100]
    dist = ml.pair_distance(np.stack([a, b], axis=1))
    np.testing.assert_allclose(dist ** 2, np.einsum("ij,jk,ik->i", a - b, W, a - b), rtol=1e-9)
    np.testing.assert_allclose(dist, np.linalg.norm(ml.transform(a) - ml.transform(b), axis=1), rtol=1e-9)
    # the rows lie in the principal subspace of the training points
    P = ml.subspace_
    np.testing.assert_allclose(ml.components_ @ P.T @ P, ml.components_, atol=1e-10)


def test_default_high_d_constant_features_and_d_above_n():
    X, y = _classes(120, 400, 1, n_const=100)                      # d > n, 100 constant columns
    ml = MetricLearner(rng=0, T=20_000).fit(X, y)
    assert ml.subspace_ is not None and 1 <= ml.n_components_ <= S.MAX_AUTO_RANK
    assert ml.components_.shape == (ml.n_components_, 400)
    np.testing.assert_array_equal(ml.components_[:, -100:], 0.0)   # constant features carry no weight
    assert ml.metric_choice_ in ("learned", "subspace")
    assert not ml.active_features_[-100:].any() and ml.active_features_[:300].all()


def test_default_thousands_of_dense_features_bounded_and_reproducible():
    X, y = _classes(300, 3000, 2)
    a = MetricLearner(rng=5, T=20_000).fit(X, y)
    b = MetricLearner(rng=5, T=20_000).fit(X, y)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.components_.shape[1] == 3000 and a.subspace_.shape == (a.subspace_.shape[0], 3000)
    # the learned space separates the informative classes at least as well as chance by far
    Z = a.transform(X)
    assert S.loo_1nn_accuracy(Z, y) > 0.8


def test_low_d_default_is_full_rank_and_unchanged():
    X, y = _classes(150, 10, 4)
    a = MetricLearner(rng=0, T=20_000).fit(X, y)
    assert a.subspace_ is None and a.metric_choice_ == "learned"
    assert a.components_.shape[1] == 10


def test_sparse_high_d_input_is_not_densified_to_d_by_d():
    g = np.random.default_rng(0)
    y = g.integers(2, size=300)
    X = sp.random(300, 4000, density=0.01, random_state=1, format="csr")
    X = sp.hstack([X, sp.csr_matrix(np.eye(2)[y] * 3.0)]).tocsr()
    ml = MetricLearner(rng=0, T=20_000).fit(X, y)
    assert ml.components_.shape[1] == 4002 and ml.n_components_ <= S.MAX_AUTO_RANK
    assert S.loo_1nn_accuracy(ml.transform(X), y) > 0.9


def test_pairs_learner_n_components():
    X, y = _classes(200, 30, 5)
    i, j = np.arange(0, 200, 2), np.arange(1, 200, 2)
    pairs, yp = np.stack([X[i], X[j]], axis=1), np.where(y[i] == y[j], 1, -1)
    pl = PairsMetricLearner(n_components=4, rng=0, T=20_000).fit(pairs, yp)
    assert pl.components_.shape == (4, 30)
    np.testing.assert_allclose(pl.get_mahalanobis_matrix(), pl.components_.T @ pl.components_, atol=1e-12)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "auto", True])
def test_bad_n_components(bad):
    X, y = _classes(50, 5, 0)
    with pytest.raises(ValueError, match="n_components"):
        MetricLearner(n_components=bad).fit(X, y)


def test_n_components_above_n_features():
    X, y = _classes(50, 5, 0)
    with pytest.raises(ValueError, match="must not exceed the number of features"):
        MetricLearner(n_components=6).fit(X, y)


def test_n_components_above_n_samples_small_d():
    X, y = _classes(12, 30, 6)
    ml = MetricLearner(n_components=20, rng=0, T=5_000).fit(X, y)
    assert ml.components_.shape == (20, 30)
