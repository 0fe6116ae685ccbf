# cython: language_level=3
"""The paper's toy problem (Sec. 5, Fig. 1) as a compiled oracle.

``F(W) = 0.5 * ||W - A||_F^2`` on d x d matrices; the stochastic gradient at
``W`` is ``g_hat(W) = W - A + Z`` with ``Z`` symmetric noise. ``A = 0``, d = 5,
noise = 1 over the PSD cone is the paper's toy.

The hot path, :meth:`PSDQuadratic.mean_grad_into`, averages ``B`` gradients by
streaming raw 32-bit integers from the caller's ``bitgen_t`` into exact
``int64`` sums, one per upper-triangle entry: no ``B x d x d`` array is ever
built and the GIL is not held. Every ~2^16 draws the loop reads a monotonic
clock and, at most every 50 ms (main thread only), runs Python's signal
handlers, so Ctrl-C stops a huge ``B`` promptly; the draws and their order
(hence the bits) do not depend on it.
"""
import numbers

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from numpy.random cimport bitgen_t

from logt._kernels._base cimport CompiledOracle, LOGT_INTERRUPTED, poll_signals, poll_start

from logt._kernels._base import _as_point

ctypedef uint64_t (*next64_fn)(void*) noexcept nogil

# Pairs of samples summed into the int64 accumulators before they are flushed
# to double: each pair adds at most 2^32 in absolute value, so
# |acc| <= 2^30 * 2^32 = 2^62 < 2^63 (no overflow for any B).
cdef int64_t _PAIRS_PER_FLUSH = (<int64_t>1) << 30

# About this many draws between two reads of the clock (signal polling).
cdef int64_t _DRAWS_PER_POLL = (<int64_t>1) << 16

# 2^-31: a signed 32-bit draw j maps to the noise value (j + 0.5) * 2^-31 in (-1, 1)
cdef double _TWO_M31 = 4.656612873077393e-10


cdef int uniform_noise_sums(bitgen_t* rng, Py_ssize_t m, Py_ssize_t B, double* tot) noexcept nogil:
    """``tot[e]`` = sum over ``B`` samples of the signed 32-bit draw ``j`` of entry ``e`` (``e < m``), exact.

    Stream layout (shared by every oracle with this noise, same seed => same
    bits): samples in pairs, one ``next_uint64`` per entry (low half to the
    first sample of the pair, high half to the second); an odd last sample
    takes ``ceil(m/2)`` more draws, two entries each. The noise value of a draw
    is ``s * (j + 0.5) * 2^-31``, so the mean is ``s * 2^-31 * (tot/B + 0.5)``.
    Returns 0, -1 when the workspace cannot be allocated, or LOGT_INTERRUPTED
    when a signal arrived (polled every ~50 ms; the caller raises it).
    """
    cdef int64_t* acc = <int64_t*>malloc(m * sizeof(int64_t))
    if acc == NULL:
        return -1
    cdef Py_ssize_t e
    for e in range(m):
        acc[e] = 0
        tot[e] = 0.0
    cdef next64_fn next64 = rng.next_uint64
    cdef void* st = rng.state
    cdef uint64_t r
    cdef int64_t pairs = B // 2, p, n, p0, p1
    cdef int64_t done = 0
    cdef int64_t blk = _DRAWS_PER_POLL // m          # signals are polled between blocks of draws
    cdef double next_poll = poll_start()
    if blk < 1:
        blk = 1
    while done < pairs:
        n = pairs - done
        if n > _PAIRS_PER_FLUSH:
            n = _PAIRS_PER_FLUSH
        p0 = 0
        while p0 < n:
            p1 = p0 + blk
            if p1 > n:
                p1 = n
            for p in range(p0, p1):
                for e in range(m):
                    r = next64(st)
                    acc[e] += (<int64_t>(<int32_t>(<uint32_t>r))
                               + <int64_t>(<int32_t>(<uint32_t>(r >> 32))))
            p0 = p1
            if poll_signals(&next_poll) != 0:
                free(acc)
                return LOGT_INTERRUPTED
        for e in range(m):
            tot[e] += <double>acc[e]
            acc[e] = 0
        done += n
    if B & 1:
        e = 0
        while e < m:
            r = next64(st)
            acc[e] += <int64_t>(<int32_t>(<uint32_t>r))
            if e + 1 < m:
                acc[e + 1] += <int64_t>(<int32_t>(<uint32_t>(r >> 32)))
            e += 2
        for e in range(m):
            tot[e] += <double>acc[e]
    free(acc)
    return 0


cdef class PSDQuadratic(CompiledOracle):
    """Stochastic oracle for ``F(W) = 0.5 * ||W - A||_F^2``, W a d x d matrix.

    Parameters
    ----------
    A : array_like, shape (d, d)
        Symmetric, finite. ``np.zeros((5, 5))`` is the paper's toy problem
        (``W_* = 0``, ``F_* = 0`` over the PSD cone).
    noise : float >= 0, default 1.0
        Half-width ``s`` of the noise: each entry of ``Z`` lies in ``(-s, s)``.

    The oracle
    ----------
    ``g_hat(W) = W - A + Z`` (``grad F(W) = W - A``), ``Z`` symmetric with the
    ``m = d(d+1)/2`` upper-triangle entries (diagonal included) independent and
    mirrored below the diagonal. Each entry is ``s * (j + 0.5) / 2^31`` with
    ``j`` uniform on the integers ``{-2^31, ..., 2^31 - 1}``: the uniform
    distribution on ``[-s, s]`` discretised to the midpoints of ``2^32`` equal
    cells. Equivalently ``Z_ij = s * (2u - 1)`` with ``u = (k + 0.5) / 2^32``,
    ``k`` a uniform 32-bit integer. The midpoint grid is symmetric about 0, so
    ``E[Z_ij] = 0`` exactly, ``Var[Z_ij] = s^2 * (1/3 - 1/(12 * 4^31))``
    (uniform on ``[-s, s]``: ``s^2 / 3``; relative difference 2^-64), and
    ``|Z_ij| < s``.

    Stream layout (same seed => bit-identical output): the entries are taken
    in row-major upper-triangle order ``(0,0), (0,1), ..., (0,d-1), (1,1),
    ...``. Samples are drawn in pairs: for each pair, one ``next_uint64`` per
    entry, its low 32 bits go to the first sample and its high 32 bits to the
    second (each read as a signed ``int32``). When ``B`` is odd the last sample
    takes ``ceil(m / 2)`` more ``next_uint64`` draws, low then high halves
    filling consecutive entries. The integer sums are exact; the mean is formed
    once at the end. With ``noise == 0`` nothing is drawn.

    Attributes
    ----------
    shape : (d, d);  size : d*d;  d, m (= d(d+1)/2), noise.
    A : read-only copy of ``A``.
    L, lam : 1.0 (``F`` is 1-smooth and 1-strongly convex in the Frobenius norm).
    G : ``noise * d``, a bound on ``||g_hat(W) - grad F(W)||_F = ||Z||_F``
        (``|Z_ij| <= noise`` for all d^2 entries), also for any average of such
        ``Z``. The paper's ``G`` bounds ``||g_hat(W)||`` itself, which over the
        unbounded PSD cone is infinite (``||W - A||`` grows without bound);
        ``G`` here is only the noise part, and ``||g_hat(W)||_F <=
        ||W - A||_F + G`` on a bounded region.
    f_star : ``F(W_*)``, ``W_*`` = :meth:`minimizer`.
    """

    def __init__(self, A, noise=1.0):
        a = np.asarray(A)
        if a.dtype == object or not (np.issubdtype(a.dtype, np.floating)
                                     or np.issubdtype(a.dtype, np.integer)
                                     or a.dtype == np.bool_):
            raise TypeError(f"A must be a real numeric array, got dtype {a.dtype}")
        a = np.array(a, dtype=np.float64, order="C", copy=True)
        if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
            raise ValueError(f"A must be a square matrix of shape (d, d), d >= 1, got shape {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError("A contains NaN or Inf")
        if not np.array_equal(a, a.T):
            raise ValueError(
                f"A must be symmetric (max |A - A.T| = {np.max(np.abs(a - a.T)):.3g}); "
                "symmetrize it, e.g. (A + A.T) / 2")
        if isinstance(noise, bool) or not isinstance(noise, numbers.Real):
            raise TypeError(f"noise must be a real number, got {type(noise).__name__}")
        s = float(noise)
        if not np.isfinite(s) or s < 0:
            raise ValueError(f"noise must be finite and >= 0, got {noise!r}")
        a.setflags(write=False)
        self._a = a.reshape(-1).copy()
        self.d = a.shape[0]
        self.m = self.d * (self.d + 1) // 2
        self.noise = s
        self.shape = (self.d, self.d)
        self.size = self.d * self.d

    def __reduce__(self):
        return (PSDQuadratic, (self.A, self.noise))

    def __repr__(self):
        return f"PSDQuadratic(d={self.d}, noise={self.noise!r})"

    # ------------------------------------------------------------------ C kernel
    cdef int mean_grad_into(self, const double* x, Py_ssize_t B,
                            bitgen_t* rng, double* out) noexcept nogil:
        """out = x - A + (mean of B samples of Z); see the class docstring."""
        cdef Py_ssize_t d = self.d, m = self.m
        cdef Py_ssize_t i, j, e, k
        cdef const double* a = &self._a[0]
        cdef double zbar

        if B < 1:
            return -2
        if self.noise == 0.0:
            for k in range(d * d):
                out[k] = x[k] - a[k]
            return 0

        # per-call workspace: no state shared between threads using one oracle
        cdef double* tot = <double*>malloc(m * sizeof(double))
        if tot == NULL:
            return -1
        cdef int rc = uniform_noise_sums(rng, m, B, tot)
        if rc != 0:                      # -1 (no workspace) or LOGT_INTERRUPTED (a signal is pending)
            free(tot)
            return rc

        # mean of Z_e = s * (sum_j + 0.5 * B) / (B * 2^31)
        cdef double scale = self.noise * _TWO_M31
        cdef double invB = 1.0 / <double>B
        e = 0
        for i in range(d):
            for j in range(i, d):
                zbar = scale * (tot[e] * invB + 0.5)
                out[i * d + j] = x[i * d + j] - a[i * d + j] + zbar
                if j != i:
                    out[j * d + i] = x[j * d + i] - a[j * d + i] + zbar
                e += 1
        free(tot)
        return 0

    # ---------------------------------------------------------- Python helpers
    @property
    def A(self):
        """A copy of ``A`` (read-only), shape (d, d)."""
        a = np.asarray(self._a).reshape(self.shape).copy()
        a.setflags(write=False)
        return a

    @property
    def L(self):
        """Smoothness constant of ``F`` (Frobenius norm): 1."""
        return 1.0

    @property
    def lam(self):
        """Strong convexity constant of ``F`` (Frobenius norm): 1."""
        return 1.0

    @property
    def G(self):
        """``noise * d``: bound on ``||g_hat(W) - grad F(W)||_F`` (the noise ``Z`` only).

        The paper's ``G`` bounds ``||g_hat(W)||``; over the unbounded PSD cone
        that is infinite, so ``G`` here is the noise bound: every ``|Z_ij| <=
        noise`` gives ``||Z||_F <= noise * d`` (also for averages of ``Z``).
        """
        return self.noise * self.d

    def value(self, W):
        """``F(W) = 0.5 * ||W - A||_F^2`` for W of shape (d, d), finite."""
        w = _as_point(W, self.shape, "W")
        diff = w - np.asarray(self._a).reshape(self.shape)
        return 0.5 * float(np.vdot(diff, diff))

    def minimizer(self):
        """``W_* = argmin_{W PSD} F(W)``: the projection of ``A`` onto the PSD cone.

        ``A = V diag(mu) V^T`` (``numpy.linalg.eigh``), ``W_* = V diag(max(mu, 0)) V^T``,
        symmetrized. Returns a new (d, d) array.
        """
        a = np.asarray(self._a).reshape(self.shape)
        mu, V = np.linalg.eigh(a)
        P = (V * np.maximum(mu, 0.0)) @ V.T
        return 0.5 * (P + P.T)

    @property
    def f_star(self):
        """``F_* = F(W_*) = 0.5 * sum of squared negative eigenvalues of A``."""
        mu = np.linalg.eigvalsh(np.asarray(self._a).reshape(self.shape))
        neg = np.minimum(mu, 0.0)
        return 0.5 * float(np.dot(neg, neg))
