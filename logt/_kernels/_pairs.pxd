# cython: language_level=3
"""Compiled core of the regularized metric-learning oracle; see ``_pairs.pyx``."""
from libc.stdint cimport int32_t, int64_t, uint32_t
from numpy.random cimport bitgen_t
from cpython.ref cimport PyObject

from logt._kernels._base cimport CompiledOracle


# Unbiased integer in [0, s), 1 <= s <= 2**32 - 1 (Lemire's multiply-shift with rejection).
cdef uint32_t bounded_uint32(bitgen_t* rng, uint32_t s) noexcept nogil

# Draw B uniform ordered pairs (i, j), i != j, of range(n) (n >= 2) into pi, pj.
cdef void draw_pairs(bitgen_t* rng, Py_ssize_t n, Py_ssize_t B,
                     int32_t* pi, int32_t* pj) noexcept nogil

cdef enum:
    UNIFORM_ = 0
    BALANCED_ = 1
    NEIGHBORS_ = 2
    LIST_ = 3
    LIST_BALANCED_ = 4

# A pair distribution (see PairSampler); every array is owned by the PairSampler object.
ctypedef struct Sampler:
    int mode
    Py_ssize_t n                 # points
    const int32_t* lab           # class codes (n), NULL for lists
    const int32_t* order         # BALANCED: points sorted by class
    const int32_t* pos           # BALANCED: position of each point in order
    const int64_t* cstart        # BALANCED: class c is order[cstart[c]:cstart[c+1]]
    const int32_t* elig          # BALANCED / NEIGHBORS: points that have a class-mate (neighbour)
    Py_ssize_t n_elig
    Py_ssize_t k                 # NEIGHBORS: row length of the tables
    const int32_t* nsim          # NEIGHBORS: (n, k) same-class neighbours
    const int32_t* ndis          # NEIGHBORS: (n, k) other-class neighbours
    const int32_t* ksim          # NEIGHBORS: valid entries per row
    const int32_t* kdis
    const int32_t* delig         # NEIGHBORS: points that have an other-class neighbour
    Py_ssize_t n_delig
    Py_ssize_t n_list            # LIST*: pairs (li[p], lj[p]) with labels ly[p]
    const int32_t* li
    const int32_t* lj
    const double* ly
    const int32_t* lpos          # LIST_BALANCED: indices of +1 / -1 pairs
    Py_ssize_t n_pos
    const int32_t* lneg
    Py_ssize_t n_neg

# B pairs of sampler s: indices into pi, pj, labels (+-1.0) into py.
cdef void draw_block(const Sampler* s, bitgen_t* rng, Py_ssize_t B,
                     int32_t* pi, int32_t* pj, double* py) noexcept nogil


# Dense pair differences and their quadratic forms (the dense paths' first step; also the triplet
# core's): A[b] = X[pi[b]] - X[pj[b]], M = A W (rows), q[b] = D_b^T W D_b; W row stride ld.
cdef void _dense_q(const double* X, Py_ssize_t d, const int32_t* pi, const int32_t* pj,
                   Py_ssize_t nb, const double* W, Py_ssize_t ld,
                   double* A, double* M, double* q) noexcept nogil

# out's row-major lower triangle (d x d, stride ld) mirrored to the upper one, plus lam * W.
cdef void _mirror_add_lam(double* out, const double* W, Py_ssize_t d, Py_ssize_t ld,
                          double lam) noexcept nogil


cdef class PairSampler:
    cdef Sampler s
    cdef readonly object _keep


cdef class PairGradientCore(CompiledOracle):
    cdef readonly Py_ssize_t n_samples, n_features
    cdef readonly double lam
    cdef readonly int n_threads
    cdef readonly bint is_sparse
    cdef readonly Py_ssize_t n_eval_pairs
    cdef readonly bint learn_threshold       # point is (d+1) x (d+1), b = Z[d, d]
    cdef readonly double threshold           # the fixed b (when not learned)
    cdef readonly double threshold_scale     # learned: b = threshold_scale * Z[d, d]
    cdef readonly PairSampler sampler
    cdef readonly Py_ssize_t workspace_bytes
    cdef const Sampler* _smp
    cdef PyObject* _exc[3]                   # exception of an interrupted call (type, value, traceback)
    cdef Py_ssize_t _ld                      # row stride of a point: d or d + 1
    # training data (kept alive by the Python objects below)
    cdef object _keep
    cdef const int64_t* _indptr
    cdef const int32_t* _ind
    cdef const double* _val
    cdef const double* _dense
    cdef Py_ssize_t _max_nnz_diff, _dpad
    # evaluation data and pairs
    cdef const int64_t* _e_indptr
    cdef const int32_t* _e_ind
    cdef const double* _e_val
    cdef const double* _e_dense
    cdef const int32_t* _e_i
    cdef const int32_t* _e_j
    cdef const double* _e_y
    cdef Py_ssize_t _n_eval_rows
    # workspaces (owned by this object: one call at a time per object)
    cdef Py_ssize_t _max_chunks, _blk, _sb
    cdef double* _V           # d*d: W + W^T off the diagonal, W_aa on it
    cdef double* _acc         # (max_chunks - 1) * d*d chunk accumulators
    cdef double* _wsc         # max_chunks * dpad zeroed scratch vectors (sparse D)
    cdef int32_t* _didx       # max_chunks * max_nnz_diff
    cdef double* _dval        # max_chunks * max_nnz_diff
    cdef int32_t* _pairbuf    # 2 * SUPERBLOCK drawn pair indices
    cdef double* _ybuf        # SUPERBLOCK drawn pair labels
    cdef double* _A           # dense path: blk * d
    cdef double* _M           # dense path: blk * d
    cdef double* _q           # dense path: blk
    cdef double* _Zw          # dense point path: max(n, n_eval) * d, Z = X W (NULL when too large)
    cdef double* _Yw          # dense point path: n * d, Y = (pair Laplacian) X
    cdef int _point_path                     # dense: 0 auto (cost model), 1 pairs, 2 points (when allocated)

    cdef void _drop_stash(self) noexcept
    cdef Py_ssize_t _n_chunks(self, Py_ssize_t B) noexcept nogil
    cdef int _grad(self, const double* W, const int32_t* pi, const int32_t* pj, const double* py,
                   Py_ssize_t B, bitgen_t* rng, int n_threads, double* out) noexcept nogil
    cdef void _block(self, bitgen_t* rng, Py_ssize_t s0, Py_ssize_t nb,
                     const int32_t* pi, const int32_t* pj, const double* py,
                     const int32_t** qi, const int32_t** qj, const double** qy) noexcept nogil
    cdef int _grad_sparse(self, const double* W, const int32_t* pi, const int32_t* pj, const double* py,
                          Py_ssize_t B, bitgen_t* rng, int n_threads, double thr,
                          double* out, double* csum_out) noexcept nogil
    cdef int _grad_dense(self, const double* W, const int32_t* pi, const int32_t* pj, const double* py,
                         Py_ssize_t B, bitgen_t* rng, double thr,
                         double* out, double* csum_out) noexcept nogil
    cdef bint _use_points(self, Py_ssize_t n_pairs, Py_ssize_t n_rows) noexcept nogil
    cdef int _grad_dense_points(self, const double* W, const int32_t* pi, const int32_t* pj, const double* py,
                                Py_ssize_t B, bitgen_t* rng, double thr,
                                double* out, double* csum_out) noexcept nogil
    cdef double _eval_loss_sparse(self, const double* W, double thr) noexcept nogil
    cdef double _eval_loss_dense(self, const double* W, double thr) noexcept nogil
