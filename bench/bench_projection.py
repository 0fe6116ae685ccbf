"""PSD-cone projection: logt vs numpy.linalg.eigh and scipy.linalg.eigh projections.

Run:  python -m pytest bench/bench_projection.py --benchmark-only
      python -m pytest bench/bench_projection.py --benchmark-disable   (quick check)

One BLAS thread (``bench/conftest.py``). Groups are ``projection d=<d> <spectrum>``,
so logt and both references (``logt.bench.references``) land in one table.
The callables are built by ``logt.bench.cases.projection_contenders``: logt calls
``project`` repeatedly on ONE ``PSDCone`` with inputs of the same spectrum type
(an optimizer's sequence of similar matrices: the adaptive path prediction applies).
"""
import numpy as np
import pytest

from logt.bench.cases import PROJECTION_DIMS, projection_contenders
from logt.bench.references import SPECTRA, numpy_eigh_projection, spectrum_matrices


@pytest.mark.parametrize("spectrum", SPECTRA)
@pytest.mark.parametrize("d", PROJECTION_DIMS)
@pytest.mark.parametrize("impl", ["logt", "numpy_eigh", "scipy_eigh"])
def test_projection(benchmark, impl, d, spectrum):
    benchmark.group = f"projection d={d} {spectrum}"
    mats = spectrum_matrices(d, spectrum)
    fn = projection_contenders(d, spectrum, (impl,), mats)[impl]
    for A in mats:   # the cycle visits every input once, in order: check each, then time
        np.testing.assert_allclose(fn().copy(), numpy_eigh_projection(A), atol=1e-10 * np.linalg.norm(A))
    benchmark(fn)
