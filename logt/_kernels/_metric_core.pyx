# cython: language_level=3
"""What the dense metric cores without a threshold share: :class:`DenseMetricCore`, the base of
``_triplets.TripletGradientCore`` and ``_softmax.SoftmaxGradientCore``.

Both gradients are ``sum_r c_r u_r u_r^T / B + lam W`` over difference rows ``u_r = x_i - x_j``, by one of
two paths with the same draws: blocks of rows gathered into ``_A`` (their quadratic forms from one ``dgemm``,
the update from ``dsyrk``), or the point path, ``Z = X W`` (one ``dgemm``), ``q`` in O(d) per row, the
update ``X^T L X`` of the rows' weighted Laplacian (``Y = L X`` by O(d) row updates, one ``dsyr2k``). This
class holds the data, the workspaces of both paths and their choice; the subclasses draw the rows and weigh
them (``_grad_blocks``, ``_grad_points``, ``_use_points``, ``_eval_loss_c``).

No global state: every workspace belongs to the object (one call at a time per object, under ``_lock``).
"""
import numpy as np

from libc.stdint cimport int32_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from numpy.random cimport bitgen_t
from scipy.linalg.cython_blas cimport dgemm, dsyr2k

from logt._kernels._base import POINT_PATHS, _as_point, _check_out, _index_array, _point_path_code
from logt._kernels._base cimport CompiledOracle, raise_pending, LOGT_INTERRUPTED
from logt._kernels._pairs cimport _mirror_add_lam


cdef class DenseMetricCore(CompiledOracle):
    """Validated dense data ``X`` (n, d), the block workspaces (``rows`` difference rows) and the point
    path's two ``n x d`` workspaces (optional); the metric ``W`` is d x d. ``mean_grad`` is
    ``CompiledOracle``'s (it calls :meth:`mean_grad_into`)."""

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

    cdef int _store(self, X, double lam, double unit, Py_ssize_t rows, Py_ssize_t max_point_doubles,
                    str owner) except -1:
        """Point at ``X`` (the caller keeps it in ``_keep``), set the sizes, allocate ``rows`` block rows
        (MemoryError naming ``owner``) and, when ``n d <= max_point_doubles``, the point path's
        workspaces (left NULL when they do not fit: that path is optional)."""
        if self._A != NULL:
            raise RuntimeError("_setup may be called only once")
        cdef const double[:, ::1] xv = X
        cdef Py_ssize_t n = X.shape[0], d = X.shape[1]
        self._X = &xv[0, 0]
        self.n_samples = n
        self.n_features = d
        self.lam = lam
        self.unit = unit
        self.shape = (d, d)
        self.size = d * d
        self._A = <double*>malloc(rows * d * sizeof(double))
        self._M = <double*>malloc(rows * d * sizeof(double))
        self._q = <double*>malloc(rows * sizeof(double))
        self._pi = <int32_t*>malloc(rows * sizeof(int32_t))
        self._pj = <int32_t*>malloc(rows * sizeof(int32_t))
        if self._A == NULL or self._M == NULL or self._q == NULL or self._pi == NULL or self._pj == NULL:
            raise MemoryError(f"{owner} workspace")
        if n * d <= max_point_doubles:
            self._Z = <double*>malloc(n * d * sizeof(double))
            self._Y = <double*>malloc(n * d * sizeof(double))
        if self._Z == NULL or self._Y == NULL:
            free(self._Z)
            free(self._Y)
            self._Z = NULL
            self._Y = NULL
        return 0

    @property
    def point_path(self):
        """"auto" (default: the point path where it is the cheaper one, see the class), "blocks" or
        "points" (when allocated). Same draws, same value up to rounding."""
        return POINT_PATHS[self._point_path]

    @point_path.setter
    def point_path(self, value):
        self._point_path = _point_path_code(value)

    cdef bint _use_points(self, Py_ssize_t B) noexcept nogil:
        return False

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
        """out = mean of g_hat(W) over ``B`` draws: ``given`` indices into the subclass's list, or drawn
        from ``rng``."""
        if self._use_points(B):
            return self._grad_points(W, given, B, rng, out)
        return self._grad_blocks(W, given, B, rng, out)

    cdef int _grad_blocks(self, const double* W, const int32_t* given, Py_ssize_t B, bitgen_t* rng,
                          double* out) noexcept nogil:
        return -4

    cdef int _grad_points(self, const double* W, const int32_t* given, Py_ssize_t B, bitgen_t* rng,
                          double* out) noexcept nogil:
        return -4

    cdef void _points_start(self, const double* W) noexcept nogil:
        """The point path's start: column-major ``Z`` (d x n) = ``W^T X^T`` (row ``i`` of ``Z`` is
        ``W^T x_i``, so ``u^T W u = u . (z_i - z_j)``), ``Y = 0``."""
        cdef int di = <int>self.n_features, ni = <int>self.n_samples
        cdef double one = 1.0, zero = 0.0
        dgemm(b"N", b"N", &di, &ni, &di, &one, <double*>W, &di, <double*>self._X, &di, &zero, self._Z, &di)
        memset(self._Y, 0, self.n_samples * self.n_features * sizeof(double))

    cdef void _points_finish(self, const double* W, double* out) noexcept nogil:
        """The point path's end: column-major upper of ``out`` (= row-major lower) = ``(X^T Y + Y^T X) / 2``
        = ``X^T L X``, mirrored, plus ``lam W``."""
        cdef Py_ssize_t d = self.n_features
        cdef int di = <int>d, ni = <int>self.n_samples, ldc = <int>d
        cdef double zero = 0.0, half = 0.5
        dsyr2k(b"U", b"N", &di, &ni, &half, <double*>self._X, &di, self._Y, &di, &zero, out, &ldc)
        _mirror_add_lam(out, W, d, d, self.lam)

    def _mean_grad_given(self, W, idx, Py_ssize_t n_items, str name, str item, str loss, out=None):
        """Mean gradient over the GIVEN indices ``idx`` into the subclass's list of ``n_items`` (private,
        for tests; ``name``, ``item`` and ``loss`` word the errors)."""
        Wa = _as_point(W, self.shape, "W")
        idx = _index_array(idx, n_items, name, item)
        out = _check_out(out, self.shape)
        if np.shares_memory(Wa, out):
            Wa = Wa.copy()
        cdef double[::1] wb = Wa.reshape(-1)
        cdef double[::1] ob = out.reshape(-1)
        cdef int32_t[::1] iv = idx
        cdef Py_ssize_t B = len(idx)
        cdef int info
        with self._lock:
            with nogil:
                info = self._grad(&wb[0], &iv[0], B, NULL, &ob[0])
        if info == LOGT_INTERRUPTED:
            raise_pending()
        if info != 0:
            raise RuntimeError(f"{loss} gradient failed (code {info})")
        return out

    # -------------------------------------------------------------- objective

    cdef double _eval_loss_c(self, const double* W) noexcept nogil:
        return 0.0

    def _eval_loss(self, W):
        """Mean loss over the evaluation sample (no regularizer); W : (d, d) float64."""
        Wa = _as_point(W, self.shape, "W")
        cdef double[::1] wb = Wa.reshape(-1)
        cdef double r
        with self._lock:
            with nogil:
                r = self._eval_loss_c(&wb[0])
        return r
