# cython: language_level=3
"""Compiled simple domains: the Euclidean ball and the box.

Both are ``CompiledDomain`` subclasses with a trivial ``nogil``
``project_inplace``, so compiled step loops can use them without Python.
"""
import numpy as np

from libc.math cimport fabs, sqrt
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from logt._kernels._base cimport CompiledDomain


def _as_shape(shape):
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(s < 1 for s in shape):
        raise ValueError(f"shape must have positive entries, got {shape}")
    return shape


cdef class EuclideanBall(CompiledDomain):
    """The Euclidean (Frobenius for matrices) ball ``{w : ||w - center|| <= radius}``.

    shape  : int or tuple, the shape of a point.
    radius : float > 0 (finite).
    center : None (the origin) or an array broadcastable to ``shape``.

    ``project(v, out=None)``: ``v`` if inside, else
    ``center + (v - center) * radius / ||v - center||`` (computed with a
    scaled norm, so huge entries do not overflow).
    """
    cdef double* c
    cdef readonly double radius
    cdef object _center

    def __cinit__(self, *args, **kwargs):
        self.c = NULL

    def __init__(self, shape, radius=1.0, center=None):
        shape = _as_shape(shape)
        try:
            r = float(radius)
        except (TypeError, ValueError):
            raise TypeError(f"radius must be a float, got {type(radius).__name__}") from None
        if not (np.isfinite(r) and r > 0.0):
            raise ValueError(f"radius must be finite and > 0, got {radius!r}")
        if center is None:
            cen = np.zeros(shape)
        else:
            try:
                cen = np.broadcast_to(np.asarray(center, dtype=np.float64), shape)
            except ValueError:
                raise ValueError(
                    f"center must broadcast to shape {shape}, got {np.shape(center)}") from None
            if not np.isfinite(cen).all():
                raise ValueError("center contains NaN or Inf")
        cen = np.ascontiguousarray(cen, dtype=np.float64).copy()
        self.shape = shape
        self.size = cen.size
        self.radius = r
        self._center = cen
        free(self.c)
        self.c = <double*>malloc(<size_t>self.size * sizeof(double))
        if self.c == NULL:
            raise MemoryError()
        cdef double[::1] cv = cen.reshape(-1)
        memcpy(self.c, &cv[0], <size_t>self.size * sizeof(double))
        cen.setflags(write=False)

    def __dealloc__(self):
        free(self.c)

    @property
    def center(self):
        """The center (read-only array of shape ``shape``)."""
        return self._center

    def __repr__(self):
        return f"EuclideanBall(shape={self.shape}, radius={self.radius!r})"

    cdef int project_inplace(self, double* x) noexcept nogil:
        cdef Py_ssize_t i, n = self.size
        cdef double amax = 0.0, t, ss = 0.0, nrm, f
        for i in range(n):
            t = fabs(x[i] - self.c[i])
            if t > amax:
                amax = t
        if amax == 0.0:
            return 0
        for i in range(n):
            t = (x[i] - self.c[i]) / amax
            ss += t * t
        nrm = amax * sqrt(ss)
        if nrm <= self.radius:
            return 0
        f = self.radius / nrm
        for i in range(n):
            x[i] = self.c[i] + (x[i] - self.c[i]) * f
        return 0


cdef class Box(CompiledDomain):
    """The box ``{w : lower <= w <= upper}`` (elementwise).

    lower, upper : floats or arrays, broadcast together (and to ``shape`` if
                   given); ``-inf`` / ``+inf`` allowed, NaN not; ``lower <= upper``.
    shape        : optional shape of a point (required if both bounds are scalars).

    ``project(v, out=None)`` is ``clip(v, lower, upper)``.
    """
    cdef double* lo
    cdef double* hi
    cdef object _lower
    cdef object _upper

    def __cinit__(self, *args, **kwargs):
        self.lo = NULL
        self.hi = NULL

    def __init__(self, lower, upper, shape=None):
        try:
            lo = np.asarray(lower, dtype=np.float64)
            hi = np.asarray(upper, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError("lower and upper must be floats or float arrays") from None
        if shape is None:
            try:
                shape = np.broadcast_shapes(lo.shape, hi.shape)
            except ValueError:
                raise ValueError(
                    f"lower and upper shapes do not broadcast: {lo.shape}, {hi.shape}") from None
            if shape == ():
                raise ValueError("shape is required when lower and upper are both scalars")
        shape = _as_shape(shape)
        try:
            lo = np.broadcast_to(lo, shape)
            hi = np.broadcast_to(hi, shape)
        except ValueError:
            raise ValueError(
                f"lower/upper must broadcast to shape {shape}, got {lo.shape}, {hi.shape}") from None
        if np.isnan(lo).any() or np.isnan(hi).any():
            raise ValueError("lower and upper must not contain NaN")
        if not (lo <= hi).all():
            raise ValueError("lower must be <= upper everywhere")
        if np.isposinf(lo).any() or np.isneginf(hi).any():
            raise ValueError("lower must be < +inf and upper > -inf (empty box)")
        lo = np.ascontiguousarray(lo, dtype=np.float64).copy()
        hi = np.ascontiguousarray(hi, dtype=np.float64).copy()
        self.shape = shape
        self.size = lo.size
        self._lower = lo
        self._upper = hi
        free(self.lo)
        free(self.hi)
        self.lo = <double*>malloc(<size_t>self.size * sizeof(double))
        self.hi = <double*>malloc(<size_t>self.size * sizeof(double))
        if self.lo == NULL or self.hi == NULL:
            raise MemoryError()
        cdef double[::1] lv = lo.reshape(-1)
        cdef double[::1] hv = hi.reshape(-1)
        memcpy(self.lo, &lv[0], <size_t>self.size * sizeof(double))
        memcpy(self.hi, &hv[0], <size_t>self.size * sizeof(double))
        lo.setflags(write=False)
        hi.setflags(write=False)

    def __dealloc__(self):
        free(self.lo)
        free(self.hi)

    @property
    def lower(self):
        """Lower bounds (read-only array of shape ``shape``)."""
        return self._lower

    @property
    def upper(self):
        """Upper bounds (read-only array of shape ``shape``)."""
        return self._upper

    def __repr__(self):
        return f"Box(shape={self.shape})"

    cdef int project_inplace(self, double* x) noexcept nogil:
        cdef Py_ssize_t i
        for i in range(self.size):
            if x[i] < self.lo[i]:
                x[i] = self.lo[i]
            elif x[i] > self.hi[i]:
                x[i] = self.hi[i]
        return 0
