"""Mini-batch gradient of the triplet loss (``MetricLearner(loss="triplets")``): logt vs NumPy.

The quantity: ``sum_b sigmoid(z_b) / (s B) (D1_b D1_b^T - D2_b D2_b^T) + lam W`` over B triplets drawn
uniformly from the oracle's list, ``z_b = (D1^T W D1 - D2^T W D2) / s + 1``, lam = 0.1.

Data: the dense benchmark problem of ``bench_metric_gradient.py`` (2000 x 64 Gaussian rows in the unit
ball, 10 classes, seeded), its 3 x 3 triplets per point (about 18,000).

Contenders, one group per B:

* ``logt_blocks`` - ``TripletMetricLearning.mean_grad`` forced to blocks: gather, one dgemm, two dsyrk;
* ``logt_points`` - forced to the point path: ``Z = X W``, O(d) per triplet, one dsyr2k;
* ``logt_auto``   - the default (points when ``B >= n``);
* ``numpy_dense`` - the same formula in NumPy on triplets drawn by NumPy
                    (``logt.bench.references.triplet_grad_dense``: ``einsum`` + two matrix products).

Run:  python -m pytest bench/bench_triplet_gradient.py        (pytest-benchmark tables)
      python -m pytest bench/bench_triplet_gradient.py --benchmark-disable   (smoke)
"""
import numpy as np
import pytest

from logt.bench.cases import metric_dense_problem
from logt.bench.references import triplet_grad_dense
from logt.oracles import TripletMetricLearning

LAM = 0.1
IMPLS = ("logt_blocks", "logt_points", "logt_auto", "numpy_dense")
BS = (64, 1024, 16384)
_ORACLES = {}


def _oracle(path):
    if path not in _ORACLES:
        p = metric_dense_problem()
        o = TripletMetricLearning(p["Xd"], p["y"], LAM, n_eval_triplets=10)
        o.point_path = path
        _ORACLES[path] = o
    return _ORACLES[path]


def numpy_triplet_grad(o, W, t):
    return triplet_grad_dense(o.X, o.triplets, t, W, o.unit, o.lam)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("B", BS)
def test_triplet_gradient(benchmark, impl, B):
    W = metric_dense_problem()["W"]
    benchmark.group = f"triplet gradient dense 2000x64 B={B}"
    if impl == "numpy_dense":
        o = _oracle("auto")
        rng = np.random.default_rng(0)
        g = benchmark(lambda: numpy_triplet_grad(o, W, rng.integers(0, o.n_triplets, B)))
    else:
        o = _oracle(impl[len("logt_"):])
        rng = np.random.default_rng(0)
        out = np.empty_like(W)
        g = benchmark(o.mean_grad, W, B, rng, out)
        t = rng.integers(0, o.n_triplets, B)       # the kernel against the formula on given triplets
        np.testing.assert_allclose(o._mean_grad_triplets(W, t), numpy_triplet_grad(o, W, t),
                                   rtol=1e-10, atol=1e-12)
    assert g.shape == W.shape and np.isfinite(g).all()
    np.testing.assert_allclose(g, g.T, rtol=0, atol=1e-13)
