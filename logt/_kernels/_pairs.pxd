# cython: language_level=3
"""Compiled core of the regularized metric-learning oracle; see ``_pairs.pyx``."""
from libc.stdint cimport int32_t, int64_t, uint32_t
from numpy.random cimport bitgen_t

from logt._kernels._base cimport CompiledOracle


# Unbiased integer in [0, s), 1 <= s <= 2**32 - 1 (Lemire's multiply-shift with rejection).
cdef uint32_t bounded_uint32(bitgen_t* rng, uint32_t s) noexcept nogil

# Draw B uniform ordered pairs (i, j), i != j, of range(n) (n >= 2) into pi, pj.
cdef void draw_pairs(bitgen_t* rng, Py_ssize_t n, Py_ssize_t B,
                     int32_t* pi, int32_t* pj) noexcept nogil


cdef class PairGradientCore(CompiledOracle):
    cdef readonly Py_ssize_t n_samples, n_features
    cdef readonly double lam
    cdef readonly int n_threads
    cdef readonly bint is_sparse
    cdef readonly Py_ssize_t n_eval_pairs
    # training data (kept alive by the Python objects below)
    cdef object _keep
    cdef const int64_t* _indptr
    cdef const int32_t* _ind
    cdef const double* _val
    cdef const double* _dense
    cdef const int32_t* _lab
    cdef Py_ssize_t _max_nnz_diff, _dpad
    # evaluation data and pairs
    cdef const int64_t* _e_indptr
    cdef const int32_t* _e_ind
    cdef const double* _e_val
    cdef const double* _e_dense
    cdef const int32_t* _e_i
    cdef const int32_t* _e_j
    cdef const double* _e_y
    # workspaces (owned by this object: one call at a time per object)
    cdef Py_ssize_t _max_chunks, _blk
    cdef double* _V           # d*d: W + W^T off the diagonal, W_aa on it
    cdef double* _acc         # (max_chunks - 1) * d*d chunk accumulators
    cdef double* _wsc         # max_chunks * dpad zeroed scratch vectors (sparse D)
    cdef int32_t* _didx       # max_chunks * max_nnz_diff
    cdef double* _dval        # max_chunks * max_nnz_diff
    cdef int32_t* _pairbuf    # 2 * SUPERBLOCK drawn pair indices
    cdef double* _A           # dense path: blk * d
    cdef double* _M           # dense path: blk * d
    cdef double* _q           # dense path: blk

    cdef Py_ssize_t _n_chunks(self, Py_ssize_t B) noexcept nogil
    cdef int _grad(self, const double* W, const int32_t* pi, const int32_t* pj,
                   Py_ssize_t B, bitgen_t* rng, int n_threads, double* out) noexcept nogil
    cdef int _grad_sparse(self, const double* W, const int32_t* pi, const int32_t* pj,
                          Py_ssize_t B, bitgen_t* rng, int n_threads, double* out) noexcept nogil
    cdef int _grad_dense(self, const double* W, const int32_t* pi, const int32_t* pj,
                         Py_ssize_t B, bitgen_t* rng, double* out) noexcept nogil
    cdef double _eval_loss_sparse(self, const double* W) noexcept nogil
    cdef double _eval_loss_dense(self, const double* W) noexcept nogil
