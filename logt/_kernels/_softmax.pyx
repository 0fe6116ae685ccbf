# cython: language_level=3
"""Compiled core of neighbour-softmax metric learning (:class:`logt.oracles.SoftmaxMetricLearning`).

One oracle call is an anchor ``i`` drawn uniformly from a fixed list, with its fixed candidate
list ``C_i``: first its ``t_i`` target neighbours (nearest class-mates), then its nearest
other-class points (impostors). With ``u_c = x_i - x_c``, ``q_c = u_c^T W u_c`` and the distance
unit ``s > 0``,

    loss_i = (1/t_i) sum_{j target} q_j / s + log sum_{c in C_i} exp(-q_c / s)
           = mean over the targets of -log p_ij,   p_ic = exp(-q_c/s) / sum_c' exp(-q_c'/s),

NCA's soft-neighbour log-likelihood with the candidates fixed: a linear term plus a
log-sum-exp of linear functions of ``W``, so convex, and ``>= 0``. Its gradient

    g_hat(W) = (1/s) sum_{c in C_i} w_c u_c u_c^T + lam W,    w_c = [c target] / t_i - p_ic.

Dense X only. Two paths, the same draws (one bounded 32-bit draw per anchor, in order):

* blocks: the candidates of a block of anchors (at most ``rows`` difference rows) are gathered
  and their ``q`` comes from one ``dgemm`` (``_pairs._dense_q``); the rows with ``w_c > 0`` and
  ``w_c < 0``, scaled by ``sqrt(|w_c| / (s B))``, go to two ``dsyrk``. O(|C_i| d^2) per anchor.
* points (when the batch's candidate rows are at least ``2 n``, and ``n d <= 2^25``): ``Z = X W`` (one ``dgemm``),
  ``q_c = u_c . (z_i - z_c)`` in O(d), and ``sum w_c u_c u_c^T = X^T L X`` for the weighted
  anchor-candidate Laplacian ``L`` (``Y = L X`` by O(d) row updates, one ``dsyr2k``,
  ``csrc/logt_pairpoints.c``): O(n d^2 + |C_i| d) per call.

No global state: every workspace belongs to the object (one call at a time per object).
"""
import numpy as np

from libc.math cimport exp, log, sqrt
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from numpy.random cimport bitgen_t
from scipy.linalg.cython_blas cimport dsyrk

from logt._kernels._base cimport poll_signals, poll_start, LOGT_INTERRUPTED
from logt._kernels._metric_core cimport DenseMetricCore
from logt._kernels._pairs cimport bounded_uint32, _dense_q, _mirror_add_lam

cdef extern from "logt_pairpoints.h" nogil:
    double logt_diff_dot(const double* xi, const double* xj, const double* zi, const double* zj,
                         double* D, Py_ssize_t d)
    void logt_row_update(double c, const double* D, double* yi, double* yj, Py_ssize_t d)

# difference rows per block (at least one anchor's candidates)
cdef enum:
    ROWS = 256
# the largest d: a d x d metric of 4096^2 doubles is 128 MiB
MAX_SOFTMAX_FEATURES = 4096
# the most anchors (indices are drawn as 32-bit words)
MAX_ANCHORS = 2**31 - 1
# the point path's two n x d workspaces are allocated up to this many doubles each (2^25: 256 MiB)
cdef enum:
    POINT_PATH_MAX_DOUBLES = 33554432


cdef class SoftmaxGradientCore(DenseMetricCore):
    """Holds the anchors' candidate lists and the softmax's workspaces on top of :class:`DenseMetricCore`'s
    data and paths; :meth:`_setup` is called once by the Python subclass after validation."""
    cdef readonly Py_ssize_t n_anchors, n_eval_anchors, max_candidates
    cdef const int32_t* _anc                   # (n_anchors,) point index of each anchor
    cdef const int64_t* _ptr                   # (n_anchors + 1,) candidates of anchor a: _cand[_ptr[a]:_ptr[a+1]]
    cdef const int32_t* _cand
    cdef const int32_t* _nt                    # (n_anchors,) targets first, t_a >= 1 of them
    cdef const int32_t* _ev                    # evaluation anchors (indices into the anchors)
    cdef Py_ssize_t _rows                      # rows of the block workspaces
    cdef double* _w                            # rows: the rows' weights
    cdef int32_t* _ba                          # rows: the anchors of the block, in order

    def __cinit__(self, *args, **kwargs):
        self._w = NULL
        self._ba = NULL

    def __dealloc__(self):
        free(self._w)
        free(self._ba)

    def _setup(self, X, anchors, ptr, cand, n_targets, ev, double lam, double unit):
        """Store validated data (once). X : (n, d) C-contiguous float64; anchors : (m,) int32 in
        ``[0, n)``; ptr : (m + 1,) int64, ``ptr[0] = 0``, increasing by at least 1; cand : (ptr[m],)
        int32 in ``[0, n)``, never the anchor itself; n_targets : (m,) int32 in ``[1, ptr[a+1] -
        ptr[a]]``; ev : (e,) int32 indices into the anchors, e >= 1; lam > 0, unit > 0 finite (all
        checked by the caller)."""
        if self._A != NULL:
            raise RuntimeError("_setup may be called only once")
        cdef Py_ssize_t max_cand = int(np.max(np.diff(ptr)))
        cdef Py_ssize_t rows = max(<Py_ssize_t>ROWS, max_cand)
        self._store(X, lam, unit, rows, POINT_PATH_MAX_DOUBLES, "SoftmaxMetricLearning")
        cdef const int32_t[::1] av = anchors
        cdef const int64_t[::1] pv = ptr
        cdef const int32_t[::1] cv = cand
        cdef const int32_t[::1] tv = n_targets
        cdef const int32_t[::1] evv = ev
        self._keep = (X, anchors, ptr, cand, n_targets, ev)
        self._anc = &av[0]
        self._ptr = &pv[0]
        self._cand = &cv[0]
        self._nt = &tv[0]
        self._ev = &evv[0]
        self.n_anchors = len(anchors)
        self.n_eval_anchors = len(ev)
        self.max_candidates = max_cand
        self._rows = rows
        self._w = <double*>malloc(rows * sizeof(double))
        self._ba = <int32_t*>malloc(rows * sizeof(int32_t))
        if self._w == NULL or self._ba == NULL:
            raise MemoryError("SoftmaxMetricLearning workspace")

    cdef bint _use_points(self, Py_ssize_t B) noexcept nogil:
        """The point path costs O(n d^2) per call, the blocks O(d^2) per candidate row: points from about
        ``2 n`` expected rows (``B`` times the mean candidate count)."""
        if self._Z == NULL or self._point_path == 1:
            return False
        return self._point_path == 2 or <double>B * <double>self._ptr[self.n_anchors] >= \
            2.0 * <double>self.n_samples * <double>self.n_anchors

    cdef inline int32_t _pick(self, const int32_t* given, Py_ssize_t b, bitgen_t* rng) noexcept nogil:
        if given != NULL:
            return given[b]
        return <int32_t>bounded_uint32(rng, <uint32_t>self.n_anchors)

    cdef Py_ssize_t _gather(self, const double* W, const int32_t* given, Py_ssize_t b0, Py_ssize_t B,
                            bitgen_t* rng, int32_t* first, Py_ssize_t* n_anc) noexcept nogil:
        """Anchors ``b0, b0+1, ...`` (``given`` indices, or drawn; ``first[0]`` is an anchor drawn
        by the previous block that did not fit, or -1) until ``_rows`` is full or ``B`` are taken:
        their ids in ``_ba``, their candidate differences in the rows of ``_A``, ``q`` in ``_q``.
        Returns the rows used; ``n_anc`` the anchors taken; ``first[0]`` the next drawn anchor when it
        did not fit."""
        cdef Py_ssize_t r = 0, b = b0, c, nc
        cdef int32_t a, i
        n_anc[0] = 0
        while b < B:
            if first[0] >= 0:
                a = first[0]
                first[0] = -1
            else:
                a = self._pick(given, b, rng)
            nc = <Py_ssize_t>(self._ptr[a + 1] - self._ptr[a])
            if r + nc > self._rows:
                first[0] = a                       # keep the draw for the next block
                break
            i = self._anc[a]
            for c in range(nc):
                self._pi[r + c] = i
                self._pj[r + c] = self._cand[self._ptr[a] + c]
            self._ba[n_anc[0]] = a
            r += nc
            b += 1
            n_anc[0] += 1
        _dense_q(self._X, self.n_features, self._pi, self._pj, r, W, self.n_features,
                 self._A, self._M, self._q)
        return r

    # -------------------------------------------------------------- gradient

    cdef inline void _weights(self, int32_t a, const double* q, double* w, double scale) noexcept nogil:
        """``w_c = ([c target] / t_a - p_ac) * scale`` for anchor ``a``'s candidates, from their ``q / s``
        (already scaled by ``1/s``)."""
        cdef Py_ssize_t c, nc = <Py_ssize_t>(self._ptr[a + 1] - self._ptr[a])
        cdef double zmax = -q[0], tot = 0.0, v
        for c in range(1, nc):
            if -q[c] > zmax:
                zmax = -q[c]
        for c in range(nc):
            v = exp(-q[c] - zmax)
            w[c] = v
            tot += v
        for c in range(nc):
            v = -w[c] / tot
            if c < self._nt[a]:
                v += 1.0 / <double>self._nt[a]
            w[c] = v * scale

    cdef int _grad_points(self, const double* W, const int32_t* given, Py_ssize_t B, bitgen_t* rng,
                          double* out) noexcept nogil:
        cdef Py_ssize_t d = self.n_features, b, c, nc
        cdef const double* X = self._X
        cdef double* Z = self._Z
        cdef double* Y = self._Y
        cdef double* D = self._A                   # the anchor's candidate differences, one row each
        cdef double* q = self._q
        cdef double* w = self._w
        cdef double inv_s = 1.0 / self.unit
        cdef double scale = inv_s / <double>B
        cdef int32_t a, i, j
        cdef const int32_t* cand
        cdef double nxt = poll_start()
        self._points_start(W)                      # Z = X W, Y = 0
        for b in range(B):
            if (b & 0x3FFF) == 0x3FFF and poll_signals(&nxt) != 0:
                return LOGT_INTERRUPTED
            a = self._pick(given, b, rng)
            i = self._anc[a]
            cand = self._cand + self._ptr[a]
            nc = <Py_ssize_t>(self._ptr[a + 1] - self._ptr[a])
            for c in range(nc):
                j = cand[c]
                q[c] = inv_s * logt_diff_dot(X + <Py_ssize_t>i * d, X + <Py_ssize_t>j * d,
                                             Z + <Py_ssize_t>i * d, Z + <Py_ssize_t>j * d, D + c * d, d)
            self._weights(a, q, w, scale)
            for c in range(nc):
                logt_row_update(w[c], D + c * d, Y + <Py_ssize_t>i * d, Y + <Py_ssize_t>cand[c] * d, d)
        self._points_finish(W, out)                # X^T L X + lam W
        return 0

    cdef int _grad_blocks(self, const double* W, const int32_t* given, Py_ssize_t B, bitgen_t* rng,
                          double* out) noexcept nogil:
        cdef Py_ssize_t d = self.n_features, b0 = 0, rows, r, r0, c, nc, k, npos, nneg, e
        cdef Py_ssize_t n_anc
        cdef int32_t first = -1, a
        cdef double* A = self._A
        cdef double* M = self._M
        cdef double* q = self._q
        cdef double* w = self._w
        cdef double inv_s = 1.0 / self.unit
        cdef double scale = inv_s / <double>B
        cdef double r_
        cdef int n = <int>d, kk, ldc = <int>d
        cdef double one = 1.0, mone = -1.0
        cdef double nxt = poll_start()
        memset(out, 0, d * d * sizeof(double))
        while b0 < B:
            if poll_signals(&nxt) != 0:
                return LOGT_INTERRUPTED
            rows = self._gather(W, given, b0, B, rng, &first, &n_anc)
            # softmax weights per anchor: w_c = [target] / t - p_c, times 1 / (s B)
            r0 = 0
            for k in range(n_anc):
                a = self._ba[k]
                nc = <Py_ssize_t>(self._ptr[a + 1] - self._ptr[a])
                for c in range(nc):
                    q[r0 + c] *= inv_s
                self._weights(a, q + r0, w + r0, scale)
                r0 += nc
            # rows with w > 0 to M (sqrt(w) u), rows with w < 0 compacted in A (sqrt(-w) u)
            npos = 0
            nneg = 0
            for r in range(rows):
                if w[r] > 0.0:
                    r_ = sqrt(w[r])
                    for e in range(d):
                        M[npos * d + e] = r_ * A[r * d + e]
                    npos += 1
                elif w[r] < 0.0:
                    r_ = sqrt(-w[r])
                    for e in range(d):
                        A[nneg * d + e] = r_ * A[r * d + e]
                    nneg += 1
            # column-major upper of out (= row-major lower) += M^T M - A^T A
            if npos > 0:
                kk = <int>npos
                dsyrk(b"U", b"N", &n, &kk, &one, M, &n, &one, out, &ldc)
            if nneg > 0:
                kk = <int>nneg
                dsyrk(b"U", b"N", &n, &kk, &mone, A, &n, &one, out, &ldc)
            b0 += n_anc
        _mirror_add_lam(out, W, d, d, self.lam)
        return 0

    def _mean_grad_anchors(self, W, a, out=None):
        """Mean gradient over GIVEN anchors ``a`` (indices into the anchors; private, for tests)."""
        return self._mean_grad_given(W, a, self.n_anchors, "a", "anchor", "softmax", out)

    # -------------------------------------------------------------- objective

    cdef double _eval_loss_c(self, const double* W) noexcept nogil:
        cdef Py_ssize_t e0 = 0, rows, r0, c, r, nc, n_anc
        cdef Py_ssize_t ne = self.n_eval_anchors
        cdef int32_t first = -1, a
        cdef double inv_s = 1.0 / self.unit, total = 0.0, zmax, tot, lin
        while e0 < ne:
            rows = self._gather(W, self._ev, e0, ne, NULL, &first, &n_anc)
            r0 = 0
            for c in range(n_anc):
                a = self._ba[c]
                nc = <Py_ssize_t>(self._ptr[a + 1] - self._ptr[a])
                zmax = -self._q[r0] * inv_s
                lin = 0.0
                for r in range(nc):
                    if -self._q[r0 + r] * inv_s > zmax:
                        zmax = -self._q[r0 + r] * inv_s
                    if r < self._nt[a]:
                        lin += self._q[r0 + r] * inv_s
                tot = 0.0
                for r in range(nc):
                    tot += exp(-self._q[r0 + r] * inv_s - zmax)
                total += lin / <double>self._nt[a] + zmax + log(tot)
                r0 += nc
            e0 += n_anc
        return total / <double>ne
