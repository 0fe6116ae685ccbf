"""Mini-batch gradient of the neighbour-softmax loss (``MetricLearner``'s default on a subspace): logt vs NumPy.

The quantity: ``sum_b sum_c ([c target] / t_b - p_bc) u_bc u_bc^T / (s B) + lam W`` over B anchors drawn
uniformly, ``u_bc = x_b - x_c`` over each anchor's 3 target neighbours and 20 nearest other-class points,
``p_b = softmax(-u_bc^T W u_bc / s)``, lam = 0.1.

Data: the dense benchmark problem of ``bench_metric_gradient.py`` (2000 x 64 Gaussian rows in the unit
ball, 10 classes, seeded): 2,000 anchors of 23 candidates.

Contenders, one group per B:

* ``logt_blocks`` - ``SoftmaxMetricLearning.mean_grad`` forced to blocks: gather, one dgemm, two dsyrk;
* ``logt_points`` - forced to the point path: ``Z = X W``, O(d) per candidate, one dsyr2k;
* ``logt_auto``   - the default (points when the batch's candidate rows reach ``2 n``);
* ``numpy_dense`` - the same formula in NumPy on anchors drawn by NumPy
                    (``logt.bench.references.softmax_grad_dense``: gather, ``einsum``, one matrix product).

Run:  python -m pytest bench/bench_softmax_gradient.py        (pytest-benchmark tables)
      python -m pytest bench/bench_softmax_gradient.py --benchmark-disable   (smoke)
"""
import numpy as np
import pytest

from logt.bench.cases import metric_dense_problem
from logt.bench.references import softmax_grad_dense
from logt.oracles import SoftmaxMetricLearning

LAM = 0.1
IMPLS = ("logt_blocks", "logt_points", "logt_auto", "numpy_dense")
BS = (16, 256, 4096)
_ORACLES = {}


def _oracle(path):
    if path not in _ORACLES:
        p = metric_dense_problem()
        o = SoftmaxMetricLearning(p["Xd"], p["y"], LAM, n_eval_anchors=10)
        o.point_path = path
        _ORACLES[path] = o
    return _ORACLES[path]


def numpy_softmax_grad(o, W, a):
    return softmax_grad_dense(o.X, (o.anchors, o.ptr, o.candidates, o.n_targets_per_anchor), a, W, o.unit,
                              o.lam)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("B", BS)
def test_softmax_gradient(benchmark, impl, B):
    W = metric_dense_problem()["W"]
    benchmark.group = f"softmax gradient dense 2000x64 B={B}"
    if impl == "numpy_dense":
        o = _oracle("auto")
        rng = np.random.default_rng(0)
        g = benchmark(lambda: numpy_softmax_grad(o, W, rng.integers(0, o.n_anchors, B)))
    else:
        o = _oracle(impl[len("logt_"):])
        rng = np.random.default_rng(0)
        out = np.empty_like(W)
        g = benchmark(o.mean_grad, W, B, rng, out)
        a = rng.integers(0, o.n_anchors, B)        # the kernel against the formula on given anchors
        np.testing.assert_allclose(o._mean_grad_anchors(W, a), numpy_softmax_grad(o, W, a),
                                   rtol=1e-10, atol=1e-12)
    assert g.shape == W.shape and np.isfinite(g).all()
    np.testing.assert_allclose(g, g.T, rtol=0, atol=1e-13)
