"""Mahalanobis metric learning on logt's O(log T)-projection solver.

* :class:`MetricLearner` -- supervised ``fit(X, y)``: a scikit-learn transformer
  (``transform``, ``get_mahalanobis_matrix``, ``get_metric``, ``pair_distance``);
  :meth:`MetricLearner.paper` gives the paper's Fig. 2 setting.
* :class:`PairsMetricLearner` -- metric-learn's pairs API: ``fit(pairs, y_pairs)``,
  ``predict``, ``decision_function``, ``score``, ``calibrate_threshold``.
* :mod:`.scaling` -- the internal scaling (raw data of any magnitude works).
* :mod:`.outliers` -- glitched training rows (entries blown up by orders of magnitude) found and repaired.
* :mod:`.reference` -- dense NumPy objectives and a full-batch solver (tests, measurements).
* :mod:`.optimizer` -- how the estimators call ``logt.minimize``; ``practical_metric_params``.
* :func:`auto_budget` -- the budget ``T`` of ``T="auto"`` (the default) from ``lam``.
"""
from logt.metric_learning._base import DegenerateMetricWarning, auto_budget
from logt.metric_learning._compat import HAVE_SKLEARN, NotFittedError
from logt.metric_learning.optimizer import practical_metric_params
from logt.metric_learning.outliers import GlitchedRowsWarning
from logt.metric_learning.pairs import PairsMetricLearner
from logt.metric_learning.supervised import MetricLearner

__all__ = ["MetricLearner", "PairsMetricLearner", "NotFittedError", "practical_metric_params", "auto_budget",
           "HAVE_SKLEARN", "DegenerateMetricWarning", "GlitchedRowsWarning"]
