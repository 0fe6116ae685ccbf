"""logt: O(log T) projections for stochastic optimization of smooth and strongly convex functions.

Implements Algorithm 1 of Zhang, Yang, Jin and He (ICML 2013) with compiled
kernels, plus SGD and Epoch-GD baselines on the same kernels.

* ``minimize`` -- the epoch drivers (``method="logt" | "sgd" | "epoch_gd"``).
* ``logt.domains`` -- ``PSDCone``, ``EuclideanBall``, ``Box``, ``CallableDomain``; ``project_psd``.
* ``logt.oracles`` -- ``PSDQuadratic`` (the toy), ``MetricLearning``, ``FunctionOracle``.
* ``logt.params`` -- Theorem 1 / 2 parameter rules, rounding, closed-form counts.
* ``MetricLearner`` -- a scikit-learn-style metric learner on the pair oracle.
"""
from logt._checkpoint import CheckpointError
from logt._minimize import logt_params, minimize
from logt._result import MinimizeResult
from logt._threads import single_threaded_blas
from logt.domains import Box, CallableDomain, EuclideanBall, PSDCone, project_psd
from logt.metric_learning import DegenerateMetricWarning
from logt.metric_learning import MetricLearner, NotFittedError, PairsMetricLearner, practical_metric_params

__version__ = "0.1.0"

__all__ = [
    "minimize", "logt_params", "MinimizeResult", "CheckpointError", "single_threaded_blas",
    "PSDCone", "EuclideanBall", "Box", "CallableDomain", "project_psd",
    "MetricLearner", "NotFittedError", "practical_metric_params", "PairsMetricLearner",
    "DegenerateMetricWarning",
]
