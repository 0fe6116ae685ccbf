"""Kernel coverage for the sanitizer stage (.ci/sanitize): every projection path
forced over d = 1..300, the pair kernel (sparse/dense, 1 and 2 threads), the
toy oracles' averaging and every method's step loop.

In a normal run the sizes are strided (fast); ``LOGT_SANITIZE_FULL=1`` (set by
.ci/sanitize) runs every d in 1..300. Results are checked against eigh / NumPy
references so the stage also catches wrong answers, not only memory errors.
"""
import os

import numpy as np
import pytest
import scipy.sparse as sp

import logt
from logt.domains import Box, EuclideanBall, PSDCone, TraceBoundedPSD
from logt.domains._psd import PSDProjector
from logt.oracles import DiagonalQuadratic, MetricLearning, PSDQuadratic

FULL = os.environ.get("LOGT_SANITIZE_FULL") == "1"
SIZES = list(range(1, 301)) if FULL else [1, 2, 3, 4, 7, 16, 33, 64, 65, 129]
PATHS = ["auto", "jacobi", "neg", "pos", "full", "chol"]


def _ref(A):
    lam, V = np.linalg.eigh(A)
    return (V * np.maximum(lam, 0)) @ V.T


@pytest.mark.parametrize("path", PATHS)
def test_projection_paths_all_sizes(path):
    for d in SIZES:
        # Jacobi is a small-matrix solver (O(d^3) per sweep in plain C, slow
        # under ASan): every d <= 65, then a few large sizes
        if path == "jacobi" and d > 65 and d not in ((100, 200, 300) if FULL else ()):
            continue
        rng = np.random.default_rng(d)
        G = rng.standard_normal((d, d))
        A = (G + G.T) / 2
        P = PSDProjector(d)
        for M in (A, A @ A.T / d, -A @ A.T / d):      # mixed, PSD, NSD spectra
            R = P._project_with(M, path)
            np.testing.assert_allclose(R, _ref(M), rtol=0, atol=1e-9 * d * np.abs(M).max())
            assert np.array_equal(R, R.T)


def test_other_domains():
    rng = np.random.default_rng(0)
    for d in (1, 5, 40):
        v = rng.standard_normal(d) * 10
        np.testing.assert_allclose(EuclideanBall(d, radius=1.0).project(v), v / np.linalg.norm(v))
        np.testing.assert_array_equal(Box(-1.0, 1.0, shape=d).project(v), np.clip(v, -1, 1))
        G = rng.standard_normal((d, d))
        R = TraceBoundedPSD(d, 1.0).project((G + G.T) / 2)
        assert np.trace(R) <= 1 + 1e-10 and np.linalg.eigvalsh(R).min() >= -1e-10


def _pair_data(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.4)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = rng.integers(0, 2, size=n) * 2 - 1
    return X, y


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_pair_kernel(sparse, n_threads):
    X, y = _pair_data(200, 11, 1)
    Xin = sp.csr_matrix(X) if sparse else X
    o = MetricLearning(Xin, y, 0.1, n_threads=n_threads)
    G = np.random.default_rng(2).standard_normal((11, 11))
    W = (G + G.T) / 4
    for B in (1, 7, 5000):
        g = o.mean_grad(W, B, np.random.default_rng(B))
        assert g.shape == (11, 11) and np.all(np.isfinite(g))
        np.testing.assert_array_equal(g, g.T)
    # given pairs (the from_pairs path, with its bias term): the thread count
    # does not change the result (fixed chunks)
    i, j = np.triu_indices(40, 1)
    yp = np.where(y[i] == y[j], 1, -1)
    Xp = Xin[:40]
    op = MetricLearning.from_pairs(Xp, i, j, yp, 0.1, balanced=False, n_threads=n_threads)
    o1 = MetricLearning.from_pairs(Xp, i, j, yp, 0.1, balanced=False, n_threads=1)
    Z = np.zeros(op.shape)
    Z[:11, :11] = W
    for B in (1, 3000):
        got = op.mean_grad(Z, B, np.random.default_rng(B))
        assert np.all(np.isfinite(got))
        np.testing.assert_array_equal(got, o1.mean_grad(Z, B, np.random.default_rng(B)))


@pytest.mark.parametrize("method", logt.methods.method_names())
def test_step_loops_and_toy_averaging(method):
    d = 6
    C = np.diag(np.linspace(-1, 1, d))
    dom = TraceBoundedPSD(d, 2.0) if method == "frank_wolfe" else PSDCone(d)
    r = logt.minimize(PSDQuadratic(C), dom, 400, method=method, rng=0)
    assert np.all(np.isfinite(r.x))
    dq = DiagonalQuadratic(np.linspace(0.5, 2.0, 8), np.linspace(-1, 1, 8))
    r2 = logt.minimize(dq, Box(-0.5, 0.5, shape=8), 400, method=method, rng=1)
    assert np.all(np.isfinite(r2.x)) and np.all(np.abs(r2.x) <= 0.5)
