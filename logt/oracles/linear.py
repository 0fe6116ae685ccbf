"""Regularized linear models (least squares, logistic regression) on a data matrix: a compiled oracle.

The class lives in the Cython module ``logt._kernels._linear`` (so compiled step
loops can use it without Python); this module re-exports it.
"""
from logt._kernels._linear import LinearModel

__all__ = ["LinearModel"]
