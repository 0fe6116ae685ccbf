"""Mini-batch gradient of regularized metric learning (paper Sec. 5, Fig. 2): logt vs NumPy.

The quantity: ``D_B^T diag(c) D_B / B + lam W`` over B random ordered pairs,
``D = x_i - x_j``, ``c = y_ij sigmoid(-y_ij (1 - D^T W D))``, lam = 0.1.

Data: the real a9a (32561 x 123, ~14 nnz/row) and mushrooms (8124 x 112, 21
nnz/row) when found (``LOGT_DATA_DIR`` or ``../shared/data`` next to the repo),
else synthetic binary data of the same shape and nnz (``logt.bench.references``).

Contenders, one group per (data set, B), built by ``logt.bench.cases.metric_contenders``:

* ``logt_sparse_1t`` - ``MetricLearning(X_csr, n_threads=1).mean_grad``: pairs from
                       the ``bitgen_t``, a nogil CSR kernel on D's nonzero block.
* ``logt_sparse``    - the same with the default threads (min(2, cores), pthreads).
* ``logt_dense``     - ``MetricLearning(X_dense).mean_grad``: gather + dgemm + 2 dsyrk.
* ``numpy_dense``    - the NumPy formulation (``metric_grad_dense``).
* ``numpy_loop``     - a naive per-pair Python loop (B = 64 only).

Dense paths (``test_metric_gradient_dense_paths``, synthetic 2000 x 64 rows, uniform pairs):
``logt_pairs`` (gather + dgemm + dsyrk, O(B d^2)), ``logt_points`` (``Z = X W``, the pair
Laplacian ``Y``, then ``X^T Y``: O(n d^2 + B d)), ``logt_auto`` (points when ``B >= 2n``)
and ``numpy_dense``.

Run:  python -m pytest bench/bench_metric_gradient.py        (pytest-benchmark tables)
      python -m pytest bench/bench_metric_gradient.py --benchmark-disable   (smoke)
"""
import numpy as np
import pytest

from logt.bench.cases import (METRIC_BS, METRIC_DENSE_BS, METRIC_DENSE_IMPLS, METRIC_LOOP_MAX_B,
                              metric_contenders, metric_dense_problem, metric_problem)

IMPLS = ["logt_sparse_1t", "logt_sparse", "logt_dense", "numpy_dense", "numpy_loop"]
CASES = [(impl, name, B) for B in METRIC_BS for name in ("a9a", "mushrooms") for impl in IMPLS
         if impl != "numpy_loop" or B <= METRIC_LOOP_MAX_B]


@pytest.mark.parametrize("impl, name, B", CASES)
def test_metric_gradient(benchmark, impl, name, B):
    p = metric_problem(name)
    benchmark.group = f"metric gradient {name} ({p['src']}) B={B}"
    fn = metric_contenders(p, B, 0, (impl,))[impl]
    if impl == "numpy_loop":
        g = benchmark.pedantic(fn, rounds=10, warmup_rounds=1)
    else:
        g = benchmark(fn)
    assert g.shape == p["W"].shape and np.isfinite(g).all()
    np.testing.assert_allclose(g, g.T, rtol=0, atol=1e-14)


@pytest.mark.parametrize("impl", METRIC_DENSE_IMPLS)
@pytest.mark.parametrize("B", METRIC_DENSE_BS)
def test_metric_gradient_dense_paths(benchmark, impl, B):
    p = metric_dense_problem()
    benchmark.group = f"metric gradient dense 2000x64 ({p['src']}) B={B}"
    g = benchmark(metric_contenders(p, B, 0, (impl,))[impl])
    assert g.shape == p["W"].shape and np.isfinite(g).all()
    if impl.startswith("logt_"):      # the kernel's pairs (its own sampler), the dense NumPy formula
        from logt._kernels._pairs import _sample_pairs
        from logt.bench.references import metric_grad_dense
        pairs = _sample_pairs(len(p["y"]), B, np.random.default_rng(1))
        ref = metric_grad_dense(p["Xd"], p["y"], p["W"], B, None, pairs=pairs)
        got = metric_contenders(p, B, 1, (impl,))[impl]()
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
