"""logt.oracles: stochastic gradient oracles.

* :class:`Oracle` - the protocol (``shape``, ``mean_grad``; optional ``value``,
  ``L``, ``lam``, ``G``, ``f_star``, ``minimizer``).
* :class:`PSDQuadratic` - the paper's toy problem, compiled.
* :class:`MetricLearning` - regularized distance metric learning on random pairs, compiled.
* :class:`TripletMetricLearning` - metric learning on (anchor, target, impostor) triplets, compiled.
* :class:`SoftmaxMetricLearning` - metric learning by a softmax over each point's fixed neighbours (NCA-like, convex), compiled.
* :class:`DiagonalQuadratic` - ``0.5 * sum h (x - a)^2``, a chosen condition number, compiled.
* :class:`FunctionOracle` - wraps a user's Python gradient function (slow path).
* :class:`LinearModel` - least squares / logistic regression on a data matrix, compiled.
* :mod:`logt.oracles.neighbors` - neighbour tables and pair distances of ``sampling="neighbors"``.
"""
from logt.oracles._protocol import Oracle
from logt.oracles.function import FunctionOracle
from logt.oracles.linear import LinearModel
from logt.oracles.metric import MetricLearning
from logt.oracles.quadratic import PSDQuadratic
from logt.oracles.triplet import TripletMetricLearning
from logt.oracles.softmax import SoftmaxMetricLearning
from logt._kernels._wquad import DiagonalQuadratic

__all__ = ["Oracle", "PSDQuadratic", "MetricLearning", "TripletMetricLearning", "SoftmaxMetricLearning", "FunctionOracle", "DiagonalQuadratic", "LinearModel"]
