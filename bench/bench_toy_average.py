"""Averaging B toy-oracle gradients (paper Sec. 5): logt's kernel vs NumPy.

The quantity: ``W - A + mean of B symmetric Z``, Z's d(d+1)/2 upper-triangle
entries uniform on [-1, 1] (d = 5: 15 uniforms per sample), at ``W = I, A = 0``.

Contenders (one group per B; callables from ``logt.bench.cases.toy_contenders``,
references in ``logt.bench.references``):

* ``logt``              - ``PSDQuadratic.mean_grad``: streams raw 32-bit draws
                          from the Generator's ``bitgen_t`` into exact int64 sums.
* ``numpy_chunked``     - best plain NumPy: uniforms into a reused (15, 8192)
                          buffer, row sums accumulated.
* ``numpy_raw_bits``    - logt's algorithm in NumPy (random_raw as int32, int64 sums).
* ``numpy_materialized``- the naive ``(B, 5, 5)`` array, ``.mean(0)``.

Run:  python -m pytest bench/bench_toy_average.py
      python -m pytest bench/bench_toy_average.py --benchmark-disable   (smoke)
"""
import numpy as np
import pytest

from logt.bench.cases import TOY_A, TOY_BS, TOY_NOISE, TOY_W, toy_contenders

IMPLS = ["logt", "numpy_chunked", "numpy_raw_bits", "numpy_materialized"]


@pytest.mark.parametrize("B", TOY_BS)
@pytest.mark.parametrize("impl", IMPLS)
def test_toy_average(benchmark, impl, B):
    benchmark.group = f"toy average B={B}"
    fn = toy_contenders(B, 0, (impl,))[impl]
    if impl == "numpy_materialized":   # ~0.5 s and 200 MB per call at B = 10^6
        g = benchmark.pedantic(fn, rounds=5 if B >= 10**6 else 20, warmup_rounds=1)
    else:
        g = benchmark(fn)
    assert g.shape == TOY_W.shape
    np.testing.assert_allclose(g, g.T)
    # within 6 sigma of W - A (per entry sd: noise / sqrt(3B))
    assert np.all(np.abs(g - (TOY_W - TOY_A)) < 6 * TOY_NOISE / np.sqrt(3 * B) + 1e-12)
