# cython: language_level=3
"""Compiled core of regularized distance metric learning (the paper's second experiment).

Notation (paper): ``W`` is a d x d matrix, one oracle call is a uniformly random
ordered training pair ``(i, j)``, ``i != j``, with ``y_ij = +1`` for equal labels
and ``-1`` otherwise, ``D = x_i - x_j``, ``z = y_ij * (1 - D^T W D)`` and

    g_hat(W) = y_ij * sigmoid(-z) * D D^T + lam * W.

A mini-batch mean of ``B`` calls is ``D_B^T diag(c) D_B / B + lam * W`` with
``c_b = y_b * sigmoid(-z_b)``.

Sparse X (CSR): ``D`` has at most ``nnz(x_i) + nnz(x_j)`` nonzeros (<= 28 on
a9a), so ``D^T W D`` is read from that block of ``V`` (the upper triangle of
``W + W^T``, diagonal ``W_aa``) and ``c D D^T`` is accumulated on the block's
upper triangle only; the triangle is mirrored once at the end.

Threads: all pair indices are drawn first, sequentially, from the caller's bit
generator (in super-blocks of ``SUPERBLOCK`` pairs). The pairs are split into
``n_chunks`` fixed chunks (``n_chunks`` depends only on ``B`` and ``d``, never on
the thread count); threads claim whole chunks, each chunk accumulates into its
own buffer and the buffers are summed in chunk order: the result is
bit-identical for every thread count.

Dense X: pairs are processed in blocks of ``blk``; ``D_blk`` is gathered,
``q = diag(D W D^T)`` comes from one ``dgemm``, and the update from two
``dsyrk`` calls on ``sqrt(|c|)``-scaled rows split by the sign of ``c`` (so
the result is exactly symmetric).
"""
import numpy as np

from libc.math cimport exp, log1p, fabs, sqrt
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset, memcpy
from numpy.random cimport bitgen_t
from scipy.linalg.cython_blas cimport dgemm, dsyrk, ddot

from logt._kernels._base cimport CompiledOracle, bitgen_of

cdef enum:
    SUPERBLOCK = 65536              # pairs drawn per super-block (workspace 2 * SUPERBLOCK int32)
    MAX_CHUNKS = 8                  # at most this many chunk accumulators (d*d each) ...
    ACC_BYTES = 64 * 1024 * 1024    # ... and at most this many bytes for them


# ---------------------------------------------------------------- sampling

cdef uint32_t bounded_uint32(bitgen_t* rng, uint32_t s) noexcept nogil:
    # Lemire (2019): m = x * s with x a uniform 32-bit word (the high half of
    # next_uint64); reject while the low half of m is below 2**32 mod s.
    cdef uint64_t m = (rng.next_uint64(rng.state) >> 32) * <uint64_t>s
    cdef uint32_t low = <uint32_t>m
    cdef uint32_t t
    if low < s:
        t = <uint32_t>(((<uint64_t>1) << 32) - s) % s
        while low < t:
            m = (rng.next_uint64(rng.state) >> 32) * <uint64_t>s
            low = <uint32_t>m
    return <uint32_t>(m >> 32)


cdef void draw_pairs(bitgen_t* rng, Py_ssize_t n, Py_ssize_t B,
                     int32_t* pi, int32_t* pj) noexcept nogil:
    cdef Py_ssize_t b
    cdef uint32_t i, j
    for b in range(B):
        i = bounded_uint32(rng, <uint32_t>n)
        j = bounded_uint32(rng, <uint32_t>(n - 1))
        j += (j >= i)
        pi[b] = <int32_t>i
        pj[b] = <int32_t>j


def _sample_pairs(Py_ssize_t n, Py_ssize_t B, rng):
    """Draw ``B`` uniform ordered pairs ``(i, j)``, ``i != j``, of ``range(n)``.

    The same sampler as the oracle (private; for tests). Returns two int32 arrays.
    """
    if n < 2 or n > 2**31 - 1:
        raise ValueError(f"n must be in [2, 2**31 - 1], got {n}")
    if B < 0:
        raise ValueError(f"B must be >= 0, got {B}")
    pi = np.empty(B, dtype=np.int32)
    pj = np.empty(B, dtype=np.int32)
    cdef int32_t[::1] a = pi
    cdef int32_t[::1] c = pj
    cdef bitgen_t* bg = bitgen_of(rng)
    if B > 0:
        with rng.bit_generator.lock, nogil:
            draw_pairs(bg, n, B, &a[0], &c[0])
    return pi, pj


# ---------------------------------------------------------------- small helpers

cdef inline double _sigmoid_neg(double z) noexcept nogil:
    """sigmoid(-z) = 1 / (1 + exp(z)), without overflow."""
    cdef double e
    if z >= 0:
        e = exp(-z)
        return e / (1.0 + e)
    return 1.0 / (1.0 + exp(z))


cdef inline double _logit_loss(double z) noexcept nogil:
    """log(1 + exp(-z)) = log1p(exp(-|z|)) + max(-z, 0)."""
    return log1p(exp(-fabs(z))) + (-z if z < 0 else 0.0)


cdef inline Py_ssize_t _sparse_diff(const int64_t* indptr, const int32_t* ind, const double* val,
                                    Py_ssize_t i, Py_ssize_t j, double* w,
                                    int32_t* didx, double* dval) noexcept nogil:
    """Nonzeros of D = x_i - x_j (CSR rows, any column order), branch-free.

    ``w`` is a zeroed scratch vector of length d and is left zeroed.
    ``didx`` / ``dval`` need room for nnz(x_i) + nnz(x_j) entries. The index
    order is x_i's columns, then x_j's columns not in x_i (not sorted), so
    callers treat ``(didx[a], didx[b])`` for ``a <= b`` as an unordered pair.
    Returns the number of nonzeros (cancelled entries are dropped).
    """
    cdef Py_ssize_t k = 0, m = 0, t
    cdef int64_t p
    cdef int32_t a
    cdef double v
    for p in range(indptr[i], indptr[i + 1]):
        a = ind[p]
        didx[k] = a
        w[a] = val[p]
        k += 1
    for p in range(indptr[j], indptr[j + 1]):
        a = ind[p]
        didx[k] = a
        k += (w[a] == 0.0)          # a new column (or x_i's explicit zero: deduplicated below)
        w[a] -= val[p]
    for t in range(k):
        a = didx[t]
        v = w[a]
        w[a] = 0.0
        didx[m] = a
        dval[m] = v
        m += (v != 0.0)
    return m


cdef inline double _sparse_quad(const double* V, Py_ssize_t d, Py_ssize_t k,
                                const int32_t* didx, const double* dval) noexcept nogil:
    """D^T W D = sum_a D_a (V_aa D_a + sum_{b > a} V_ab D_b) on D's block.

    V (d x d) is W + W^T off the diagonal and W_aa on it (both triangles),
    so any column order of D works.
    """
    cdef double q = 0.0, s0, s1, s2, s3
    cdef const double* row
    cdef Py_ssize_t a, b
    for a in range(k):
        row = V + <Py_ssize_t>didx[a] * d
        # four partial sums: the row sum is not one long chain of dependent adds
        s0 = row[didx[a]] * dval[a]
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        b = a + 1
        while b + 3 < k:
            s0 = s0 + row[didx[b]] * dval[b]
            s1 = s1 + row[didx[b + 1]] * dval[b + 1]
            s2 = s2 + row[didx[b + 2]] * dval[b + 2]
            s3 = s3 + row[didx[b + 3]] * dval[b + 3]
            b += 4
        while b < k:
            s0 = s0 + row[didx[b]] * dval[b]
            b += 1
        q = q + dval[a] * ((s0 + s1) + (s2 + s3))
    return q


cdef void _sparse_chunk(const int64_t* indptr, const int32_t* ind, const double* val,
                        const int32_t* lab, const double* V, Py_ssize_t d,
                        const int32_t* pi, const int32_t* pj, Py_ssize_t b0, Py_ssize_t b1,
                        double scale, double* w, int32_t* didx, double* dval,
                        double* acc) noexcept nogil:
    """sym(acc) += sum_{b0 <= b < b1} scale * y_b * sigmoid(-z_b) * D_b D_b^T.

    Each unordered index pair {s, t} of D's block is added once, to acc[s, t]
    or acc[t, s]: the sum is ``acc + acc^T`` off the diagonal (folded at the end).
    """
    cdef Py_ssize_t b, k, a, e
    cdef int32_t i, j
    cdef double q, y, c, ca
    cdef double* row
    for b in range(b0, b1):
        i = pi[b]
        j = pj[b]
        k = _sparse_diff(indptr, ind, val, i, j, w, didx, dval)
        if k == 0:
            continue
        q = _sparse_quad(V, d, k, didx, dval)
        y = 1.0 if lab[i] == lab[j] else -1.0
        c = y * _sigmoid_neg(y * (1.0 - q)) * scale
        for a in range(k):
            ca = c * dval[a]
            row = acc + <Py_ssize_t>didx[a] * d
            for e in range(a, k):
                row[didx[e]] += ca * dval[e]


cdef void _fill_V(const double* W, Py_ssize_t d, double* V) noexcept nogil:
    """V = W + W^T off the diagonal, V_aa = W_aa (so D^T W D = sum_{a <= b} V_ab D_a D_b)."""
    cdef Py_ssize_t a, e
    cdef double s
    for a in range(d):
        V[a * d + a] = W[a * d + a]
        for e in range(a + 1, d):
            s = W[a * d + e] + W[e * d + a]
            V[a * d + e] = s
            V[e * d + a] = s


cdef void _dense_q(const double* X, Py_ssize_t d, const int32_t* pi, const int32_t* pj,
                   Py_ssize_t nb, const double* W, double* A, double* M, double* q) noexcept nogil:
    """A[b] = X[pi[b]] - X[pj[b]] (rows), M = A W (rows: W^T D_b), q[b] = D_b^T W D_b."""
    cdef Py_ssize_t b, a
    cdef const double* xi
    cdef const double* xj
    cdef double* ab
    cdef int n = <int>d, m = <int>nb, inc = 1
    cdef double one = 1.0, zero = 0.0
    for b in range(nb):
        xi = X + <Py_ssize_t>pi[b] * d
        xj = X + <Py_ssize_t>pj[b] * d
        ab = A + b * d
        for a in range(d):
            ab[a] = xi[a] - xj[a]
    # column-major: M (d x nb) = W^T (d x d, W read column-major) @ A (d x nb)
    dgemm(b"N", b"N", &n, &m, &n, &one, <double*>W, &n, A, &n, &zero, M, &n)
    for b in range(nb):
        q[b] = ddot(&n, A + b * d, &inc, M + b * d, &inc)


# ---------------------------------------------------------------- threads
# Plain pthreads (not OpenMP): helpers are started per super-block and joined
# with a blocking (passive) wait, so a busy machine costs at most the serial
# time; OpenMP's default spinning barrier was measured 4-8x slower than serial
# when another process occupied one of the two cores.

cdef extern from "<pthread.h>" nogil:
    ctypedef struct pthread_t:
        pass
    ctypedef struct pthread_mutex_t:
        pass
    int pthread_create(pthread_t* thread, const void* attr,
                       void* (*start)(void*) noexcept nogil, void* arg)
    int pthread_join(pthread_t thread, void** retval)
    int pthread_mutex_init(pthread_mutex_t* m, const void* attr)
    int pthread_mutex_lock(pthread_mutex_t* m)
    int pthread_mutex_unlock(pthread_mutex_t* m)
    int pthread_mutex_destroy(pthread_mutex_t* m)


cdef enum:
    MAX_HELPERS = 63


ctypedef struct SparseJob:
    const int64_t* indptr
    const int32_t* ind
    const double* val
    const int32_t* lab
    const double* V
    Py_ssize_t d
    const int32_t* qi
    const int32_t* qj
    Py_ssize_t nb           # pairs in this super-block
    Py_ssize_t nc           # fixed chunks; chunk c owns pairs [c*nb/nc, (c+1)*nb/nc), its
    double scale            # accumulator (out for c = 0, else acc + (c-1)*d*d) and scratch slot c
    double* wsc
    Py_ssize_t dp
    int32_t* didx
    double* dval
    Py_ssize_t w
    double* out
    double* acc
    pthread_mutex_t mutex
    Py_ssize_t next_chunk


cdef void* _chunk_worker(void* arg) noexcept nogil:
    """Claim chunks from the shared counter until none is left (any thread may run any chunk)."""
    cdef SparseJob* job = <SparseJob*>arg
    cdef Py_ssize_t c, d = job.d
    while True:
        pthread_mutex_lock(&job.mutex)
        c = job.next_chunk
        job.next_chunk += 1
        pthread_mutex_unlock(&job.mutex)
        if c >= job.nc:
            return NULL
        _sparse_chunk(job.indptr, job.ind, job.val, job.lab, job.V, d, job.qi, job.qj,
                      c * job.nb // job.nc, (c + 1) * job.nb // job.nc, job.scale,
                      job.wsc + c * job.dp, job.didx + c * job.w, job.dval + c * job.w,
                      job.out if c == 0 else job.acc + (c - 1) * d * d)


cdef void _run_chunks(SparseJob* job, int nt) noexcept nogil:
    """Run all chunks of ``job`` on the calling thread plus up to nt - 1 helpers.

    A helper that cannot be started is simply not used (the caller does its work).
    """
    cdef pthread_t helpers[MAX_HELPERS]
    cdef int h, started = 0
    if nt <= 1 or job.nc <= 1:
        job.next_chunk = 0
        pthread_mutex_init(&job.mutex, NULL)
        _chunk_worker(job)
        pthread_mutex_destroy(&job.mutex)
        return
    pthread_mutex_init(&job.mutex, NULL)
    for h in range(min(nt - 1, MAX_HELPERS)):
        if pthread_create(&helpers[started], NULL, _chunk_worker, job) == 0:
            started += 1
    _chunk_worker(job)
    for h in range(started):
        pthread_join(helpers[h], NULL)
    pthread_mutex_destroy(&job.mutex)


# ---------------------------------------------------------------- the core class

cdef inline void _pair_block(bitgen_t* rng, Py_ssize_t n, Py_ssize_t s0, Py_ssize_t nb,
                             const int32_t* pi, const int32_t* pj, int32_t* buf,
                             const int32_t** qi, const int32_t** qj) noexcept nogil:
    """Pairs ``s0 .. s0+nb-1`` of one call: drawn from ``rng`` into ``buf`` (two
    halves of SUPERBLOCK ints), or, when ``rng`` is NULL, the given ``pi``/``pj``."""
    if rng != NULL:
        draw_pairs(rng, n, nb, buf, buf + SUPERBLOCK)
        qi[0] = buf
        qj[0] = buf + SUPERBLOCK
    else:
        qi[0] = pi + s0
        qj[0] = pj + s0


cdef class PairGradientCore(CompiledOracle):
    """Compiled core of :class:`logt.oracles.metric.MetricLearning`.

    Holds validated data and workspaces; :meth:`_setup` is called once by the
    Python subclass after validation. One call at a time per object (the
    Python methods take ``self._lock``; compiled step loops own their oracle).
    """

    def __cinit__(self, *args, **kwargs):
        self._V = NULL
        self._acc = NULL
        self._didx = NULL
        self._dval = NULL
        self._pairbuf = NULL
        self._A = NULL
        self._M = NULL
        self._q = NULL
        self._wsc = NULL

    def __dealloc__(self):
        free(self._V)
        free(self._acc)
        free(self._didx)
        free(self._dval)
        free(self._pairbuf)
        free(self._A)
        free(self._M)
        free(self._q)
        free(self._wsc)

    def _setup(self, X, labels, X_eval, ei, ej, ey, double lam, int n_threads):
        """Store validated data (called once by the Python subclass).

        X, X_eval : both ``scipy.sparse.csr_matrix`` (sorted indices, int64
        indptr, int32 indices, float64 data) or both C-contiguous float64
        ndarrays, with the same number of columns d; labels : int32 (n,);
        ei, ej : int32 eval pair indices into X_eval; ey : float64 +-1.
        """
        if self._V != NULL:
            raise RuntimeError("_setup may be called only once")
        cdef Py_ssize_t d = X.shape[1]
        cdef Py_ssize_t n = X.shape[0]
        self.n_samples = n
        self.n_features = d
        self.shape = (d, d)
        self.size = d * d
        self.lam = lam
        self.n_threads = max(1, n_threads)
        self.n_eval_pairs = len(ei)
        self.is_sparse = not isinstance(X, np.ndarray)
        keep = [X, labels, X_eval, ei, ej, ey]
        cdef const int32_t[::1] lab_v = labels
        cdef const int32_t[::1] ei_v = ei
        cdef const int32_t[::1] ej_v = ej
        cdef const double[::1] ey_v = ey
        cdef const int64_t[::1] ip
        cdef const int32_t[::1] ix
        cdef const double[::1] dv
        cdef const double[:, ::1] dx
        self._lab = &lab_v[0]
        self._e_i = &ei_v[0] if len(ei) else NULL
        self._e_j = &ej_v[0] if len(ej) else NULL
        self._e_y = &ey_v[0] if len(ey) else NULL
        cdef Py_ssize_t max_nnz = 0
        if self.is_sparse:
            for M_ in (X, X_eval):
                keep += [M_.indptr, M_.indices, M_.data]
                max_nnz = max(max_nnz, int(np.diff(M_.indptr).max()))
            ip = X.indptr
            ix = X.indices
            dv = X.data
            self._indptr = &ip[0]
            self._ind = &ix[0] if X.nnz else NULL
            self._val = &dv[0] if X.nnz else NULL
            ip = X_eval.indptr
            ix = X_eval.indices
            dv = X_eval.data
            self._e_indptr = &ip[0]
            self._e_ind = &ix[0] if X_eval.nnz else NULL
            self._e_val = &dv[0] if X_eval.nnz else NULL
        else:
            dx = X
            self._dense = &dx[0, 0]
            dx = X_eval
            self._e_dense = &dx[0, 0]
        self._keep = keep
        # per-chunk D buffers and scratch, padded to separate cache lines (no false sharing)
        self._max_nnz_diff = ((max(1, 2 * max_nnz) + 15) // 16) * 16 + 16
        self._dpad = ((d + 7) // 8) * 8 + 8
        self._max_chunks = max(1, min(MAX_CHUNKS, 1 + ACC_BYTES // (8 * d * d)))
        self._blk = max(16, min(1024, (1 << 17) // d))

        self._V = <double*>malloc(d * d * sizeof(double))
        self._pairbuf = <int32_t*>malloc(2 * SUPERBLOCK * sizeof(int32_t))
        if self.is_sparse:
            if self._max_chunks > 1:
                self._acc = <double*>malloc((self._max_chunks - 1) * d * d * sizeof(double))
            self._didx = <int32_t*>malloc(self._max_chunks * self._max_nnz_diff * sizeof(int32_t))
            self._dval = <double*>malloc(self._max_chunks * self._max_nnz_diff * sizeof(double))
            self._wsc = <double*>calloc(self._max_chunks * self._dpad, sizeof(double))
            if ((self._max_chunks > 1 and self._acc == NULL) or self._didx == NULL
                    or self._dval == NULL or self._wsc == NULL):
                raise MemoryError("MetricLearning workspace")
        else:
            self._A = <double*>malloc(self._blk * d * sizeof(double))
            self._M = <double*>malloc(self._blk * d * sizeof(double))
            self._q = <double*>malloc(self._blk * sizeof(double))
            if self._A == NULL or self._M == NULL or self._q == NULL:
                raise MemoryError("MetricLearning workspace")
        if self._V == NULL or self._pairbuf == NULL:
            raise MemoryError("MetricLearning workspace")

    cdef Py_ssize_t _n_chunks(self, Py_ssize_t B) noexcept nogil:
        """Fixed chunk count: depends on B and d only (never on the thread count)."""
        cdef Py_ssize_t d = self.n_features
        cdef Py_ssize_t min_chunk = max(1024, d * d // 16)
        return max(1, min(self._max_chunks, B // min_chunk))

    # -------------------------------------------------------------- gradient

    cdef int mean_grad_into(self, const double* x, Py_ssize_t B,
                            bitgen_t* rng, double* out) noexcept nogil:
        if B < 1:
            return -2
        if self._V == NULL:        # _setup never ran
            return -3
        return self._grad(x, NULL, NULL, B, rng, self.n_threads, out)

    cdef int _grad(self, const double* W, const int32_t* pi, const int32_t* pj,
                   Py_ssize_t B, bitgen_t* rng, int n_threads, double* out) noexcept nogil:
        """out = mean over B pairs of g_hat(W); pairs from (pi, pj) or, if rng != NULL, drawn."""
        if self.is_sparse:
            return self._grad_sparse(W, pi, pj, B, rng, n_threads, out)
        return self._grad_dense(W, pi, pj, B, rng, out)

    cdef int _grad_sparse(self, const double* W, const int32_t* pi, const int32_t* pj,
                          Py_ssize_t B, bitgen_t* rng, int n_threads, double* out) noexcept nogil:
        cdef Py_ssize_t d = self.n_features
        cdef Py_ssize_t a, e, c, s0, nb, b0, b1
        cdef Py_ssize_t nc = self._n_chunks(B)
        cdef Py_ssize_t w = self._max_nnz_diff
        cdef Py_ssize_t dp = self._dpad
        cdef int nt = <int>min(<Py_ssize_t>n_threads, nc)
        cdef double scale = 1.0 / <double>B
        cdef double* V = self._V
        cdef double* acc
        cdef const int32_t* qi
        cdef const int32_t* qj
        cdef double s
        cdef SparseJob job
        _fill_V(W, d, V)
        job.indptr = self._indptr
        job.ind = self._ind
        job.val = self._val
        job.lab = self._lab
        job.V = V
        job.d = d
        job.nc = nc
        job.scale = scale
        job.wsc = self._wsc
        job.dp = dp
        job.didx = self._didx
        job.dval = self._dval
        job.w = w
        job.out = out
        job.acc = self._acc
        # chunk 0 accumulates in out, chunk c > 0 in self._acc[(c-1)*d*d]
        memset(out, 0, d * d * sizeof(double))
        if nc > 1:
            memset(self._acc, 0, (nc - 1) * d * d * sizeof(double))
        s0 = 0
        while s0 < B:
            nb = min(<Py_ssize_t>SUPERBLOCK, B - s0)
            _pair_block(rng, self.n_samples, s0, nb, pi, pj, self._pairbuf, &qi, &qj)
            job.qi = qi
            job.qj = qj
            job.nb = nb
            job.next_chunk = 0
            _run_chunks(&job, nt)
            s0 += nb
        # sum the chunks in order, fold acc + acc^T, add lam * W
        for a in range(d):
            s = out[a * d + a]
            for c in range(1, nc):
                s += self._acc[(c - 1) * d * d + a * d + a]
            out[a * d + a] = s + self.lam * W[a * d + a]
            for e in range(a + 1, d):
                s = out[a * d + e] + out[e * d + a]
                for c in range(1, nc):
                    acc = self._acc + (c - 1) * d * d
                    s += acc[a * d + e] + acc[e * d + a]
                out[a * d + e] = s + self.lam * W[a * d + e]
                out[e * d + a] = s + self.lam * W[e * d + a]
        return 0

    cdef int _grad_dense(self, const double* W, const int32_t* pi, const int32_t* pj,
                         Py_ssize_t B, bitgen_t* rng, double* out) noexcept nogil:
        cdef Py_ssize_t d = self.n_features
        cdef Py_ssize_t s0, nb, t0, tb, b, a, e, npos, nneg
        cdef const int32_t* qi
        cdef const int32_t* qj
        cdef double* A = self._A
        cdef double* M = self._M
        cdef double* q = self._q
        cdef double y, c, r, s
        cdef int n = <int>d, kk
        cdef double one = 1.0, mone = -1.0, beta = 0.0
        cdef double scale = 1.0 / <double>B
        cdef bint first = True
        memset(out, 0, d * d * sizeof(double))
        s0 = 0
        while s0 < B:
            nb = min(<Py_ssize_t>SUPERBLOCK, B - s0)
            _pair_block(rng, self.n_samples, s0, nb, pi, pj, self._pairbuf, &qi, &qj)
            t0 = 0
            while t0 < nb:
                tb = min(self._blk, nb - t0)
                _dense_q(self._dense, d, qi + t0, qj + t0, tb, W, A, M, q)
                # sqrt(|c|)-scaled rows: c > 0 compacted into M[0:npos], c < 0 into A[0:nneg]
                npos = 0
                nneg = 0
                for b in range(tb):
                    y = 1.0 if self._lab[qi[t0 + b]] == self._lab[qj[t0 + b]] else -1.0
                    c = y * _sigmoid_neg(y * (1.0 - q[b])) * scale
                    r = sqrt(fabs(c))
                    if c > 0:
                        for a in range(d):
                            M[npos * d + a] = r * A[b * d + a]
                        npos += 1
                    elif c < 0:
                        for a in range(d):
                            A[nneg * d + a] = r * A[b * d + a]
                        nneg += 1
                # column-major upper of out (= row-major lower) += M^T M - A^T A
                if npos > 0:
                    kk = <int>npos
                    dsyrk(b"U", b"N", &n, &kk, &one, M, &n, &beta, out, &n)
                    beta = 1.0
                if nneg > 0:
                    kk = <int>nneg
                    dsyrk(b"U", b"N", &n, &kk, &mone, A, &n, &beta, out, &n)
                    beta = 1.0
                t0 += tb
            s0 += nb
        # row-major lower triangle holds the sum: mirror and add lam * W
        for a in range(d):
            out[a * d + a] += self.lam * W[a * d + a]
            for e in range(a + 1, d):
                s = out[e * d + a]
                out[a * d + e] = s + self.lam * W[a * d + e]
                out[e * d + a] = s + self.lam * W[e * d + a]
        return 0

    def _mean_grad_pairs(self, W, i, j, out=None, n_threads=None):
        """Mean gradient over GIVEN pairs ``(i[b], j[b])`` (private; for tests).

        W : (d, d) float64; i, j : int arrays of equal length B >= 1 with
        ``0 <= i, j < n_samples`` (``i == j`` allowed: D = 0 contributes 0).
        """
        from logt._kernels._base import _as_point, _check_out
        Wa = _as_point(W, self.shape, "W")
        i = np.ascontiguousarray(i, dtype=np.int32)
        j = np.ascontiguousarray(j, dtype=np.int32)
        if i.ndim != 1 or i.shape != j.shape or len(i) == 0:
            raise ValueError("i and j must be 1-D of the same nonzero length")
        if min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= self.n_samples:
            raise ValueError(f"pair indices must be in [0, {self.n_samples})")
        out = _check_out(out, self.shape)
        if np.shares_memory(Wa, out):
            Wa = Wa.copy()
        cdef int nt = self.n_threads if n_threads is None else max(1, int(n_threads))
        cdef double[::1] wb = Wa.reshape(-1)
        cdef double[::1] ob = out.reshape(-1)
        cdef int32_t[::1] iv = i
        cdef int32_t[::1] jv = j
        cdef Py_ssize_t B = len(i)
        cdef int info
        with self._lock:
            with nogil:
                info = self._grad(&wb[0], &iv[0], &jv[0], B, NULL, nt, &ob[0])
        if info != 0:
            raise RuntimeError(f"pair gradient failed (code {info})")
        return out

    # -------------------------------------------------------------- objective

    cdef double _eval_loss_sparse(self, const double* W) noexcept nogil:
        cdef Py_ssize_t d = self.n_features
        cdef Py_ssize_t a, e, b, k
        cdef double* V = self._V
        cdef double total = 0.0, q
        _fill_V(W, d, V)
        for b in range(self.n_eval_pairs):
            k = _sparse_diff(self._e_indptr, self._e_ind, self._e_val, self._e_i[b], self._e_j[b],
                             self._wsc, self._didx, self._dval)
            q = _sparse_quad(V, d, k, self._didx, self._dval) if k > 0 else 0.0
            total += _logit_loss(self._e_y[b] * (1.0 - q))
        return total / <double>self.n_eval_pairs

    cdef double _eval_loss_dense(self, const double* W) noexcept nogil:
        cdef Py_ssize_t d = self.n_features
        cdef Py_ssize_t t0 = 0, tb, b
        cdef double total = 0.0
        while t0 < self.n_eval_pairs:
            tb = min(self._blk, self.n_eval_pairs - t0)
            _dense_q(self._e_dense, d, self._e_i + t0, self._e_j + t0, tb, W, self._A, self._M, self._q)
            for b in range(tb):
                total += _logit_loss(self._e_y[t0 + b] * (1.0 - self._q[b]))
            t0 += tb
        return total / <double>self.n_eval_pairs

    def _eval_loss(self, W):
        """Mean logit loss ``log(1 + exp(-z))`` over the fixed evaluation pairs (no regularizer)."""
        from logt._kernels._base import _as_point
        Wa = _as_point(W, self.shape, "W")
        cdef double[::1] wb = Wa.reshape(-1)
        cdef double r
        with self._lock:
            with nogil:
                if self.is_sparse:
                    r = self._eval_loss_sparse(&wb[0])
                else:
                    r = self._eval_loss_dense(&wb[0])
        return r
