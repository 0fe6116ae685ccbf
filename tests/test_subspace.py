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
    # the principal directions (at most MAX_AUTO_RANK) and the class means outside them (C - 1 = 2)
    assert ml.subspace_ is not None and 1 <= ml.n_components_ <= S.MAX_AUTO_RANK + 2
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
    assert ml.components_.shape[1] == 4002 and ml.n_components_ <= S.MAX_AUTO_RANK + 1   # + C - 1 class means
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


@pytest.mark.parametrize("sparse", [False, True])
def test_class_mean_directions_against_dense_reference(sparse):
    g = np.random.default_rng(3)
    X = g.standard_normal((120, 30)) + 2.0
    codes = g.integers(4, size=120)
    mean = X.mean(0)
    basis = np.linalg.qr(g.standard_normal((30, 5)))[0].T                 # (5, 30) orthonormal rows
    E = S.class_mean_directions(sp.csr_matrix(X) if sparse else X, codes, mean, basis)
    assert E.shape == (3, 30)                                              # C - 1 = 3
    np.testing.assert_allclose(E @ E.T, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(E @ basis.T, 0.0, atol=1e-10)
    # every class mean about the overall mean lies in span(basis) + span(E)
    Q = np.vstack([basis, E])
    for c in range(4):
        m = X[codes == c].mean(0) - mean
        np.testing.assert_allclose(Q.T @ (Q @ m), m, atol=1e-9)


def test_class_mean_directions_inside_basis_are_dropped():
    X = np.array([[0.0, 0, 0], [2, 0, 0], [0, 1, 0], [2, 1, 0]]) + 1.0
    codes = np.array([0, 1, 0, 1])                                         # the classes differ along e0 only
    E = S.class_mean_directions(X, codes, X.mean(0), np.array([[1.0, 0, 0]]))
    assert E.shape == (0, 3)


def test_holdout_split_per_class_quota_and_seed():
    codes = np.repeat(np.arange(3), [80, 13, 3])
    fit = S.holdout_split(codes, np.random.default_rng(0))
    held = np.bincount(codes[~fit], minlength=3)
    np.testing.assert_array_equal(held, np.floor(S.HOLDOUT_FRAC * np.array([80, 13, 3])))
    np.testing.assert_array_equal(fit, S.holdout_split(codes, np.random.default_rng(0)))
    assert not np.array_equal(fit, S.holdout_split(codes, np.random.default_rng(1)))
    assert S.holdout_split(np.repeat(np.arange(5), 4), np.random.default_rng(0)) is None   # 5 rows < HOLDOUT_MIN


def test_nn1_accuracy_against_bruteforce():
    g = np.random.default_rng(2)
    R, Q = g.standard_normal((90, 4)), g.standard_normal((37, 4))
    cr, cq = g.integers(3, size=90), g.integers(3, size=37)
    D = ((Q[:, None, :] - R[None, :, :]) ** 2).sum(-1)
    assert S.nn1_accuracy(R, cr, Q, cq, block=8) == pytest.approx(np.mean(cr[D.argmin(1)] == cq))


@pytest.mark.parametrize("seed, heavy, informative", [(0, False, 4), (1, False, 4), (3, False, 4),
                                                     (0, True, 8), (2, True, 8)])
def test_check_chooses_by_held_out_1nn_accuracy_against_scikit_learn(seed, heavy, informative, monkeypatch):
    from sklearn.neighbors import KNeighborsClassifier
    from logt._rng import check_rng
    from logt.experiments.highdim_data import dense_classification
    n_classes = 4 if heavy else 3
    X, y = dense_classification(400 if heavy else 500, 250 if heavy else 300, n_informative=informative,
                                n_classes=n_classes, class_sep=1.0 if heavy else 0.8, heavy_tailed=heavy, rng=seed)
    fits = []                                      # (rows, components_ on the subspace coordinates) of each fit
    inner = MetricLearner._fit_metric

    def recording(self, Z, codes, gen):
        inner(self, Z, codes, gen)
        fits.append((Z.shape[0], self.components_.copy()))
    monkeypatch.setattr(MetricLearner, "_fit_metric", recording)
    ml = MetricLearner(rng=seed, T=20_000).fit(X, y)
    c = ml.check_accuracy_
    assert set(c) == {"learned", "subspace", "euclidean", "how", "n_rows"} and c["how"] == "held-out"
    _, active, fr = MetricLearner(rng=seed)._subspace_fit(X, check_rng(seed), y.astype(np.intp))

    def held_out_1nn(Z):
        return KNeighborsClassifier(1).fit(Z[fr], y[fr]).score(Z[~fr], y[~fr])
    assert c["n_rows"] == (~fr).sum()
    assert c["subspace"] == pytest.approx(held_out_1nn((X - ml.subspace_mean_) @ ml.subspace_.T))
    assert c["euclidean"] == pytest.approx(held_out_1nn(X))
    if c["euclidean"] > max(c["learned"], c["subspace"]):
        assert ml.metric_choice_ == "euclidean"
        np.testing.assert_array_equal(ml.components_, np.eye(X.shape[1])[active])
        np.testing.assert_allclose(ml.transform(X[:20]), X[:20, active], atol=0)
    elif c["learned"] >= c["subspace"]:
        assert ml.metric_choice_ == "learned"
        # checked: the metric fitted on the fit rows; kept: the same learned again on all rows
        assert [f[0] for f in fits] == [fr.sum(), len(X)]
        Zs = (X - ml.subspace_mean_) @ ml.subspace_.T
        assert c["learned"] == pytest.approx(held_out_1nn(Zs @ fits[0][1].T))
        np.testing.assert_allclose(ml.components_, fits[1][1] @ ml.subspace_, rtol=1e-12, atol=1e-12)
    else:
        assert ml.metric_choice_ == "subspace"
        np.testing.assert_allclose(ml.components_, ml.subspace_, atol=0)
    if ml.metric_choice_ != "learned":
        assert len(fits) == 1                      # no second fit for a metric that is not kept


def test_check_compares_at_most_check_max_rows_held_out_rows(monkeypatch):
    from sklearn.neighbors import KNeighborsClassifier
    from logt._rng import check_rng
    from logt.experiments.highdim_data import dense_classification
    X, y = dense_classification(500, 300, n_informative=4, n_classes=3, class_sep=0.8, rng=1)
    _, _, fr = MetricLearner(rng=1)._subspace_fit(X, check_rng(1), y.astype(np.intp))
    monkeypatch.setattr(S, "CHECK_MAX_ROWS", 30)
    idx = S.check_rows(~fr)
    assert idx.size == 30 and np.all(~fr[idx]) and np.all(np.diff(idx) > 0)
    assert idx[0] == np.flatnonzero(~fr)[0] and idx[-1] == np.flatnonzero(~fr)[-1]      # spread over the rows
    ml = MetricLearner(rng=1, T=20_000).fit(X, y)
    c = ml.check_accuracy_
    assert c["n_rows"] == 30
    ref = KNeighborsClassifier(1).fit(X[fr], y[fr]).score(X[idx], y[idx])
    assert c["euclidean"] == pytest.approx(ref)
    monkeypatch.setattr(S, "CHECK_MAX_ROWS", 10**9)
    np.testing.assert_array_equal(S.check_rows(~fr), np.flatnonzero(~fr))               # below the cap: all


def test_leave_one_out_check_with_the_euclidean_candidate_against_bruteforce():
    X, y = _classes(45, 200, 7)                          # 15 per class: too few to hold 20 rows out
    ml = MetricLearner(rng=0, T=20_000).fit(X, y)
    c = ml.check_accuracy_
    assert c["how"] == "leave-one-out" and c["n_rows"] == 45
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    assert c["euclidean"] == pytest.approx(np.mean(y[D.argmin(1)] == y))
    best = max(c, key=lambda k: c[k] if k in ("learned", "subspace", "euclidean") else -1)
    assert c[ml.metric_choice_] == c[best]


def _low_variance_signal(n, rng):
    """199 features of spread 10 and no class information, one of spread ~5 that holds the classes."""
    g = np.random.default_rng(rng)
    y = g.integers(2, size=n)
    X = 10.0 * g.standard_normal((n, 200))
    X[:, 0] = 5.0 * (2 * y - 1) + g.standard_normal(n)
    return X, y


def test_default_finds_a_low_variance_class_direction():
    X, y = _low_variance_signal(1200, 0)
    Xt, yt = _low_variance_signal(400, 1)
    ml = MetricLearner(rng=0, T=20_000).fit(X, y)
    assert ml.subspace_ is not None and ml.check_accuracy_["how"] == "held-out"
    assert ml.check_accuracy_["n_rows"] == int(np.floor(S.HOLDOUT_FRAC * np.bincount(y)).sum())
    Vp = S.principal_subspace(X, S.MAX_AUTO_RANK, None)[1]
    assert np.linalg.norm(Vp[:, 0]) < 0.3                  # the principal directions miss feature 0
    assert abs(ml.subspace_[:, 0]) @ abs(ml.subspace_[:, 0]) > 0.5     # the class-mean direction holds it
    from sklearn.neighbors import KNeighborsClassifier
    acc = KNeighborsClassifier(1).fit(ml.transform(X), y).score(ml.transform(Xt), yt)
    eucl = KNeighborsClassifier(1).fit(X, y).score(Xt, yt)
    assert ml.metric_choice_ == "learned" and acc > eucl + 0.1            # measured: 0.70 against 0.56


def test_class_mean_directions_come_from_the_fit_rows_only():
    from logt._rng import check_rng
    X, y = _low_variance_signal(800, 4)
    a = MetricLearner(rng=0, T=20_000).fit(X, y)
    # the rows the fit holds out (the same draw as in fit: the same seed, the same spawned generator)
    _, _, fit_rows = MetricLearner(rng=0, T=20_000)._subspace_fit(X, check_rng(0), y.astype(np.intp))
    assert fit_rows is not None and (~fit_rows).sum() == a.check_accuracy_["n_rows"]
    mean, V, var, total = S.principal_subspace(X, S.MAX_AUTO_RANK, None)
    V = V[:S.auto_rank(var, total, X.shape[0])]
    np.testing.assert_allclose(np.abs(a.subspace_[:V.shape[0]] @ V.T), np.eye(V.shape[0]), atol=1e-8)
    extra = a.subspace_[V.shape[0]:]
    ref = S.class_mean_directions(X[fit_rows], y[fit_rows], mean, V)
    leaky = S.class_mean_directions(X, y, mean, V)
    np.testing.assert_allclose(np.abs(extra @ ref.T), np.eye(ref.shape[0]), atol=1e-8)
    assert abs(float(extra[0] @ leaky[0])) < 1 - 1e-6                  # all rows would give another one
