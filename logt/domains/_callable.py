"""A domain given by a user's Python projection function."""
import math

import numpy as np

from logt._kernels._base import _as_float_array, _check_out
from logt._kernels._sets import _as_shape


class CallableDomain:
    """Wrap ``fn(v) -> Pi_D(v)`` (a user's projection) as a logt domain.

    Parameters
    ----------
    fn : callable
        Takes a float64 array of shape ``shape`` (a private copy: ``fn`` may
        modify it) and returns the projected point.
    shape : int or tuple of int
        Shape of a point.

    Notes
    -----
    ``project(v, out=None)`` validates ``v`` (real, shape, finite), calls
    ``fn`` and checks its output (real array-like of shape ``shape``, finite;
    complex input or output is a TypeError, never truncated). Python-level:
    solvers use a (slower) Python loop with such a domain. It pickles (and so
    goes to a process pool) when ``fn`` pickles, e.g. a module-level function.
    """

    def __init__(self, fn, shape):
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.shape = shape = _as_shape(shape)
        self.size = math.prod(shape)

    def __repr__(self):
        return f"CallableDomain({getattr(self.fn, '__name__', self.fn)!r}, shape={self.shape})"

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self.fn == other.fn and self.shape == other.shape

    def __hash__(self):
        return hash((CallableDomain, self.fn, self.shape))

    def project(self, v, out=None):
        """``fn(v)`` validated; written into ``out`` when given (``out`` may be ``v``)."""
        a = np.array(_as_float_array(v, "v"), copy=True)
        if a.shape != self.shape:
            raise ValueError(f"v must have shape {self.shape}, got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError("v contains NaN or Inf")
        if out is not None:
            _check_out(out, self.shape)
        r = self.fn(a)
        try:
            r = _as_float_array(r, "fn's result")
        except TypeError as exc:
            raise TypeError(
                f"fn must return a real float array, got {type(r).__name__}: {exc}") from None
        if r.shape != self.shape:
            raise ValueError(f"fn returned shape {r.shape}, expected {self.shape}")
        if not np.isfinite(r).all():
            raise ValueError("fn returned NaN or Inf")
        if out is None:
            return r if r is a else r.copy()
        np.copyto(out, r)
        return out
