"""PSD-cone projection: logt vs numpy.linalg.eigh and scipy.linalg.eigh projections.

Run:  python -m pytest bench/bench_projection.py --benchmark-only
      python -m pytest bench/bench_projection.py --benchmark-disable   (quick check)

Everything runs under ONE BLAS thread (a session-wide ``single_threaded_blas``
block, which also makes logt's own per-call thread limiting free). Groups are
``d=<d> <spectrum>``, so logt and both references land in one table.

For logt, each benchmark calls ``project`` repeatedly on ONE object with
inputs of the same spectrum type (the realistic use: an optimizer projecting a
sequence of similar matrices, where the adaptive path prediction applies).
"""
import itertools

import numpy as np
import pytest
import scipy.linalg

from logt._threads import single_threaded_blas
from logt.domains import PSDCone

DIMS = [5, 20, 50, 112, 123, 200, 500]
SPECTRA = ["half_negative", "5pct_negative", "psd"]
N_INPUTS = 4   # distinct matrices cycled through (same spectrum type)


@pytest.fixture(scope="module", autouse=True)
def _one_blas_thread():
    with single_threaded_blas():
        yield


def numpy_proj(A):
    l, V = np.linalg.eigh(A)
    return (V * np.maximum(l, 0.0)) @ V.T


def scipy_proj(A):
    l, V = scipy.linalg.eigh(A, check_finite=False)
    return (V * np.maximum(l, 0.0)) @ V.T


def make_inputs(d, spectrum, seed=0):
    rng = np.random.default_rng([d, SPECTRA.index(spectrum), seed])
    mats = []
    for _ in range(N_INPUTS):
        Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
        l = rng.uniform(0.1, 1.0, d)
        if spectrum == "half_negative":
            l[: d // 2] *= -1
        elif spectrum == "5pct_negative":
            l[: max(1, round(0.05 * d))] *= -1
        A = (Q * l) @ Q.T
        mats.append((A + A.T) / 2)
    return mats


@pytest.mark.parametrize("spectrum", SPECTRA)
@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("impl", ["logt", "numpy_eigh", "scipy_eigh"])
def test_projection(benchmark, impl, d, spectrum):
    benchmark.group = f"d={d} {spectrum}"
    mats = make_inputs(d, spectrum)
    # C-level cycling keeps harness overhead (same for every impl) small at d=5
    nxt = itertools.cycle(mats).__next__
    if impl == "logt":
        cone = PSDCone(d)
        out = np.empty((d, d))
        for A in mats:                      # warm up the adaptive prediction
            cone.project(A, out)
        fn = lambda: cone.project(nxt(), out)  # noqa: E731
    elif impl == "numpy_eigh":
        fn = lambda: numpy_proj(nxt())          # noqa: E731
    else:
        fn = lambda: scipy_proj(nxt())          # noqa: E731
    for A in mats:   # check every input once, then time the cycle
        R = fn().copy()
        np.testing.assert_allclose(R, numpy_proj(A), atol=1e-10 * np.linalg.norm(A))
    benchmark(fn)

