"""logt: O(log T) projections for stochastic optimization of smooth and strongly convex functions.

Implements Algorithm 1 of Zhang, Yang, Jin and He (ICML 2013) with compiled
kernels, plus the baselines (SGD, Epoch-GD, ...) on the same kernels.

* ``minimize`` -- one entry point for every method (``logt.methods``).
* ``logt.domains`` -- ``PSDCone``, ``EuclideanBall``, ``Box``, ``TraceBoundedPSD``, ``CallableDomain``; ``project_psd``.
* ``logt.oracles`` -- ``PSDQuadratic`` (the toy), ``MetricLearning``, ``LinearModel``, ``FunctionOracle``, ...
* ``logt.params`` -- Theorem 1 / 2 parameter rules, rounding, closed-form counts.
* ``MetricLearner``, ``PairsMetricLearner`` -- scikit-learn-style metric learners on the pair oracle.
"""
import os as _os
from importlib.metadata import PackageNotFoundError as _PackageNotFoundError, version as _version


def _check_compiled():
    """Import one compiled kernel; from an unbuilt source checkout, say what to do instead of a bare error."""
    try:
        from logt._kernels import _base  # noqa: F401
    except ImportError as exc:
        here = _os.path.dirname(_os.path.abspath(__file__))
        if _os.path.exists(_os.path.join(here, "_kernels", "_base.pyx")):
            raise ImportError(
                f"logt's compiled extensions are not built in {here}: this is logt's source tree, "
                "not the installed package (Python puts the current directory first on sys.path). "
                "Run from another directory to use the installed package, or build in place with "
                "'python -m pip install -e .'") from exc
        raise


_check_compiled()

from logt._checkpoint import CheckpointError
from logt._minimize import logt_params, minimize
from logt._result import ConvergenceWarning, MinimizeResult
from logt._threads import single_threaded_blas
from logt.domains import Box, CallableDomain, EuclideanBall, PSDCone, project_psd
from logt.metric_learning import (DegenerateMetricWarning, GlitchedRowsWarning, MetricLearner, NotFittedError,
                                  PairsMetricLearner, practical_metric_params)

try:
    __version__ = _version("logt")
except _PackageNotFoundError:         # not installed (e.g. a source tree on sys.path with in-place builds)
    __version__ = "0+unknown"

__all__ = [
    "minimize", "logt_params", "MinimizeResult", "ConvergenceWarning", "CheckpointError", "single_threaded_blas",
    "PSDCone", "EuclideanBall", "Box", "CallableDomain", "project_psd",
    "MetricLearner", "NotFittedError", "practical_metric_params", "PairsMetricLearner",
    "DegenerateMetricWarning", "GlitchedRowsWarning",
]
