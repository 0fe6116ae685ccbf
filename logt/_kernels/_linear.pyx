# cython: language_level=3
"""Finite-sum linear models (least squares, logistic regression) as a compiled oracle.

``F(x) = (1/n) sum_i l(a_i^T x, b_i) + (lam/2) ||x||^2`` over vectors ``x`` of
length ``d``; one stochastic gradient is the gradient of one uniformly drawn
term (with replacement), ``l'(a_i^T x, b_i) a_i + lam x``. The mean of ``B``
of them is computed in one ``nogil`` call (``O(B d)``), so SGD / Epoch-GD step
loops and Algorithm 1 all run compiled on it.
"""
import math
import numbers

import numpy as np

from libc.stdint cimport uint32_t
from numpy.random cimport bitgen_t

from logt._kernels._base cimport CompiledOracle, sigmoid_neg
from logt._kernels._pairs cimport bounded_uint32

from logt._kernels._base import _as_point

LOSSES = ("squared", "logistic")


cdef class LinearModel(CompiledOracle):
    """Stochastic oracle of a regularized linear model over vectors ``x`` of length ``d``.

    Parameters
    ----------
    A : array_like, shape (n, d), finite -- the instances ``a_i`` (rows).
    b : array_like, shape (n,), finite -- targets; for ``loss="logistic"`` labels in {-1, +1}.
    loss : "squared" (``l(u, b) = (u - b)^2 / 2``) or "logistic" (``l(u, b) = log(1 + exp(-b u))``).
    lam : float >= 0 -- the regularization ``(lam/2) ||x||^2``, also the strong convexity
        (plus whatever the data add).

    The oracle
    ----------
    ``mean_grad(x, B, rng)`` draws ``B`` indices ``i`` uniformly from ``range(n)``
    (with replacement; unbiased 32-bit bounded integers from the generator's
    ``next_uint64``, one word per index unless rejected) and returns
    ``(1/B) sum_b l'(a_i^T x, b_i) a_i + lam x``: an unbiased estimate of
    ``grad F(x)``. Same generator state, same indices (bit-identical).

    Attributes
    ----------
    shape : (d,);  n, d, loss, lam;
    L : ``c * lambda_max(A^T A / n) + lam`` with ``c = 1`` (squared) or ``1/4``
        (logistic): the smoothness of ``F`` (exact for squared loss);
    value(x) : ``F(x)`` exactly (a full pass over the data, NumPy);
    grad(x), hessian(x) : the exact full gradient and Hessian (NumPy; for references and tests).
    """
    cdef double[:, ::1] _A
    cdef double[::1] _b
    cdef readonly Py_ssize_t n, d
    cdef readonly double lam
    cdef int _logistic
    cdef readonly str loss
    cdef object _Aarr, _barr
    cdef readonly double L

    def __init__(self, A, b, loss="squared", lam=0.0):
        if hasattr(A, "tocsr") and hasattr(A, "nnz"):        # scipy.sparse: np.asarray makes a 0-d object array
            n, d = A.shape
            raise TypeError(f"A is a scipy.sparse matrix ({n} x {d}, {A.nnz:,} stored entries); LinearModel's "
                            f"kernels take a dense array: pass A.toarray() ({8 * n * d / 2**20:,.1f} MiB of float64)")
        a = np.asarray(A)
        if a.dtype == object or not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
            raise TypeError(f"A must be a real numeric array, got dtype {a.dtype}")
        a = np.array(a, dtype=np.float64, order="C", copy=True)
        if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
            raise ValueError(f"A must be a 2-D array of shape (n, d) with n, d >= 1, got shape {a.shape}")
        if a.shape[0] > 2**32 - 1:
            raise ValueError(f"A has too many rows ({a.shape[0]} > 2**32 - 1)")
        if not np.isfinite(a).all():
            raise ValueError("A contains NaN or Inf")
        bb = np.asarray(b)
        if bb.dtype == object or not (np.issubdtype(bb.dtype, np.floating) or np.issubdtype(bb.dtype, np.integer)):
            raise TypeError(f"b must be a real numeric array, got dtype {bb.dtype}")
        bb = np.array(bb, dtype=np.float64, order="C", copy=True).reshape(-1)
        if bb.shape[0] != a.shape[0]:
            raise ValueError(f"A has {a.shape[0]} rows but b has {bb.shape[0]} entries")
        if not np.isfinite(bb).all():
            raise ValueError("b contains NaN or Inf")
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        if loss == "logistic" and not np.all(np.abs(bb) == 1.0):
            raise ValueError("loss='logistic' needs labels b in {-1, +1}")
        if isinstance(lam, bool) or not isinstance(lam, numbers.Real):
            raise TypeError(f"lam must be a real number, got {type(lam).__name__}")
        lam = float(lam)
        if not (math.isfinite(lam) and lam >= 0):
            raise ValueError(f"lam must be finite and >= 0, got {lam!r}")
        a.setflags(write=False)
        bb.setflags(write=False)
        self._Aarr, self._barr = a, bb
        self._A = np.array(a, copy=True)
        self._b = np.array(bb, copy=True)
        self.n, self.d = a.shape
        self.lam = lam
        self.loss = loss
        self._logistic = 1 if loss == "logistic" else 0
        self.shape = (self.d,)
        self.size = self.d
        top = float(np.max(np.linalg.eigvalsh(a.T @ a / self.n)))
        self.L = (0.25 if self._logistic else 1.0) * max(top, 0.0) + lam

    def __reduce__(self):
        return (LinearModel, (self._Aarr, self._barr, self.loss, self.lam))

    def __repr__(self):
        return f"LinearModel(n={self.n}, d={self.d}, loss={self.loss!r}, lam={self.lam!r})"

    @property
    def A(self):
        """The instances (read-only), shape (n, d)."""
        return self._Aarr

    @property
    def b(self):
        """The targets (read-only), shape (n,)."""
        return self._barr

    cdef int mean_grad_into(self, const double* x, Py_ssize_t B,
                            bitgen_t* rng, double* out) noexcept nogil:
        cdef Py_ssize_t d = self.d, k, t
        cdef uint32_t i
        cdef double u, c, invB
        cdef const double* ai
        if B < 1:
            return -2
        for k in range(d):
            out[k] = 0.0
        for t in range(B):
            i = bounded_uint32(rng, <uint32_t>self.n)
            ai = &self._A[i, 0]
            u = 0.0
            for k in range(d):
                u += ai[k] * x[k]
            if self._logistic:
                c = -self._b[i] * sigmoid_neg(self._b[i] * u)
            else:
                c = u - self._b[i]
            for k in range(d):
                out[k] += c * ai[k]
        invB = 1.0 / <double>B
        for k in range(d):
            out[k] = out[k] * invB + self.lam * x[k]
        return 0

    # ---------------------------------------------------------- exact quantities (NumPy)
    def _margins(self, x):
        return self._Aarr @ _as_point(x, self.shape, "x")

    def value(self, x):
        """``F(x)`` exactly: the mean loss over all ``n`` terms plus ``(lam/2) ||x||^2``."""
        x = _as_point(x, self.shape, "x")
        u = self._Aarr @ x
        if self._logistic:
            loss = float(np.mean(np.logaddexp(0.0, -self._barr * u)))
        else:
            r = u - self._barr
            loss = 0.5 * float(np.dot(r, r)) / self.n
        return loss + 0.5 * self.lam * float(np.dot(x, x))

    def grad(self, x):
        """The exact gradient ``grad F(x)``, shape (d,)."""
        x = _as_point(x, self.shape, "x")
        u = self._Aarr @ x
        if self._logistic:
            c = -self._barr / (1.0 + np.exp(np.clip(self._barr * u, -700, 700)))
        else:
            c = u - self._barr
        return self._Aarr.T @ c / self.n + self.lam * x

    def hessian(self, x):
        """The exact Hessian of ``F`` at ``x``, shape (d, d)."""
        x = _as_point(x, self.shape, "x")
        if self._logistic:
            u = self._Aarr @ x
            s = 1.0 / (1.0 + np.exp(-np.clip(u, -700, 700)))
            w = s * (1.0 - s)
        else:
            w = np.ones(self.n)
        return (self._Aarr.T * w) @ self._Aarr / self.n + self.lam * np.eye(self.d)
