"""The benchmark references (``logt.bench.references``) are correct: every speed ratio
logt reports is against them, so they must compute the same quantities as logt."""

import numpy as np
import pytest

from logt._kernels._pairs import _sample_pairs
from logt.bench import references as ref
from logt.domains import PSDCone
from logt.oracles import PSDQuadratic
from logt.oracles.metric import MetricLearning
from _child import run_python



# ----------------------------------------------------------------- projection

@pytest.mark.parametrize("spectrum", ref.SPECTRA)
@pytest.mark.parametrize("d", [1, 5, 20, 50])
def test_spectrum_matrices_have_the_requested_spectrum(d, spectrum):
    mats = ref.spectrum_matrices(d, spectrum, n=3, seed=1)
    n_neg = {"half_negative": d // 2, "5pct_negative": max(1, round(0.05 * d)), "psd": 0}[spectrum]
    for A in mats:
        assert A.shape == (d, d) and np.array_equal(A, A.T)
        l = np.linalg.eigvalsh(A)
        assert np.sum(l < 0) == n_neg
        assert np.all((np.abs(l) > 0.1 - 1e-9) & (np.abs(l) < 1 + 1e-9))


def test_spectrum_matrices_rejects_unknown_spectrum():
    with pytest.raises(ValueError, match="spectrum"):
        ref.spectrum_matrices(5, "banana")


@pytest.mark.parametrize("spectrum", ref.SPECTRA)
@pytest.mark.parametrize("d", [5, 20, 50])
def test_numpy_and_scipy_projections_agree_with_logt(d, spectrum):
    cone = PSDCone(d)
    for A in ref.spectrum_matrices(d, spectrum, n=3):
        P = cone.project(A)
        for proj in (ref.numpy_eigh_projection, ref.scipy_eigh_projection):
            R = proj(A)
            np.testing.assert_allclose(R, P, atol=1e-12)
            # a projection onto the cone: PSD, and A - R is negative semidefinite and orthogonal to R
            assert np.linalg.eigvalsh((R + R.T) / 2).min() > -1e-12
            assert np.linalg.eigvalsh(((A - R) + (A - R).T) / 2).max() < 1e-12
            assert abs(np.vdot(A - R, R)) < 1e-12


# ----------------------------------------------------------------- toy averaging

TOY_AVERAGERS = {
    "chunked": ref.toy_average_chunked,
    "raw_bits": ref.toy_average_raw_bits,
    "materialized": ref.toy_average_materialized,
}


def _toy_point():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((5, 5))
    W = rng.standard_normal((5, 5))
    return (W + W.T) / 2, (A + A.T) / 2


@pytest.mark.parametrize("B", [1, 7, 8192, 8193, 100_000])
@pytest.mark.parametrize("name", list(TOY_AVERAGERS))
def test_toy_averaging_has_the_right_mean(name, B):
    W, A = _toy_point()
    noise = 0.7
    g = TOY_AVERAGERS[name](W, A, B, np.random.default_rng(B), noise)
    assert g.shape == (5, 5)
    np.testing.assert_array_equal(g, g.T)
    dev = g - (W - A)
    assert np.all(np.abs(dev) < noise)                               # |mean of Z_ij| < noise
    assert np.all(np.abs(dev) < 6 * noise / np.sqrt(3 * B) + 1e-12)  # 6 sigma of the mean


@pytest.mark.parametrize("name", list(TOY_AVERAGERS))
def test_toy_averaging_has_the_logt_oracles_distribution(name):
    """Single samples: entries uniform on [-s, s] (mean 0, variance s^2/3), like logt's."""
    W, A = np.zeros((5, 5)), np.zeros((5, 5))
    rng = np.random.default_rng(11)
    n = 4000
    Z = np.array([TOY_AVERAGERS[name](W, A, 1, rng, 2.0) for _ in range(n)])
    o = PSDQuadratic(A, 2.0)
    Zl = np.array([o.mean_grad(W, 1, rng) for _ in range(n)])
    iu = np.triu_indices(5)
    for S in (Z, Zl):
        e = S[:, iu[0], iu[1]]                    # (n, 15) independent entries
        assert np.all(np.abs(e) <= 2.0)
        assert np.all(np.abs(e.mean(0)) < 6 * np.sqrt(4 / 3 / n))
        # variance of a uniform on [-2, 2] is 4/3; sd of the sample variance ~ sqrt(4/45 * 16 / n)
        assert np.all(np.abs(e.var(0) - 4 / 3) < 6 * np.sqrt(64 / 45 / n))
    # the paired draws (low/high halves) of logt's B=1 path must not correlate entries: nor ours
    c = np.corrcoef(Z[:, iu[0], iu[1]].T)
    assert np.abs(c - np.eye(15)).max() < 6 / np.sqrt(n)


def test_toy_grad_numpy_is_one_symmetric_sample():
    W, A = _toy_point()
    g = ref.toy_grad_numpy(W, A, np.random.default_rng(0), 0.5)
    np.testing.assert_array_equal(g, g.T)
    assert np.all(np.abs(g - (W - A)) <= 0.5)


# ----------------------------------------------------------------- metric gradient

def _metric_data(n=60, d=9, seed=0):
    X, y = ref.synthetic_binary(n, d, 4, seed)
    return X, X.toarray(), y


def test_synthetic_data_shape_and_norms():
    X, y = ref.synthetic_binary(50, 12, 5, 0)
    assert X.shape == (50, 12) and np.all(np.diff(X.indptr) == 5)
    np.testing.assert_allclose(np.sqrt(X.multiply(X).sum(1)).A.ravel(), 1.0)
    assert set(np.unique(y)) == {0, 1}
    Xa, _ = ref.a9a_like()
    Xm, _ = ref.mushrooms_like()
    assert Xa.shape == (32561, 123) and Xm.shape == (8124, 112)


def _W(d, seed=4):
    A = np.random.default_rng(seed).standard_normal((d, d)) * 0.3
    return (A + A.T) / 2


@pytest.mark.parametrize("B", [1, 5, 200])
def test_dense_numpy_metric_gradient_equals_the_naive_loop(B):
    _, Xd, y = _metric_data()
    W = _W(Xd.shape[1])
    pairs = _sample_pairs(Xd.shape[0], B, np.random.default_rng(B))
    g1 = ref.metric_grad_dense(Xd, y, W, B, None, 0.3, pairs=pairs)
    g2 = ref.metric_grad_loop(Xd, y, W, B, None, 0.3, pairs=pairs)
    np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-14)
    # independent formula: sum over pairs of y s(-z) D D^T / B + lam W
    i, j = pairs
    D = Xd[i] - Xd[j]
    yy = np.where(y[i] == y[j], 1.0, -1.0)
    z = yy * (1 - np.einsum("bi,ij,bj->b", D, W, D))
    g3 = np.einsum("b,bi,bj->ij", yy / (1 + np.exp(z)), D, D) / B + 0.3 * W
    np.testing.assert_allclose(g1, g3, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("B", [3, 500])
def test_numpy_metric_gradients_equal_logt_on_the_same_pairs(B):
    X, Xd, y = _metric_data()
    W = _W(Xd.shape[1])
    oracle = MetricLearning(X, y, 0.3, n_eval_pairs=5)
    g_logt = oracle.mean_grad(W, B, np.random.default_rng(42))
    pairs = _sample_pairs(Xd.shape[0], B, np.random.default_rng(42))   # the oracle's sampler
    np.testing.assert_allclose(ref.metric_grad_dense(Xd, y, W, B, None, 0.3, pairs=pairs), g_logt,
                               rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(ref.metric_grad_loop(Xd, y, W, B, None, 0.3, pairs=pairs), g_logt,
                               rtol=1e-10, atol=1e-13)


def test_metric_references_draw_distinct_uniform_pairs():
    _, Xd, y = _metric_data(n=4)
    W = np.zeros((Xd.shape[1], Xd.shape[1]))
    # with W = 0 and a single pair the gradient is y s(-y) D D^T: never the zero pair i == j
    rng = np.random.default_rng(0)
    for _ in range(50):
        g = ref.metric_grad_loop(Xd, y, W, 1, rng, 0.1)
        assert np.abs(g).max() > 0
    i, j = ref._draw_pairs(4, 60_000, np.random.default_rng(1))
    assert np.all(i != j)
    counts = np.bincount(i * 4 + j, minlength=16).reshape(4, 4)
    assert np.all(np.diag(counts) == 0)
    off = counts[~np.eye(4, dtype=bool)]
    assert np.all(np.abs(off - 5000) < 6 * np.sqrt(5000))


# ----------------------------------------------------------------- end-to-end references

def test_numpy_projected_sgd_toy_converges_and_stays_psd():
    W = ref.numpy_projected_sgd_toy(2000, np.random.default_rng(0))
    assert np.linalg.eigvalsh(W).min() > -1e-12
    # E[F(W_T)] = O(1/T) for SGD on the toy (the paper's Fig. 1a): generous bound
    assert 0.5 * np.vdot(W, W) < 50 / 2000


def test_numpy_projected_sgd_metric_decreases_F():
    X, Xd, y = _metric_data(n=80, d=6, seed=2)
    y = (X.toarray()[:, 0] > 0).astype(int)          # a learnable labelling
    oracle = MetricLearning(X, y, 0.1, n_eval_pairs=2000)
    W = ref.numpy_projected_sgd_metric(Xd, y, 3000, np.random.default_rng(0), 0.1)
    assert np.linalg.eigvalsh(W).min() > -1e-12
    assert oracle.value(W) < oracle.value(np.zeros_like(W)) - 1e-3


# ----------------------------------------------------------------- the report runs

def test_report_quick_toy_runs():
    r = run_python(["-m", "logt.bench", "--quick", "--only", "toy", "--quiet"])
    assert r.returncode == 0, r.stderr
    assert "Toy oracle" in r.stdout and "B=1e+06" in r.stdout
    assert "PSD projection" not in r.stdout


def _clusters_and_metric(seed):
    """80 points in 3 shifted clusters (6 features, rows of norm <= 1), labels, a PSD ``W`` and the generator."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, 80)
    X = rng.standard_normal((80, 6)) + y[:, None]
    X /= np.linalg.norm(X, axis=1).max()
    A = rng.standard_normal((6, 6))
    return X, y, A @ A.T, rng


def test_triplet_reference_matches_the_kernel():
    from logt.oracles import TripletMetricLearning
    X, y, W, rng = _clusters_and_metric(4)
    o = TripletMetricLearning(X, y, ref.METRIC_LAM)
    t = rng.integers(0, o.n_triplets, 300)
    got = ref.triplet_grad_dense(X, o.triplets, t, W, o.unit)
    np.testing.assert_allclose(got, o._mean_grad_triplets(W, t), rtol=1e-11, atol=1e-13)


def test_softmax_reference_matches_the_kernel():
    from logt.oracles import SoftmaxMetricLearning
    X, y, W, rng = _clusters_and_metric(5)
    o = SoftmaxMetricLearning(X, y, ref.METRIC_LAM)
    a = rng.integers(0, o.n_anchors, 300)
    lists = (o.anchors, o.ptr, o.candidates, o.n_targets_per_anchor)
    got = ref.softmax_grad_dense(X, lists, a, W, o.unit)
    np.testing.assert_allclose(got, o._mean_grad_anchors(W, a), rtol=1e-11, atol=1e-13)
