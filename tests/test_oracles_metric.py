"""logt.oracles.metric.MetricLearning against dense NumPy references of the paper's formulas."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from logt._kernels._pairs import _sample_pairs
from logt.datasets import load_adult, load_mushrooms, normalize_rows
from logt.oracles.metric import MetricLearning

try:
    from ._data import require_data_dir
except ImportError:
    from _data import require_data_dir

LAM = 0.1


def _data(n=60, d=9, density=0.4, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < density)
    X[3] = 0.0                                   # an all-zero row
    X = normalize_rows(X) * rng.uniform(0.3, 1.0, size=(n, 1))
    y = rng.integers(0, classes, size=n) * 2 - 1
    return X, y


def _sym(d, seed=1, scale=0.5):
    A = np.random.default_rng(seed).standard_normal((d, d)) * scale
    return (A + A.T) / 2


def _ref_grad(X, y, W, i, j, lam=LAM):
    """Dense NumPy: D_B^T diag(c) D_B / B + lam W with c = y sigmoid(-z)."""
    X = X.toarray() if sp.issparse(X) else X
    D = X[i] - X[j]
    yy = np.where(y[i] == y[j], 1.0, -1.0)
    z = yy * (1.0 - np.einsum("bk,kl,bl->b", D, W, D))
    c = yy * np.exp(-np.logaddexp(0.0, z))       # y * sigmoid(-z)
    return (D.T * c) @ D / len(i) + lam * W


def _ref_loss(X, y, W, i, j):
    X = X.toarray() if sp.issparse(X) else X
    D = X[i] - X[j]
    yy = np.where(y[i] == y[j], 1.0, -1.0)
    z = yy * (1.0 - np.einsum("bk,kl,bl->b", D, W, D))
    return np.logaddexp(0.0, -z).mean()


def _relerr(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


# dense data has two paths: per pair ("dense") and through the points ("dense-points",
# Z = X W and the pair Laplacian); "dense-auto" lets the cost model choose
@pytest.fixture(params=["sparse", "dense", "dense-points", "dense-auto"])
def kind(request):
    return request.param


def _oracle(kind, X, y, **kw):
    o = MetricLearning(sp.csr_matrix(X) if kind == "sparse" else X, y, LAM, **kw)
    if kind != "sparse":
        o.point_path = {"dense": "pairs", "dense-points": "points", "dense-auto": "auto"}[kind]
    return o


@pytest.mark.parametrize("B", [1, 7, 20_000])
def test_grad_matches_reference(kind, B):
    X, y = _data()
    o = _oracle(kind, X, y)
    i, j = _sample_pairs(len(y), B, np.random.default_rng(B))
    for W in (_sym(9), np.random.default_rng(2).standard_normal((9, 9))):   # also non-symmetric W
        g = o._mean_grad_pairs(W, i, j)
        assert _relerr(g, _ref_grad(X, y, W, i, j)) < 1e-12


def test_all_pairs_exact_mean(kind):
    # the mean over all n(n-1) ordered pairs: the exact gradient of the population objective
    X, y = _data(n=12, d=5, seed=4)
    o = _oracle(kind, X, y)
    i, j = np.array([(a, b) for a in range(12) for b in range(12) if a != b]).T
    W = _sym(5, seed=3)
    assert _relerr(o._mean_grad_pairs(W, i, j), _ref_grad(X, y, W, i, j)) < 1e-12


def test_single_pair_is_gradient_of_loss():
    # finite differences of l(y (1 - D^T W D)) + lam/2 ||W||^2 along a direction H
    X, y = _data(n=10, d=4, density=1.0, seed=5)
    o = MetricLearning(X, y, LAM)
    W, H = _sym(4, seed=6), _sym(4, seed=7)
    for (i, j) in [(0, 1), (2, 7), (5, 4)]:
        D = X[i] - X[j]
        yy = 1.0 if y[i] == y[j] else -1.0

        def f(V):
            return np.logaddexp(0.0, -yy * (1.0 - D @ V @ D)) + LAM / 2 * np.sum(V * V)
        h = 1e-6
        fd = (f(W + h * H) - f(W - h * H)) / (2 * h)
        g = o._mean_grad_pairs(W, [i], [j])
        assert abs(np.sum(g * H) - fd) < 1e-7 * max(1.0, abs(fd))


def test_mean_grad_uses_the_sampler_bit_identically(kind):
    X, y = _data()
    o = _oracle(kind, X, y)
    W = _sym(9)
    g = o.mean_grad(W, 3000, np.random.default_rng(11))
    i, j = _sample_pairs(len(y), 3000, np.random.default_rng(11))
    np.testing.assert_array_equal(g, o._mean_grad_pairs(W, i, j))
    np.testing.assert_array_equal(g, o.mean_grad(W, 3000, np.random.default_rng(11)))
    assert not np.array_equal(g, o.mean_grad(W, 3000, np.random.default_rng(12)))
    np.testing.assert_array_equal(g, g.T)              # symmetric W -> exactly symmetric output


def test_superblocks_and_rng_stream(kind):
    # B larger than the 65536-pair super-block; the generator advances exactly as the sampler's
    X, y = _data(n=40, d=5, seed=8)
    o = _oracle(kind, X, y)
    W = _sym(5, seed=2)
    rng = np.random.default_rng(21)
    g = o.mean_grad(W, 70_000, rng)
    after = rng.random()
    ref_rng = np.random.default_rng(21)
    i, j = _sample_pairs(40, 70_000, ref_rng)
    assert after == ref_rng.random()
    assert _relerr(g, _ref_grad(X, y, W, i, j)) < 1e-12


def test_threads_do_not_change_the_result():
    X, y = _data(n=300, d=12, seed=9)
    W = _sym(12)
    o1 = _oracle("sparse", X, y, n_threads=1)
    o2 = _oracle("sparse", X, y, n_threads=2)
    for B in (100, 9000, 40_000):
        g1 = o1.mean_grad(W, B, np.random.default_rng(B))
        g2 = o2.mean_grad(W, B, np.random.default_rng(B))
        assert _relerr(g2, g1) <= 1e-13
        np.testing.assert_array_equal(g1, g2)          # fixed chunks: in fact bit-identical


@pytest.mark.parametrize("learn", [False, True])
@pytest.mark.parametrize("n,d,B", [(5, 1, 1), (5, 3, 40), (60, 9, 7), (200, 33, 5000), (90, 70, 30_000)])
def test_dense_paths_agree_with_the_dense_formula(n, d, B, learn):
    # the point path (X^T L X) and the pair path give the same gradient and loss, both equal to
    # the dense NumPy formula; the pairs include i == j (D = 0) and repeated pairs
    X, y = _data(n=n, d=d, density=1.0, seed=n + d)
    rng = np.random.default_rng(B)
    i = rng.integers(0, n, B).astype(np.int32)
    j = rng.integers(0, n, B).astype(np.int32)
    i[: max(1, B // 10)] = j[: max(1, B // 10)]
    o = MetricLearning(X, y, LAM, learn_threshold=learn, threshold=1.0, n_eval_pairs=3 * n)
    W = _sym(o.shape[0], seed=d)
    if learn:
        W[d, :d] = W[:d, d] = 0.0
        W[d, d] = 1.0                                    # b = 1: the reference's threshold
    out = {}
    for path in ("pairs", "points"):
        o.point_path = path
        out[path] = o._mean_grad_pairs(W, i, j), o._eval_loss(W)
        ref = _ref_grad(X, y, W[:d, :d], i, j)
        assert _relerr(out[path][0][:d, :d], ref) < 1e-12
        np.testing.assert_array_equal(out[path][0], out[path][0].T)
        ei, ej = o.eval_pairs
        assert abs(out[path][1] - _ref_loss(X, y, W[:d, :d], ei, ej)) < 1e-12
    if learn:                                            # the threshold row: same in both paths
        assert abs(out["pairs"][0][d, d] - out["points"][0][d, d]) < 1e-12


def test_point_path_cost_model_and_same_draws():
    # auto: pair path for B well below n, point path for B well above; both consume the same draws
    X, y = _data(n=400, d=20, density=1.0, seed=3)
    o = MetricLearning(X, y, LAM)
    W = _sym(20)
    other = {"pairs": "points", "points": "pairs"}
    for B, path in ((50, "pairs"), (40_000, "points")):
        o.point_path = "auto"
        g = o.mean_grad(W, B, np.random.default_rng(B))
        o.point_path = path
        np.testing.assert_array_equal(g, o.mean_grad(W, B, np.random.default_rng(B)))
        o.point_path = other[path]
        r = np.random.default_rng(B)
        g2 = o.mean_grad(W, B, r)
        assert _relerr(g2, g) < 1e-12
        i, j = _sample_pairs(400, B, np.random.default_rng(B))
        r_ref = np.random.default_rng(B)
        _sample_pairs(400, B, r_ref)
        assert r.random() == r_ref.random()              # the generator advanced by the same draws
    with pytest.raises(ValueError, match="point_path"):
        o.point_path = 2
    o.point_path = "pairs"
    import pickle
    assert pickle.loads(pickle.dumps(o)).point_path == "pairs"


@pytest.mark.parametrize("n", [2, 4, 7])
def test_sampler_uniform_over_ordered_pairs(n):
    N = 60_000
    i, j = _sample_pairs(n, N, np.random.default_rng(2024 + n))
    assert (i != j).all() and i.min() >= 0 and max(i.max(), j.max()) < n
    counts = np.bincount(i * n + j, minlength=n * n).reshape(n, n)
    assert (np.diag(counts) == 0).all()
    obs = counts[~np.eye(n, dtype=bool)]
    assert len(obs) == n * (n - 1)
    p = stats.chisquare(obs).pvalue                  # uniform over the n(n-1) ordered pairs
    assert p > 1e-3, (p, obs)


def test_sampler_bad_n():
    with pytest.raises(ValueError):
        _sample_pairs(1, 5, np.random.default_rng(0))


def test_value_matches_reference(kind):
    X, y = _data()
    Xe, ye = _data(n=30, seed=3)
    for kw, (XX, yy) in [({}, (X, y)), ({"X_eval": Xe, "y_eval": ye}, (Xe, ye))]:
        o = _oracle(kind, X, y, n_eval_pairs=5000, eval_rng=4, **kw)
        i, j = o.eval_pairs
        assert len(i) == 5000 and (i != j).all() and max(i.max(), j.max()) < len(yy)
        for W in (_sym(9), np.zeros((9, 9)), np.random.default_rng(5).standard_normal((9, 9))):
            ref = _ref_loss(XX, yy, W, i, j) + LAM / 2 * np.sum(W * W)
            assert abs(o.value(W) - ref) <= 1e-12 * abs(ref)
    # the evaluation pairs are fixed by eval_rng
    a = _oracle(kind, X, y, eval_rng=7).eval_pairs[0]
    np.testing.assert_array_equal(a, _oracle(kind, X, y, eval_rng=7).eval_pairs[0])
    assert not np.array_equal(a, _oracle(kind, X, y, eval_rng=8).eval_pairs[0])


@pytest.mark.parametrize("s", [1e300, -1e300, 1e200])
def test_extreme_z(kind, s):
    X, y = _data(n=20, d=4, seed=6)
    o = _oracle(kind, X, y, n_eval_pairs=400)
    W = s * np.eye(4)                                  # |z| ~ |s| * ||D||^2
    i, j = o.eval_pairs
    D = X[i] - X[j]
    yy = np.where(y[i] == y[j], 1.0, -1.0)
    z = yy * (1.0 - s * np.sum(D * D, axis=1))
    ref = np.where(z < 0, -z, 0.0).mean()              # exp(-|z|) underflows to 0 here
    loss = o._eval_loss(W)
    assert math.isfinite(loss) and loss > 0
    assert abs(loss - ref) <= 1e-12 * ref
    v = o.value(W)
    assert v == math.inf if abs(s) > 1e154 else abs(v - ref - LAM / 2 * 4 * s * s) < 1e-12 * v
    g = o._mean_grad_pairs(W, i, j)
    assert np.isfinite(g).all()
    assert _relerr(g, _ref_grad(X, y, W, i, j)) < 1e-12


def test_attributes():
    X, y = _data()
    o = MetricLearning(sp.csr_matrix(X), y, lam=0.25)
    assert o.shape == (9, 9) and o.size == 81
    assert o.n_samples == 60 and o.n_features == 9 and o.lam == 0.25
    assert o.L == 4.25
    assert o.G == pytest.approx(4 + 0.25 * math.sqrt(2 * math.log1p(math.e) / 0.25))
    # the ball of radius R contains W_*: (lam/2) R^2 bounds F(0) >= F(W_*) >= (lam/2)||W_*||^2
    assert o.value(np.zeros((9, 9))) <= 0.5 * o.lam * o.R**2 + 1e-12
    assert o.n_threads >= 1 and o.is_sparse and o.n_eval_pairs == 10_000
    # G bounds ||g_hat||_F on the ball of radius R (here on its sphere, worst case B = 1)
    rng = np.random.default_rng(0)
    for _ in range(20):
        W = _sym(9, seed=int(rng.integers(1 << 30)))
        W *= o.R / np.linalg.norm(W)
        g = o.mean_grad(W, 1, rng)
        assert np.linalg.norm(g) <= o.G


def test_value_at_zero():
    X, y = _data()
    o = MetricLearning(X, y, LAM)
    i, j = o.eval_pairs
    yy = np.where(y[i] == y[j], 1.0, -1.0)
    assert o.value(np.zeros((9, 9))) == pytest.approx(np.logaddexp(0, -yy).mean(), rel=1e-14)


def test_bad_input():
    X, y = _data()
    with pytest.raises(ValueError, match="two classes"):
        MetricLearning(X, np.ones(60))
    with pytest.raises(ValueError, match=r"got only 'b'$"):            # the label, not np.str_('b')
        MetricLearning(X, np.array(["b"] * 60))
    Xn = X.copy()
    Xn[5, 2] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        MetricLearning(Xn, y)
    with pytest.raises(ValueError, match="X contains NaN"):
        MetricLearning(sp.csr_matrix(Xn), y)
    with pytest.raises(ValueError, match="60 rows but y has 59"):
        MetricLearning(X, y[:-1])
    with pytest.raises(ValueError, match="normalize_rows"):
        MetricLearning(X * 2, y)
    with pytest.raises(ValueError, match="at least 2 samples"):
        MetricLearning(X[:1], y[:1])
    with pytest.raises(ValueError, match="2-D"):
        MetricLearning(X[0], y)
    for lam in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="lam"):
            MetricLearning(X, y, lam)
    with pytest.raises(ValueError, match="X_eval"):
        MetricLearning(X, y, X_eval=X)
    with pytest.raises(ValueError, match="columns"):
        MetricLearning(X, y, X_eval=X[:, :5], y_eval=y)
    with pytest.raises(ValueError, match="n_threads"):
        MetricLearning(X, y, n_threads=0)
    o = MetricLearning(X, y)
    with pytest.raises(ValueError, match="shape"):
        o.mean_grad(np.zeros((8, 8)), 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="NaN"):
        o.value(np.full((9, 9), np.nan))
    with pytest.raises(ValueError, match="shape"):
        o.value(np.zeros(81))
    with pytest.raises(ValueError):
        o._mean_grad_pairs(np.zeros((9, 9)), [0], [60])


def test_real_data_subsample():
    d = require_data_dir()
    Xtr, ytr, Xte, yte = load_adult(d)
    o = MetricLearning(Xtr, ytr, LAM, X_eval=Xte, y_eval=yte, n_eval_pairs=2000)
    W = _sym(123, scale=0.05)
    i, j = _sample_pairs(Xtr.shape[0], 4000, np.random.default_rng(1))
    assert _relerr(o._mean_grad_pairs(W, i, j), _ref_grad(Xtr[np.r_[i, j]], ytr[np.r_[i, j]], W,
                                                          np.arange(4000), np.arange(4000, 8000))) < 1e-12
    ei, ej = o.eval_pairs
    assert abs(o.value(W) - _ref_loss(Xte, yte, W, ei, ej) - LAM / 2 * np.sum(W * W)) < 1e-12
    Xm, ym = load_mushrooms(d)
    om = MetricLearning(Xm.toarray(), ym, LAM)
    W = _sym(112, scale=0.05)
    i, j = _sample_pairs(8124, 3000, np.random.default_rng(2))
    assert _relerr(om._mean_grad_pairs(W, i, j), _ref_grad(Xm.toarray(), ym, W, i, j)) < 1e-12
