"""logt.oracles.softmax.SoftmaxMetricLearning against dense NumPy references of its formulas."""
import math

import numpy as np
import pytest

from logt.oracles import SoftmaxMetricLearning
from logt.oracles.softmax import candidate_lists

try:
    from ._labelled import labelled_rows as _data
except ImportError:
    from _labelled import labelled_rows as _data

LAM = 0.1



def _ref(o, W, anchors):
    """Dense NumPy, anchor by anchor: the mean loss and the mean gradient over ``anchors``."""
    G = np.zeros(o.shape)
    f = 0.0
    for a in anchors:
        c = o.candidates[o.ptr[a]:o.ptr[a + 1]]
        t = o.n_targets_per_anchor[a]
        U = o.X[o.anchors[a]] - o.X[c]
        q = np.einsum("ck,kl,cl->c", U, W, U) / o.unit
        p = np.exp(-q - np.logaddexp.reduce(-q))
        w = -p
        w[:t] += 1.0 / t
        G += (U.T * w) @ U / o.unit
        f += q[:t].mean() + np.logaddexp.reduce(-q)
    return f / len(anchors), G / len(anchors) + o.lam * W


def _relerr(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("path", ["blocks", "points", "auto"])
@pytest.mark.parametrize("d", [1, 5, 17])
def test_gradient_matches_dense_formula(path, d):
    X, y = _data(n=70, d=d)
    o = SoftmaxMetricLearning(X, y, LAM)
    o.point_path = path
    rng = np.random.default_rng(d)
    A = rng.standard_normal((d, d))
    for W in (A @ A.T, 0.5 * (A + A.T)):          # PSD, and symmetric indefinite
        for B in (1, 3, 11, 12, 500):              # below, at and above one block of rows
            a = rng.integers(0, o.n_anchors, B)
            assert _relerr(o._mean_grad_anchors(W, a), _ref(o, W, a)[1]) < 1e-12


def test_blocks_split_between_anchors_without_losing_one():
    """Anchors with many candidates: a block holds few of them, the draw that does not fit starts the next."""
    X, y = _data(n=300, d=4)
    o = SoftmaxMetricLearning(X, y, LAM, n_targets=40, n_impostors=100)
    o.point_path = "blocks"
    assert o.max_candidates == 140                 # 256 rows: one anchor per block
    W = np.eye(4)
    a = np.arange(o.n_anchors)
    assert _relerr(o._mean_grad_anchors(W, a), _ref(o, W, a)[1]) < 1e-12
    drawn = o.mean_grad(W, 7, np.random.default_rng(2))
    assert np.array_equal(drawn, o.mean_grad(W, 7, np.random.default_rng(2)))
    assert not np.array_equal(drawn, o.mean_grad(W, 7, np.random.default_rng(3)))


def test_value_is_the_exact_objective_and_nonnegative():
    X, y = _data()
    o = SoftmaxMetricLearning(X, y, LAM, n_eval_anchors=10**6)
    assert o.n_eval_anchors == o.n_anchors
    W = np.diag(np.linspace(0.0, 3.0, X.shape[1]))
    f, _ = _ref(o, W, np.arange(o.n_anchors))
    assert o.value(W) == pytest.approx(f + 0.5 * LAM * np.sum(W * W), rel=1e-12)
    counts = np.diff(o.ptr)
    assert o.value(np.zeros_like(W)) == pytest.approx(np.log(counts).mean(), rel=1e-12)   # q = 0: log |C_i|
    rng = np.random.default_rng(0)
    for _ in range(10):
        A = rng.standard_normal(W.shape) * 5
        assert o._eval_loss(A @ A.T) >= 0.0        # each term is -log of a probability


def test_value_on_a_fixed_sample_when_the_anchors_are_many():
    X, y = _data(n=120)
    o = SoftmaxMetricLearning(X, y, LAM, n_eval_anchors=50, eval_rng=3)
    assert o.n_eval_anchors == 50 < o.n_anchors
    W = np.eye(X.shape[1])
    o2 = SoftmaxMetricLearning(X, y, LAM, n_eval_anchors=50, eval_rng=3)
    assert o2.value(W) == o.value(W)


def test_gradient_is_the_derivative_of_the_value():
    X, y = _data(n=50, d=4)
    o = SoftmaxMetricLearning(X, y, LAM, n_eval_anchors=10**6)
    rng = np.random.default_rng(4)
    A = rng.standard_normal((4, 4))
    W = A @ A.T
    E = rng.standard_normal((4, 4))
    E = E + E.T
    h = 1e-6
    fd = (o.value(W + h * E) - o.value(W - h * E)) / (2 * h)
    g = o._mean_grad_anchors(W, np.arange(o.n_anchors))
    assert fd == pytest.approx(float(np.sum(g * E)), rel=1e-6)


def test_paths_use_the_same_draws():
    X, y = _data(n=50)
    o = SoftmaxMetricLearning(X, y, LAM)
    W = np.eye(X.shape[1]) * 2.0
    out = {}
    for path in ("blocks", "points"):
        o.point_path = path
        out[path] = o.mean_grad(W, 300, np.random.default_rng(11))
    assert _relerr(out["blocks"], out["points"]) < 1e-12
    with pytest.raises(ValueError, match="point_path"):
        o.point_path = "fast"


def test_a_seed_is_bit_identical_and_the_drawn_gradient_is_unbiased():
    X, y = _data(n=40, d=3)
    o = SoftmaxMetricLearning(X, y, LAM)
    W = np.eye(3) * 2.0
    a = o.mean_grad(W, 40, np.random.default_rng(5))
    b = o.mean_grad(W, 40, np.random.default_rng(5))
    c = o.mean_grad(W, 40, np.random.default_rng(6))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    full = _ref(o, W, np.arange(o.n_anchors))[1]
    rng = np.random.default_rng(0)
    draws = [o.mean_grad(W, 100, rng) for _ in range(300)]
    spread = np.std(draws, axis=0).max()
    assert np.abs(np.mean(draws, axis=0) - full).max() < 6 * spread / math.sqrt(300)


def test_smoothness_bound_holds_on_the_full_gradient():
    X, y = _data(n=50, d=4)
    o = SoftmaxMetricLearning(X, y, LAM)
    a = np.arange(o.n_anchors)
    rng = np.random.default_rng(1)
    for _ in range(20):
        W1, W2 = (rng.standard_normal((4, 4)) * 3 for _ in range(2))
        W1, W2 = W1 + W1.T, W2 + W2.T
        dg = o._mean_grad_anchors(W1, a) - o._mean_grad_anchors(W2, a)
        assert np.linalg.norm(dg) <= o.L * np.linalg.norm(W1 - W2) * (1 + 1e-12)
    assert o.G == pytest.approx(o.grad_bound(o.R))
    # the optimum lies in the ball of radius R: F >= (lam/2)||W||^2 and F(W*) <= F(0)
    assert 0.5 * LAM * o.R ** 2 == pytest.approx(o.value(np.zeros((4, 4))), rel=1e-12)


def test_candidate_lists_against_brute_force():
    X, y = _data(n=45)
    y[:1] = 7                                      # a class of one point: not an anchor
    anchors, ptr, cand, n_t = candidate_lists(X, y, 3, 5)
    D2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    assert 0 not in anchors.tolist() and len(anchors) == len(X) - 1
    for a, i in enumerate(anchors):
        order = np.argsort(D2[i], kind="stable")
        same = [j for j in order if y[j] == y[i] and j != i][:3]
        other = [j for j in order if y[j] != y[i]][:5]
        assert n_t[a] == len(same)
        assert cand[ptr[a]:ptr[a + 1]].tolist() == same + other


def test_candidate_lists_search_a_large_class_whole():
    """A class above neighbor_tables' default cap (2000 rows) on few rows and features: the search is within
    search_cap's budget, so every class is searched whole and the targets are the exact nearest class-mates (the
    default cap would have drawn them from a 2000-row subsample)."""
    rng = np.random.default_rng(3)
    n = 2600
    X = rng.standard_normal((n, 3))
    y = (np.arange(n) >= 2300).astype(int)                 # classes of 2300 and 300 rows
    anchors, ptr, cand, n_t = candidate_lists(X, y, 4, 2)
    assert np.array_equal(anchors, np.arange(n))           # every point is an anchor: row i's lists start at ptr[i]
    sq = (X * X).sum(1)
    for i in rng.choice(n, 40, replace=False):
        D = sq[i] + sq - 2.0 * (X @ X[i])
        same = np.flatnonzero((y == y[i]) & (np.arange(n) != i))
        got = cand[ptr[i]:ptr[i] + 4]
        assert np.allclose(np.sort(D[got]), np.sort(D[same])[:4], rtol=0, atol=1e-9)


def test_candidate_lists_with_targets_per_class():
    """A count per class: each anchor lists its own class's count of nearest class-mates (fewer when the class
    is smaller), then the same impostors as with one count; the oracle takes the counts in np.unique(y) order."""
    X, y = _data(n=60)
    y = np.arange(60) % 3
    per = np.array([1, 4, 2], dtype=np.int32)
    anchors, ptr, cand, n_t = candidate_lists(X, y, per, 5)
    a4, p4, c4, t4 = candidate_lists(X, y, 4, 5)
    assert np.array_equal(anchors, a4) and np.array_equal(n_t, per[y[anchors]])
    for a in range(len(anchors)):
        got, full = cand[ptr[a]:ptr[a + 1]], c4[p4[a]:p4[a + 1]]
        assert got.tolist() == full[:n_t[a]].tolist() + full[t4[a]:].tolist()
    labels = np.array(["c", "a", "b"])[y]                     # classes a, b, c: codes 1, 2, 0 -> counts [4, 2, 1]
    o = SoftmaxMetricLearning(X, labels, LAM, n_targets=[4, 2, 1], n_impostors=5)
    assert np.array_equal(o.n_targets_per_anchor, per[y[o.anchors]])
    W = np.eye(X.shape[1]) * 0.3
    f, G = _ref(o, W, range(o.n_anchors))
    assert o.value(W) == pytest.approx(f + 0.5 * LAM * np.sum(W * W), rel=1e-12)
    assert _relerr(o._mean_grad_anchors(W, np.arange(o.n_anchors)), G) < 1e-12
    for bad, err in (([4, 2], ValueError), ([4, 0, 1], ValueError), ([4, 2, 300], ValueError),
                     ([4.0, 2.0, 1.0], TypeError), ([[4, 2, 1]], TypeError), ([], TypeError)):
        with pytest.raises(err, match="n_targets"):
            SoftmaxMetricLearning(X, labels, LAM, n_targets=bad)


def test_own_parameters_are_checked():
    """The checks of this oracle's own parameters (the data, labels and lam, and the calls, shared with the
    other core: test_metric_core.py)."""
    X, y = _data(n=20, d=3)
    for name in ("n_targets", "n_impostors"):
        with pytest.raises(ValueError, match=name):
            SoftmaxMetricLearning(X, y, **{name: 0})
