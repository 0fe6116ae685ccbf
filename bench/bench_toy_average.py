"""Averaging B toy-oracle gradients (paper Sec. 5): logt's kernel vs NumPy.

The quantity: ``W - A + mean of B symmetric Z``, Z's d(d+1)/2 upper-triangle
entries uniform on [-noise, noise] (d = 5: 15 uniforms per sample).

Contenders, one benchmark group per B:

* ``logt``              - ``PSDQuadratic.mean_grad``: streams raw 32-bit draws
                          from the Generator's ``bitgen_t`` into exact int64 sums.
* ``numpy_chunked``     - best plain NumPy: ``rng.random(out=buf)`` into a
                          preallocated (15, CHUNK) float64 buffer, ``buf.sum(1)``
                          accumulated (chunk size tuned: 4096..32768 were all
                          within a few % here; 8192 chosen).
* ``numpy_raw_bits``    - logt's algorithm written in NumPy (``random_raw``
                          viewed as int32, summed in int64): the same 32-bit
                          grid, the fastest NumPy we found.
* ``numpy_materialized``- the naive code: ``rng.uniform(-1, 1, (B, 5, 5))``,
                          symmetrized from the upper triangle, ``.mean(0)``.

Run:  OPENBLAS_NUM_THREADS=1 python -m pytest bench/bench_toy_average.py
      python -m pytest bench/bench_toy_average.py --benchmark-disable   (smoke)
"""
import numpy as np
import pytest

from logt._threads import single_threaded_blas
from logt.oracles import PSDQuadratic

D = 5
NOISE = 1.0
CHUNK = 8192
IU = np.triu_indices(D)
BS = [10**2, 10**4, 10**6]


def _assemble(W, A, zbar):
    """W - A + Z from the m upper-triangle means ``zbar``."""
    Z = np.empty((D, D))
    Z[IU] = zbar
    Z.T[IU] = zbar
    return (W - A) + Z


def numpy_chunked(W, A, B, rng, buf):
    m = buf.shape[0]
    s = np.zeros(m)
    left = B
    while left >= CHUNK:
        rng.random(out=buf)
        s += buf.sum(1)
        left -= CHUNK
    if left:
        s += rng.random((m, left)).sum(1)
    return _assemble(W, A, NOISE * (2.0 * s / B - 1.0))


def numpy_raw_bits(W, A, B, rng):
    m = D * (D + 1) // 2
    bg = rng.bit_generator
    s = np.zeros(m, dtype=np.int64)
    left = B
    while left > 0:
        n = min(CHUNK, left)
        k = (m * n + 1) // 2
        r = bg.random_raw(k).view(np.int32)[: m * n].reshape(m, n)
        s += r.sum(1, dtype=np.int64)
        left -= n
    return _assemble(W, A, NOISE * 2.0**-31 * (s / B + 0.5))


def numpy_materialized(W, A, B, rng):
    U = rng.uniform(-NOISE, NOISE, size=(B, D, D))
    Z = np.triu(U) + np.triu(U, 1).transpose(0, 2, 1)
    return (W - A) + Z.mean(0)


@pytest.fixture(scope="module", autouse=True)
def _one_blas_thread():
    with single_threaded_blas():
        yield


@pytest.fixture(scope="module")
def problem():
    A = np.zeros((D, D))  # the paper's toy
    W = np.eye(D)
    return A, W


def _check(g, W, A, B):
    assert g.shape == (D, D)
    np.testing.assert_allclose(g, g.T)
    # within 6 sigma of W - A (per entry sd: noise / sqrt(3B))
    assert np.all(np.abs(g - (W - A)) < 6 * NOISE / np.sqrt(3 * B) + 1e-12)


@pytest.mark.parametrize("B", BS)
def test_logt(benchmark, problem, B):
    A, W = problem
    benchmark.group = f"toy average B={B}"
    o = PSDQuadratic(A, NOISE)
    rng = np.random.default_rng(0)
    out = np.empty((D, D))
    g = benchmark(o.mean_grad, W, B, rng, out)
    _check(g, W, A, B)


@pytest.mark.parametrize("B", BS)
def test_numpy_chunked(benchmark, problem, B):
    A, W = problem
    benchmark.group = f"toy average B={B}"
    rng = np.random.default_rng(0)
    buf = np.empty((D * (D + 1) // 2, CHUNK))
    g = benchmark(numpy_chunked, W, A, B, rng, buf)
    _check(g, W, A, B)


@pytest.mark.parametrize("B", BS)
def test_numpy_raw_bits(benchmark, problem, B):
    A, W = problem
    benchmark.group = f"toy average B={B}"
    rng = np.random.default_rng(0)
    g = benchmark(numpy_raw_bits, W, A, B, rng)
    _check(g, W, A, B)


@pytest.mark.parametrize("B", BS)
def test_numpy_materialized(benchmark, problem, B):
    A, W = problem
    benchmark.group = f"toy average B={B}"
    rng = np.random.default_rng(0)
    g = benchmark.pedantic(numpy_materialized, args=(W, A, B, rng),
                           rounds=5 if B >= 10**6 else 20, warmup_rounds=1)
    _check(g, W, A, B)
