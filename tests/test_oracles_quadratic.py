"""PSDQuadratic: the paper's toy oracle (compiled streaming average)."""
import pickle

import numpy as np
import pytest
from scipy import stats

from logt.oracles import Oracle, PSDQuadratic

TWO_M31 = 2.0 ** -31


def sym(rng, d, scale=1.0):
    X = rng.standard_normal((d, d)) * scale
    return (X + X.T) / 2


def reference_mean_grad(W, A, noise, B, seed):
    """Independent NumPy re-implementation of the documented stream layout."""
    d = A.shape[0]
    m = d * (d + 1) // 2
    bg = np.random.PCG64(seed)
    pairs = B // 2
    raw = bg.random_raw(pairs * m).reshape(pairs, m)
    lo = (raw & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np.int64)
    hi = (raw >> np.uint64(32)).astype(np.uint32).view(np.int32).astype(np.int64)
    S = lo.sum(0) + hi.sum(0)
    if B % 2:
        r = bg.random_raw((m + 1) // 2)
        halves = np.empty(2 * r.size, dtype=np.int64)
        halves[0::2] = (r & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
        halves[1::2] = (r >> np.uint64(32)).astype(np.uint32).view(np.int32)
        S = S + halves[:m]
    zbar = (noise * TWO_M31) * (S.astype(np.float64) * (1.0 / B) + 0.5)
    Z = np.empty((d, d))
    iu = np.triu_indices(d)  # row-major upper triangle, diagonal included
    Z[iu] = zbar
    Z.T[iu] = zbar
    return (W - A) + Z, bg


# ------------------------------------------------------------------ exact stream
@pytest.mark.parametrize("d", [1, 2, 5, 7])
@pytest.mark.parametrize("B", [1, 2, 3, 10, 101])
def test_matches_reference_bit_for_bit(d, B):
    g = np.random.default_rng(100 + d)
    A = sym(g, d)
    W = sym(g, d)
    noise = 0.7
    o = PSDQuadratic(A, noise)
    rng = np.random.default_rng(12345)
    out = o.mean_grad(W, B, rng)
    ref, bg = reference_mean_grad(W, A, noise, B, 12345)
    np.testing.assert_array_equal(out, ref)
    # the generator advanced by exactly the documented number of draws
    np.testing.assert_array_equal(rng.bit_generator.random_raw(4), bg.random_raw(4))


def test_determinism_and_seed_dependence():
    o = PSDQuadratic(np.zeros((5, 5)))
    W = np.eye(5)
    a = o.mean_grad(W, 1000, np.random.default_rng(7))
    b = o.mean_grad(W, 1000, np.random.default_rng(7))
    c = o.mean_grad(W, 1000, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert not np.any(a == c)
    # successive calls on one generator draw fresh noise
    rng = np.random.default_rng(7)
    assert not np.any(o.mean_grad(W, 1, rng) == o.mean_grad(W, 1, rng))


def test_symmetric_output_and_zero_noise():
    g = np.random.default_rng(0)
    A, W = sym(g, 6), sym(g, 6)
    out = PSDQuadratic(A, 2.0).mean_grad(W, 17, np.random.default_rng(1))
    np.testing.assert_array_equal(out, out.T)
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    out0 = PSDQuadratic(A, 0.0).mean_grad(W, 10**6, rng)
    np.testing.assert_array_equal(out0, W - A)
    assert rng.bit_generator.state == state  # noise == 0 draws nothing


# ------------------------------------------------------------------ statistics
@pytest.mark.parametrize("d,B,noise", [(5, 1, 1.0), (5, 3, 1.0), (5, 4, 2.5), (3, 7, 0.3)])
def test_mean_and_variance_of_averaged_noise(d, B, noise):
    g = np.random.default_rng(d * 100 + B)
    A, W = sym(g, d), sym(g, d)
    o = PSDQuadratic(A, noise)
    rng = np.random.default_rng(2024 + B)
    N = 8000
    E = np.empty((N, d, d))
    for n in range(N):
        E[n] = o.mean_grad(W, B, rng) - (W - A)
    iu = np.triu_indices(d)
    X = E[:, iu[0], iu[1]]  # (N, m): diagonal and off-diagonal entries
    var = noise ** 2 / (3 * B)  # uniform on [-s, s]: s^2/3, averaged over B
    # mean: within 5 standard errors, every entry
    se_mean = np.sqrt(var / N)
    assert np.all(np.abs(X.mean(0)) < 5 * se_mean)
    # variance: sample variance has sd ~ var * sqrt((2 - 6/(5B)) / N)
    # (mean of B uniforms has excess kurtosis -6/(5B))
    sv = X.var(0, ddof=1)
    se_var = var * np.sqrt((2 - 6 / (5 * B)) / N)
    assert np.all(np.abs(sv - var) < 5 * se_var), (sv, var)
    # distinct upper-triangle entries are uncorrelated
    C = np.corrcoef(X.T)
    off = C[~np.eye(C.shape[0], dtype=bool)]
    assert np.all(np.abs(off) < 5 / np.sqrt(N))
    # bounded noise: |Z_ij| < noise, hence ||Z||_F <= G
    assert np.all(np.abs(X) < noise)
    assert np.all(np.linalg.norm(E, axis=(1, 2)) <= o.G)


def test_single_sample_is_uniform():
    o = PSDQuadratic(np.zeros((5, 5)), noise=1.0)
    rng = np.random.default_rng(99)
    iu = np.triu_indices(5)
    vals = np.concatenate([o.mean_grad(np.zeros((5, 5)), 1, rng)[iu] for _ in range(2000)])
    assert stats.kstest(vals, stats.uniform(loc=-1, scale=2).cdf).pvalue > 1e-4
    # diagonal and off-diagonal separately
    diag = vals.reshape(2000, 15)[:, [0, 5, 9, 12, 14]].ravel()
    offd = vals.reshape(2000, 15)[:, [1, 2, 3, 4, 6, 7, 8, 10, 11, 13]].ravel()
    for v in (diag, offd):
        assert stats.kstest(v, stats.uniform(loc=-1, scale=2).cdf).pvalue > 1e-4


def test_large_batch_mean():
    A = np.diag([1.0, -2.0, 0.5, 3.0, -1.0])
    o = PSDQuadratic(A, noise=1.0)
    B = 10**6 + 1
    W = np.zeros((5, 5))
    E = o.mean_grad(W, B, np.random.default_rng(5)) - (W - A)
    assert np.all(np.abs(E) < 5 * np.sqrt(1 / (3 * B)))
    assert np.any(E != 0)


# ------------------------------------------------------------------ out= buffer
def test_out_buffer():
    A = np.zeros((5, 5))
    o = PSDQuadratic(A)
    W = np.eye(5)
    out = np.empty((5, 5))
    r = o.mean_grad(W, 10, np.random.default_rng(1), out=out)
    assert r is out
    np.testing.assert_array_equal(out, o.mean_grad(W, 10, np.random.default_rng(1)))
    # out may alias W
    W2 = W.copy()
    o.mean_grad(W2, 10, np.random.default_rng(1), out=W2)
    np.testing.assert_array_equal(W2, out)
    with pytest.raises(TypeError, match="out"):
        o.mean_grad(W, 1, np.random.default_rng(1), out=np.empty((5, 5), dtype=np.float32))
    with pytest.raises(ValueError, match="out"):
        o.mean_grad(W, 1, np.random.default_rng(1), out=np.empty((4, 4)))
    with pytest.raises(ValueError, match="out"):
        o.mean_grad(W, 1, np.random.default_rng(1), out=np.empty((5, 10))[:, ::2])


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("A,exc,match", [
    (np.array([[1.0, 2.0], [0.0, 1.0]]), ValueError, "symmetric"),
    (np.array([[np.nan, 0.0], [0.0, 1.0]]), ValueError, "NaN"),
    (np.array([[np.inf, 0.0], [0.0, 1.0]]), ValueError, "NaN or Inf"),
    (np.zeros((2, 3)), ValueError, "square"),
    (np.zeros(4), ValueError, "square"),
    (np.zeros((0, 0)), ValueError, "square"),
    (np.array([["a"]]), TypeError, "A"),
])
def test_bad_A(A, exc, match):
    with pytest.raises(exc, match=match):
        PSDQuadratic(A)


@pytest.mark.parametrize("noise,exc", [(-0.1, ValueError), (np.nan, ValueError),
                                       (np.inf, ValueError), ("1", TypeError),
                                       (True, TypeError), (None, TypeError)])
def test_bad_noise(noise, exc):
    with pytest.raises(exc, match="noise"):
        PSDQuadratic(np.zeros((2, 2)), noise)


def test_bad_mean_grad_arguments():
    o = PSDQuadratic(np.zeros((5, 5)))
    rng = np.random.default_rng(0)
    W = np.zeros((5, 5))
    with pytest.raises(ValueError, match="shape"):
        o.mean_grad(np.zeros((4, 4)), 1, rng)
    with pytest.raises(ValueError, match="NaN"):
        o.mean_grad(np.full((5, 5), np.nan), 1, rng)
    with pytest.raises(ValueError, match="B"):
        o.mean_grad(W, 0, rng)
    with pytest.raises(TypeError, match="B"):
        o.mean_grad(W, 2.0, rng)
    with pytest.raises(TypeError, match="B"):
        o.mean_grad(W, True, rng)
    with pytest.raises(TypeError, match="rng"):
        o.mean_grad(W, 1, 0)
    with pytest.raises(TypeError, match="rng"):
        o.mean_grad(W, 1, np.random.RandomState(0))
    with pytest.raises(ValueError, match="shape"):
        o.value(np.zeros((5, 4)))


# ------------------------------------------------------------------ F, W_*, F_*
def test_value():
    g = np.random.default_rng(4)
    A, W = sym(g, 4), g.standard_normal((4, 4))
    o = PSDQuadratic(A)
    assert o.value(W) == pytest.approx(0.5 * np.sum((W - A) ** 2), rel=1e-14)
    assert o.value(A) == 0.0


@pytest.mark.parametrize("d", [1, 3, 5, 8])
def test_minimizer_and_f_star(d):
    g = np.random.default_rng(d)
    A = sym(g, d, scale=2.0)
    o = PSDQuadratic(A)
    P = o.minimizer()
    assert P.shape == (d, d)
    np.testing.assert_array_equal(P, P.T)
    # KKT of min 0.5||W - A||^2 over the PSD cone: P >= 0, P - A >= 0, <P, P - A> = 0
    tol = 1e-12 * max(1.0, np.abs(A).max())
    assert np.linalg.eigvalsh(P).min() >= -tol
    assert np.linalg.eigvalsh(P - A).min() >= -tol
    assert abs(np.vdot(P, P - A)) <= 1e-10 * max(1.0, np.vdot(A, A))
    assert o.f_star == pytest.approx(o.value(P), rel=1e-10, abs=1e-14)
    # F(P) is no larger than F at random PSD points
    for _ in range(20):
        X = g.standard_normal((d, d))
        assert o.value(X @ X.T) >= o.f_star - 1e-12


def test_paper_toy_and_psd_A():
    o = PSDQuadratic(np.zeros((5, 5)))
    np.testing.assert_array_equal(o.minimizer(), np.zeros((5, 5)))
    assert o.f_star == 0.0
    X = np.random.default_rng(0).standard_normal((5, 5))
    A = X @ X.T
    A = (A + A.T) / 2
    o = PSDQuadratic(A)
    np.testing.assert_allclose(o.minimizer(), A, atol=1e-12)
    assert o.f_star == pytest.approx(0.0, abs=1e-24)
    # A with one negative eigenvalue: F_* = 0.5 * mu_min^2
    o = PSDQuadratic(np.diag([2.0, -3.0, 1.0]))
    np.testing.assert_allclose(o.minimizer(), np.diag([2.0, 0.0, 1.0]), atol=1e-15)
    assert o.f_star == pytest.approx(4.5)


def test_attributes_and_copy_semantics():
    A = np.diag([1.0, 2.0, 3.0])
    o = PSDQuadratic(A, noise=0.5)
    assert isinstance(o, Oracle)
    assert o.shape == (3, 3) and o.size == 9 and o.d == 3 and o.m == 6
    assert o.L == 1.0 and o.lam == 1.0 and o.noise == 0.5 and o.G == 1.5
    A[0, 0] = 100.0
    assert o.A[0, 0] == 1.0
    with pytest.raises(ValueError):
        o.A[0, 0] = 5.0
    with pytest.raises(AttributeError):
        o.noise = 2.0
    o2 = pickle.loads(pickle.dumps(o))
    np.testing.assert_array_equal(o2.A, o.A)
    assert o2.noise == o.noise
    W = np.eye(3)
    np.testing.assert_array_equal(o2.mean_grad(W, 5, np.random.default_rng(1)),
                                  o.mean_grad(W, 5, np.random.default_rng(1)))
    # integer A is accepted and converted
    assert PSDQuadratic(np.eye(2, dtype=int)).A.dtype == np.float64
