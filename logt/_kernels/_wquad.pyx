# cython: language_level=3
"""A compiled quadratic with a chosen condition number: ``F(x) = 0.5 * sum_i h_i (x_i - a_i)^2``.

The Hessian is the diagonal operator ``x -> h * x`` (elementwise), so
``L = max h`` and ``lam = min h`` exactly (for matrices: in the Frobenius
norm on symmetric matrices when ``h`` is symmetric, each off-diagonal pair
``(E_ij + E_ji)/sqrt(2)`` being an eigenvector with eigenvalue ``h_ij``). Used
by ``python -m logt kappa`` to sweep ``L/lam``.

Stochastic gradient: ``g_hat(x) = h * (x - a) + Z``, ``Z`` with independent
entries uniform on ``(-noise, noise)`` (discretised to the midpoints of
``2^32`` cells, mean exactly 0), symmetric for matrix problems (the upper
triangle with the diagonal is drawn and mirrored). Mean of ``B`` samples is
streamed from raw 32-bit draws into exact int64 sums: no ``B x n`` array.
Stream layout: samples in pairs, one ``next_uint64`` per drawn entry (low half
to the first sample, high half to the second); an odd last sample takes
``ceil(m/2)`` more draws. Same seed, same bits.
"""
import numbers

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from numpy.random cimport bitgen_t

from logt._kernels._base cimport CompiledOracle
from logt._kernels._toy cimport uniform_noise_sums
from logt._kernels._base import _as_point

cdef double _TWO_M31 = 4.656612873077393e-10


cdef class DiagonalQuadratic(CompiledOracle):
    """Stochastic oracle of ``F(x) = 0.5 * sum h * (x - a)**2`` (elementwise weights ``h > 0``).

    Parameters
    ----------
    h : array_like, positive and finite; its shape is the shape of a point.
    a : array_like of the same shape (the unconstrained minimizer), finite.
    noise : float >= 0, half-width of the uniform noise on each entry.
    symmetric : bool or None. True for square matrix problems (``h`` and ``a``
        must then be symmetric; the noise is symmetric, so gradients are);
        None (default): True iff ``h`` is a square 2-D array.

    Attributes: ``shape``, ``size``, ``h``, ``a`` (read-only copies), ``noise``,
    ``L = max h``, ``lam = min h``, ``G = noise * sqrt(size)`` (a bound on the
    noise ``||Z||``, like ``PSDQuadratic.G``), ``value(x)``.
    """
    cdef double[::1] _h
    cdef double[::1] _a
    cdef readonly double noise
    cdef readonly bint symmetric
    cdef readonly Py_ssize_t m        # entries drawn per sample
    cdef Py_ssize_t d                 # side (symmetric) or 0

    def __init__(self, h, a, noise=1.0, symmetric=None):
        hh = np.array(h, dtype=np.float64, order="C", copy=True)
        aa = np.array(a, dtype=np.float64, order="C", copy=True)
        if hh.ndim == 0 or hh.size == 0:
            raise ValueError("h must be a non-empty array")
        if aa.shape != hh.shape:
            raise ValueError(f"a must have the shape of h {hh.shape}, got {aa.shape}")
        if not (np.isfinite(hh).all() and (hh > 0).all()):
            raise ValueError("h must be finite and > 0 everywhere")
        if not np.isfinite(aa).all():
            raise ValueError("a contains NaN or Inf")
        if isinstance(noise, bool) or not isinstance(noise, numbers.Real):
            raise TypeError(f"noise must be a real number, got {type(noise).__name__}")
        s = float(noise)
        if not (np.isfinite(s) and s >= 0):
            raise ValueError(f"noise must be finite and >= 0, got {noise!r}")
        square = hh.ndim == 2 and hh.shape[0] == hh.shape[1]
        sym = square if symmetric is None else bool(symmetric)
        if sym:
            if not square:
                raise ValueError(f"symmetric=True needs square matrices, got shape {hh.shape}")
            if not (np.array_equal(hh, hh.T) and np.array_equal(aa, aa.T)):
                raise ValueError("symmetric=True needs symmetric h and a")
        self._h = hh.reshape(-1)
        self._a = aa.reshape(-1)
        self.noise = s
        self.symmetric = sym
        self.shape = hh.shape
        self.size = hh.size
        self.d = hh.shape[0] if sym else 0
        self.m = self.d * (self.d + 1) // 2 if sym else self.size

    def __reduce__(self):
        return (DiagonalQuadratic, (self.h, self.a, self.noise, self.symmetric))

    def __repr__(self):
        return f"DiagonalQuadratic(shape={self.shape}, L/lam={self.L / self.lam:.3g}, noise={self.noise!r})"

    @property
    def h(self):
        v = np.asarray(self._h).reshape(self.shape).copy()
        v.setflags(write=False)
        return v

    @property
    def a(self):
        v = np.asarray(self._a).reshape(self.shape).copy()
        v.setflags(write=False)
        return v

    @property
    def L(self):
        return float(np.max(self._h))

    @property
    def lam(self):
        return float(np.min(self._h))

    @property
    def G(self):
        return self.noise * float(np.sqrt(self.size))

    def value(self, x):
        """``F(x) = 0.5 * sum h * (x - a)**2``."""
        w = _as_point(x, self.shape, "x")
        r = w - self.a
        return 0.5 * float(np.sum(self.h * r * r))

    def grad(self, x):
        """The exact gradient ``h * (x - a)``."""
        w = _as_point(x, self.shape, "x")
        return self.h * (w - self.a)

    cdef int mean_grad_into(self, const double* x, Py_ssize_t B,
                            bitgen_t* rng, double* out) noexcept nogil:
        cdef Py_ssize_t n = self.size, m = self.m, d = self.d, i, j, e, k
        cdef const double* h = &self._h[0]
        cdef const double* a = &self._a[0]
        if B < 1:
            return -2
        for k in range(n):
            out[k] = h[k] * (x[k] - a[k])
        if self.noise == 0.0:
            return 0
        cdef double* tot = <double*>malloc(m * sizeof(double))
        if tot == NULL:
            return -1
        cdef int rc = uniform_noise_sums(rng, m, B, tot)
        if rc != 0:                      # -1 (no workspace) or LOGT_INTERRUPTED (a signal is pending)
            free(tot)
            return rc
        cdef double scale = self.noise * _TWO_M31, invB = 1.0 / <double>B, z
        if self.symmetric:
            e = 0
            for i in range(d):
                for j in range(i, d):
                    z = scale * (tot[e] * invB + 0.5)
                    out[i * d + j] += z
                    if j != i:
                        out[j * d + i] += z
                    e += 1
        else:
            for e in range(m):
                out[e] += scale * (tot[e] * invB + 0.5)
        free(tot)
        return 0
