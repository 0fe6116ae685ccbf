# cython: language_level=3
"""Compiled simple domains: the Euclidean ball and the box.

Both are ``CompiledDomain`` subclasses with a trivial ``nogil``
``project_inplace``, so compiled step loops can use them without Python.
Both pickle (and deep-copy) by their parameters and compare equal when their
parameters are equal. Their bounds are stored once: ``8 * size`` (ball) or
``16 * size`` (box) bytes, checked against ``LOGT_MAX_WORKSPACE_BYTES``
(default 4 GiB) before allocating.
"""
import math

import numpy as np

from libc.math cimport fabs, sqrt, isinf
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from logt._kernels._base cimport CompiledDomain
from logt._kernels._base import _as_float_array, check_alloc


def _as_shape(shape):
    """``shape`` (an int or a sequence of ints >= 1) as a tuple of Python ints."""
    def is_int(s):
        return isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_))
    if is_int(shape):
        shape = (shape,)
    try:
        items = tuple(shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from None
    if not all(is_int(s) for s in items):
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}")
    items = tuple(int(s) for s in items)
    if any(s < 1 for s in items):
        raise ValueError(f"shape must have positive entries, got {items}")
    return items


def _shape_size(shape, int bytes_per_entry, str what):
    """Number of entries of ``shape`` (exact), checked against the allocation limit."""
    n = math.prod(shape)
    check_alloc(n * bytes_per_entry, f"{what} with shape {shape}")
    return n


cdef class EuclideanBall(CompiledDomain):
    """The Euclidean (Frobenius for matrices) ball ``{w : ||w - center|| <= radius}``.

    Parameters
    ----------
    shape : int or tuple of int
        Shape of a point.
    radius : float
        Radius, finite and > 0.
    center : array_like, optional
        Center, broadcastable to ``shape`` (default: the origin).

    Notes
    -----
    ``project(v, out=None)``: ``v`` if inside, else
    ``center + (v - center) * radius / ||v - center||``. Overflow-safe for
    every finite ``v`` and ``center``: the norm is computed scaled by
    ``max|v - center|``, and when ``v - center`` itself overflows (entries
    of opposite signs near 1.8e308) the direction is taken from
    ``v/2 - center/2``. The result lies on the segment from ``center`` to
    ``v`` (each entry between theirs), so it is always representable.
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
        _shape_size(shape, 8, "EuclideanBall")
        if center is None:
            cen = np.zeros(shape)
        else:
            try:
                cen = np.broadcast_to(_as_float_array(center, "center"), shape)
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

    def __reduce__(self):
        return (EuclideanBall, (self.shape, self.radius, self._center))

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        o = <EuclideanBall>other
        return (self.shape == o.shape and self.radius == o.radius
                and bool(np.array_equal(self._center, o._center)))

    def __hash__(self):
        return hash(("EuclideanBall", self.shape, self.radius, self._center.tobytes()))

    cdef int project_inplace(self, double* x) noexcept nogil:
        cdef Py_ssize_t i, n = self.size
        cdef double amax = 0.0, t, ss = 0.0, nrm, f, lo, hi, y
        cdef double DBL_MIN_NORMAL = 2.2250738585072014e-308
        cdef bint halved = False
        for i in range(n):
            t = fabs(x[i] - self.c[i])
            if t > amax:
                amax = t
        if amax == 0.0:
            return 0
        if isinf(amax):
            # v - c overflows: (v - c)/2 = v/2 - c/2 has the same direction
            halved = True
            amax = 0.0
            for i in range(n):
                t = fabs(0.5 * x[i] - 0.5 * self.c[i])
                if t > amax:
                    amax = t
        for i in range(n):
            if halved:
                t = (0.5 * x[i] - 0.5 * self.c[i]) / amax
            else:
                t = (x[i] - self.c[i]) / amax
            ss += t * t
        # ||v - c|| = amax * sqrt(ss) (times 2 if halved); compare without overflow
        if halved:
            if sqrt(ss) <= 0.5 * (self.radius / amax):
                return 0     # never true in practice: ||v - c|| > 1.8e308
        else:
            nrm = amax * sqrt(ss)
            if nrm <= self.radius:
                return 0
            f = self.radius / nrm
            if not isinf(nrm) and f >= DBL_MIN_NORMAL:
                # the common case: v - c and the norm are finite
                for i in range(n):
                    y = self.c[i] + (x[i] - self.c[i]) * f
                    # the projection lies between c_i and v_i: keep rounding there
                    lo = self.c[i] if self.c[i] < x[i] else x[i]
                    hi = x[i] if self.c[i] < x[i] else self.c[i]
                    x[i] = lo if y < lo else (hi if y > hi else y)
                return 0
        # huge ||v - c|| (or a tiny ratio radius/||v - c||): the unit direction
        # u = t / sqrt(ss) with t = (v - c)/amax, |t_i| <= 1, so c + radius * u
        # never forms an overflowing intermediate
        f = self.radius / sqrt(ss)
        for i in range(n):
            if halved:
                t = (0.5 * x[i] - 0.5 * self.c[i]) / amax
            else:
                t = (x[i] - self.c[i]) / amax
            y = self.c[i] + t * f
            lo = self.c[i] if self.c[i] < x[i] else x[i]
            hi = x[i] if self.c[i] < x[i] else self.c[i]
            x[i] = lo if y < lo else (hi if y > hi else y)
        return 0


cdef class Box(CompiledDomain):
    """The box ``{w : lower <= w <= upper}`` (elementwise).

    Parameters
    ----------
    lower, upper : float or array_like
        Bounds, broadcast together (and to ``shape`` if given); ``-inf`` /
        ``+inf`` allowed, NaN not; ``lower <= upper``.
    shape : int or tuple of int, optional
        Shape of a point (required if both bounds are scalars).

    Notes
    -----
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
        lo = _as_float_array(lower, "lower")
        hi = _as_float_array(upper, "upper")
        if shape is None:
            try:
                shape = np.broadcast_shapes(lo.shape, hi.shape)
            except ValueError:
                raise ValueError(
                    f"lower and upper shapes do not broadcast: {lo.shape}, {hi.shape}") from None
            if shape == ():
                raise ValueError("shape is required when lower and upper are both scalars")
        shape = _as_shape(shape)
        _shape_size(shape, 16, "Box")
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

    def __reduce__(self):
        return (Box, (self._lower, self._upper, self.shape))

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        o = <Box>other
        return (self.shape == o.shape and bool(np.array_equal(self._lower, o._lower))
                and bool(np.array_equal(self._upper, o._upper)))

    def __hash__(self):
        return hash(("Box", self.shape, self._lower.tobytes(), self._upper.tobytes()))

    cdef int project_inplace(self, double* x) noexcept nogil:
        cdef Py_ssize_t i
        for i in range(self.size):
            if x[i] < self.lo[i]:
                x[i] = self.lo[i]
            elif x[i] > self.hi[i]:
                x[i] = self.hi[i]
        return 0
