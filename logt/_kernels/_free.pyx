# cython: language_level=3
"""Projection-free primitives: linear minimization oracles and constraint functions.

Two C-level protocols (``_free.pxd``) for methods that avoid projections:

* ``LinearOracle.lmo_into(g, s)``: ``s = argmin_{s in D} <g, s>``, the linear
  minimization oracle (LMO) of a compact domain ``D`` (stochastic Frank-Wolfe);
* ``ConstraintFunction.value_grad(x, val, grad)``: a convex ``c`` with
  ``D = {x : c(x) <= 0}``, its value and (when ``c(x) > 0``) a subgradient, and
  ``rho``, a lower bound of ``||grad c||`` on the boundary (SGD with one
  projection, Mahdavi et al. 2012).

This module implements both for the Euclidean ball and the box from the domain
objects' public attributes (copies: a later change of the domain object is not
seen). The trace-bounded PSD set and the PSD cone have theirs in
``logt._kernels._trace_psd``; ``logt.domains.linear_oracle(domain)`` and
``logt.domains.constraint_function(domain)`` pick the right one.
"""
import threading

import numpy as np

from libc.math cimport fabs, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from logt._kernels._base import _as_point, _check_out
from logt._kernels._sets import Box, EuclideanBall


cdef class LinearOracle:
    """Base of compiled linear minimization oracles; subclasses implement ``lmo_into``."""

    def __cinit__(self, *args, **kwargs):
        self._lock = threading.Lock()

    cdef int lmo_into(self, const double* g, double* s) noexcept nogil:
        return -1

    def _validate(self, a, name):
        """Extra checks on a validated input (subclasses: symmetry, ...)."""
        return None

    def lmo(self, g, out=None):
        """``argmin_{s in D} <g, s>`` for ``g`` of shape ``shape`` (finite); written into ``out`` if given."""
        a = _as_point(g, self.shape, "g")
        self._validate(a, "g")
        out = _check_out(out, self.shape)
        if np.shares_memory(a, out):
            a = a.copy()
        cdef double[::1] gb = a.reshape(-1)
        cdef double[::1] ob = out.reshape(-1)
        cdef int info
        with self._lock:
            with nogil:
                info = self.lmo_into(&gb[0], &ob[0])
        if info != 0:
            raise np.linalg.LinAlgError(f"{type(self).__name__}.lmo failed (code {info})")
        return out


cdef class ConstraintFunction:
    """Base of compiled constraint functions; subclasses implement ``value_grad``."""

    def __cinit__(self, *args, **kwargs):
        self._lock = threading.Lock()
        self.rho = 1.0

    cdef int value_grad(self, const double* x, double* val, double* grad) noexcept nogil:
        return -1

    def _validate(self, a, name):
        """Extra checks on a validated input (subclasses: symmetry, ...)."""
        return None

    def value_and_grad(self, x):
        """``(c(x), g)``: the constraint value and, when ``c(x) > 0``, a subgradient ``g`` (else zeros)."""
        a = _as_point(x, self.shape, "x")
        self._validate(a, "x")
        grad = np.zeros(self.shape)
        cdef double[::1] xb = a.reshape(-1)
        cdef double[::1] gb = grad.reshape(-1)
        cdef double v = 0.0
        cdef int info
        with self._lock:
            with nogil:
                info = self.value_grad(&xb[0], &v, &gb[0])
        if info != 0:
            raise np.linalg.LinAlgError(f"{type(self).__name__}.value_and_grad failed (code {info})")
        if not v > 0:
            grad.fill(0.0)
        return v, grad


cdef double _scaled_norm(const double* x, const double* c, Py_ssize_t n) noexcept nogil:
    """``||x - c||`` (``c`` may be NULL: ``||x||``) without overflow or underflow."""
    cdef Py_ssize_t i
    cdef double amax = 0.0, t, ss = 0.0
    for i in range(n):
        t = fabs(x[i] - (c[i] if c != NULL else 0.0))
        if t > amax:
            amax = t
    if amax == 0.0:
        return 0.0
    for i in range(n):
        t = (x[i] - (c[i] if c != NULL else 0.0)) / amax
        ss += t * t
    return amax * sqrt(ss)


cdef class _Buffers:
    """Owns copies of a domain's arrays (center, bounds) as C buffers."""
    cdef double* a
    cdef double* b

    def __cinit__(self):
        self.a = NULL
        self.b = NULL

    cdef int fill(self, arr_a, arr_b) except -1:
        n = arr_a.size
        self.a = <double*>malloc(<size_t>max(n, 1) * sizeof(double))
        if self.a == NULL:
            raise MemoryError()
        cdef double[::1] va = np.array(arr_a, dtype=np.float64, order="C", copy=True).reshape(-1)
        memcpy(self.a, &va[0], <size_t>n * sizeof(double))
        cdef double[::1] vb
        if arr_b is not None:
            self.b = <double*>malloc(<size_t>max(n, 1) * sizeof(double))
            if self.b == NULL:
                raise MemoryError()
            vb = np.array(arr_b, dtype=np.float64, order="C", copy=True).reshape(-1)
            memcpy(self.b, &vb[0], <size_t>n * sizeof(double))
        return 0

    def __dealloc__(self):
        free(self.a)
        free(self.b)


def _check_type(domain, cls, what):
    if not isinstance(domain, cls):
        raise TypeError(f"{what} needs a {cls.__name__}, got {type(domain).__name__}")


cdef class BallLMO(LinearOracle):
    """LMO of ``EuclideanBall(shape, radius, center)``: ``s = center - radius * g / ||g||`` (``center`` if ``g = 0``)."""
    cdef _Buffers buf
    cdef readonly double radius

    def __init__(self, ball):
        _check_type(ball, EuclideanBall, "BallLMO")
        self.shape = tuple(ball.shape)
        self.size = ball.size
        self.radius = ball.radius
        self.buf = _Buffers()
        self.buf.fill(np.asarray(ball.center), None)

    cdef int lmo_into(self, const double* g, double* s) noexcept nogil:
        cdef Py_ssize_t i, n = self.size
        cdef double* c = self.buf.a
        cdef double nrm = _scaled_norm(g, NULL, n), f
        if nrm == 0.0:
            for i in range(n):
                s[i] = c[i]
            return 0
        f = self.radius / nrm
        for i in range(n):
            s[i] = c[i] - f * g[i]
        return 0


cdef class BoxLMO(LinearOracle):
    """LMO of a ``Box`` with finite bounds: ``s_i = lower_i`` if ``g_i > 0``, ``upper_i`` if ``g_i < 0``,
    ``clip(0, lower_i, upper_i)`` if ``g_i == 0``."""
    cdef _Buffers buf

    def __init__(self, box):
        _check_type(box, Box, "BoxLMO")
        lo, hi = np.asarray(box.lower), np.asarray(box.upper)
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            raise ValueError("a linear minimization oracle needs a compact domain: this Box has infinite "
                             "bounds (the linear minimum is unbounded)")
        self.shape = tuple(box.shape)
        self.size = box.size
        self.buf = _Buffers()
        self.buf.fill(lo, hi)

    cdef int lmo_into(self, const double* g, double* s) noexcept nogil:
        cdef Py_ssize_t i
        cdef double* lo = self.buf.a
        cdef double* hi = self.buf.b
        for i in range(self.size):
            if g[i] > 0:
                s[i] = lo[i]
            elif g[i] < 0:
                s[i] = hi[i]
            else:
                s[i] = 0.0 if lo[i] <= 0.0 <= hi[i] else (lo[i] if lo[i] > 0.0 else hi[i])
        return 0


cdef class BallConstraint(ConstraintFunction):
    """``c(x) = ||x - center|| - radius`` for ``EuclideanBall``; ``grad c = (x - center) / ||x - center||``, ``rho = 1``."""
    cdef _Buffers buf
    cdef readonly double radius

    def __init__(self, ball):
        _check_type(ball, EuclideanBall, "BallConstraint")
        self.shape = tuple(ball.shape)
        self.size = ball.size
        self.radius = ball.radius
        self.rho = 1.0
        self.buf = _Buffers()
        self.buf.fill(np.asarray(ball.center), None)

    cdef int value_grad(self, const double* x, double* val, double* grad) noexcept nogil:
        cdef Py_ssize_t i
        cdef double* c = self.buf.a
        cdef double nrm = _scaled_norm(x, c, self.size)
        val[0] = nrm - self.radius
        if val[0] > 0:
            for i in range(self.size):
                grad[i] = (x[i] - c[i]) / nrm
        return 0


cdef class BoxConstraint(ConstraintFunction):
    """``c(x) = dist(x, Box) = ||x - clip(x)||`` (0 inside); ``grad c = (x - clip(x)) / c(x)``, ``rho = 1``."""
    cdef _Buffers buf

    def __init__(self, box):
        _check_type(box, Box, "BoxConstraint")
        self.shape = tuple(box.shape)
        self.size = box.size
        self.rho = 1.0
        self.buf = _Buffers()
        self.buf.fill(np.asarray(box.lower), np.asarray(box.upper))

    cdef int value_grad(self, const double* x, double* val, double* grad) noexcept nogil:
        cdef Py_ssize_t i, n = self.size
        cdef double* lo = self.buf.a
        cdef double* hi = self.buf.b
        cdef double amax = 0.0, t, ss = 0.0, d
        for i in range(n):
            t = x[i] - lo[i] if x[i] < lo[i] else (x[i] - hi[i] if x[i] > hi[i] else 0.0)
            if fabs(t) > amax:
                amax = fabs(t)
        if amax == 0.0:
            val[0] = 0.0
            return 0
        for i in range(n):
            t = x[i] - lo[i] if x[i] < lo[i] else (x[i] - hi[i] if x[i] > hi[i] else 0.0)
            ss += (t / amax) * (t / amax)
        d = amax * sqrt(ss)
        val[0] = d
        for i in range(n):
            t = x[i] - lo[i] if x[i] < lo[i] else (x[i] - hi[i] if x[i] > hi[i] else 0.0)
            grad[i] = t / d
        return 0
