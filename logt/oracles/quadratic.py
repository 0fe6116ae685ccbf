"""The paper's toy objective ``F(W) = 0.5 * ||W - A||_F^2`` (compiled oracle).

The class lives in the Cython module ``logt._kernels._toy`` (so compiled step
loops can ``cimport`` it); this module re-exports it.
"""
from logt._kernels._toy import PSDQuadratic

__all__ = ["PSDQuadratic"]
