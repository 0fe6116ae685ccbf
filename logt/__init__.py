"""logt: O(log T) projections for stochastic optimization of smooth and strongly convex functions.

Implements Algorithm 1 of Zhang, Yang, Jin and He (ICML 2013) with compiled
kernels, plus SGD and Epoch-GD baselines on the same kernels.
"""
from logt._minimize import logt_params, minimize
from logt._result import MinimizeResult
from logt._threads import single_threaded_blas

__version__ = "0.1.0"

__all__ = ["minimize", "logt_params", "MinimizeResult", "single_threaded_blas"]
