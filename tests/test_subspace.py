"""The principal subspace of the metric learners (logt.metric_learning.subspace) and ``n_components``."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from logt import MetricLearner, PairsMetricLearner
from logt.metric_learning import subspace as S

try:
    from ._check_rule import paired_reference
except ImportError:
    from _check_rule import paired_reference


def _low_rank_data(n, d, r, rng):
    g = np.random.default_rng(rng)
    scales = np.geomspace(10.0, 1.0, r)
    return (g.standard_normal((n, r)) * scales) @ np.linalg.qr(g.standard_normal((d, r)))[0].T \
        + 0.01 * g.standard_normal((n, d)) + 5.0


def _reference(X, k):
    Xc = X - X.mean(0)
    _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    return Vt[:k], s[:k] ** 2 / X.shape[0], float(np.sum(Xc ** 2) / X.shape[0])


@pytest.mark.parametrize("d, gram", [(40, None), (400, True), (400, False),          # covariance or Gram
                                     (S.EXACT_MAX_FEATURES + 200, True),               # Gram,
                                     (S.EXACT_MAX_FEATURES + 200, False)])             # range finder
@pytest.mark.parametrize("sparse", [False, True])
def test_principal_subspace_matches_svd(d, gram, sparse, monkeypatch):
    if gram is not None:
        monkeypatch.setattr(S, "gram_is_cheaper", lambda *args: gram)
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


def test_gram_route_rule():
    """The exact route for few rows: chosen where it was measured faster (see gram_is_cheaper), never above
    31 l rows (its Gram matrix's memory bound)."""
    assert S.gram_is_cheaper(300, 3000, 80, 4) and S.gram_is_cheaper(1050, 5000, 80, 4)
    assert not S.gram_is_cheaper(1400, 2000, 80, 4) and not S.gram_is_cheaper(2000, 4000, 80, 4)
    assert not S.gram_is_cheaper(31 * 80, 10 ** 12, 80, 4)
    assert S.gram_is_cheaper(60, 1000, 76, 4) and not S.gram_is_cheaper(1000, 60, 76, 4)     # d <= 1,024: n < d


def test_centred_gram_matches_centred_product():
    """Blocked centring (GRAM_BLOCK columns at a time, the last block short) gives the centred rows' Gram
    matrix, also far from the origin, where the uncentred product minus its mean terms loses every digit."""
    g = np.random.default_rng(5)
    X = 1e8 + g.standard_normal((40, 2 * S.GRAM_BLOCK + 77))
    mu = X.mean(0)
    ref = (X - mu) @ (X - mu).T
    G = S._centred_gram(X, mu)
    iu = np.triu_indices(40)
    np.testing.assert_allclose(G[iu], ref[iu], rtol=1e-10, atol=1e-8 * np.abs(ref).max())


@pytest.mark.parametrize("d", [400, S.EXACT_MAX_FEATURES + 200])
def test_gram_route_far_from_the_origin(d):
    """The Gram route centres explicitly (by blocks): data offset by 1e8 gives the centred data's directions and
    variances, as the SVD of the centred rows does."""
    X = _low_rank_data(150, d, 6, 2) + 1e8
    assert S.gram_is_cheaper(150, d, 22, 4)
    Vr, vr, _ = _reference(X, 6)
    mean, V, var, _ = S.principal_subspace(X, 6, np.random.default_rng(0))
    np.testing.assert_allclose(np.abs(np.sum(V * Vr, axis=1)), 1.0, atol=1e-8)
    np.testing.assert_allclose(var, vr, rtol=1e-10)          # uncentred products: 3e-9 off


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


def _knn_accuracy(Ztr, ytr, Zte, yte, k):
    """k-NN accuracy by brute force (majority vote, ties to the smallest label)."""
    D = ((Zte[:, None, :] - Ztr[None, :, :]) ** 2).sum(-1)
    votes = ytr[np.argsort(D, axis=1, kind="stable")[:, :k]]
    pred = np.array([np.bincount(v).argmax() for v in votes])
    return float(np.mean(pred == yte))


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
    # few features: the full-rank metric's top rows (tests/test_n_components_few_features.py), no subspace
    assert ml.subspace_ is None


def test_default_high_d_constant_features_and_d_above_n():
    X, y = _classes(120, 400, 1, n_const=100)                      # d > n, 100 constant columns
    ml = MetricLearner(rng=0, T=20_000).fit(X, y)
    # the principal directions (at most MAX_AUTO_RANK) and the class means outside them (C - 1 = 2)
    assert ml.subspace_ is not None and 1 <= ml.subspace_.shape[0] <= S.MAX_AUTO_RANK + 2
    assert ml.components_.shape == (ml.n_components_, 400)
    np.testing.assert_array_equal(ml.components_[:, -100:], 0.0)   # constant features carry no weight
    # 29 held-out rows: the metric learned with the class-mean directions leads plain distances by less than
    # one standard error (0.55 against 0.48), the one learned on the principal directions alone by more (0.72),
    # and the same learned in the data's units leads that one by more again (0.83): it is kept, on those
    # directions only, and it is the better metric on new rows of the same distribution (the standardized
    # principal-only one, kept before it was a candidate: 0.81 / 0.82)
    c = ml.check_accuracy_
    assert c["n_rows"] == 29 and c["principal_units"] > c["principal"] > c["learned"] > c["euclidean"]
    assert ml.metric_choice_ == "learned" and c["directions"] == "principal, in the data's units"
    assert ml.subspace_.shape[0] == ml._n_principal
    assert not ml.active_features_[-100:].any() and ml.active_features_[:300].all()
    Xt, yt = _classes(3000, 400, 99, n_const=100)
    for k in (1, 5):                                     # measured: 0.83 / 0.85 against 0.56 / 0.65
        assert _knn_accuracy(ml.transform(X), y, ml.transform(Xt), yt, k) > _knn_accuracy(X, y, Xt, yt, k) + 0.1


def test_default_thousands_of_dense_features_bounded_and_reproducible():
    X, y = _classes(300, 3000, 2)
    a = MetricLearner(rng=5, T=20_000).fit(X, y)
    b = MetricLearner(rng=5, T=20_000).fit(X, y)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.components_.shape[1] == 3000 and a.subspace_.shape == (a.subspace_.shape[0], 3000)
    # the learned space separates the informative classes at least as well as chance by far
    Z = a.transform(X)
    assert S.loo_1nn_accuracy(Z, y) > 0.8


@pytest.mark.parametrize("factor", [1e-200, 1e200])
@pytest.mark.parametrize("d", [400, 3000])
def test_wide_data_far_outside_float64s_comfortable_range(d, factor):
    # squares of 1e200 overflow and of 1e-200 underflow: the subspace is found on the data divided by a power of
    # two (exact), so the same subspace, check and metric as on the data itself (before: an overflow in the
    # power iterations and other choices)
    X, y = _classes(240, d, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = MetricLearner(rng=2, T=20_000).fit(X, y)
        b = MetricLearner(rng=2, T=20_000).fit(factor * X, y)
    assert a.metric_choice_ == b.metric_choice_ and a.check_accuracy_ == b.check_accuracy_
    np.testing.assert_allclose(b.subspace_, a.subspace_, atol=1e-9)
    np.testing.assert_allclose(b.subspace_mean_, factor * a.subspace_mean_, rtol=1e-9, atol=0)
    Za = a.transform(X)
    np.testing.assert_allclose(b.transform(factor * X), Za, rtol=1e-7, atol=1e-7 * np.abs(Za).max())


def test_low_d_default_is_full_rank_and_unchanged():
    X, y = _classes(150, 10, 4)
    a = MetricLearner(rng=0, T=20_000, check=False).fit(X, y)
    assert a.subspace_ is None and a.metric_choice_ == "learned" and a.check_accuracy_ is None
    assert a.components_.shape[1] == 10
    b = MetricLearner(rng=0, T=20_000).fit(X, y)                   # checked (cross-fitted at 150 rows), no subspace
    assert b.subspace_ is None and b.check_accuracy_["how"] == "cross-fitted"
    assert b.components_.shape[1] == 10


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
    np.testing.assert_array_equal(S.nn1_hits(R, cr, Q, cq, block=8), cr[D.argmin(1)] == cq)
    assert S.nn1_accuracy(R, cr, Q, cq, block=8) == pytest.approx(np.mean(cr[D.argmin(1)] == cq))
    assert S.nn1_hits(R, cr, Q[:0], cq[:0]).shape == (0,) and S.nn1_accuracy(R, cr, Q[:0], cq[:0]) == 0.0


@pytest.mark.parametrize("cpus", [2, 3])
def test_nn1_hits_in_threads_are_the_same(cpus, monkeypatch):
    """The check's 1-NN blocks in threads (the threshold lowered to 0 so that this small problem takes that path,
    2 or 3 CPUs): the brute force's hits, tied references' shares included, and those of one thread, dense
    (leave-one-out too) and CSR references."""
    from logt import _threads
    g = np.random.default_rng(5)
    R, Q = g.integers(0, 3, (90, 4)).astype(float), g.integers(0, 3, (37, 4)).astype(float)   # many exact ties
    cr, cq = g.integers(3, size=90), g.integers(3, size=37)
    D = ((Q[:, None, :] - R[None, :, :]) ** 2).sum(-1)
    tied = D == D.min(1, keepdims=True)
    ref = (tied & (cr[None, :] == cq[:, None])).sum(1) / tied.sum(1)
    one = (S.nn1_hits(R, cr, Q, cq, block=4), S.nn1_hits(sp.csr_matrix(R), cr, Q, cq, block=4),
           S.loo_1nn_hits(R, cr, block=4))
    monkeypatch.setattr(_threads, "PARALLEL_MIN_ENTRIES", 0)
    monkeypatch.setattr(_threads, "n_cpus", lambda: cpus)
    assert _threads.block_workers(None, 10, 1, 1) == cpus
    many = (S.nn1_hits(R, cr, Q, cq, block=4), S.nn1_hits(sp.csr_matrix(R), cr, Q, cq, block=4),
            S.loo_1nn_hits(R, cr, block=4))
    np.testing.assert_allclose(many[0], ref, rtol=0, atol=1e-15)
    for a, b in zip(many, one):
        np.testing.assert_array_equal(a, b)
    # n_threads given: that many threads (at most one per block), whatever the CPUs; the same hits
    seen = []
    real = _threads.run_blocks
    monkeypatch.setattr(_threads, "run_blocks", lambda fn, tasks, workers: (seen.append(workers),
                                                                            real(fn, tasks, workers)))
    for t in (1, 2):
        got = (S.nn1_hits(R, cr, Q, cq, block=4, n_threads=t), S.loo_1nn_hits(R, cr, block=4, n_threads=t))
        assert seen[-2:] == [t, t]
        np.testing.assert_array_equal(got[0], one[0])
        np.testing.assert_array_equal(got[1], one[2])
    assert S.nn1_accuracy(R, cr, Q, cq, n_threads=1) == pytest.approx(float(np.mean(one[0])))
    for bad in (0, 1.5, True, "2"):
        with pytest.raises(ValueError, match="n_threads"):
            S.nn1_hits(R, cr, Q, cq, n_threads=bad)
        with pytest.raises(ValueError, match="n_threads"):
            S.loo_1nn_accuracy(R, cr, n_threads=bad)


def test_nn1_hits_overwrite_centres_only_when_allowed():
    """overwrite=True (the checks' fresh row copies): the same hits, the copies centred in place; the default
    leaves the caller's arrays alone (as do non-float64 inputs, which are copied anyway)."""
    g = np.random.default_rng(6)
    R, Q = 3.0 + g.standard_normal((80, 5)), 3.0 + g.standard_normal((30, 5))
    cr, cq = g.integers(3, size=80), g.integers(3, size=30)
    R0, Q0 = R.copy(), Q.copy()
    want = S.nn1_hits(R, cr, Q, cq, block=8)
    np.testing.assert_array_equal(R, R0)
    np.testing.assert_array_equal(Q, Q0)                                     # the default: untouched
    np.testing.assert_array_equal(S.nn1_hits(R, cr, Q, cq, block=8, overwrite=True), want)
    np.testing.assert_allclose(R, R0 - np.median(R0, 0), atol=1e-14)          # centred in place (median)
    np.testing.assert_allclose(Q, Q0 - np.median(R0, 0), atol=1e-14)
    R32 = R0.astype(np.float32)
    S.nn1_hits(R32, cr, Q0, cq, overwrite=True)
    np.testing.assert_array_equal(R32, R0.astype(np.float32))                # float32: copied, not modified


def test_extreme_unit_needs_no_copy():
    """max |x| from the extremes: the same unit as from |X| (values spanning the range and both signs)."""
    from logt.metric_learning.scaling import extreme_unit
    for X in (np.array([[-1e300, 2.0]]), np.array([[3e-300, -1e-301]]), np.array([[-5.0, 4.0]]),
              np.array([[1e250, -1e260]]), np.zeros((2, 2))):
        m = float(np.abs(X).max())
        e = np.frexp(m)[1] if m > 0 else 0
        assert extreme_unit(X) == (np.ldexp(1.0, int(e)) if m > 0 and abs(e) > 500 else 1.0)


def test_nn1_hits_far_from_the_origin():
    # an offset of 1e9 on unit-spread points: ||r||^2 ~ 1e19 and an expanded distance keeps none of the
    # distances' digits; the hits are those of the same points near the origin (exact differences)
    g = np.random.default_rng(5)
    R, Q = g.standard_normal((150, 6)), g.standard_normal((60, 6))
    cr, cq = g.integers(3, size=150), g.integers(3, size=60)
    D = ((Q[:, None, :] - R[None, :, :]) ** 2).sum(-1)
    want = cr[D.argmin(1)] == cq
    off = 1e9 * np.ones(6)
    np.testing.assert_array_equal(S.nn1_hits(R + off, cr, Q + off, cq, block=16), want)
    Dl = ((R[:, None, :] - R[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(Dl, np.inf)
    np.testing.assert_array_equal(S.loo_1nn_hits(R + off, cr), cr[Dl.argmin(1)] == cr)
    # magnitudes whose squares under- or overflow (1e-200, 1e200): the same hits (an exact power-of-two rescale)
    for f in (1e-200, 1e200):
        np.testing.assert_array_equal(S.nn1_hits(f * R, cr, f * Q, cq, block=16), want)
        np.testing.assert_array_equal(S.nn1_hits(sp.csr_matrix(f * R), cr, f * Q, cq), want)   # CSR: not centred
        np.testing.assert_array_equal(S.loo_1nn_hits(f * R, cr), cr[Dl.argmin(1)] == cr)


def test_nn1_blocks_are_bounded_and_do_not_change_the_hits(monkeypatch):
    # the 1-NN pass takes fewer queries a block when a block would hold more than NN1_MAX_ENTRIES distances
    # (300,000 references: 3 GB with 512 queries a block); the hits are the same
    g = np.random.default_rng(7)
    R, Q = g.standard_normal((300, 4)), g.standard_normal((90, 4))
    R[:40] = R[0]                                                   # ties too
    cr, cq = g.integers(3, size=300), g.integers(3, size=90)
    want = S.nn1_hits(R, cr, Q, cq), S.loo_1nn_hits(R, cr), S.nn1_hits(sp.csr_matrix(R), cr, Q, cq)
    monkeypatch.setattr(S, "NN1_MAX_ENTRIES", 700)                  # 2 queries a block
    got = S.nn1_hits(R, cr, Q, cq), S.loo_1nn_hits(R, cr), S.nn1_hits(sp.csr_matrix(R), cr, Q, cq)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)
    monkeypatch.undo()
    # the bound itself: 200,000 references, 600 queries; 512 queries a block would take 0.8 GB a distance array.
    # Two CPUs: two blocks in flight (logt._threads.run_blocks)
    import tracemalloc
    from logt import _threads
    monkeypatch.setattr(_threads, "n_cpus", lambda: 2)
    R, Q = g.standard_normal((200_000, 2)), g.standard_normal((600, 2))
    cr, cq = g.integers(3, size=200_000), g.integers(3, size=600)
    tracemalloc.start()
    try:
        S.nn1_hits(R, cr, Q, cq)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * 10 * 8 * S.NN1_MAX_ENTRIES        # a few arrays of two blocks (335 MB); unbounded: > 800 MB


def test_a_collapsed_metric_does_not_win_on_the_rows_order():
    # labels unrelated to the features, the rows sorted by class (class 0 first, then 50 singleton classes): a
    # metric that maps every point to one place ties every reference; "the lowest index" then found a class-0
    # row for every class-0 query (hit 0.5 in all, the Euclidean 1-NN about 0.25): the check's shares give the
    # collapsed metric its expected hit, the share of class 0 among the other rows
    g = np.random.default_rng(0)
    X, y = g.standard_normal((100, 5)), np.r_[np.zeros(50, int), np.arange(1, 51)]
    h = S.loo_1nn_hits(np.zeros((100, 1)), y)
    np.testing.assert_allclose(h[:50], 49 / 99)
    np.testing.assert_array_equal(h[50:], 0.0)
    m = MetricLearner(rng=0, T=20_000).fit(X, y)
    assert m.metric_choice_ == "euclidean"


@pytest.mark.parametrize("m", [2, 3, 7, 28, 52, 100, 523, 2000])
def test_one_row_won_and_none_lost_is_exactly_one_standard_error_not_ahead(m):
    """Mean 1/m, standard error sqrt((1 - 1/m) / (m - 1)) / sqrt(m) = 1/m: a tie with one standard error, which
    the rounding of the two sides used to decide (on 52 rows it said ahead)."""
    plain = np.zeros(m)
    one = plain.copy()
    one[m // 2] = 1.0
    diff = one - plain
    assert diff.mean() == pytest.approx(diff.std(ddof=1) / np.sqrt(m), rel=1e-12)      # the tie, to rounding
    assert not S.ahead_by_se(one, plain) and not S.ahead_by_se(one.astype(bool), plain.astype(bool))
    two = one.copy()
    two[0 if m // 2 else 1] = 1.0
    assert S.ahead_by_se(two, plain)         # k > 1 rows won, none lost: k/m > sqrt(k (1 - k/m) / (m - 1)) / sqrt(m)
    assert S.ahead_by_se(one, plain, z=0.999) and not S.ahead_by_se(one, plain, z=1.001)
    assert S.choose_candidate({"learned": plain, "subspace": plain, "euclidean": plain, "principal_units": one}) \
        == "euclidean"


def test_choose_candidate_keeps_the_plainest_unless_another_is_ahead_by_one_standard_error():
    m = 400
    base = np.zeros(m, dtype=bool)
    base[:200] = True                                                   # 0.5
    ahead = base.copy()
    # the learned metric gains 10 rows and loses 2 (paired difference +8 / 400, se ~ sqrt(12) / 400)
    ahead[200:210] = True
    ahead[:2] = False
    assert S.choose_candidate({"learned": ahead, "subspace": base, "euclidean": base}) == "learned"
    slight = base.copy()
    slight[200:203] = True                                              # +3 and -2: within one se
    slight[:2] = False
    assert S.choose_candidate({"learned": slight, "subspace": base, "euclidean": base}) == "euclidean"
    assert S.choose_candidate({"learned": slight, "subspace": base}) == "subspace"      # no Euclidean: the subspace
    assert S.choose_candidate({"learned": slight, "subspace": base, "euclidean": base}, z=0.0) == "learned"
    # ties in accuracy go to the earlier candidate; equal hit vectors are never "ahead"
    assert S.choose_candidate({"learned": base, "subspace": base, "euclidean": base}) == "euclidean"
    assert S.choose_candidate({"learned": ahead, "subspace": ahead, "euclidean": base}) == "learned"
    assert S.choose_candidate({"learned": base, "subspace": ahead, "euclidean": base}) == "subspace"
    assert S.choose_candidate({"learned": base, "subspace": base, "euclidean": ahead}) == "euclidean"
    # one checked row: ahead means one more hit
    one, zero = np.ones(1, dtype=bool), np.zeros(1, dtype=bool)
    assert S.choose_candidate({"learned": one, "subspace": zero}) == "learned"
    assert S.choose_candidate({"learned": zero, "subspace": zero}) == "subspace"
    g = np.random.default_rng(0)
    for _ in range(200):
        p = g.uniform(0.2, 0.9, size=3)
        h = {c: g.random(60) < q for c, q in zip(("learned", "subspace", "euclidean"), p)}
        if g.random() < 0.3:
            del h["euclidean"]
        z = float(g.choice([0.0, 0.5, 1.0, 2.0]))
        assert S.choose_candidate(h, z=z) == paired_reference(h, z)


# (seed, class_sep, heavy-tailed, the check's choice): 500 x 300, 4 informative directions, 3 classes; the
# seven reach four of the five choices ("standardized": the learned metric on the subspace with the
# standardized class-mean directions); class_sep None: _classes(120, 400, seed, n_const=100) (d > n, 3
# informative features), where the metric learned on the principal directions alone is kept ("principal");
# "multimodal": highdim_data.multimodal(300, 200) (3 classes of 3 clusters whose means coincide), where those
# directions' metric learned in the data's units is kept ("principal_units")
CHECK_PROBLEMS = [(0, 0.8, False, "euclidean"), (1, 0.8, False, "standardized"), (1, 2.5, False, "learned"),
                  (1, 2.5, True, "standardized"), (2, 1.5, True, "euclidean"), (2, 2.5, False, "learned"),
                  (5, 0.8, True, "subspace"), (4, None, False, "principal"),
                  (3, "multimodal", False, "principal_units")]


def _check_against_scikit_learn(seed, sep, heavy, monkeypatch):
    """Fit the default on one of ``CHECK_PROBLEMS``; assert the check's numbers and choice against
    scikit-learn's 1-NN and the rule written out; return the choice."""
    from sklearn.neighbors import KNeighborsClassifier
    from logt._rng import check_rng
    from logt.experiments.highdim_data import dense_classification, multimodal
    if sep is None:
        X, y = _classes(120, 400, seed, n_const=100)
    elif sep == "multimodal":
        X, y = multimodal(300, 200, rng=seed)
    else:
        X, y = dense_classification(500, 300, n_informative=4, n_classes=3, class_sep=sep, heavy_tailed=heavy,
                                    rng=seed)
    # (Z's shape, components_ on the subspace coordinates, the scaling used) of each fit
    fits = []
    inner = MetricLearner._fit_metric

    def recording(self, Z, codes, gen, **kw):
        inner(self, Z, codes, gen, **kw)
        fits.append((Z.shape, self.components_.copy(), self._scaling_mode()))
    monkeypatch.setattr(MetricLearner, "_fit_metric", recording)
    ml = MetricLearner(rng=seed, T=20_000).fit(X, y)
    c = ml.check_accuracy_
    assert c["how"] == "held-out"
    ref = MetricLearner(rng=seed)
    _, active, fr = ref._subspace_fit(X, check_rng(seed), y.astype(np.intp))
    std = ref._standardized_rows                  # the standardized class-mean directions, (m, d)
    kp = ref._n_principal                         # the principal directions among subspace_'s rows

    def held_out_hits(Z):
        return KNeighborsClassifier(1).fit(Z[fr], y[fr]).predict(Z[~fr]) == y[~fr]
    k = ref.subspace_.shape[0]
    Zs = (X - ref.subspace_mean_) @ ref.subspace_.T
    # the fits: the learned metric on the fit rows, the standardized candidate on the fit rows (on Zs and the
    # standardized coordinates), then the kept learned metric again on all rows
    assert fits[0][0] == (fr.sum(), k)
    hits = {"learned": held_out_hits(Zs @ fits[0][1].T), "subspace": held_out_hits(Zs),
            "euclidean": held_out_hits(X)}
    n_checked = 1                                 # the fits of the check
    # the further candidates, each fitted only when the choice so far misses a checked row
    if std.shape[0] and not hits[paired_reference(hits, S.CHECK_Z)].all():
        assert fits[n_checked][0] == (fr.sum(), k + std.shape[0])
        Z2 = np.hstack([Zs, (X - ref.subspace_mean_) @ std.T])
        hits["standardized"] = held_out_hits(Z2 @ fits[n_checked][1].T)
        n_checked += 1
    if kp < k and not hits[paired_reference(hits, S.CHECK_Z)].all():
        assert fits[n_checked][0] == (fr.sum(), kp) and fits[n_checked][2] == "auto"      # standardized
        hits["principal"] = held_out_hits(Zs[:, :kp] @ fits[n_checked][1].T)
        n_checked += 1
        # then the same coordinates in the data's units (one common factor), when the choice still misses a row
        if not hits[paired_reference(hits, S.CHECK_Z)].all():
            assert fits[n_checked][0] == (fr.sum(), kp) and fits[n_checked][2] == "max_norm"
            hits["principal_units"] = held_out_hits(Zs[:, :kp] @ fits[n_checked][1].T)
            n_checked += 1
    assert set(c) == set(hits) | {"how", "n_rows"} | ({"directions"} if n_checked > 1 else set())
    assert c["n_rows"] == (~fr).sum()
    for name, h in hits.items():
        assert c[name] == pytest.approx(h.mean())
    choice = paired_reference(hits, S.CHECK_Z)
    assert ml.metric_choice_ == ("learned" if choice in S.FURTHER_CANDIDATES else choice)
    if choice == "euclidean":
        np.testing.assert_array_equal(ml.components_, np.eye(X.shape[1])[active])
        np.testing.assert_allclose(ml.transform(X[:20]), X[:20, active], atol=0)
    elif choice in ("learned",) + S.FURTHER_CANDIDATES:
        # checked: the metric fitted on the fit rows; kept: the same learned again on all rows
        assert len(fits) == n_checked + 1 and fits[-1][0][0] == len(X)
        np.testing.assert_allclose(ml.components_, fits[-1][1] @ ml.subspace_, rtol=1e-12, atol=1e-12)
        if choice == "standardized":
            np.testing.assert_allclose(ml.subspace_, np.vstack([ref.subspace_, std]), atol=0)
            assert c["directions"] == "principal, class means, standardized class means"
        elif choice in ("principal", "principal_units"):
            np.testing.assert_allclose(ml.subspace_, ref.subspace_[:kp], atol=0)
            assert c["directions"] == {"principal": "principal",
                                       "principal_units": "principal, in the data's units"}[choice]
            # learned again on every row in the candidate's scaling
            assert fits[-1][2] == ("max_norm" if choice == "principal_units" else "auto")
        else:
            np.testing.assert_allclose(ml.subspace_, ref.subspace_, atol=0)
    else:
        np.testing.assert_allclose(ml.components_, ml.subspace_, atol=0)
    if choice not in ("learned",) + S.FURTHER_CANDIDATES:
        assert len(fits) == n_checked              # no refit for a metric that is not kept
    return choice


@pytest.mark.parametrize("seed, sep, heavy, choice", CHECK_PROBLEMS)
def test_check_chooses_by_held_out_1nn_hits_against_scikit_learn(seed, sep, heavy, choice, monkeypatch):
    assert _check_against_scikit_learn(seed, sep, heavy, monkeypatch) == choice


def test_the_check_problems_reach_each_choice():
    assert {p[-1] for p in CHECK_PROBLEMS} == {"euclidean", "learned", "subspace", *S.FURTHER_CANDIDATES}


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


def test_fold_split_is_stratified_and_seeded():
    codes = np.repeat(np.arange(4), [13, 6, 1, 2])
    folds = S.fold_split(codes, np.random.default_rng(0))
    assert folds.shape == codes.shape and set(np.unique(folds)) <= set(range(S.CROSSFIT_FOLDS))
    for c in range(4):                                   # each class spread evenly over the folds
        per_fold = np.bincount(folds[codes == c], minlength=S.CROSSFIT_FOLDS)
        assert per_fold.max() - per_fold.min() <= 1
    np.testing.assert_array_equal(folds, S.fold_split(codes, np.random.default_rng(0)))
    singles = {int(S.fold_split(np.array([0, 0, 1]), np.random.default_rng(s))[2]) for s in range(20)}
    assert len(singles) > 1                              # a one-row class lands in a random fold


def test_crossfit_hits_against_bruteforce():
    g = np.random.default_rng(4)
    A, c = g.standard_normal((70, 3)), g.integers(3, size=70)
    folds = S.fold_split(c, g)
    D = ((A[:, None, :] - A[None, :, :]) ** 2).sum(-1)
    D[folds[:, None] == folds[None, :]] = np.inf          # references: the other folds' rows only
    np.testing.assert_array_equal(S.crossfit_hits(A, c, folds, block=16), c[D.argmin(1)] == c)


def _tiny(n, d, rng, signal):
    g = np.random.default_rng(rng)
    y = g.integers(3, size=n)
    X = g.standard_normal((n, d)) * np.geomspace(0.1, 10.0, d)
    X[:, :3] += signal * np.eye(3)[y]
    return X, y


@pytest.mark.parametrize("seed", [7, 8])
def test_tiny_classes_cross_fit_the_check_against_scikit_learn(seed, monkeypatch):
    """Too few rows to hold 20 out: every row is checked under a subspace (principal directions and class
    means) and a metric fitted without its fold, and the rule is the paired one. The further candidates too,
    fold by fold: the metric learned on the fold's principal directions alone, and on its subspace extended by
    its standardized class-mean directions."""
    from sklearn.decomposition import PCA
    from sklearn.neighbors import KNeighborsClassifier
    X, y = _tiny(60, 300, seed, signal=3.0)
    fits, folds_seen = [], []
    inner_fit, inner_split = MetricLearner._fit_metric, S.fold_split

    def recording(self, Z, codes, gen, **kw):
        inner_fit(self, Z, codes, gen, **kw)
        fits.append((Z.shape, self.components_.copy(), self.T, self._scaling_mode()))

    def split(codes, gen, n_folds=S.CROSSFIT_FOLDS):
        folds_seen.append(inner_split(codes, gen, n_folds))
        return folds_seen[-1]
    monkeypatch.setattr(MetricLearner, "_fit_metric", recording)
    monkeypatch.setattr(S, "fold_split", split)
    ml = MetricLearner(rng=0, T=20_000).fit(X, y)
    c = ml.check_accuracy_
    assert c["how"] == "cross-fitted" and c["n_rows"] == 60 and len(folds_seen) == 1
    assert "standardized" in c and "principal" in c          # the choice so far misses rows: both are fitted
    folds = folds_seen[0]
    n_tr = [int((folds != f).sum()) for f in range(S.CROSSFIT_FOLDS)]
    # the final fit, the check's fold fits, then each fold's principal-only and standardized fits (in that
    # order), and a refit on every row where a further candidate is kept
    assert [f[0][0] for f in fits[:1 + 3 * S.CROSSFIT_FOLDS]] == [60] + n_tr + [n for n in n_tr for _ in (0, 1)]
    # the final fit at the whole budget, every fold fit (the learned candidate's, the further candidates') at a
    # quarter of it
    assert [f[2] for f in fits[:1 + 3 * S.CROSSFIT_FOLDS]] == [20_000] + [5_000] * 12
    assert S.fold_budget(20_000, S.CROSSFIT_BUDGET) == 5_000 and S.fold_budget(6_000, 0.25) == 4_000
    hits = {k: np.zeros(60, dtype=bool) for k in ("learned", "subspace", "euclidean", "principal", "standardized")}
    # then, where the choice so far still misses a row, each fold's principal-only fit in the data's units
    n_units = S.CROSSFIT_FOLDS if "principal_units" in c else 0
    if n_units:
        hits["principal_units"] = np.zeros(60, dtype=bool)
        units = fits[1 + 3 * S.CROSSFIT_FOLDS:1 + 4 * S.CROSSFIT_FOLDS]
        assert [f[3] for f in units] == ["max_norm"] * n_units and [f[2] for f in units] == [5_000] * n_units
    for f in range(S.CROSSFIT_FOLDS):
        te, tr = folds == f, folds != f
        # the fold's subspace from the other folds' rows only: the default's principal directions (their span
        # that of scikit-learn's PCA of those rows), then the class means outside them
        mean, P = S.default_principal(X[tr], None)
        Q = PCA(P.shape[0], svd_solver="full").fit(X[tr]).components_
        np.testing.assert_allclose(np.linalg.svd(P @ Q.T, compute_uv=False), 1.0, atol=1e-8)
        V = np.vstack([P, S.class_mean_directions(X[tr], y[tr], mean, P)])
        V2 = np.vstack([V, S.standardized_mean_directions(X[tr], y[tr], mean, V)])
        Z, Zp, Z2 = (X - mean) @ V.T, (X - mean) @ P.T, (X - mean) @ V2.T
        principal, standardized = fits[1 + S.CROSSFIT_FOLDS + 2 * f], fits[2 + S.CROSSFIT_FOLDS + 2 * f]
        assert principal[0] == (n_tr[f], P.shape[0]) and standardized[0] == (n_tr[f], V2.shape[0])
        assert principal[3] == standardized[3] == "auto"
        checked = [("subspace", Z), ("learned", Z @ fits[1 + f][1].T), ("euclidean", X),
                   ("principal", Zp @ principal[1].T), ("standardized", Z2 @ standardized[1].T)]
        if n_units:
            assert units[f][0] == (n_tr[f], P.shape[0])
            checked.append(("principal_units", Zp @ units[f][1].T))
        for name, A in checked:
            hits[name][te] = KNeighborsClassifier(1).fit(A[tr], y[tr]).predict(A[te]) == y[te]
    for name, h in hits.items():
        assert c[name] == pytest.approx(h.mean()), name
    choice = paired_reference(hits, S.CHECK_Z, S.CROSSFIT_FURTHER_Z)
    kept = {"standardized": "principal, class means, standardized class means", "principal": "principal",
            "principal_units": "principal, in the data's units"}
    assert c["directions"] == kept.get(choice, "principal, class means")
    assert ml.metric_choice_ == ("learned" if choice in kept else choice)
    if choice in kept:             # learned again on every row, on the directions found from every row
        assert len(fits) == 2 + 3 * S.CROSSFIT_FOLDS + n_units and fits[-1][0] == (60, ml.subspace_.shape[0])
        assert fits[-1][3] == ("max_norm" if choice == "principal_units" else "auto")
        np.testing.assert_allclose(ml.components_, fits[-1][1] @ ml.subspace_, rtol=1e-12, atol=1e-12)
    else:
        assert len(fits) == 1 + 3 * S.CROSSFIT_FOLDS + n_units
        if choice == "learned":                    # the kept metric is the one fitted on all rows
            np.testing.assert_allclose(ml.components_, fits[0][1] @ ml.subspace_, rtol=1e-12, atol=1e-12)


def test_tiny_noise_labels_cross_fitted_check_is_not_fooled():
    """Labels independent of the features, 45-70 rows: checked on its own rows (leave-one-out, the rule
    before) the learned metric scored 1.0 and was kept on every seed; cross-fitted it scores near chance
    (1/3), like the plain distances."""
    acc = [MetricLearner(rng=s, T=20_000).fit(*_tiny(45 + 5 * s, 800, 100 + s, signal=0.0)).check_accuracy_
           for s in range(6)]
    assert all(a["how"] == "cross-fitted" for a in acc)
    learned = np.array([a["learned"] for a in acc])
    assert learned.max() < 0.5 and abs(learned.mean() - 1 / 3) < 0.1, learned     # measured: 0.31-0.44, 0.37


@pytest.mark.parametrize("n, d", [(40, 300), (200, 50), (30, 1500)])
def test_default_principal_is_the_auto_rank_of_the_leading_directions(n, d):
    from sklearn.decomposition import PCA
    g = np.random.default_rng(n + d)
    X = g.standard_normal((n, d)) * np.geomspace(0.1, 10.0, d)
    mean, P = S.default_principal(X, np.random.default_rng(0))
    k_fit = max(1, min(S.MAX_AUTO_RANK, n - 1, d))
    pca = PCA(k_fit, svd_solver="full").fit(X)
    k = S.auto_rank(pca.explained_variance_ * (n - 1) / n, float(X.var(0).sum()), n)
    assert P.shape == (k, d) and S.MIN_AUTO_RANK <= k <= min(S.MAX_AUTO_RANK, n - 1)
    np.testing.assert_allclose(mean, X.mean(0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(P @ P.T, np.eye(k), atol=1e-10)
    # the span of the leading k principal directions (scikit-learn's, up to signs)
    np.testing.assert_allclose(np.abs(np.sum(P * pca.components_[:k], axis=1)), 1.0, atol=1e-6)


def _identities_split(n_classes, per_class, seed, noise):
    """identities(...) over 1,500 features, ``per_class`` training and 10 test rows per class."""
    from logt.experiments.highdim_data import identities
    X, y = identities(n_classes, per_class + 10, 1500, nuisance=4.0, separation=1.0, noise=noise, rng=seed)
    test = np.tile(np.arange(per_class + 10) >= per_class, n_classes)
    return X[~test], y[~test], X[test], y[test]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n_classes, per_class, how, directions", [(8, 5, "cross-fitted", "principal, class means"),
                                                                   (16, 8, "held-out", "principal")])
def test_many_classes_of_few_rows_under_a_shared_nuisance(seed, n_classes, per_class, how, directions):
    """Faces-like data (d >> n, a strong nuisance shared by all classes): the metric learned on the principal
    directions separates new rows perfectly where plain distances score near 0.2. Before, the cross-fitted check
    found the principal directions from every row (the checked rows' own noise filled them: the learned metric
    scored near 0 on them) and the held-out check had no candidate without the class-mean directions (mostly
    the noise of 6 rows per class): both kept Euclidean distances."""
    Xtr, ytr, Xte, yte = _identities_split(n_classes, per_class, seed, noise=1.0 if how == "cross-fitted" else 1.5)
    ml = MetricLearner(rng=seed).fit(Xtr, ytr)
    c = ml.check_accuracy_
    # (no "directions" when the choice hit every checked row: no further candidate was fitted)
    assert c["how"] == how and ml.metric_choice_ == "learned"
    assert c.get("directions", "principal, class means") == directions
    if directions == "principal":
        assert c["principal"] > max(c["learned"], c["euclidean"]) and ml.subspace_.shape[0] == ml._n_principal
    else:
        assert ml.subspace_.shape[0] > ml._n_principal          # the class-mean directions kept
    for k in (1, 5):                     # measured: 1.0 against 0.10-0.25
        assert _knn_accuracy(ml.transform(Xtr), ytr, ml.transform(Xte), yte, k) > 0.9
        assert _knn_accuracy(Xtr, ytr, Xte, yte, k) < 0.4
    # the same seed, the same metric bit for bit (the check's fold and candidate fits included)
    again = MetricLearner(rng=np.random.default_rng(seed)).fit(Xtr, ytr)
    np.testing.assert_array_equal(again.components_, ml.components_)
    assert again.check_accuracy_ == c


@pytest.mark.parametrize("seed", [0, 1])
def test_classes_of_two_rows_cross_fitted_keep_the_principal_directions(seed):
    """30 classes of 2 rows under a shared nuisance: too few to hold any out, the check is cross-fitted, and the
    class-mean directions (29 of them, from 60 rows) are the rows' own noise. The metric learned on the principal
    directions alone, a further candidate of the cross-fitted check too, is ahead of every other candidate by
    more than CROSSFIT_FURTHER_Z standard errors and separates new rows (measured: 1-NN 0.94-0.97, 5-NN, with 2
    class-mates among 5 neighbours, 0.62-0.65); before, the cross-fitted check had no such candidate and kept, on
    seed 1, the metric with the class-mean directions (1-NN 0.73, 5-NN 0.53) and, on seed 0, Euclidean distances
    (0.06, 0.05)."""
    Xtr, ytr, Xte, yte = _identities_split(30, 2, seed, noise=1.5)
    ml = MetricLearner(rng=seed).fit(Xtr, ytr)
    c = ml.check_accuracy_
    assert c["how"] == "cross-fitted" and c["n_rows"] == 60 and c["directions"] == "principal"
    assert ml.metric_choice_ == "learned" and ml.subspace_.shape[0] == ml._n_principal
    np.testing.assert_allclose(ml.subspace_ @ ml.subspace_.T, np.eye(ml._n_principal), atol=1e-10)
    assert c["principal"] > 0.5 > max(c[k] for k in ("learned", "subspace", "euclidean", "standardized"))
    for k, least in ((1, 0.9), (5, 0.5)):
        assert _knn_accuracy(ml.transform(Xtr), ytr, ml.transform(Xte), yte, k) > least
        assert _knn_accuracy(Xtr, ytr, Xte, yte, k) < 0.2
    again = MetricLearner(rng=seed).fit(Xtr, ytr)            # the same seed, the same metric bit for bit
    np.testing.assert_array_equal(again.components_, ml.components_)


@pytest.mark.parametrize("seed", [1, 2])
def test_classes_of_two_rows_cross_fitted_keep_the_data_units_candidate(seed):
    """42 classes of 2 rows in 504 raw pixels under 16 nuisance directions: cross-fitted, the check's choice before
    the data-units candidate was plain distances (1-NN 0.42 on new rows, every seed 0-3). The principal directions'
    metric in the data's units, scored fold by fold, is ahead by more than CROSSFIT_FURTHER_Z standard errors, kept and
    learned again on every row in those units (measured, seeds 1-3: 0.87-0.88 on new rows)."""
    from logt.experiments.highdim_data import identities
    X, y = identities(42, 7, 504, n_nuisance=16, n_identity=17, nuisance=1.55, separation=1.09, noise=1.74,
                      pixels=True, rng=535089887)
    test = np.tile(np.arange(7) >= 2, 42)
    Xtr, ytr, Xte, yte = X[~test], y[~test], X[test], y[test]
    ml = MetricLearner(rng=seed).fit(Xtr, ytr)
    c = ml.check_accuracy_
    assert c["how"] == "cross-fitted" and c["n_rows"] == 84 and c["directions"] == "principal, in the data's units"
    assert ml.metric_choice_ == "learned" and ml.subspace_.shape[0] == ml._n_principal
    assert ml._scaling_mode() == "max_norm" and np.all(ml.scale_ == ml.scale_[0])
    assert c["principal_units"] > max(c[k] for k in ("learned", "subspace", "euclidean", "standardized", "principal"))
    assert _knn_accuracy(ml.transform(Xtr), ytr, ml.transform(Xte), yte, 1) > 0.8
    assert _knn_accuracy(Xtr, ytr, Xte, yte, 1) < 0.5
    again = MetricLearner(rng=seed).fit(Xtr, ytr)            # the same seed, the same metric bit for bit
    np.testing.assert_array_equal(again.components_, ml.components_)


def test_cross_fitted_standardized_candidate_skipped_where_its_directions_outnumber_the_principal_ones(monkeypatch):
    """80 classes of 2 rows in 600 features: the standardized class-mean directions from every row (up to 79)
    outnumber the principal ones, and the cross-fitted check does not fit that candidate (its fits' projections
    would be eigendecompositions of that size; 800 classes of 3 rows: 127 s against 49 s without it); the
    principal-only candidate is fitted, kept, and separates new rows."""
    from logt.experiments.highdim_data import identities
    X, y = identities(80, 7, 600, nuisance=4.0, separation=1.0, noise=1.0, rng=3)
    test = np.tile(np.arange(7) >= 2, 80)
    Xtr, ytr, Xte, yte = X[~test], y[~test], X[test], y[test]
    mean, P = S.default_principal(Xtr, None)
    V = np.vstack([P, S.class_mean_directions(Xtr, ytr, mean, P)])
    assert S.standardized_mean_directions(Xtr, ytr, mean, V).shape[0] > P.shape[0]
    widths = []
    inner = MetricLearner._check_fit

    def recording(self, Z, codes, gen, T=None, **kw):
        widths.append(Z.shape[1])
        return inner(self, Z, codes, gen, T, **kw)
    monkeypatch.setattr(MetricLearner, "_check_fit", recording)
    ml = MetricLearner(rng=0).fit(Xtr, ytr)
    c = ml.check_accuracy_
    assert c["how"] == "cross-fitted" and "standardized" not in c and c["directions"] == "principal"
    # the check's fold fits: 4 on each fold's principal and class-mean directions, 4 on its principal ones alone
    assert len(widths) == 2 * S.CROSSFIT_FOLDS and max(widths) <= V.shape[0] + 10       # the standardized: ~80 more
    assert _knn_accuracy(ml.transform(Xtr), ytr, ml.transform(Xte), yte, 1) > 0.9     # measured 1.0
    assert _knn_accuracy(Xtr, ytr, Xte, yte, 1) < 0.2                                  # measured 0.025


@pytest.mark.parametrize("heavy", [False, True])
def test_span_rows_reproduce_euclidean_neighbours_from_new_points(heavy):
    g = np.random.default_rng(5)
    X = g.standard_normal((40, 300)) * np.geomspace(1e-2, 1e2, 300)        # scales over four decades
    if heavy:                                                                # + rows 1e7 times the rest
        X[[3, 17]] *= 1e7                                                    # (singular values over 12 decades)
    X[:, 7] = 3.0                                                            # a constant feature
    X[5] = X[4]                                                              # a repeated row
    active = X.std(axis=0) > 0
    R = S.span_rows(X, active)
    assert R.shape == (39, 300)
    np.testing.assert_allclose(R @ R.T, np.eye(39), atol=1e-12)             # orthonormal
    np.testing.assert_array_equal(R[:, 7], 0.0)
    Dx = X[1:] - X[0]
    np.testing.assert_allclose(Dx @ R.T @ R, Dx, atol=1e-12 * np.abs(X).max())      # spans the differences
    Q = g.standard_normal((200, 300)) * np.geomspace(1e-2, 1e2, 300)
    D = ((Q[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    Dr = (((Q @ R.T)[:, None, :] - (X @ R.T)[None, :, :]) ** 2).sum(-1)
    off = D - Dr                                     # the distance to the span: the same for every row
    np.testing.assert_allclose(off, off[:, :1] * np.ones((1, 40)), rtol=1e-9, atol=1e-9 * D.max())
    light = np.setdiff1d(np.arange(40), [3, 17]) if heavy else np.arange(40)
    np.testing.assert_array_equal(np.argsort(D[:, light], axis=1)[:, :5], np.argsort(Dr[:, light], axis=1)[:, :5])
    assert S.span_rows(X[:1], active).shape == (0, 300)


def test_euclidean_rank_and_rows_forms(monkeypatch):
    assert S.euclidean_rank(100, 300, 400) == 300                             # the identity's rows fit
    monkeypatch.setattr(S, "EUCLIDEAN_MAX_ENTRIES", 50_000)
    assert S.euclidean_rank(100, 300, 400) == 99                              # the span of 100 rows: 99 x 400
    assert S.euclidean_rank(200, 300, 400) == 0                               # 199 x 400 > 50,000: no candidate
    X, y = _classes(100, 400, 3, n_const=100)
    active = X.std(axis=0) > 0
    R = S.euclidean_rows(X, active)
    assert R.shape == (99, 400)
    np.testing.assert_allclose(R @ R.T, np.eye(99), atol=1e-12)
    assert not S.euclidean_candidate(sp.csr_matrix(X), active)                # sparse: never
    monkeypatch.setattr(S, "EUCLIDEAN_MAX_ENTRIES", 300 * 400)
    np.testing.assert_array_equal(S.euclidean_rows(X, active), np.eye(400)[active])


def test_default_keeps_euclidean_distances_on_wide_data_as_the_rows_span(monkeypatch):
    """A chosen Euclidean metric on input too wide for the identity's rows is the span of the training
    rows: k-NN from new points is plain Euclidean k-NN."""
    from sklearn.neighbors import KNeighborsClassifier
    g = np.random.default_rng(11)
    X, Xt = g.standard_normal((200, 600)), g.standard_normal((300, 600))
    y = g.integers(3, size=200)                                            # no class information at all
    monkeypatch.setattr(S, "EUCLIDEAN_MAX_ENTRIES", 200 * 600)              # the identity's 600 rows do not fit
    ml = MetricLearner(rng=0, T=20_000).fit(X, y)
    assert ml.metric_choice_ == "euclidean", ml.check_accuracy_
    assert ml.components_.shape == (199, 600)
    for k in (1, 5):
        ref = KNeighborsClassifier(k).fit(X, y).predict(Xt)
        got = KNeighborsClassifier(k).fit(ml.transform(X), y).predict(ml.transform(Xt))
        np.testing.assert_array_equal(got, ref)


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
    ref = S.class_mean_directions(X[fit_rows], y[fit_rows], mean, V)
    extra = a.subspace_[V.shape[0]:V.shape[0] + ref.shape[0]]          # (then any standardized directions)
    leaky = S.class_mean_directions(X, y, mean, V)
    np.testing.assert_allclose(np.abs(extra @ ref.T), np.eye(ref.shape[0]), atol=1e-8)
    assert abs(float(extra[0] @ leaky[0])) < 1 - 1e-6                  # all rows would give another one


def _standardized_reference(X, codes, mean, basis):
    """standardized_mean_directions written out: per-class loops, the pooled within-class standard deviation
    with ddof = C, its median over the features that vary within the classes, the offsets over (s + s0)^2,
    projected off the basis; returns that matrix (C, d) (its row space is the answer)."""
    C = codes.max() + 1
    resid = np.vstack([X[codes == c] - X[codes == c].mean(0) for c in range(C)])
    sd = np.sqrt((resid ** 2).sum(0) / (len(codes) - C))
    s0 = np.median(sd[sd > 0])
    M = np.array([np.sqrt((codes == c).sum()) * (X[codes == c].mean(0) - mean) for c in range(C)])
    M = M / (sd + s0) ** 2
    return M - (M @ basis.T) @ basis


@pytest.mark.parametrize("sparse", [False, True])
def test_standardized_mean_directions_against_dense_reference(sparse):
    g = np.random.default_rng(5)
    X = g.standard_normal((150, 40)) * np.geomspace(0.01, 100, 40) + 3.0
    X[:, 7] = 2.0                                                          # constant: sd 0, left out of s0
    codes = g.integers(4, size=150)
    mean = X.mean(0)
    basis = np.linalg.qr(g.standard_normal((40, 6)))[0].T
    E = S.standardized_mean_directions(sp.csr_matrix(X) if sparse else X, codes, mean, basis)
    assert E.shape == (3, 40)
    np.testing.assert_allclose(E @ E.T, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(E @ basis.T, 0.0, atol=1e-10)
    M = _standardized_reference(X, codes, mean, basis)
    np.testing.assert_allclose(E.T @ (E @ M.T), M.T, atol=1e-9 * np.abs(M).max())        # the same row space


def _scaled_signal(n, scales, g):
    """Features of random scales (``scales``, (d,)); the first 4 hold the two classes (offset +-0.5 sd each)."""
    y = g.integers(2, size=n)
    Z = g.standard_normal((n, scales.size))
    Z[:, :4] += 0.5 * (2 * y - 1)[:, None]
    return Z * scales, y


def test_standardized_directions_separate_classes_where_raw_class_means_point_at_large_scale_noise():
    # 400 noise features and 4 informative ones, scales over three decades: the raw class-mean direction is
    # mostly the sampling error of the large-scale features; the standardized one separates new rows
    def fisher(X, y, w):
        p = X @ w
        return (p[y == 1].mean() - p[y == 0].mean()) ** 2 / (0.5 * (p[y == 1].var() + p[y == 0].var()))
    for seed in range(3):
        g = np.random.default_rng(seed)
        scales = 10.0 ** g.uniform(-1.5, 1.5, 404)
        scales[:4] = 10.0 ** np.array([-1, -0.5, 0, 0.5])
        X, y = _scaled_signal(600, scales, g)
        Xn, yn = _scaled_signal(4000, scales, g)
        none = np.zeros((0, 404))
        raw = S.class_mean_directions(X, y, X.mean(0), none)[0]
        std = S.standardized_mean_directions(X, y, X.mean(0), none)[0]
        # measured: raw 0.003-0.007, standardized 0.52-0.78 (4: every informative feature's separation)
        assert fisher(Xn, yn, std) > 0.3 and fisher(Xn, yn, std) > 20 * fisher(Xn, yn, raw)


def test_choose_candidate_standardized_needs_to_beat_the_choice():
    m = 400
    base = np.zeros(m, dtype=bool)
    base[:200] = True
    ahead = base.copy()
    ahead[200:210] = True
    ahead[:2] = False                                                   # +8 / 400 over base: beyond one se
    further = ahead.copy()
    further[210:222] = True                                             # +12 over ahead
    hits = {"learned": ahead, "subspace": base, "euclidean": base}
    assert S.choose_candidate({**hits, "standardized": further}) == "standardized"
    assert S.choose_candidate({**hits, "standardized": ahead}) == "learned"          # level with the choice
    # ahead of Euclidean but not of the learned metric the check would keep: the learned metric
    slight = ahead.copy()
    slight[210:213] = True                                              # +3 and -2 over ahead: within one se
    slight[2:4] = False
    assert S.choose_candidate({**hits, "standardized": slight}) == "learned"
    assert S.choose_candidate({"learned": base, "subspace": base, "euclidean": base, "standardized": ahead}) \
        == "standardized"
    g = np.random.default_rng(1)
    for _ in range(300):
        p = g.uniform(0.2, 0.9, size=4)
        h = {c: g.random(60) < q for c, q in zip(("learned", "subspace", "euclidean", "standardized"), p)}
        if g.random() < 0.3:
            del h["euclidean"]
        z = float(g.choice([0.0, 0.5, 1.0, 2.0]))
        assert S.choose_candidate(h, z=z) == paired_reference(h, z)


def _half_hit(m=400):
    """Hits of a candidate on ``m`` checked rows: the first half."""
    return np.arange(m) < m // 2


def test_choose_candidate_principal_needs_to_beat_the_choice_so_far():
    base = _half_hit()
    std = base.copy()
    std[200:212] = True                                                 # +12 / 400 over base: beyond one se
    hits = {"learned": base, "subspace": base, "euclidean": base, "standardized": std}
    near = std.copy()
    near[212:224] = True
    near[:8] = False                                                    # +12 -8 over the kept one: within one se
    assert S.choose_candidate({**hits, "principal": near}) == "standardized"
    far = near.copy()
    far[224:242] = True                                                 # +30 -8 over it: beyond one se
    assert S.choose_candidate({**hits, "principal": far}) == "principal"
    # without a kept standardized candidate the principal one is measured against the check's own choice
    assert S.choose_candidate({**hits, "standardized": base, "principal": near}) == "principal"
    assert S.choose_candidate(dict.fromkeys(("learned", "subspace", "euclidean", "principal"), base)) == "euclidean"
    g = np.random.default_rng(2)
    names = ("learned", "subspace", "euclidean", "standardized", "principal")
    for _ in range(400):
        h = {c: g.random(80) < q for c, q in zip(names, g.uniform(0.2, 0.9, size=5))}
        for c in ("euclidean", "standardized"):
            if g.random() < 0.3:
                del h[c]
        z = float(g.choice([0.0, 0.5, 1.0, 2.0]))
        assert S.choose_candidate(h, z=z) == paired_reference(h, z)


def test_choose_candidate_principal_units_comes_last_and_needs_to_beat_the_choice_so_far():
    base = _half_hit()
    ahead = base.copy()
    ahead[200:230] = True                                               # +30 / 400 over base: beyond one se
    hits = {"learned": base, "subspace": base, "euclidean": base}
    # measured against the choice after "principal": a kept principal-only metric stands unless beaten
    near = ahead.copy()
    near[230:240] = True
    near[:6] = False                                                    # +10 -6 over it: within one se
    assert S.choose_candidate({**hits, "principal": ahead, "principal_units": near}) == "principal"
    far = near.copy()
    far[240:270] = True                                                 # +40 -6 over it: beyond one se
    assert S.choose_candidate({**hits, "principal": ahead, "principal_units": far}) == "principal_units"
    # no other further candidate: against the check's own choice (Euclidean here)
    assert S.choose_candidate({**hits, "principal_units": near}) == "principal_units"
    assert S.choose_candidate({**hits, "principal_units": base}) == "euclidean"      # level: the plainest
    assert S.FURTHER_CANDIDATES[-1] == "principal_units"
    g = np.random.default_rng(3)
    names = ("learned", "subspace", "euclidean", *S.FURTHER_CANDIDATES)
    for _ in range(400):
        h = {c: g.random(80) < q for c, q in zip(names, g.uniform(0.2, 0.9, size=len(names)))}
        for c in ("euclidean", "standardized", "principal", "principal_units"):
            if g.random() < 0.3:
                del h[c]
        z = float(g.choice([0.0, 0.5, 1.0, 2.0]))
        fz = [None, 2.0][int(g.integers(2))]
        assert S.choose_candidate(h, z=z, further_z=fz) == paired_reference(h, z, fz)


def _multimodal_split(seed, n=600, d=600):
    """highdim_data.multimodal (3 classes of 3 clusters whose means coincide, in 4 of ``d`` coordinates): ``n``
    training rows and 1,000 new rows of the same draw."""
    from logt.experiments.highdim_data import multimodal
    X, y = multimodal(n + 1000, d, rng=seed)
    return X[:n], y[:n], X[n:], y[n:]


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_classes_of_clusters_keep_the_principal_directions_in_the_data_units(seed, monkeypatch):
    """Classes made of several clusters whose means coincide: the class-mean directions are noise, and
    standardized principal coordinates weigh the few leading directions that carry the clusters as much as the
    noise ones. The principal directions' metric learned in the data's units (the third further candidate) is
    kept, learned again on every row in those units, and separates new rows far better than the metric the
    check kept without it (measured on seeds 0-7, 1-NN: kept on all 8, 0.67-0.94 against 0.47-0.73 without it,
    ahead by 0.10-0.32; Euclidean 0.40-0.61)."""
    Xtr, ytr, Xte, yte = _multimodal_split(seed)
    ml = MetricLearner(rng=seed).fit(Xtr, ytr)
    c = ml.check_accuracy_
    assert c["how"] == "held-out" and c["directions"] == "principal, in the data's units"
    assert ml.metric_choice_ == "learned" and ml.subspace_.shape[0] == ml._n_principal
    assert ml._scaling_mode() == "max_norm" and ml.scale_.shape == (ml._n_principal,)
    assert np.all(ml.scale_ == ml.scale_[0])                  # one common factor: the data's units
    assert c["principal_units"] > max(c[k] for k in ("learned", "subspace", "euclidean", "principal"))
    acc = _knn_accuracy(ml.transform(Xtr), ytr, ml.transform(Xte), yte, 1)
    monkeypatch.setattr(MetricLearner, "_principal_units_check", lambda self, *a: None)
    before = MetricLearner(rng=seed).fit(Xtr, ytr)            # the check without the candidate
    assert "principal_units" not in before.check_accuracy_
    assert acc > _knn_accuracy(before.transform(Xtr), ytr, before.transform(Xte), yte, 1) + 0.1
    assert acc > _knn_accuracy(Xtr, ytr, Xte, yte, 1) + 0.1
    again = MetricLearner(rng=seed)
    monkeypatch.undo()
    again.fit(Xtr, ytr)                                        # the same seed, the same metric bit for bit
    np.testing.assert_array_equal(again.components_, ml.components_)
    assert again.check_accuracy_ == c
    # a scaling the user chose is kept: no data-units candidate
    for scaling in ("standardize", "max_norm"):
        assert "principal_units" not in MetricLearner(rng=seed, scaling=scaling).fit(Xtr, ytr).check_accuracy_


@pytest.mark.parametrize("unit", [1e295, 1e-300])
def test_the_data_units_candidate_is_kept_whatever_the_unit(unit):
    # the data's units: one common factor, however extreme (a power of two here: the same fit up to rounding; the
    # largest |x| a fit takes is 2^1000, 1.1e301, and these data reach 1e296 at 1e295)
    Xtr, ytr, Xte, yte = _multimodal_split(3)
    factor = 2.0 ** np.round(np.log2(unit))
    ml, scaled = MetricLearner(rng=3).fit(Xtr, ytr), MetricLearner(rng=3).fit(Xtr * factor, ytr)
    assert scaled.check_accuracy_ == ml.check_accuracy_
    assert ml.check_accuracy_["directions"] == "principal, in the data's units"
    assert np.isfinite(scaled.components_).all()
    Z = ml.transform(Xte)
    np.testing.assert_allclose(scaled.transform(Xte * factor), Z, rtol=0, atol=1e-6 * np.abs(Z).max())


@pytest.mark.parametrize("seed, sep, heavy", [(0, 0.8, False), (1, 2.5, True), (4, None, False)])
def test_the_data_units_candidate_leaves_the_default_alone_unless_kept(seed, sep, heavy, monkeypatch):
    # its fit draws from a generator spawned from the principal candidate's: without it the default's fit is the
    # same, bit for bit, where it is scored and not kept
    from logt.experiments.highdim_data import dense_classification
    X, y = (_classes(120, 400, seed, n_const=100) if sep is None else
            dense_classification(500, 300, n_informative=4, n_classes=3, class_sep=sep, heavy_tailed=heavy, rng=seed))
    ml = MetricLearner(rng=seed, T=20_000).fit(X, y)
    assert "principal_units" in ml.check_accuracy_
    assert ml.check_accuracy_["directions"] != "principal, in the data's units"      # these problems: not kept
    monkeypatch.setattr(MetricLearner, "_principal_units_check", lambda self, *a: None)
    plain = MetricLearner(rng=seed, T=20_000).fit(X, y)
    assert "principal_units" not in plain.check_accuracy_
    assert plain.metric_choice_ == ml.metric_choice_
    assert plain.check_accuracy_["directions"] == ml.check_accuracy_["directions"]
    np.testing.assert_array_equal(plain.components_, ml.components_)
    np.testing.assert_array_equal(plain.subspace_, ml.subspace_)


@pytest.mark.parametrize("seed, sep, heavy", [(0, 0.8, False), (1, 2.5, False), (5, 0.8, True)])
def test_the_standardized_candidate_leaves_the_default_alone_unless_kept(seed, sep, heavy, monkeypatch):
    # its fit draws from a spawned generator: without the candidate the default's fit is the same, bit for bit
    from logt.experiments.highdim_data import dense_classification
    X, y = dense_classification(500, 300, n_informative=4, n_classes=3, class_sep=sep, heavy_tailed=heavy, rng=seed)
    ml = MetricLearner(rng=seed, T=20_000).fit(X, y)
    assert "standardized" in ml.check_accuracy_
    assert ml.check_accuracy_["directions"] == "principal, class means"             # these problems: not kept
    monkeypatch.setattr(S, "standardized_mean_directions",
                        lambda X, codes, mean, basis, rtol=1e-8, rows=None: np.zeros((0, basis.shape[1])))
    plain = MetricLearner(rng=seed, T=20_000).fit(X, y)
    assert "standardized" not in plain.check_accuracy_ and plain.metric_choice_ == ml.metric_choice_
    np.testing.assert_array_equal(plain.components_, ml.components_)
    np.testing.assert_array_equal(plain.subspace_, ml.subspace_)


def test_check_false_has_no_standardized_directions():
    X, y = _low_variance_signal(600, 2)
    ml = MetricLearner(rng=0, T=20_000, check=False).fit(X, y)
    mean, V, var, total = S.principal_subspace(X, S.MAX_AUTO_RANK, None)
    k = S.auto_rank(var, total, X.shape[0])
    assert ml.subspace_.shape[0] == k + S.class_mean_directions(X, y, mean, V[:k]).shape[0]
    assert ml.check_accuracy_ is None


@pytest.mark.parametrize("constant", [False, True])
def test_pick_rows_takes_rows_and_varying_columns_at_once(constant):
    """The check's Euclidean candidate takes its rows at the varying features in one copy: the same array as
    the varying features first, then the rows (mask or indices)."""
    from logt.metric_learning._base import _active_columns, varying_features
    g = np.random.default_rng(8)
    X = g.standard_normal((50, 12))
    if constant:
        X[:, [2, 7]] = 4.0
    active = varying_features(X)
    assert active.sum() == (10 if constant else 12)
    mask = g.random(50) < 0.6
    for rows in (mask, np.flatnonzero(~mask)):
        got = S.pick_rows(X, rows, active)
        np.testing.assert_array_equal(got, _active_columns(X, active)[rows])
        assert not np.shares_memory(got, X)                  # a copy: the check centres it in place


@pytest.mark.parametrize("layout", ["C", "F", "csr"])
def test_class_mean_directions_read_the_rows_by_index(layout):
    """rows=: the fit rows read in place give the directions of the copied rows, bit for bit (the same sums in
    the same order), on C- and Fortran-ordered (the varying features, X[:, mask]) and sparse rows."""
    g = np.random.default_rng(9)
    X = g.standard_normal((300, 3 * S.GRAM_BLOCK // 2)) + np.repeat(g.standard_normal((3, 1)), 100, axis=0)
    codes = np.repeat(np.arange(3), 100)
    rows = g.random(300) < 0.7
    Xin = sp.csr_matrix(X) if layout == "csr" else (np.asfortranarray(X) if layout == "F" else X)
    mean, V = S.default_principal(X, None)
    for fn in (S.class_mean_directions, S.standardized_mean_directions):
        want = fn(Xin[np.flatnonzero(rows)], codes[rows], mean, V)
        np.testing.assert_array_equal(fn(Xin, codes, mean, V, rows=rows), want)
        np.testing.assert_array_equal(fn(Xin, codes, mean, V, rows=np.flatnonzero(rows)), want)
    np.testing.assert_array_equal(S._class_means(Xin, codes)[0], S._class_means(X, codes)[0])   # layouts agree


@pytest.mark.parametrize("learner", ["supervised", "pairs"])
@pytest.mark.parametrize("d, mode", [(300, "max_norm"), (20, "standardize")])
def test_n_components_scaling_keeps_data_units_on_wide_input_only(learner, d, mode):
    # an int n_components: on wide input (where the default too takes a subspace) scaling="auto" is a common
    # factor on the principal coordinates, on few features the per-coordinate standardization as before
    X, y = _classes(200, d, 2)
    X *= np.geomspace(0.1, 10.0, d)                  # features of unequal scales
    assert S.uses_subspace(200, d) == (mode == "max_norm")
    if learner == "supervised":
        fit = lambda **kw: MetricLearner(n_components=8, rng=0, T=20_000, **kw).fit(X, y)
    else:
        i, j = np.arange(0, 200, 2), np.arange(1, 200, 2)
        pairs, yp = np.stack([X[i], X[j]], axis=1), np.where(y[i] == y[j], 1, -1)
        fit = lambda **kw: PairsMetricLearner(n_components=8, rng=0, T=20_000, **kw).fit(pairs, yp)
    auto = fit().components_
    np.testing.assert_array_equal(auto, fit(scaling=mode).components_)
    other = "standardize" if mode == "max_norm" else "max_norm"
    assert not np.allclose(auto, fit(scaling=other).components_)


def test_default_subspace_scaling_is_unchanged():
    # n_components=None: the default's subspace coordinates are standardized as before (its check guards it;
    # data units there were not better on the sweeps: docs/guide/high-dimensional.md)
    X, y = _classes(200, 300, 3)
    auto = MetricLearner(rng=0, T=20_000).fit(X, y)
    assert auto.subspace_ is not None
    np.testing.assert_array_equal(auto.components_, MetricLearner(rng=0, T=20_000, scaling="standardize")
                                  .fit(X, y).components_)


def test_n_components_on_photo_patches_not_standardized_into_noise():
    # natural-image patches: the weakest of 64 principal directions holds ~1e-4 of the strongest's variance.
    # Standardized, every one of the 64 coordinates weighs the same and the learned metric's 1-NN accuracy
    # fell far below plain Euclidean distances; in the data's units it stays near them (measured on 6 seeds:
    # data units 0.02-0.10 ahead of standardized, each seed)
    pytest.importorskip("sklearn")
    pytest.importorskip("PIL", reason="reading scikit-learn's sample photographs needs Pillow")
    from logt.experiments.highdim_data import photo_patches
    gains = []
    for seed in (0, 1):
        X, y = photo_patches(1500, size=18, grid=3, gain=0.0, rng=seed)
        tr = np.random.default_rng(seed).random(len(y)) < 0.7
        acc = {}
        for mode in ("auto", "standardize"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # check=False: the learned metrics themselves (checked, both may fall back to PCA to 64)
                ml = MetricLearner(n_components=64, scaling=mode, rng=0, check=False).fit(X[tr], y[tr])
            A, B = ml.transform(X[tr]), ml.transform(X[~tr])            # brute-force 1-NN of the test rows
            D = (B ** 2).sum(1)[:, None] + (A ** 2).sum(1)[None, :] - 2.0 * B @ A.T
            acc[mode] = float(np.mean(y[tr][D.argmin(1)] == y[~tr]))
        gains.append(acc["auto"] - acc["standardize"])
    assert np.mean(gains) > 0.03, gains


@pytest.mark.parametrize("d, gram", [(40, None), (400, True), (400, False),          # covariance or Gram
                                     (S.EXACT_MAX_FEATURES + 200, True),               # Gram,
                                     (S.EXACT_MAX_FEATURES + 200, False)])             # range finder
@pytest.mark.parametrize("sparse", [False, True])
def test_principal_subspace_weights_are_repeated_rows(d, gram, sparse, monkeypatch):
    """``weights``: distinct rows, each standing for that many equal rows (the pairs' recurring points), give the
    repeated rows' mean, directions, variances and total variance on every route (their covariance is the same;
    on the range finder too: its bases span the same subspaces, so only rounding differs)."""
    if gram is not None:
        monkeypatch.setattr(S, "gram_is_cheaper", lambda *args: gram)
    X = _low_rank_data(120, d, 30, 3)
    w = np.random.default_rng(4).integers(1, 6, size=120)
    Xrep = np.repeat(X, w, axis=0)
    f = sp.csr_matrix if sparse else np.asarray
    mean, V, var, total = S.principal_subspace(f(Xrep), 8, np.random.default_rng(0))
    mean_w, V_w, var_w, total_w = S.principal_subspace(f(X), 8, np.random.default_rng(0), weights=w)
    np.testing.assert_allclose(mean_w, mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(V_w, V, atol=1e-9)                       # signs fixed: the same rows
    np.testing.assert_allclose(var_w, var, rtol=1e-10)
    assert total_w == pytest.approx(total, rel=1e-12)
    Vr, vr, _ = _reference(Xrep, 8)                                      # and the repeated rows' SVD
    np.testing.assert_allclose(np.abs(np.sum(V_w * Vr, axis=1)), 1.0, atol=1e-8)
    m_w, B_w = S.default_principal(f(X), np.random.default_rng(0), weights=w)
    m_r, B_r = S.default_principal(f(Xrep), np.random.default_rng(0))
    assert B_w.shape == B_r.shape                 # auto_rank counts the repeated rows
    np.testing.assert_allclose(B_w, B_r, atol=1e-9)
    with pytest.raises(ValueError, match="weights"):
        S.principal_subspace(X, 8, np.random.default_rng(0), weights=np.zeros(120))


def test_default_check_near_chance_is_warned_with_the_log1p_remedy():
    """The default's check on wide input warns when no candidate (the learned metric, the subspace's and the
    raw features' Euclidean metrics, the standardized and principal candidates) hits the checked rows above a
    random neighbour by two standard errors: labels independent of the features; gene-expression counts, whose
    classes sit in a few genes under highly expressed ones (found after numpy.log1p, which the warning names)."""
    import re

    from logt.experiments.highdim_data import expression
    g = np.random.default_rng(3)
    X, y = g.standard_normal((600, 400)) * 10.0 ** g.uniform(-3, 3, 400), g.integers(4, size=600)
    with pytest.warns(UserWarning, match="no candidate is above chance by more than two standard errors") as rec:
        ml = MetricLearner(rng=0).fit(X, y)
    (w,) = [w for w in rec if "above chance" in str(w.message)]
    text = str(w.message)
    assert w.filename == __file__                                      # at the line that called fit
    assert text.startswith("MetricLearner: on the ") and "plain Euclidean distances" in text
    kept = {"learned": "the learned metric", "subspace": "the subspace's Euclidean metric",
            "euclidean": "plain Euclidean distances"}[ml.metric_choice_]
    assert f"It keeps {kept} (metric_choice_)" in text and "numpy.log1p(X)" in text
    m, acc = ml.check_accuracy_["n_rows"], ml.check_accuracy_
    chance = float(re.search(r"a random neighbour (\d\.\d+)", text).group(1))
    assert f"two standard errors {2 * np.sqrt(chance * (1 - chance) / m):.3f}" in text
    assert max(v for v in acc.values() if isinstance(v, float)) <= chance + 2 * np.sqrt(chance * (1 - chance) / m)
    # counts: warned; their log1p: the classes found, no warning
    X, y = expression(300, 3000, n_classes=4, n_informative=10, shift=1.0, counts=True, rng=5)
    with pytest.warns(UserWarning, match="numpy.log1p"):
        MetricLearner(rng=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        ml = MetricLearner(rng=0).fit(np.log1p(X), y)
    best = max(v for v in ml.check_accuracy_.values() if isinstance(v, float))
    assert ml.metric_choice_ == "learned" and best > 0.5                   # chance 0.25; measured 0.667


def test_cross_fitted_near_chance_warning_counts_a_further_candidate_only_when_kept():
    """Labels independent of 2,790 features, 77 rows (``learners_highdim.tiny_problem`` 6 of seed 99): the
    cross-fitted check's standardized candidate scores above a random neighbour by more than two standard
    errors on its rows, by luck (the best of five candidates), and is not kept (not ahead of the choice by
    CROSSFIT_FURTHER_Z standard errors): the fit keeps a metric at chance, and the warning says so, without it."""
    from logt.bench.learners_highdim import tiny_problem
    g = np.random.default_rng(99)
    for i in range(7):
        desc, X, y, _, _ = tiny_problem(i, g)
    assert desc.startswith("noise n=77")
    with pytest.warns(UserWarning, match="no candidate is above chance") as rec:
        ml = MetricLearner(rng=1).fit(X, y)
    c = ml.check_accuracy_
    codes = np.unique(y, return_inverse=True)[1]
    every = np.ones(y.size, dtype=bool)
    chance = S.chance_hits(codes, every, every)
    limit = chance + S.chance_margin(chance, y.size)
    assert c["how"] == "cross-fitted" and c["directions"] == "principal, class means"
    assert c["standardized"] > limit                                   # measured 0.468 against 0.447
    assert max(c[k] for k in ("learned", "subspace", "euclidean", "principal")) <= limit
    (w,) = [w for w in rec if "above chance" in str(w.message)]
    assert "standardized class means" not in str(w.message) and w.filename == __file__


def test_default_check_above_chance_does_not_warn():
    from logt.experiments.highdim_data import shifted_digits
    X, y = shifted_digits(500, canvas=24, size=14, max_shift=2, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        ml = MetricLearner(rng=0).fit(X, y)
    assert ml.subspace_ is not None and ml.check_accuracy_["how"] == "held-out"
