"""A domain given by a user's Python projection function."""
import numpy as np

from logt.domains._sets import _as_shape


class CallableDomain:
    """Wrap ``fn(v) -> Pi_D(v)`` (a user's projection) as a logt domain.

    fn    : callable taking a float64 array of shape ``shape`` (a private
            copy: ``fn`` may modify it) and returning the projected point.
    shape : int or tuple, the shape of a point.

    ``project(v, out=None)`` validates ``v`` (shape, finite), calls ``fn`` and
    checks its output (array-like of shape ``shape``, finite). Python-level:
    solvers use a (slower) Python loop with such a domain.
    """

    def __init__(self, fn, shape):
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.shape = shape = _as_shape(shape)
        self.size = int(np.prod(shape))

    def __repr__(self):
        return f"CallableDomain({getattr(self.fn, '__name__', self.fn)!r}, shape={self.shape})"

    def project(self, v, out=None):
        """``fn(v)`` validated; written into ``out`` when given (``out`` may be ``v``)."""
        a = np.array(v, dtype=np.float64, copy=True)
        if a.shape != self.shape:
            raise ValueError(f"v must have shape {self.shape}, got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError("v contains NaN or Inf")
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
            if out.dtype != np.float64:
                raise TypeError(f"out must have dtype float64, got {out.dtype}")
            if out.shape != self.shape:
                raise ValueError(f"out must have shape {self.shape}, got {out.shape}")
            if not out.flags.writeable:
                raise ValueError("out must be writeable")
        r = self.fn(a)
        try:
            r = np.asarray(r, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"fn must return a float array, got {type(r).__name__}") from None
        if r.shape != self.shape:
            raise ValueError(f"fn returned shape {r.shape}, expected {self.shape}")
        if not np.isfinite(r).all():
            raise ValueError("fn returned NaN or Inf")
        if out is None:
            return r if r is a else r.copy()
        np.copyto(out, r)
        return out
