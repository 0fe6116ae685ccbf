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
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.math cimport exp, log1p, sqrt
from libc.stdint cimport int32_t, uint32_t
from libc.string cimport memset
from numpy.random cimport bitgen_t
from scipy.linalg.cython_blas cimport dsyrk

from logt._kernels._base cimport sigmoid_neg, poll_signals, poll_start, LOGT_INTERRUPTED
from logt._kernels._metric_core cimport DenseMetricCore
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


cdef class TripletGradientCore(DenseMetricCore):
    """Holds the triplet list on top of :class:`DenseMetricCore`'s data, workspaces and paths; :meth:`_setup`
    is called once by the Python subclass after validation."""
    cdef readonly Py_ssize_t n_triplets, n_eval_triplets
    cdef const int32_t* _ti
    cdef const int32_t* _tj
    cdef const int32_t* _tl
    cdef const int32_t* _ev                    # evaluation triplets (indices into the list)

    def _setup(self, X, ti, tj, tl, ev, double lam, double unit):
        """Store validated data (once). X : (n, d) C-contiguous float64; ti, tj, tl : (m,) int32
        C-contiguous, ``0 <= . < n``, ``ti != tj``, ``ti != tl``, m >= 1; ev : (e,) int32 indices
        into the list, e >= 1; lam > 0, unit > 0 finite (all checked by the caller). Blocks of
        ``TBLK`` triplets (``2 TBLK`` difference rows); the point path whenever its workspaces fit."""
        self._store(X, lam, unit, 2 * TBLK, PY_SSIZE_T_MAX, "TripletMetricLearning")
        cdef const int32_t[::1] iv = ti
        cdef const int32_t[::1] jv = tj
        cdef const int32_t[::1] lv = tl
        cdef const int32_t[::1] evv = ev
        self._keep = (X, ti, tj, tl, ev)
        self._ti = &iv[0]
        self._tj = &jv[0]
        self._tl = &lv[0]
        self._ev = &evv[0]
        self.n_triplets = len(ti)
        self.n_eval_triplets = len(ev)

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
        cdef Py_ssize_t d = self.n_features, b
        cdef const double* X = self._X
        cdef double* Z = self._Z
        cdef double* Y = self._Y
        cdef double* D1 = self._A
        cdef double* D2 = self._A + d
        cdef double inv_s = 1.0 / self.unit
        cdef double scale = inv_s / <double>B
        cdef double q1, q2, c
        cdef int32_t t, i, j, l
        cdef double nxt = poll_start()
        self._points_start(W)                      # Z = X W, Y = 0
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
        self._points_finish(W, out)                # X^T L X + lam W
        return 0

    def _mean_grad_triplets(self, W, t, out=None):
        """Mean gradient over GIVEN triplets ``t`` (indices into the list; private, for tests)."""
        return self._mean_grad_given(W, t, self.n_triplets, "t", "triplet", "triplet", out)

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
