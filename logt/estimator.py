"""Compatibility module: the estimators live in :mod:`logt.metric_learning`.

``from logt.estimator import MetricLearner, NotFittedError, practical_metric_params``
keeps working.
"""
from logt.metric_learning import MetricLearner, NotFittedError, PairsMetricLearner, practical_metric_params
from logt.metric_learning.optimizer import PRACTICAL_B1, PRACTICAL_ETA_TIMES_L, PRACTICAL_M

__all__ = ["MetricLearner", "PairsMetricLearner", "NotFittedError", "practical_metric_params",
           "PRACTICAL_ETA_TIMES_L", "PRACTICAL_M", "PRACTICAL_B1"]
