# cython: language_level=3
"""Compiled core of triplet metric learning (:class:`logt.oracles.TripletMetricLearning`).

One oracle call is a triplet ``(i, j, l)`` drawn uniformly from a fixed list: ``j`` a
same-class neighbour of ``i`` (LMNN's target neighbour), ``l`` an other-class point near
``i`` (an impostor). With ``D1 = x_i - x_j``, ``D2 = x_i - x_l``, the distance unit ``s > 0``
and the margin 1,

    z = (D1^T W D1 - D2^T W D2) / s + 1,     loss = log(1 + exp(z))      (a smooth LMNN hinge),
    g_hat(W) = sigmoid(z) / s * (D1 D1^T - D2 D2^T) + lam * W.

Dense X only. Two paths, the same draws (one bounded 32-bit draw per triplet, in order):

* blocks: the ``2 tb`` differences of ``tb`` triplets are gathered and ``q`` comes from one
  ``dgemm`` (``_pairs._dense_q``); with ``c = sigmoid(z) / (s B) > 0`` the update is
  ``+ (sqrt(c) D1)^T (sqrt(c) D1)`` and ``- (sqrt(c) D2)^T (sqrt(c) D2)``: two ``dsyrk``.
  O(d^2) per triplet.
* points (``B >= n``): ``Z = X W`` (one ``dgemm``), ``q`` from O(d) row dots, and
  ``sum c (D1 D1^T - D2 D2^T) = X^T L X`` for the triplets' signed Laplacian ``L``
  (``Y = L X`` by O(d) row updates, one ``dsyr2k``): O(n d^2 + B d).

No global state: every workspace belongs to the object (one call at a time per object).
"""
import numpy as np

from libc.math cimport exp, log1p, sqrt
from libc.stdint cimport int32_t, uint32_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from numpy.random cimport bitgen_t
from scipy.linalg.cython_blas cimport dgemm, dsyrk, dsyr2k

from logt._kernels._base import POINT_PATHS, _as_point, _check_out, _index_array, _point_path_code
from logt._kernels._base cimport (CompiledOracle, bitgen_of, sigmoid_neg, poll_signals, poll_start,
                                  raise_pending, LOGT_INTERRUPTED)
from logt._kernels._pairs cimport bounded_uint32, _dense_q, _mirror_add_lam

cdef extern from "logt_pairpoints.h" nogil:
    double logt_diff_dot(const double* xi, const double* xj, const double* zi, const double* zj,
                         double* D, Py_ssize_t d)
    void logt_row_update(double c, const double* D, double* yi, double* yj, Py_ssize_t d)

# triplets per dense block (2 * TBLK pair rows of d doubles in each of two buffers)
cdef enum:
    TBLK = 128
# the margin of the loss, in units of s
cdef double MARGIN = 1.0
# the largest d: a d x d metric of 4096^2 doubles is 128 MiB
MAX_TRIPLET_FEATURES = 4096
# the most triplets in a list (indices are drawn as 32-bit words)
MAX_TRIPLETS = 2**31 - 1


cdef inline double _z(double q1, double q2, double inv_s) noexcept nogil:
    """The triplet's ``z = (q1 - q2) / s + 1`` from its two quadratic forms."""
    return (q1 - q2) * inv_s + MARGIN


cdef inline double _softplus(double z) noexcept nogil:
    """log(1 + exp(z)) without overflow."""
    if z > 0:
        return z + log1p(exp(-z))
    return log1p(exp(z))


cdef class TripletGradientCore(CompiledOracle):
    """Holds validated dense data, the triplet list and workspaces; :meth:`_setup` is called once
    by the Python subclass after validation. ``mean_grad`` is ``CompiledOracle``'s (it calls
    :meth:`mean_grad_into`)."""
    cdef readonly Py_ssize_t n_samples, n_features, n_triplets, n_eval_triplets
    cdef readonly double lam
    cdef readonly double unit                  # s: distances are measured in units of s
    cdef object _keep
    cdef const double* _X
    cdef const int32_t* _ti
    cdef const int32_t* _tj
    cdef const int32_t* _tl
    cdef const int32_t* _ev                    # evaluation triplets (indices into the list)
    cdef double* _A                            # 2 TBLK * d
    cdef double* _M                            # 2 TBLK * d
    cdef double* _q                            # 2 TBLK
    cdef int32_t* _pi                          # 2 TBLK
    cdef int32_t* _pj                          # 2 TBLK
    cdef double* _Z                            # n * d (point path), NULL when not allocated
    cdef double* _Y                            # n * d
    cdef int _point_path                       # 0 auto, 1 blocks, 2 points

    def __cinit__(self, *args, **kwargs):
        self._A = NULL
        self._M = NULL
        self._q = NULL
        self._pi = NULL
        self._pj = NULL
        self._Z = NULL
        self._Y = NULL
        self._point_path = 0

    def __dealloc__(self):
        free(self._A)
        free(self._M)
        free(self._q)
        free(self._pi)
        free(self._pj)
        free(self._Z)
        free(self._Y)

    def _setup(self, X, ti, tj, tl, ev, double lam, double unit):
        """Store validated data (once). X : (n, d) C-contiguous float64; ti, tj, tl : (m,) int32
        C-contiguous, ``0 <= . < n``, ``ti != tj``, ``ti != tl``, m >= 1; ev : (e,) int32 indices
        into the list, e >= 1; lam > 0, unit > 0 finite (all checked by the caller)."""
        if self._A != NULL:
            raise RuntimeError("_setup may be called only once")
        cdef const double[:, ::1] xv = X
        cdef const int32_t[::1] iv = ti
        cdef const int32_t[::1] jv = tj
        cdef const int32_t[::1] lv = tl
        cdef const int32_t[::1] evv = ev
        cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
        self._keep = (X, ti, tj, tl, ev)
        self._X = &xv[0, 0]
        self._ti = &iv[0]
        self._tj = &jv[0]
        self._tl = &lv[0]
        self._ev = &evv[0]
        self.n_samples = n
        self.n_features = d
        self.n_triplets = len(ti)
        self.n_eval_triplets = len(ev)
        self.lam = lam
        self.unit = unit
        self.shape = (d, d)
        self.size = d * d
        self._A = <double*>malloc(2 * TBLK * d * sizeof(double))
        self._M = <double*>malloc(2 * TBLK * d * sizeof(double))
        self._q = <double*>malloc(2 * TBLK * sizeof(double))
        self._pi = <int32_t*>malloc(2 * TBLK * sizeof(int32_t))
        self._pj = <int32_t*>malloc(2 * TBLK * sizeof(int32_t))
        if self._A == NULL or self._M == NULL or self._q == NULL or self._pi == NULL or self._pj == NULL:
            raise MemoryError("TripletMetricLearning workspace")
        self._Z = <double*>malloc(n * d * sizeof(double))
        self._Y = <double*>malloc(n * d * sizeof(double))
        if self._Z == NULL or self._Y == NULL:         # the point path is optional
            free(self._Z)
            free(self._Y)
            self._Z = NULL
            self._Y = NULL

    @property
    def point_path(self):
        """"auto" (default: the point path when ``B >= n``), "blocks" or "points" (when allocated).
        Same draws, same value up to rounding."""
        return POINT_PATHS[self._point_path]

    @point_path.setter
    def point_path(self, value):
        self._point_path = _point_path_code(value)

    cdef bint _use_points(self, Py_ssize_t B) noexcept nogil:
        if self._Z == NULL or self._point_path == 1:
            return False
        return self._point_path == 2 or B >= self.n_samples

    cdef inline int32_t _pick(self, const int32_t* given, Py_ssize_t b, bitgen_t* rng) noexcept nogil:
        if given != NULL:
            return given[b]
        return <int32_t>bounded_uint32(rng, <uint32_t>self.n_triplets)

    cdef void _block_q(self, const double* W, const int32_t* given, Py_ssize_t b0, Py_ssize_t tb,
                       bitgen_t* rng) noexcept nogil:
        """Triplets ``b0 .. b0+tb-1`` (``given`` list indices, or drawn): rows ``b < tb`` of ``_A``
        get ``D1``, rows ``tb + b`` get ``D2``, ``_q`` their quadratic forms (one dgemm)."""
        cdef Py_ssize_t b
        cdef int32_t t
        for b in range(tb):
            t = self._pick(given, b0 + b, rng)
            self._pi[b] = self._ti[t]
            self._pi[tb + b] = self._ti[t]
            self._pj[b] = self._tj[t]
            self._pj[tb + b] = self._tl[t]
        _dense_q(self._X, self.n_features, self._pi, self._pj, 2 * tb, W, self.n_features,
                 self._A, self._M, self._q)

    # -------------------------------------------------------------- gradient

    cdef int mean_grad_into(self, const double* x, Py_ssize_t B,
                            bitgen_t* rng, double* out) noexcept nogil:
        if B < 1:
            return -2
        if self._A == NULL:
            return -3
        return self._grad(x, NULL, B, rng, out)

    cdef int _grad(self, const double* W, const int32_t* given, Py_ssize_t B, bitgen_t* rng,
                   double* out) noexcept nogil:
        """out = mean of g_hat(W) over B triplets: ``given`` list indices, or drawn from ``rng``."""
        if self._use_points(B):
            return self._grad_points(W, given, B, rng, out)
        return self._grad_blocks(W, given, B, rng, out)

    cdef int _grad_blocks(self, const double* W, const int32_t* given, Py_ssize_t B, bitgen_t* rng,
                          double* out) noexcept nogil:
        cdef Py_ssize_t d = self.n_features, b0 = 0, tb, b, a
        cdef double* A = self._A
        cdef double* M = self._M
        cdef double* q = self._q
        cdef double inv_s = 1.0 / self.unit
        cdef double scale = inv_s / <double>B
        cdef double r
        cdef int n = <int>d, kk, ldc = <int>d
        cdef double one = 1.0, mone = -1.0, beta = 0.0
        cdef double nxt = poll_start()
        memset(out, 0, d * d * sizeof(double))
        while b0 < B:
            if poll_signals(&nxt) != 0:
                return LOGT_INTERRUPTED
            tb = min(<Py_ssize_t>TBLK, B - b0)
            self._block_q(W, given, b0, tb, rng)
            # rows b < tb: sqrt(c) D1 into M, sqrt(c) D2 into A (row b of A is read before it is overwritten)
            for b in range(tb):
                r = sqrt(sigmoid_neg(-_z(q[b], q[tb + b], inv_s)) * scale)
                for a in range(d):
                    M[b * d + a] = r * A[b * d + a]
                    A[b * d + a] = r * A[(tb + b) * d + a]
            kk = <int>tb
            # column-major upper of out (= row-major lower) += M^T M - A^T A
            dsyrk(b"U", b"N", &n, &kk, &one, M, &n, &beta, out, &ldc)
            beta = 1.0
            dsyrk(b"U", b"N", &n, &kk, &mone, A, &n, &beta, out, &ldc)
            b0 += tb
        _mirror_add_lam(out, W, d, d, self.lam)
        return 0

    cdef int _grad_points(self, const double* W, const int32_t* given, Py_ssize_t B, bitgen_t* rng,
                          double* out) noexcept nogil:
        cdef Py_ssize_t d = self.n_features, n = self.n_samples, b
        cdef const double* X = self._X
        cdef double* Z = self._Z
        cdef double* Y = self._Y
        cdef double* D1 = self._A
        cdef double* D2 = self._A + d
        cdef double inv_s = 1.0 / self.unit
        cdef double scale = inv_s / <double>B
        cdef double q1, q2, c
        cdef int32_t t, i, j, l
        cdef int di = <int>d, ni = <int>n, ldc = <int>d
        cdef double one = 1.0, zero = 0.0, half = 0.5
        cdef double nxt = poll_start()
        # column-major Z (d x n) = W^T X^T; q = D^T W^T D = D^T W D
        dgemm(b"N", b"N", &di, &ni, &di, &one, <double*>W, &di, <double*>X, &di, &zero, Z, &di)
        memset(Y, 0, n * d * sizeof(double))
        for b in range(B):
            if (b & 0xFFFF) == 0xFFFF and poll_signals(&nxt) != 0:
                return LOGT_INTERRUPTED
            t = self._pick(given, b, rng)
            i = self._ti[t]
            j = self._tj[t]
            l = self._tl[t]
            q1 = logt_diff_dot(X + <Py_ssize_t>i * d, X + <Py_ssize_t>j * d,
                               Z + <Py_ssize_t>i * d, Z + <Py_ssize_t>j * d, D1, d)
            q2 = logt_diff_dot(X + <Py_ssize_t>i * d, X + <Py_ssize_t>l * d,
                               Z + <Py_ssize_t>i * d, Z + <Py_ssize_t>l * d, D2, d)
            c = sigmoid_neg(-_z(q1, q2, inv_s)) * scale
            logt_row_update(c, D1, Y + <Py_ssize_t>i * d, Y + <Py_ssize_t>j * d, d)
            logt_row_update(-c, D2, Y + <Py_ssize_t>i * d, Y + <Py_ssize_t>l * d, d)
        # column-major upper of out (= row-major lower) = (X^T Y + Y^T X) / 2 = X^T L X
        dsyr2k(b"U", b"N", &di, &ni, &half, <double*>X, &di, Y, &di, &zero, out, &ldc)
        _mirror_add_lam(out, W, d, d, self.lam)
        return 0

    def _mean_grad_triplets(self, W, t, out=None):
        """Mean gradient over GIVEN triplets ``t`` (indices into the list; private, for tests)."""
        Wa = _as_point(W, self.shape, "W")
        t = _index_array(t, self.n_triplets, "t", "triplet")
        out = _check_out(out, self.shape)
        if np.shares_memory(Wa, out):
            Wa = Wa.copy()
        cdef double[::1] wb = Wa.reshape(-1)
        cdef double[::1] ob = out.reshape(-1)
        cdef int32_t[::1] tv = t
        cdef Py_ssize_t B = len(t)
        cdef int info
        with self._lock:
            with nogil:
                info = self._grad(&wb[0], &tv[0], B, NULL, &ob[0])
        if info == LOGT_INTERRUPTED:
            raise_pending()
        if info != 0:
            raise RuntimeError(f"triplet gradient failed (code {info})")
        return out

    # -------------------------------------------------------------- objective

    cdef double _eval_loss_c(self, const double* W) noexcept nogil:
        cdef Py_ssize_t e0 = 0, tb, b
        cdef Py_ssize_t ne = self.n_eval_triplets
        cdef double inv_s = 1.0 / self.unit, total = 0.0
        while e0 < ne:
            tb = min(<Py_ssize_t>TBLK, ne - e0)
            self._block_q(W, self._ev, e0, tb, NULL)
            for b in range(tb):
                total += _softplus(_z(self._q[b], self._q[tb + b], inv_s))
            e0 += tb
        return total / <double>ne

    def _eval_loss(self, W):
        """Mean triplet loss ``log(1 + exp(z))`` over the evaluation triplets (no regularizer)."""
        Wa = _as_point(W, self.shape, "W")
        cdef double[::1] wb = Wa.reshape(-1)
        cdef double r
        with self._lock:
            with nogil:
                r = self._eval_loss_c(&wb[0])
        return r
