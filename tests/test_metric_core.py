"""logt._kernels._metric_core.DenseMetricCore: what the triplet and neighbour-softmax oracles share (the
data, the two gradient paths and their choice, the given-list hook, the checks), tested on both."""
import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import logt
from logt._kernels._metric_core import DenseMetricCore
from logt.domains import PSDCone
from logt.oracles import SoftmaxMetricLearning, TripletMetricLearning

try:
    from ._labelled import labelled_rows as _data
except ImportError:
    from _labelled import labelled_rows as _data

LAM = 0.1
ORACLES = {"softmax": (SoftmaxMetricLearning, "_mean_grad_anchors", "n_anchors", "anchor indices"),
           "triplets": (TripletMetricLearning, "_mean_grad_triplets", "n_triplets", "triplet indices")}


@pytest.mark.parametrize("kind", ORACLES)
def test_both_oracles_are_dense_metric_cores(kind):
    cls, hook, count, _ = ORACLES[kind]
    o = cls(*_data(), LAM)
    assert isinstance(o, DenseMetricCore)
    assert o.shape == (5, 5) and o.size == 25 and (o.n_samples, o.n_features) == (60, 5)
    assert o.lam == LAM and o.unit > 0 and o.point_path == "auto"


@pytest.mark.parametrize("kind", ORACLES)
def test_given_list_hook_is_the_mean_of_single_items(kind):
    """The given-list gradient over items ``a`` is the mean of the one-item gradients (an independent
    reference: ``B`` separate calls), on both paths."""
    cls, hook, count, _ = ORACLES[kind]
    o = cls(*_data(), LAM)
    W = np.random.default_rng(1).standard_normal((5, 5))
    W = W @ W.T
    items = np.array([0, 3, 3, 7, getattr(o, count) - 1], dtype=np.int32)
    for path in ("blocks", "points"):
        o.point_path = path
        single = np.mean([getattr(o, hook)(W, [a]) for a in items], axis=0)
        assert np.allclose(getattr(o, hook)(W, items), single, rtol=1e-12, atol=1e-14)
        out = np.empty((5, 5))
        assert getattr(o, hook)(W, items, out=out) is out and np.allclose(out, single, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", ORACLES)
def test_data_labels_and_lam_are_checked(kind):
    """The constructors' shared checks (logt.oracles._thresholdless): dense rows in the unit ball, finite,
    two classes, a class with two points, lam finite and > 0."""
    cls = ORACLES[kind][0]
    X, y = _data(n=20, d=3)
    with pytest.raises(TypeError, match="dense"):
        cls(sp.csr_matrix(X), y)
    with pytest.raises(ValueError, match="norm"):
        cls(X * 2.0, y)
    with pytest.raises(ValueError, match="NaN"):
        cls(np.where(np.eye(20, 3) > 0, np.nan, X), y)
    with pytest.raises(ValueError, match="unique"):
        cls(X, np.arange(20))
    with pytest.raises(ValueError, match="two classes"):
        cls(X, np.zeros(20))
    for lam in (0.0, -1.0, math.inf, True):
        with pytest.raises(ValueError, match="lam"):
            cls(X, y, lam)


@pytest.mark.parametrize("kind", ORACLES)
def test_core_checks_raise_clear_errors(kind):
    cls, hook, count, words = ORACLES[kind]
    o = cls(*_data(n=20, d=3), LAM)
    with pytest.raises(ValueError, match="B must be"):
        o.mean_grad(np.eye(3), 0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="B must be an int"):
        o.mean_grad(np.eye(3), 2.0, np.random.default_rng(0))
    with pytest.raises(ValueError):
        o.mean_grad(np.eye(4), 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match=words):
        getattr(o, hook)(np.eye(3), [getattr(o, count)])
    with pytest.raises(ValueError):
        getattr(o, hook)(np.eye(4), [0])
    with pytest.raises(ValueError, match="point_path"):
        o.point_path = "fast"
    with pytest.raises(RuntimeError, match="only once"):
        o._setup(*([None] * 6), 0.1, 1.0) if kind == "softmax" else o._setup(*([None] * 5), 0.1, 1.0)
    with pytest.raises(TypeError, match="pickle"):
        pickle.dumps(o)


@pytest.mark.parametrize("kind", ORACLES)
def test_minimize_reaches_the_full_batch_optimum(kind):
    """logt.minimize on the oracle ends near the optimum of a long full-batch projected gradient run."""
    cls, hook, count, _ = ORACLES[kind]
    o = cls(*_data(n=40, d=3), LAM)
    every = np.arange(getattr(o, count))
    W = np.zeros((3, 3))
    cone = PSDCone(3)
    for _ in range(3000):
        W = cone.project(W - getattr(o, hook)(W, every) / o.L)
    f_star = o.value(W)
    res = logt.minimize(o, PSDCone(3), T=200_000, rng=0)
    assert np.isfinite(res.fun) and o.value(res.x) - f_star < 2e-3 * abs(f_star)
