"""Linear minimization oracles and constraint functions of the domains (projection-free methods).

* :func:`linear_oracle` ``(domain)`` -> an object with ``lmo(G, out=None)``,
  ``argmin_{S in D} <G, S>``: compiled for ``EuclideanBall``, ``Box`` (finite
  bounds) and ``TraceBoundedPSD`` (so ``method="frank_wolfe"`` runs without
  Python per step); a user's domain works if it has ``lmo(G, out=None)``.
* :func:`lmo` ``(domain, G, out=None)`` -- the same, in one call.
* :func:`constraint_function` ``(domain)`` -> an object with
  ``value_and_grad(x) -> (c(x), subgradient)`` and ``rho`` for
  ``D = {x : c(x) <= 0}`` (``method="one_projection_sgd"``): compiled for
  ``EuclideanBall`` (``||x - center|| - radius``), ``Box`` (``dist(x, Box)``),
  ``PSDCone`` (``-lambda_min``) and ``TraceBoundedPSD``
  (``max(-lambda_min, (tr - tau)/sqrt(d))``); a user's domain works if it has
  ``constraint(x) -> (value, subgradient)`` (and optionally ``constraint_rho``).
"""
import math

import numpy as np

from logt._kernels._free import (BallConstraint, BallLMO, BoxConstraint, BoxLMO, ConstraintFunction,
                                 LinearOracle)
from logt._kernels._psd import PSDProjector
from logt._kernels._sets import Box, EuclideanBall
from logt._kernels._trace_psd import PSDConstraint, TraceBoundedPSD

__all__ = ["linear_oracle", "lmo", "constraint_function"]


class _PythonLinearOracle:
    """Adapter for a user domain's ``lmo(G, out=None)`` (the slow path: Python per call)."""

    def __init__(self, domain):
        self.domain = domain
        self.shape = tuple(domain.shape)

    def lmo(self, g, out=None):
        if out is None:
            out = np.empty(self.shape)
        r = self.domain.lmo(g, out=out)
        if r is not out:
            a = np.asarray(r, dtype=np.float64) if r is not None else None
            if a is None or a.shape != self.shape:
                raise TypeError(f"domain.lmo must return an array of shape {self.shape} (or fill out=), "
                                f"got {type(r).__name__}")
            np.copyto(out, a)
        return out


class _PythonConstraint:
    """Adapter for a user domain's ``constraint(x) -> (value, subgradient)``."""

    def __init__(self, domain):
        self.domain = domain
        self.shape = tuple(domain.shape)
        rho = getattr(domain, "constraint_rho", 1.0)
        if isinstance(rho, bool) or not isinstance(rho, (int, float, np.floating)) or not (
                math.isfinite(float(rho)) and float(rho) > 0):
            raise ValueError(f"domain.constraint_rho must be a finite number > 0, got {rho!r}")
        self.rho = float(rho)

    def value_and_grad(self, x):
        r = self.domain.constraint(x)
        try:
            v, g = r
            v = float(v)
            g = np.asarray(g, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError("domain.constraint(x) must return (value, subgradient)") from None
        if g.shape != self.shape:
            raise ValueError(f"domain.constraint's subgradient must have shape {self.shape}, got {g.shape}")
        return v, (g if v > 0 else np.zeros(self.shape))


def linear_oracle(domain):
    """The linear minimization oracle of ``domain`` (see the module docstring); TypeError if it has none."""
    if isinstance(domain, LinearOracle):
        return domain
    if isinstance(domain, TraceBoundedPSD):
        return domain.linear_oracle
    if isinstance(domain, EuclideanBall):
        return BallLMO(domain)
    if isinstance(domain, Box):
        return BoxLMO(domain)
    if callable(getattr(domain, "lmo", None)):
        return _PythonLinearOracle(domain)
    if isinstance(domain, PSDProjector):
        raise TypeError("the PSD cone is unbounded: a linear minimization oracle (Frank-Wolfe) needs a "
                        "compact domain; use TraceBoundedPSD(d, tau)")
    raise TypeError(f"{type(domain).__name__} has no linear minimization oracle: Frank-Wolfe needs "
                    "EuclideanBall, Box (finite bounds), TraceBoundedPSD or a domain with lmo(G, out=None)")


def lmo(domain, G, out=None):
    """``argmin_{S in domain} <G, S>`` (see :func:`linear_oracle`)."""
    return linear_oracle(domain).lmo(G, out)


def constraint_function(domain):
    """The constraint function ``c`` with ``domain = {c <= 0}`` (see the module docstring)."""
    if isinstance(domain, ConstraintFunction):
        return domain
    if isinstance(domain, TraceBoundedPSD):
        return domain.constraint_function
    if isinstance(domain, PSDProjector):
        return PSDConstraint(domain.d)
    if isinstance(domain, EuclideanBall):
        return BallConstraint(domain)
    if isinstance(domain, Box):
        return BoxConstraint(domain)
    if callable(getattr(domain, "constraint", None)):
        return _PythonConstraint(domain)
    raise TypeError(f"{type(domain).__name__} has no constraint function: one-projection SGD needs "
                    "EuclideanBall, Box, PSDCone, TraceBoundedPSD or a domain with constraint(x) -> "
                    "(value, subgradient)")
