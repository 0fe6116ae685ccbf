"""``impostor_radius``: the "neighbors" sampler's dissimilar pairs restricted to LMNN's impostors.

Against brute-force references: the restricted tables equal a per-row NumPy filter of the
pairwise distances (dense and sparse input); the sampler never draws a dissimilar pair from a
point whose list is empty and its pair frequencies match the exact distribution
(``reference.pair_distribution``) by a chi-square test; the mean mini-batch gradient is the
exact expected gradient of the restricted distribution (and not of the unrestricted one); with
nothing removed the draws are bit-identical to the unrestricted sampler's. On a problem with one
far class and two touching ones the learned metric weighs the touching classes' axis above the
far class's axis with the restriction, and the other way round without it.
"""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from logt._kernels._pairs import PairSampler
from logt.datasets import normalize_rows
from logt.metric_learning import MetricLearner
from logt.metric_learning.supervised import DEFAULTS
from logt.oracles.neighbors import neighbor_tables, restrict_impostors, table_sq_distances
from logt.metric_learning.reference import objective, pair_distribution
from logt.oracles import MetricLearning
from logt.oracles.neighbors import check_impostor_radius

LAM = 0.1


def _far_class(n=30, seed=0, d=4):
    """Class 0 far out on axis 0; classes 1 and 2 touching, apart along axis 3."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((3 * n, d)) * np.r_[0.5, np.ones(d - 2), 0.5]
    y = np.repeat([0, 1, 2], n)
    X[y == 0, 0] += 6.0
    X[y == 1, 3] += 0.8
    X[y == 2, 3] -= 0.8
    return X, y


def _brute(X, sim, dis, radius):
    Xd = X.toarray() if sp.issparse(X) else X
    D2 = ((Xd[:, None, :] - Xd[None, :, :]) ** 2).sum(-1)
    out = np.full_like(dis, -1)
    for i in range(len(Xd)):
        s = sim[i][sim[i] >= 0]
        d = dis[i][dis[i] >= 0]
        keep = d if len(s) == 0 else d[D2[i, d] <= radius ** 2 * D2[i, s].max()]
        out[i, :len(keep)] = keep
    return out


@pytest.mark.parametrize("sparse_input", [False, True])
@pytest.mark.parametrize("radius", [0.7, 1.0, 1.5, 3.0])
def test_restricted_tables_equal_the_brute_force_filter(sparse_input, radius):
    X, y = _far_class(seed=1)
    y = y.copy()
    y[30] = 3                                           # a class of one point: no same-class neighbour
    Xi = sp.csr_matrix(X) if sparse_input else X
    sim, dis, dsim, ddis = neighbor_tables(Xi, y, 6, block=17, return_distances=True)
    s2, d2 = neighbor_tables(Xi, y, 6)
    np.testing.assert_array_equal(sim, s2)
    np.testing.assert_array_equal(dis, d2)
    # the selection's distances are the tables' squared distances (inf in the padding)
    for T, D in ((sim, dsim), (dis, ddis)):
        ref_d = table_sq_distances(Xi, T)
        assert np.array_equal(np.isinf(D), T < 0)
        np.testing.assert_allclose(D[T >= 0], ref_d[T >= 0], rtol=1e-12, atol=1e-12)
    out = restrict_impostors(sim, dis, dsim, ddis, radius)
    ref = _brute(X, sim, dis, radius)
    np.testing.assert_array_equal(out, ref)
    assert out.dtype == np.int32 and out.shape == dis.shape
    np.testing.assert_array_equal(out[30], dis[30])     # no target neighbour: the whole list is kept
    if radius <= 1.5:                                   # the far class has no impostor
        assert (out[:30] == -1).all()
    if radius >= 1.5:
        assert (out[31:] >= 0).any(axis=1).mean() > 0.5  # the touching classes keep theirs


def test_restriction_keeps_everything_at_inf_and_falls_back_when_nothing_is_left():
    X, y = _far_class(seed=2)
    sim, dis, dsim, ddis = neighbor_tables(X, y, 5, return_distances=True)
    assert restrict_impostors(sim, dis, dsim, ddis, np.inf) is dis
    np.testing.assert_array_equal(restrict_impostors(sim, dis, dsim, ddis, 1e6), dis)
    # two classes far apart: no point has an impostor, so the unrestricted lists stay
    Z = np.r_[np.zeros((10, 2)), np.full((10, 2), 50.0)] + np.random.default_rng(0).random((20, 2))
    c = np.repeat([0, 1], 10)
    s2, d2, ds2, dd2 = neighbor_tables(Z, c, 3, return_distances=True)
    assert restrict_impostors(s2, d2, ds2, dd2, 1.5) is d2
    with pytest.raises(ValueError, match="> 0"):
        restrict_impostors(sim, dis, dsim, ddis, 0.0)


def test_sampler_skips_points_without_impostors_and_matches_the_exact_distribution():
    X, y = _far_class(n=12, seed=3)
    sim, dis = neighbor_tables(X, y, 4)
    dis_r = restrict_impostors(sim, dis, table_sq_distances(X, sim), table_sq_distances(X, dis), 1.5)
    empty = (dis_r < 0).all(1)
    assert empty.any() and not empty.all()
    s = PairSampler.from_labels(y, "neighbors", neighbors=(sim, dis_r))
    N = 400_000
    i, j, yy = s.draw(N, np.random.default_rng(7))
    assert not empty[i[yy < 0]].any()                   # a point without impostors never draws one
    P, _ = pair_distribution(y, "neighbors", (sim, dis_r))
    counts = np.zeros_like(P)
    np.add.at(counts, (i, j), 1)
    m = P > 0
    assert counts[~m].sum() == 0
    assert stats.chisquare(counts[m], N * P[m]).pvalue > 1e-4
    # power: the unrestricted rule (i uniform over all points) is rejected
    Pw, _ = pair_distribution(y, "neighbors", (sim, dis))
    mw = m & (Pw > 0)
    f = counts[mw] / counts[mw].sum() * N
    assert stats.chisquare(f, N * Pw[mw] / Pw[mw].sum()).pvalue < 1e-10


def test_nothing_removed_gives_bit_identical_draws_and_gradients():
    X, y = _far_class(seed=4)
    X = normalize_rows(X) * 0.9
    a = MetricLearning(X, y, LAM, sampling="neighbors", n_neighbors=4, learn_threshold=True, n_threads=1)
    b = MetricLearning(X, y, LAM, sampling="neighbors", n_neighbors=4, learn_threshold=True, n_threads=1,
                       impostor_radius=1e6)
    np.testing.assert_array_equal(a.neighbors[1], b.neighbors[1])
    Z = np.eye(5) * 0.3
    ga = a.mean_grad(Z, 300, np.random.default_rng(1))
    gb = b.mean_grad(Z, 300, np.random.default_rng(1))
    assert np.array_equal(ga, gb)
    assert a.value(Z) == b.value(Z)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_mean_gradient_is_unbiased_for_the_restricted_distribution(kind):
    X, y = _far_class(n=10, seed=5)
    X = normalize_rows(X) * np.random.default_rng(5).uniform(0.4, 1.0, (len(X), 1))
    Xi = sp.csr_matrix(X) if kind == "sparse" else X
    o = MetricLearning(Xi, y, LAM, sampling="neighbors", n_neighbors=3, learn_threshold=True, n_threads=1,
                       impostor_radius=1.5)
    assert o.impostor_radius == 1.5
    sim, dis = o.neighbors
    assert (dis < 0).all(1).any()
    A = np.random.default_rng(6).standard_normal((5, 5))
    Z = (A + A.T) / 2 * 0.8
    Z[-1, -1] = abs(Z[-1, -1])
    rng = np.random.default_rng(8)
    gs = np.array([o.mean_grad(Z, 500, rng) for _ in range(400)])
    mean, se = gs.mean(0), gs.std(0, ddof=1) / np.sqrt(400) + 1e-15

    def exact(tables):
        P, Y = pair_distribution(y, "neighbors", tables)
        W, b = o.split_point(Z)
        _, gW, gb = objective(X, P, Y, W, b, LAM, learn_threshold=True, grad=True)
        g = LAM * Z.copy()
        g[:4, :4] = gW
        g[4, 4] = gb
        return g

    assert (np.abs(mean - exact((sim, dis))) / se).max() < 5.0
    full = neighbor_tables(X, y, 3)
    assert (np.abs(mean - exact(full)) / se).max() > 10.0
    c = pickle.loads(pickle.dumps(o))                   # the restricted tables survive pickling
    np.testing.assert_array_equal(c.neighbors[1], dis)
    assert np.array_equal(c.mean_grad(Z, 200, np.random.default_rng(2)), o.mean_grad(Z, 200, np.random.default_rng(2)))


def test_given_tables_are_restricted_like_computed_ones():
    X, y = _far_class(n=10, seed=6)
    X = normalize_rows(X)
    a = MetricLearning(X, y, LAM, sampling="neighbors", n_neighbors=3, impostor_radius=1.5)
    b = MetricLearning(X, y, LAM, sampling="neighbors", neighbors=neighbor_tables(X, y, 3), impostor_radius=1.5)
    np.testing.assert_array_equal(a.neighbors[1], b.neighbors[1])
    assert (a.neighbors[1] < 0).all(1).any()


def test_sampler_needs_some_other_class_neighbour():
    codes = np.array([0, 0, 1, 1])
    sim = np.array([[1], [0], [3], [2]])
    with pytest.raises(ValueError, match="no point has an other-class neighbour"):
        PairSampler.from_labels(codes, "neighbors", neighbors=(sim, np.full((4, 1), -1)))


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "1.5", True])
def test_impostor_radius_errors(bad):
    with pytest.raises((TypeError, ValueError), match="impostor_radius"):
        check_impostor_radius(bad)
    X, y = _far_class(n=5)
    with pytest.raises((TypeError, ValueError), match="impostor_radius"):
        MetricLearner(impostor_radius=bad).fit(X, y)


def test_default_and_ignored_outside_neighbors():
    assert DEFAULTS["impostor_radius"] == MetricLearner().impostor_radius == 1.5
    assert check_impostor_radius(None) is None and check_impostor_radius(np.inf) == np.inf
    X, y = _far_class(n=8)
    X = normalize_rows(X)
    o = MetricLearning(X, y, LAM, sampling="balanced", impostor_radius=1.5)
    assert o.impostor_radius is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_restriction_turns_the_metric_to_the_hard_classes_axis(seed):
    """One far class and two touching ones: with all other-class neighbours the far class's easy
    pairs dominate (axis 0 weighs most); with the impostors only, the touching classes' axis 3 does."""
    X, y = _far_class(n=60, seed=seed)

    def weights(r):
        m = MetricLearner(rng=seed, impostor_radius=r, check=False, loss="pairs").fit(X, y)
        W = m.get_mahalanobis_matrix() * np.outer(m.scale_, m.scale_)      # in the scaled features
        return W[0, 0], W[3, 3]

    w0, w3 = weights(None)
    assert w3 < 0.8 * w0
    w0, w3 = weights(1.5)
    assert w3 > w0


def test_select_block_distance_outputs_are_checked():
    from logt._kernels._neighbors import select_block
    G = np.zeros((2, 3))
    args = (G, np.zeros(2), np.zeros(3), np.zeros(2, np.int32), np.array([0, 1, 1], np.int32),
            np.array([-1, -1]), np.arange(3), 2, np.empty((2, 2), np.int32), np.empty((2, 2), np.int32))
    with pytest.raises(ValueError, match="both simd and disd"):
        select_block(*args, np.empty((2, 2)))
    with pytest.raises(ValueError, match="disd must be"):
        select_block(*args, np.empty((2, 2)), np.empty((2, 3)))
    with pytest.raises(ValueError, match="simd must be"):
        select_block(*args, np.empty((2, 2), np.float32), np.empty((2, 2)))
    sd, dd = np.empty((2, 2)), np.empty((2, 2))
    select_block(*args, sd, dd)                     # all points at distance 0; row codes 0: one class-mate
    np.testing.assert_array_equal(sd, [[0.0, np.inf], [0.0, np.inf]])
    np.testing.assert_array_equal(dd, [[0.0, 0.0], [0.0, 0.0]])
