# cython: language_level=3
"""The part the dense metric cores without a threshold share (``_triplets``, ``_softmax``); see ``_metric_core.pyx``."""
from libc.stdint cimport int32_t
from numpy.random cimport bitgen_t

from logt._kernels._base cimport CompiledOracle


cdef class DenseMetricCore(CompiledOracle):
    cdef readonly Py_ssize_t n_samples, n_features
    cdef readonly double lam
    cdef readonly double unit                  # s: distances are measured in units of s
    cdef object _keep                          # the arrays the pointers below point into
    cdef const double* _X                      # (n, d) C-contiguous
    cdef double* _A                            # rows * d: difference rows
    cdef double* _M                            # rows * d
    cdef double* _q                            # rows: their quadratic forms
    cdef int32_t* _pi                          # rows: the pairs (pi, pj) of the rows
    cdef int32_t* _pj
    cdef double* _Z                            # n * d (point path), NULL when not allocated
    cdef double* _Y                            # n * d
    cdef int _point_path                       # 0 auto, 1 blocks, 2 points

    cdef int _store(self, X, double lam, double unit, Py_ssize_t rows, Py_ssize_t max_point_doubles,
                    str owner) except -1
    cdef bint _use_points(self, Py_ssize_t B) noexcept nogil
    cdef int _grad(self, const double* W, const int32_t* given, Py_ssize_t B, bitgen_t* rng,
                   double* out) noexcept nogil
    cdef int _grad_blocks(self, const double* W, const int32_t* given, Py_ssize_t B, bitgen_t* rng,
                          double* out) noexcept nogil
    cdef int _grad_points(self, const double* W, const int32_t* given, Py_ssize_t B, bitgen_t* rng,
                          double* out) noexcept nogil
    cdef void _points_start(self, const double* W) noexcept nogil
    cdef void _points_finish(self, const double* W, double* out) noexcept nogil
    cdef double _eval_loss_c(self, const double* W) noexcept nogil
