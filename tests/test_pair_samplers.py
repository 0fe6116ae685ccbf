"""The compiled pair samplers and the generalized pair gradient against dense NumPy references.

For every sampler: the pair frequencies match the exact distribution
(``logt.metric_learning.reference.pair_distribution``) by a chi-square test,
the same test REJECTS a plausible biased sampler (so it has power), the mean
of many mini-batch gradients matches the exact expected gradient within
statistical error (and not the gradient of a different distribution), the
kernel on given pairs matches the dense formula to rounding (fixed and
learned threshold with and without a threshold scale, sparse and dense, the
pair and the point path, 1 and 2 threads), and draws are bit-reproducible per seed.
"""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from logt._kernels._neighbors import pair_sq_distances
from logt._kernels._pairs import PairSampler
from logt.datasets import normalize_rows
from logt.oracles.neighbors import neighbor_tables
from logt.metric_learning.reference import objective, pair_distribution
from logt.oracles import MetricLearning
from logt.oracles.metric import pair_distance_scale

LAM = 0.1


def _data(n=14, d=5, seed=0, classes=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.7)
    X = normalize_rows(X) * rng.uniform(0.3, 1.0, size=(n, 1))
    y = np.r_[np.arange(classes), rng.integers(0, classes, n - classes)]   # unequal class sizes
    return X, y


def _chi2_pvalue(counts, P):
    """p-value of observed pair counts (n, n) against probabilities P (pairs with P = 0 must be empty)."""
    assert counts[P == 0].sum() == 0
    m = P > 0
    N = counts.sum()
    return stats.chisquare(counts[m], N * P[m]).pvalue


def _counts(i, j, n):
    c = np.zeros((n, n))
    np.add.at(c, (i, j), 1)
    return c


def _biased_balanced(y):
    """A wrong 'balanced' sampler: similar pairs uniform over similar PAIRS (classes weighted by n_c^2)."""
    same = (y[:, None] == y[None, :]) & ~np.eye(len(y), dtype=bool)
    P, _ = pair_distribution(y, "balanced")
    dis = np.where(same | np.eye(len(y), dtype=bool), 0.0, P)
    return dis + 0.5 * same / same.sum()


@pytest.mark.parametrize("mode", ["uniform", "balanced", "neighbors"])
def test_pair_frequencies_match_the_exact_distribution(mode):
    X, y = _data()
    codes = np.unique(y, return_inverse=True)[1]
    nb = neighbor_tables(X, codes, 3) if mode == "neighbors" else None
    s = PairSampler.from_labels(codes, mode, neighbors=nb)
    N = 400_000
    i, j, yy = s.draw(N, np.random.default_rng(7))
    P, Y = pair_distribution(y, mode, nb)
    assert np.isclose(P.sum(), 1.0)
    assert np.array_equal(yy, Y[i, j])                              # labels are label equality
    c = _counts(i, j, len(y))
    assert _chi2_pvalue(c, P) > 1e-4
    if mode == "balanced":
        # the test has power: a plausible biased sampler is rejected on the same counts
        assert _chi2_pvalue(c, _biased_balanced(y)) < 1e-12
        assert abs((yy > 0).mean() - 0.5) < 5 * 0.5 / np.sqrt(N)
    if mode == "uniform":
        assert _chi2_pvalue(c, pair_distribution(y, "balanced")[0]) < 1e-12


@pytest.mark.parametrize("balanced", [False, True])
def test_list_sampler_frequencies(balanced):
    rng = np.random.default_rng(3)
    n, P_ = 9, 25
    i = rng.integers(0, n, P_)
    j = rng.integers(0, n, P_)
    y = np.where(rng.random(P_) < 0.2, 1.0, -1.0)
    s = PairSampler.from_pairs(i, j, y, n, balanced)
    N = 300_000
    pi, pj, py = s.draw(N, np.random.default_rng(1))
    # recover which list entry was drawn: the (i, j, y) triples may repeat, so count triples
    prob = np.where(y > 0, 0.5 / (y > 0).sum(), 0.5 / (y < 0).sum()) if balanced else np.full(P_, 1.0 / P_)
    keys = {}
    for p in range(P_):
        keys[(i[p], j[p], y[p])] = keys.get((i[p], j[p], y[p]), 0.0) + prob[p]
    drawn = {}
    for a, b, c in zip(pi.tolist(), pj.tolist(), py.tolist()):
        drawn[(a, b, c)] = drawn.get((a, b, c), 0) + 1
    assert set(drawn) <= set(keys)
    ks = list(keys)
    obs = np.array([drawn.get(k, 0) for k in ks])
    assert stats.chisquare(obs, N * np.array([keys[k] for k in ks])).pvalue > 1e-4


def test_draws_are_bit_reproducible_and_use_the_stream():
    X, y = _data(n=40, classes=4)
    codes = np.unique(y, return_inverse=True)[1]
    for mode in ("uniform", "balanced", "neighbors"):
        nb = neighbor_tables(X, codes, 4) if mode == "neighbors" else None
        s = PairSampler.from_labels(codes, mode, neighbors=nb)
        a = s.draw(5000, np.random.default_rng(11))
        b = s.draw(5000, np.random.default_rng(11))
        c = s.draw(5000, np.random.default_rng(12))
        assert all(np.array_equal(u, v) for u, v in zip(a, b))
        assert not np.array_equal(a[0], c[0])
        # two draws of 2500 continue the same stream as one draw of 5000
        g = np.random.default_rng(11)
        parts = [s.draw(2500, g), s.draw(2500, g)]
        assert np.array_equal(np.concatenate([parts[0][0], parts[1][0]]), a[0])


def _oracle(kind, X, y, **kw):
    return MetricLearning(sp.csr_matrix(X) if kind == "sparse" else X, y, LAM, n_threads=1, **kw)


def _expected_grad(o, X, y, Z, mode):
    P, Y = pair_distribution(y, mode, o.neighbors)
    W, b = o.split_point(Z)
    _, gW, gb = objective(X, P, Y, W, b, LAM, learn_threshold=o.learn_threshold, grad=True)
    g = LAM * Z.copy()
    d = o.n_features
    g[:d, :d] = gW                                 # Z is symmetric in these tests
    if o.learn_threshold:
        g[d, d] = gb
    return g


@pytest.mark.parametrize("kind", ["sparse", "dense"])
@pytest.mark.parametrize("mode,learn", [("uniform", False), ("balanced", True), ("neighbors", True),
                                        ("neighbors", False)])
def test_mean_gradient_is_unbiased(kind, mode, learn):
    """Mean of many mini-batch gradients vs the exact expectation, within statistical error.

    Also checks the test's power: the exact gradient of ANOTHER pair
    distribution is many standard errors away.
    """
    X, y = _data()
    o = _oracle(kind, X, y, sampling=mode, n_neighbors=3, learn_threshold=learn, threshold=0.6)
    ld = o.shape[0]
    A = np.random.default_rng(5).standard_normal((ld, ld))
    Z = (A + A.T) / 2 * 0.8
    Z[-1, -1] = abs(Z[-1, -1])
    rng = np.random.default_rng(99)
    R, B = 400, 500
    gs = np.array([o.mean_grad(Z, B, rng) for _ in range(R)])
    mean = gs.mean(0)
    se = gs.std(0, ddof=1) / np.sqrt(R) + 1e-15
    exact = _expected_grad(o, X, y, Z, mode)
    z = np.abs(mean - exact) / se
    assert z.max() < 5.0, z.max()
    other = "balanced" if mode != "balanced" else "uniform"
    wrong = _expected_grad(o, X, y, Z, other) if mode != "neighbors" else _expected_grad(o, X, y, Z, "balanced")
    assert (np.abs(mean - wrong) / se).max() > 10.0


@pytest.mark.parametrize("kind", ["sparse", "dense"])
@pytest.mark.parametrize("learn,scale", [(False, 1.0), (True, 1.0), (True, 0.37)])
@pytest.mark.parametrize("B", [40, 9000])                    # dense: the pair path and the point path
def test_given_pairs_match_dense_formula(kind, learn, scale, B):
    X, y = _data(n=30, d=7, seed=2)
    o = MetricLearning(sp.csr_matrix(X) if kind == "sparse" else X, y, LAM, learn_threshold=learn,
                       threshold=0.8, n_threads=2, sampling="balanced", threshold_scale=scale)
    rng = np.random.default_rng(4)
    i, j = rng.integers(0, 30, B), rng.integers(0, 30, B)
    yy = np.where(rng.random(B) < 0.5, 1.0, -1.0)          # labels given per pair (pairs API)
    ld = o.shape[0]
    A = rng.standard_normal((ld, ld))
    Z = (A + A.T) / 2
    g1 = o._mean_grad_pairs(Z, i, j, y=yy, n_threads=1)
    g2 = o._mean_grad_pairs(Z, i, j, y=yy, n_threads=2)
    assert np.array_equal(g1, g2)                            # threads never change the bits
    d = 7
    W, b = (Z[:d, :d], scale * Z[d, d]) if learn else (Z, 0.8)     # learned: b = s * Z[d, d]
    assert o.split_point(Z)[1] == pytest.approx(b, rel=1e-15)
    D = X[i] - X[j]
    zz = yy * (b - np.einsum("bk,kl,bl->b", D, W, D))
    c = yy * np.exp(-np.logaddexp(0.0, zz))
    ref = LAM * Z.copy()
    ref[:d, :d] += (D.T * c) @ D / B
    if learn:
        ref[d, d] += -scale * c.mean()
    assert np.abs(g1 - ref).max() <= 1e-12 * np.abs(ref).max()


def test_threshold_scale_auto_is_the_rms_squared_distance_of_the_sampler_pairs():
    """"auto": s = sqrt(mean ||D||^4) over the sampler's pairs (the evaluation pairs), dense = sparse; the
    smoothness bound counts s (||diag(D D^T, -s)||_F^2 <= 16 + s^2); bad values are errors."""
    X, y = _data(n=40, d=6, seed=3)
    for sampling in ("balanced", "neighbors"):
        od = MetricLearning(X, y, LAM, learn_threshold=True, sampling=sampling, n_neighbors=3,
                            threshold_scale="auto", n_eval_pairs=500, eval_rng=2)
        osp = MetricLearning(sp.csr_matrix(X), y, LAM, learn_threshold=True, sampling=sampling, n_neighbors=3,
                             threshold_scale="auto", n_eval_pairs=500, eval_rng=2)
        i, j = od.eval_pairs
        d2 = ((X[i] - X[j]) ** 2).sum(1)
        assert od.threshold_scale == pytest.approx(np.sqrt(np.mean(d2 ** 2)), rel=1e-12)
        assert osp.threshold_scale == pytest.approx(od.threshold_scale, rel=1e-12)
        assert od.L == pytest.approx(LAM + 0.25 * (16 + od.threshold_scale ** 2))
        assert "scale" in repr(od)
        c = pickle.loads(pickle.dumps(od))
        assert c.threshold_scale == od.threshold_scale
        Z = np.eye(7) * 0.3
        assert np.array_equal(c.mean_grad(Z, 64, np.random.default_rng(1)),
                              od.mean_grad(Z, 64, np.random.default_rng(1)))
    # with a separate evaluation set, the scale still comes from the training sampler's pairs
    # (the same draws with evaluation points 10x smaller give the same scale)
    oe = [MetricLearning(X, y, LAM, learn_threshold=True, sampling="balanced", threshold_scale="auto",
                         X_eval=X[:20] * f, y_eval=y[:20], n_eval_pairs=500, eval_rng=2) for f in (1.0, 0.1)]
    assert oe[0].threshold_scale == oe[1].threshold_scale
    assert 0.5 < oe[0].threshold_scale / pair_distance_scale(X, *oe[0].eval_pairs) < 2.0
    # pairs API: from the given pairs
    op = MetricLearning.from_pairs(X, [0, 1, 2, 3], [4, 5, 6, 7], [1, -1, 1, -1], LAM, threshold_scale="auto",
                                   n_eval_pairs=300, eval_rng=0)
    i, j = op.eval_pairs
    d2 = ((X[i] - X[j]) ** 2).sum(1)
    assert op.threshold_scale == pytest.approx(np.sqrt(np.mean(d2 ** 2)), rel=1e-12)
    # all pair distances 0: the scale falls back to 1
    assert pair_distance_scale(np.zeros((3, 2)), [0, 1], [1, 2]) == 1.0
    for bad in (0.0, -1.0, float("nan"), float("inf"), "big", True):
        with pytest.raises(ValueError, match="threshold_scale"):
            MetricLearning(X, y, LAM, learn_threshold=True, threshold_scale=bad)


def test_pair_sq_distances_errors():
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        pair_sq_distances(X, [0, 3], [1, 1])
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        pair_sq_distances(X, [-1], [1])
    with pytest.raises(ValueError, match="same length"):
        pair_sq_distances(X, [0, 1], [1])
    with pytest.raises(ValueError, match="C-contiguous"):
        pair_sq_distances(np.ones((3, 4))[:, ::2], [0], [1])
    with pytest.raises(ValueError, match="C-contiguous"):
        pair_sq_distances(np.ones((3, 2), dtype=np.float32), [0], [1])
    with pytest.raises(ValueError, match="finite"):
        pair_sq_distances(np.array([[1e200], [-1e200]]), [0], [1])


@pytest.mark.parametrize("kind", ["sparse", "dense"])
def test_value_with_threshold_matches_reference(kind):
    X, y = _data(n=25, seed=6)
    for learn in (False, True):
        o = _oracle(kind, X, y, sampling="neighbors", n_neighbors=4, learn_threshold=learn, threshold=0.3,
                    n_eval_pairs=3000, eval_rng=8)
        ld = o.shape[0]
        A = np.random.default_rng(1).standard_normal((ld, ld))
        Z = A @ A.T / ld
        W, b = o.split_point(Z)
        i, j = o.eval_pairs
        D = X[i] - X[j]
        zz = o.eval_labels * (b - np.einsum("bk,kl,bl->b", D, W, D))
        ref = np.logaddexp(0.0, -zz).mean() + 0.5 * LAM * np.sum(Z * Z)
        assert o.value(Z) == pytest.approx(ref, rel=1e-12)
        # evaluation pairs come from the same sampler: similar and dissimilar in about equal numbers
        assert 0.4 < (o.eval_labels > 0).mean() < 0.6


def test_learned_threshold_point_and_bounds():
    X, y = _data()
    o = MetricLearning(X, y, 0.2, learn_threshold=True, sampling="balanced", n_threads=1)
    assert o.shape == (6, 6) and o.L == pytest.approx(0.2 + 4.25)
    assert o.R == pytest.approx(np.sqrt(2 * np.log(2) / 0.2))
    Z = np.zeros((6, 6))
    assert o.value(Z) == pytest.approx(np.log(2))            # every margin is 0 at Z = 0
    o2 = MetricLearning(X, y, 0.2, threshold=2.0, n_threads=1)
    assert o2.value(np.zeros((5, 5))) <= np.log1p(np.exp(2.0)) + 1e-12
    assert o2.R == pytest.approx(np.sqrt(2 * np.log1p(np.e**2) / 0.2))


def test_sampler_input_errors():
    codes = np.array([0, 0, 1, 1])
    with pytest.raises(ValueError, match="two classes"):
        PairSampler.from_labels(np.zeros(4, int), "balanced")
    with pytest.raises(ValueError, match="mode"):
        PairSampler.from_labels(codes, "nearest")
    with pytest.raises(ValueError, match="class with at least 2"):
        PairSampler.from_labels(np.array([0, 1, 2]), "balanced")
    with pytest.raises(ValueError, match="needs neighbors"):
        PairSampler.from_labels(codes, "neighbors")
    bad = (np.array([[1], [0], [3], [2]]), np.array([[2], [3], [0], [1]]))
    with pytest.raises(ValueError, match="another class|same class"):
        PairSampler.from_labels(codes, "neighbors", neighbors=(bad[1], bad[0]))
    with pytest.raises(ValueError, match="own neighbour"):
        PairSampler.from_labels(codes, "neighbors", neighbors=(np.array([[0], [0], [3], [2]]), bad[1]))
    with pytest.raises(ValueError, match="-1 or \\+1"):
        PairSampler.from_pairs([0], [1], [0.5], 2)
    with pytest.raises(ValueError, match="both similar"):
        PairSampler.from_pairs([0, 1], [1, 0], [1.0, 1.0], 2, balanced=True)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        PairSampler.from_pairs([0, 2], [1, 0], [1.0, -1.0], 2)


@pytest.mark.parametrize("sparse_input", [False, True])
def test_neighbor_tables_are_the_nearest_points(sparse_input):
    rng = np.random.default_rng(8)
    X = rng.standard_normal((70, 4)) * (rng.random((70, 4)) < 0.8)
    y = rng.integers(0, 3, 70)
    sim, dis = neighbor_tables(sp.csr_matrix(X) if sparse_input else X, y, 4)
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    for i in range(70):
        same = np.flatnonzero((y == y[i]) & (np.arange(70) != i))
        other = np.flatnonzero(y != y[i])
        ref_s = same[np.lexsort((same, D[i, same]))][:4]
        ref_d = other[np.lexsort((other, D[i, other]))][:4]
        assert np.allclose(D[i, sim[i][sim[i] >= 0]], D[i, ref_s])      # same distances (ties may swap)
        assert np.allclose(D[i, dis[i]], D[i, ref_d])
    # a candidate cap keeps every entry valid and of the right class
    sim2, dis2 = neighbor_tables(X, y, 4, max_candidates=10, rng=1)
    assert (y[sim2[sim2 >= 0]] == np.repeat(y, 4).reshape(70, 4)[sim2 >= 0]).all()
    assert (dis2 >= 0).all() and (y[dis2] != y[:, None]).all()


@pytest.mark.parametrize("sizes, d", [([300, 40], 10), ([20000, 20000], 25), ([30000, 5000, 5000], 25),
                                      ([100000] * 3, 25), ([12000, 3000], 128), ([5] * 7000, 4000)])
def test_search_cap_is_the_largest_within_the_budget(sizes, d):
    """search_cap: every class whole when the exhaustive search fits the budget, else the largest cap >= the floor
    whose search does (brute force over every cap), the floor when none does."""
    from logt.oracles.neighbors import MAX_CANDIDATES, SEARCH_WORK, SELECT_COST, search_cap
    sizes = np.array(sizes)
    n = sizes.sum()

    def work(c):
        return n * np.minimum(sizes, c).sum() * (d + SELECT_COST)

    cap = search_cap(sizes, d)
    if work(sizes.max()) <= SEARCH_WORK:
        assert cap == sizes.max()
        return
    caps = np.arange(MAX_CANDIDATES, sizes.max() + 1)
    works = n * np.minimum(sizes[None, :], caps[:, None]).sum(1) * (d + SELECT_COST)
    fits = caps[works <= SEARCH_WORK]
    assert cap == (fits.max() if fits.size else MAX_CANDIDATES)


def _lex_ref(X, y, k):
    """Brute force: per row the k smallest (distance, index) same-class / other-class points."""
    n = len(y)
    Xd = X.toarray() if sp.issparse(X) else X
    sq = (Xd * Xd).sum(1)
    D = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (Xd @ Xd.T), 0.0)
    sim = np.full((n, k), -1, dtype=np.int32)
    dis = np.full((n, k), -1, dtype=np.int32)
    for i in range(n):
        same = np.flatnonzero((y == y[i]) & (np.arange(n) != i))
        other = np.flatnonzero(y != y[i])
        s = same[np.lexsort((same, D[i, same]))][:k]
        o = other[np.lexsort((other, D[i, other]))][:k]
        sim[i, :len(s)] = s
        dis[i, :len(o)] = o
    return sim, dis


@pytest.mark.parametrize("sparse_input", [False, True])
@pytest.mark.parametrize("k", [1, 3, 12])
def test_compiled_neighbor_tables_equal_the_lexicographic_brute_force(sparse_input, k):
    # 0/1 features: many exactly tied distances; ties must go to the smaller index
    rng = np.random.default_rng(k)
    X = (rng.random((90, 6)) < 0.4).astype(np.float64)
    X[5] = X[6]                                        # duplicate points: distance 0
    y = rng.integers(0, 3, 90)
    y[:4] = 3                                          # a class of 4 points: fewer than k + 1 members
    Xi = sp.csr_matrix(X) if sparse_input else X
    sim, dis = neighbor_tables(Xi, y, k, block=37)     # several blocks
    ref_s, ref_d = _lex_ref(X, y, k)
    np.testing.assert_array_equal(sim, ref_s)
    np.testing.assert_array_equal(dis, ref_d)
    # the NumPy implementation agrees up to the choice among exactly tied distances
    from logt.oracles.neighbors import neighbor_tables_numpy
    s2, d2 = neighbor_tables_numpy(Xi, y, k, block=37)
    Xd = X
    for T1, T2 in ((sim, s2), (dis, d2)):
        assert ((T1 >= 0) == (T2 >= 0)).all()
        for i in range(90):
            a, b = T1[i][T1[i] >= 0], T2[i][T2[i] >= 0]
            np.testing.assert_allclose(((Xd[a] - Xd[i]) ** 2).sum(1), ((Xd[b] - Xd[i]) ** 2).sum(1), atol=1e-12)


@pytest.mark.parametrize("sparse_input", [False, True])
def test_neighbor_search_in_threads_gives_the_same_tables(sparse_input, monkeypatch):
    """Row blocks in 2 or 3 threads (one BLAS thread each): the brute force's tables, exactly, and the same
    distances as on one thread; the same for the class-by-class target tables. The threshold below which one
    thread runs is lowered to 0 so these small problems take the threaded path."""
    from logt import _threads
    from logt.oracles import neighbors as nb
    monkeypatch.setattr(_threads, "PARALLEL_MIN_ENTRIES", 0)
    rng = np.random.default_rng(11)
    X = rng.integers(0, 3, (150, 6)).astype(np.float64)     # exact distances, many tied: the index rule decides
    X[5] = X[6]
    y = rng.integers(0, 4, 150)
    Xi = sp.csr_matrix(X) if sparse_input else X
    ref_s, ref_d = _lex_ref(X, y, 5)
    one = nb.neighbor_tables(Xi, y, 5, block=16, return_distances=True, n_threads=1)
    for t in (2, 3):
        out = nb.neighbor_tables(Xi, y, 5, block=16, return_distances=True, n_threads=t)
        np.testing.assert_array_equal(out[0], ref_s)
        np.testing.assert_array_equal(out[1], ref_d)
        for a, b in zip(out, one):
            np.testing.assert_array_equal(a, b)
    if not sparse_input:
        s1, d1 = nb.target_tables(X, y, 5, block=8, n_threads=1)
        for t in (2, 3):
            s2, d2 = nb.target_tables(X, y, 5, block=8, n_threads=t)
            np.testing.assert_array_equal(s2, ref_s)
            np.testing.assert_array_equal(s2, s1)
            np.testing.assert_array_equal(d2, d1)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="n_threads"):
            nb.neighbor_tables(Xi, y, 5, n_threads=bad)


def test_neighbor_tables_distances_do_not_depend_on_n_threads_under_a_threaded_blas():
    """One search thread computes its products on one BLAS thread too, as several do: a BLAS of two threads
    splits a product over them and may round some entries differently (OpenBLAS does for some candidate
    counts: this case moved distances by an ulp when one thread ran on the caller's two BLAS threads)."""
    from threadpoolctl import threadpool_limits
    from logt.oracles import neighbors as nb
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((4000, 8)), rng.integers(0, 3, 4000)         # 4000 x 1542 candidates: threaded
    with threadpool_limits(2, user_api="blas"):
        one = nb.neighbor_tables(X, y, 10, max_candidates=514, return_distances=True, n_threads=1)
        two = nb.neighbor_tables(X, y, 10, max_candidates=514, return_distances=True, n_threads=2)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_select_block_validates_its_inputs():
    from logt._kernels._neighbors import select_block
    G = np.zeros((2, 3))
    ok = dict(sqr=np.zeros(2), sqc=np.zeros(3), rcode=[0, 1], ccode=[0, 1, 1], rself=[-1, 1],
              cand=[4, 5, 6], k=2)
    sim = np.empty((2, 2), np.int32)
    dis = np.empty((2, 2), np.int32)
    select_block(G, **ok, sim=sim, dis=dis)
    np.testing.assert_array_equal(sim, [[4, -1], [6, -1]])    # row 1 is candidate column 1: skipped
    np.testing.assert_array_equal(dis, [[5, 6], [4, -1]])
    for bad, match in ((dict(k=0), "k must be"), (dict(rself=[-1, 3]), "rself"), (dict(sqc=np.zeros(2)), "sqc"),
                       (dict(cand=[-1, 5, 6]), "cand"), (dict(sqr=[np.nan, 0.0]), "finite")):
        with pytest.raises(ValueError, match=match):
            select_block(G, **{**ok, **bad}, sim=sim, dis=dis)
    with pytest.raises(ValueError, match="G must be finite"):
        select_block(np.array([[0.0, np.inf, 0.0], [0.0, 0.0, 0.0]]), **ok, sim=sim, dis=dis)
    with pytest.raises(ValueError, match="sim must be"):
        select_block(G, **ok, sim=np.empty((2, 2), np.int64), dis=dis)
