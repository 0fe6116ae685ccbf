"""The oracle protocol.

An oracle for ``F`` over points of shape ``shape`` provides

* ``shape`` : tuple, the shape of a point ``w``;
* ``mean_grad(w, B, rng, out=None) -> out`` : the mean of ``B`` independent
  stochastic gradients ``g_hat(w)`` (``E[g_hat(w)] = grad F(w)``) in ONE call,
  written into ``out`` (float64, shape ``shape``) when given;

and optionally

* ``value(w) -> float`` : ``F(w)`` (exact or a fixed estimate), used for ``fun``
  and traces;
* ``L``, ``lam``, ``G`` : smoothness, strong convexity and gradient-norm bound,
  read by ``logt.minimize`` when not passed explicitly;
* ``f_star`` and ``minimizer()`` : the optimum over the intended domain, when known.

Compiled oracles (subclasses of ``logt._kernels._base.CompiledOracle``) also
offer the C-level ``mean_grad_into`` that the compiled SGD / Epoch-GD loops
call without the GIL.
"""
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Oracle(Protocol):
    shape: tuple

    def mean_grad(self, w: np.ndarray, B: int, rng: np.random.Generator,
                  out: np.ndarray | None = None) -> np.ndarray: ...
