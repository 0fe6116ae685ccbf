"""The domain protocol.

A domain ``D`` provides ``shape`` (the shape of a point) and
``project(v, out=None) -> out``, the Euclidean (Frobenius for matrices)
projection ``Pi_D(v)``, written into ``out`` when given (``out`` may be ``v``).

Compiled domains (subclasses of ``logt._kernels._base.CompiledDomain``) also
offer the C-level ``project_inplace`` used by the compiled step loops.
"""
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Domain(Protocol):
    shape: tuple

    def project(self, v: np.ndarray, out: np.ndarray | None = None) -> np.ndarray: ...
