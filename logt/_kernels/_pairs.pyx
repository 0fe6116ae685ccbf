# cython: language_level=3
"""Compiled core of regularized distance metric learning (the paper's second experiment and its extensions).

Notation (paper): ``W`` is a d x d matrix, one oracle call is a random pair
``(i, j)`` with label ``y_ij`` (+1 similar, -1 dissimilar), ``D = x_i - x_j``,
threshold ``b``, ``z = y_ij * (b - D^T W D)`` and

    g_hat(W) = y_ij * sigmoid(-z) * D D^T + lam * W.

A mini-batch mean of ``B`` calls is ``D_B^T diag(c) D_B / B + lam * W`` with
``c_b = y_b * sigmoid(-z_b)``. The paper's setting is ``b = 1`` and uniform pairs.

Learned threshold: the point is the (d+1) x (d+1) matrix ``Z = [[W, .], [., beta]]``
(PSD, so ``W`` is PSD and ``beta >= 0``), the loss reads ``W = Z[:d, :d]`` and
``b = s * beta`` (``s = threshold_scale > 0``, default 1), and
``g_hat(Z) = y sigmoid(-z) diag(D D^T, -s) + lam * Z``. ``s`` sets how strongly
``b`` is regularized relative to ``W`` (``(lam/2) (b/s)^2``) and the curvature of
the ``beta`` direction (``s^2 sigma'(z)``).

Pair samplers (:class:`PairSampler`; every draw comes from the caller's bit
generator, so the same seed gives the same pairs):

* ``UNIFORM`` (the paper's): ``i`` uniform in ``[0, n)``, ``j`` uniform among the
  others; ``y`` = label equality. Two bounded draws per pair.
* ``BALANCED``: one 64-bit word decides similar / dissimilar (probability 1/2
  each, its top bit). Similar: ``i`` uniform among the points that have a
  class-mate, ``j`` uniform among its class-mates. Dissimilar: ``i`` uniform,
  ``j`` uniform among the other classes' points.
* ``NEIGHBORS``: as ``BALANCED``, with ``j`` uniform among ``i``'s listed
  same-class (similar) or other-class (dissimilar) nearest neighbours; ``i`` is
  uniform among the points with a non-empty list of that kind (all points, and
  the same draws as before, when every list is non-empty).
* ``LIST``: a pair uniform from a given list of pairs with given labels;
  ``LIST_BALANCED``: a coin as above, then a pair uniform among the given
  similar or dissimilar pairs.

Sparse X (CSR): ``D`` has at most ``nnz(x_i) + nnz(x_j)`` nonzeros (<= 28 on
a9a), so ``D^T W D`` is read from that block of ``V`` (the upper triangle of
``W + W^T``, diagonal ``W_aa``) and ``c D D^T`` is accumulated on the block's
upper triangle only; the triangle is mirrored once at the end.

Threads: the pairs of one call are drawn sequentially from the caller's bit
generator, in super-blocks (``_sb`` pairs, fixed per object). The pairs of a
super-block are split into ``n_chunks`` fixed chunks (``n_chunks`` depends only
on ``B`` and ``d``, never on the thread count); threads claim whole chunks, each
chunk accumulates into its own buffer and the buffers are summed in chunk
order: the result is bit-identical for every thread count.

Dense X: pairs are processed in blocks of ``blk``; ``D_blk`` is gathered,
``q = diag(D W D^T)`` comes from one ``dgemm``, and the update from two
``dsyrk`` calls on ``sqrt(|c|)``-scaled rows split by the sign of ``c`` (so
the result is exactly symmetric): O(d^2) per pair ("pairs" path). When
``B >= 2 n`` the "points" path is cheaper: ``sum_b c_b D_b D_b^T = X^T L X`` with
``L`` the weighted Laplacian of the drawn pairs, so ``Z = X W`` (one ``dgemm``),
``q_b = D_b . (z_i - z_j)`` and ``Y_i += c_b D_b``, ``Y_j -= c_b D_b`` (O(d) per pair,
``csrc/logt_pairpoints.c``), then ``(X^T Y + Y^T X) / 2`` (one ``dsyr2k``): O(n d^2 + B d).
Both paths use the same draws; ``point_path`` forces one (tests, benchmarks). The
fixed evaluation pairs of :meth:`_eval_loss` use the same rule.

Interrupts: a long call (huge ``B``) checks for signals (Ctrl-C) between
super-blocks / dense blocks, at least every ``WORK_PER_CHECK`` units of work
(~10-30 ms); checking draws nothing, so the random stream is unchanged. An
interrupted call raises ``KeyboardInterrupt`` from :meth:`mean_grad`
(compiled callers get the return code ``INTERRUPTED``; the exception is kept on the oracle).

Sizes: every workspace is sized from ``d`` (at most ``MAX_FEATURES``) and fixed
constants, validated in Python before any allocation (see ``_setup``).
"""
import numpy as np

from libc.math cimport exp, log1p, fabs, sqrt
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset
from numpy.random cimport bitgen_t
from scipy.linalg.cython_blas cimport dgemm, dsyrk, dsyr2k, ddot
from cpython.exc cimport PyErr_Fetch, PyErr_Restore
from cpython.ref cimport PyObject, Py_XDECREF

from logt._kernels._base cimport CompiledOracle, bitgen_of, sigmoid_neg

cdef extern from "Python.h":
    int PyErr_CheckSignals()          # declared without "except": the caller inspects the result

cdef enum:
    SUPERBLOCK = 65536              # most pairs drawn per super-block (workspace 2 int32 + 1 double each)
    MIN_SUPERBLOCK = 64
    MAX_CHUNKS = 8                  # at most this many chunk accumulators (ld*ld each) ...
    ACC_BYTES = 64 * 1024 * 1024    # ... and at most this many bytes for them
    POINT_BYTES = 256 * 1024 * 1024 # dense point path: at most this many bytes for Z and Y
    INTERRUPTED = -4                # return code of an interrupted call (exception set)

# the largest d (features): a d x d float64 matrix of 8192^2 doubles is 512 MiB,
# and a projection onto the PSD cone costs O(d^3)
MAX_FEATURES = 8192
# the most evaluation pairs (16 bytes each)
MAX_EVAL_PAIRS = 10_000_000
# work units (~flops) between two signal checks
cdef double WORK_PER_CHECK = 3.0e7

UNIFORM, BALANCED, NEIGHBORS, LIST, LIST_BALANCED = 0, 1, 2, 3, 4
SAMPLER_NAMES = {"uniform": UNIFORM, "balanced": BALANCED, "neighbors": NEIGHBORS,
                 "list": LIST, "list_balanced": LIST_BALANCED}


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


cdef void draw_block(const Sampler* s, bitgen_t* rng, Py_ssize_t B,
                     int32_t* pi, int32_t* pj, double* py) noexcept nogil:
    """B pairs of sampler ``s`` into pi, pj and their labels (+-1.0) into py."""
    cdef Py_ssize_t b, s0, m
    cdef uint32_t i, j, t, u, p = 0
    cdef bint similar = False
    cdef int32_t c
    if s.mode == UNIFORM_:
        draw_pairs(rng, s.n, B, pi, pj)
        for b in range(B):
            py[b] = 1.0 if s.lab[pi[b]] == s.lab[pj[b]] else -1.0
        return
    for b in range(B):
        if s.mode == LIST_:
            p = bounded_uint32(rng, <uint32_t>s.n_list)
        else:
            similar = (rng.next_uint64(rng.state) >> 63) != 0
            if s.mode == LIST_BALANCED_:
                if similar:
                    p = <uint32_t>s.lpos[bounded_uint32(rng, <uint32_t>s.n_pos)]
                else:
                    p = <uint32_t>s.lneg[bounded_uint32(rng, <uint32_t>s.n_neg)]
        if s.mode == LIST_ or s.mode == LIST_BALANCED_:
            pi[b] = s.li[p]
            pj[b] = s.lj[p]
            py[b] = s.ly[p]
            continue
        if similar:
            i = <uint32_t>s.elig[bounded_uint32(rng, <uint32_t>s.n_elig)]
            if s.mode == BALANCED_:
                c = s.lab[i]
                s0 = s.cstart[c]
                m = s.cstart[c + 1] - s0
                t = bounded_uint32(rng, <uint32_t>(m - 1))
                t += (t >= <uint32_t>(s.pos[i] - s0))
                j = <uint32_t>s.order[s0 + t]
            else:
                j = <uint32_t>s.nsim[<Py_ssize_t>i * s.k + bounded_uint32(rng, <uint32_t>s.ksim[i])]
            py[b] = 1.0
        else:
            if s.mode == BALANCED_:
                i = bounded_uint32(rng, <uint32_t>s.n)
                c = s.lab[i]
                s0 = s.cstart[c]
                m = s.cstart[c + 1] - s0
                u = bounded_uint32(rng, <uint32_t>(s.n - m))
                if u >= <uint32_t>s0:
                    u += <uint32_t>m
                j = <uint32_t>s.order[u]
            else:
                i = <uint32_t>s.delig[bounded_uint32(rng, <uint32_t>s.n_delig)]
                j = <uint32_t>s.ndis[<Py_ssize_t>i * s.k + bounded_uint32(rng, <uint32_t>s.kdis[i])]
            py[b] = -1.0
        pi[b] = <int32_t>i
        pj[b] = <int32_t>j


def _sample_pairs(Py_ssize_t n, Py_ssize_t B, rng):
    """Draw ``B`` uniform ordered pairs ``(i, j)``, ``i != j``, of ``range(n)``.

    The same sampler as the oracle's ``"uniform"`` (private; for tests). Returns two int32 arrays.
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


cdef const int32_t* _i32(object a) except? NULL:
    cdef const int32_t[::1] v = a
    return &v[0] if v.shape[0] else NULL


cdef const int64_t* _i64(object a) except? NULL:
    cdef const int64_t[::1] v = a
    return &v[0] if v.shape[0] else NULL


cdef const double* _f64(object a) except? NULL:
    cdef const double[::1] v = a
    return &v[0] if v.shape[0] else NULL


cdef class PairSampler:
    """A compiled pair sampler over ``n`` points (see the module docstring for the modes).

    Build it with :meth:`from_labels` or :meth:`from_pairs`; :meth:`draw`
    returns ``(i, j, y)`` (int32, int32, float64 +-1) drawn from a Generator.
    The arrays it needs are validated and kept alive by the object.
    """

    def __cinit__(self):
        memset(&self.s, 0, sizeof(Sampler))

    @staticmethod
    def from_labels(codes, mode="uniform", neighbors=None):
        """Sampler over points with class codes ``codes`` (int, 0..C-1, every class non-empty).

        mode : "uniform", "balanced" or "neighbors"; neighbors : ``(sim, dis)``,
        two (n, k) int arrays of neighbour indices padded with -1 at the end of
        each row (see :func:`logt.oracles.neighbors.neighbor_tables`).
        Needs at least 2 classes; "balanced"/"neighbors" need a point with a
        class-mate (a same-class neighbour); "neighbors" needs a point with an
        other-class neighbour (points with an empty list are never the ``i`` of
        a pair of that kind).
        """
        cdef PairSampler self = PairSampler()
        codes = np.ascontiguousarray(codes, dtype=np.int32)
        n = len(codes)
        if codes.ndim != 1 or n < 2 or n > 2**31 - 1:
            raise ValueError(f"codes must be 1-D with 2 .. 2**31 - 1 entries, got shape {codes.shape}")
        counts = np.bincount(codes)
        if codes.min() < 0 or (counts == 0).any():
            raise ValueError("codes must be 0..C-1 with every class present")
        if len(counts) < 2:
            raise ValueError("need at least two classes")
        m = SAMPLER_NAMES.get(mode)
        if m not in (UNIFORM, BALANCED, NEIGHBORS):
            raise ValueError(f"mode must be 'uniform', 'balanced' or 'neighbors', got {mode!r}")
        keep = [codes]
        self.s.mode = m
        self.s.n = n
        self.s.lab = _i32(codes)
        if m == BALANCED:
            order = np.argsort(codes, kind="stable").astype(np.int32)
            pos = np.empty(n, dtype=np.int32)
            pos[order] = np.arange(n, dtype=np.int32)
            cstart = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=cstart[1:])
            elig = np.flatnonzero(counts[codes] >= 2).astype(np.int32)
            if len(elig) == 0:
                raise ValueError("balanced sampling needs a class with at least 2 points")
            keep += [order, pos, cstart, elig]
            self.s.order = _i32(order)
            self.s.pos = _i32(pos)
            self.s.cstart = _i64(cstart)
            self.s.elig = _i32(elig)
            self.s.n_elig = len(elig)
        elif m == NEIGHBORS:
            if neighbors is None:
                raise ValueError("mode 'neighbors' needs neighbors=(sim, dis)")
            sim, dis = (np.ascontiguousarray(t, dtype=np.int32) for t in neighbors)
            if sim.ndim != 2 or sim.shape != dis.shape or sim.shape[0] != n or sim.shape[1] < 1:
                raise ValueError(f"neighbour tables must both have shape ({n}, k), k >= 1")
            ksim = (sim >= 0).sum(1).astype(np.int32)
            kdis = (dis >= 0).sum(1).astype(np.int32)
            k = sim.shape[1]
            cols = np.arange(k)
            for T, cnt in ((sim, ksim), (dis, kdis)):
                if T.max() >= n or ((T >= 0) != (cols[None, :] < cnt[:, None])).any():
                    raise ValueError("neighbour tables must hold indices < n, padded with -1 at row ends")
            rows = np.arange(n)[:, None]
            if ((sim == rows) | (dis == rows)).any():
                raise ValueError("a point cannot be its own neighbour")
            valid = sim >= 0
            if (codes[np.where(valid, sim, 0)] != codes[:, None])[valid].any():
                raise ValueError("sim holds a neighbour of another class")
            valid = dis >= 0
            if (codes[np.where(valid, dis, 0)] == codes[:, None])[valid].any():
                raise ValueError("dis holds a neighbour of the same class")
            delig = np.flatnonzero(kdis > 0).astype(np.int32)
            if len(delig) == 0:
                raise ValueError("no point has an other-class neighbour")
            elig = np.flatnonzero(ksim > 0).astype(np.int32)
            if len(elig) == 0:
                raise ValueError("no point has a same-class neighbour")
            keep += [sim, dis, ksim, kdis, elig, delig]
            self.s.k = k
            self.s.nsim = _i32(sim.reshape(-1))
            self.s.ndis = _i32(dis.reshape(-1))
            self.s.ksim = _i32(ksim)
            self.s.kdis = _i32(kdis)
            self.s.elig = _i32(elig)
            self.s.n_elig = len(elig)
            self.s.delig = _i32(delig)
            self.s.n_delig = len(delig)
        self._keep = keep
        return self

    @staticmethod
    def from_pairs(i, j, y, n, balanced=False):
        """Sampler over a given list of pairs ``(i[p], j[p])`` of ``n`` points with labels ``y[p]`` in {-1, +1}."""
        cdef PairSampler self = PairSampler()
        i = np.ascontiguousarray(i, dtype=np.int32)
        j = np.ascontiguousarray(j, dtype=np.int32)
        y = np.ascontiguousarray(y, dtype=np.float64)
        P = len(i)
        if i.ndim != 1 or i.shape != j.shape or i.shape != y.shape or P < 1 or P > 2**31 - 1:
            raise ValueError("i, j and y must be 1-D of one length in [1, 2**31 - 1]")
        if min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n:
            raise ValueError(f"pair indices must be in [0, {n})")
        if not np.isin(y, (-1.0, 1.0)).all():
            raise ValueError("pair labels must be -1 or +1")
        keep = [i, j, y]
        self.s.n = n
        self.s.n_list = P
        self.s.li = _i32(i)
        self.s.lj = _i32(j)
        self.s.ly = _f64(y)
        if balanced:
            pos = np.flatnonzero(y > 0).astype(np.int32)
            neg = np.flatnonzero(y < 0).astype(np.int32)
            if len(pos) == 0 or len(neg) == 0:
                raise ValueError("balanced sampling of pairs needs both similar (+1) and dissimilar (-1) pairs")
            keep += [pos, neg]
            self.s.mode = LIST_BALANCED
            self.s.lpos = _i32(pos)
            self.s.n_pos = len(pos)
            self.s.lneg = _i32(neg)
            self.s.n_neg = len(neg)
        else:
            self.s.mode = LIST
        self._keep = keep
        return self

    @property
    def mode(self):
        return {v: k for k, v in SAMPLER_NAMES.items()}[self.s.mode]

    @property
    def n(self):
        return self.s.n

    def draw(self, Py_ssize_t B, rng):
        """``B`` pairs: ``(i, j, y)`` int32, int32, float64 (+-1), drawn from Generator ``rng``."""
        if B < 0:
            raise ValueError(f"B must be >= 0, got {B}")
        if self.s.n == 0:
            raise RuntimeError("empty sampler: build it with from_labels or from_pairs")
        pi = np.empty(B, dtype=np.int32)
        pj = np.empty(B, dtype=np.int32)
        py = np.empty(B, dtype=np.float64)
        cdef int32_t[::1] a = pi
        cdef int32_t[::1] c = pj
        cdef double[::1] e = py
        cdef bitgen_t* bg = bitgen_of(rng)
        if B > 0:
            with rng.bit_generator.lock, nogil:
                draw_block(&self.s, bg, B, &a[0], &c[0], &e[0])
        return pi, pj, py


# ---------------------------------------------------------------- small helpers

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


cdef double _sparse_chunk(const int64_t* indptr, const int32_t* ind, const double* val,
                          const double* V, Py_ssize_t d, double thr,
                          const int32_t* pi, const int32_t* pj, const double* py,
                          Py_ssize_t b0, Py_ssize_t b1,
                          double scale, double* w, int32_t* didx, double* dval,
                          double* acc, Py_ssize_t lda) noexcept nogil:
    """sym(acc) += sum_{b0 <= b < b1} scale * y_b * sigmoid(-z_b) * D_b D_b^T; returns sum of those c_b.

    ``acc`` has row stride ``lda``. Each unordered index pair {s, t} of D's
    block is added once, to acc[s, t] or acc[t, s]: the sum is ``acc + acc^T``
    off the diagonal (folded at the end).
    """
    cdef Py_ssize_t b, k, a, e
    cdef int32_t i, j
    cdef double q, y, c, ca, csum = 0.0
    cdef double* row
    for b in range(b0, b1):
        i = pi[b]
        j = pj[b]
        y = py[b]
        k = _sparse_diff(indptr, ind, val, i, j, w, didx, dval)
        q = _sparse_quad(V, d, k, didx, dval) if k > 0 else 0.0
        c = y * sigmoid_neg(y * (thr - q)) * scale
        csum += c
        for a in range(k):
            ca = c * dval[a]
            row = acc + <Py_ssize_t>didx[a] * lda
            for e in range(a, k):
                row[didx[e]] += ca * dval[e]
    return csum


cdef void _fill_V(const double* W, Py_ssize_t d, Py_ssize_t ld, double* V) noexcept nogil:
    """V = W + W^T off the diagonal, V_aa = W_aa (so D^T W D = sum_{a <= b} V_ab D_a D_b).

    W is the leading d x d block of a row-major matrix with row stride ``ld``.
    """
    cdef Py_ssize_t a, e
    cdef double s
    for a in range(d):
        V[a * d + a] = W[a * ld + a]
        for e in range(a + 1, d):
            s = W[a * ld + e] + W[e * ld + a]
            V[a * d + e] = s
            V[e * d + a] = s


cdef void _dense_q(const double* X, Py_ssize_t d, const int32_t* pi, const int32_t* pj,
                   Py_ssize_t nb, const double* W, Py_ssize_t ld,
                   double* A, double* M, double* q) noexcept nogil:
    """A[b] = X[pi[b]] - X[pj[b]] (rows), M = A W (rows: W^T D_b), q[b] = D_b^T W D_b.

    W is the leading d x d block of a row-major matrix with row stride ``ld``.
    """
    cdef Py_ssize_t b, a
    cdef const double* xi
    cdef const double* xj
    cdef double* ab
    cdef int n = <int>d, m = <int>nb, inc = 1, ldw = <int>ld
    cdef double one = 1.0, zero = 0.0
    for b in range(nb):
        xi = X + <Py_ssize_t>pi[b] * d
        xj = X + <Py_ssize_t>pj[b] * d
        ab = A + b * d
        for a in range(d):
            ab[a] = xi[a] - xj[a]
    # column-major: M (d x nb) = W^T (d x d, W read column-major with ld) @ A (d x nb)
    dgemm(b"N", b"N", &n, &m, &n, &one, <double*>W, &ldw, A, &n, &zero, M, &n)
    for b in range(nb):
        q[b] = ddot(&n, A + b * d, &inc, M + b * d, &inc)


cdef extern from "logt_pairpoints.h" nogil:
    double logt_diff_dot(const double* xi, const double* xj, const double* zi, const double* zj,
                         double* D, Py_ssize_t d)
    void logt_row_update(double c, const double* D, double* yi, double* yj, Py_ssize_t d)


cdef inline double _diff_dot(const double* X, const double* Z, Py_ssize_t d, int32_t i, int32_t j,
                             double* D) noexcept nogil:
    """D = X[i] - X[j] (rows of length d); returns D . (Z[i] - Z[j]) (csrc/logt_pairpoints.c)."""
    return logt_diff_dot(X + <Py_ssize_t>i * d, X + <Py_ssize_t>j * d,
                         Z + <Py_ssize_t>i * d, Z + <Py_ssize_t>j * d, D, d)


cdef void _mirror_add_lam(double* out, const double* W, Py_ssize_t d, Py_ssize_t ld,
                          double lam) noexcept nogil:
    """``out``'s row-major lower triangle (d x d block, row stride ld) holds a symmetric sum:
    copy it to the upper triangle and add ``lam * W`` (the dense paths' last step)."""
    cdef Py_ssize_t a, e
    cdef double s
    for a in range(d):
        out[a * ld + a] += lam * W[a * ld + a]
        for e in range(a + 1, d):
            s = out[e * ld + a]
            out[a * ld + e] = s + lam * W[a * ld + e]
            out[e * ld + a] = s + lam * W[e * ld + a]


cdef inline bint _interrupted(PyObject** stash) noexcept nogil:
    """True when a signal handler raised (e.g. Ctrl-C's KeyboardInterrupt); the exception is
    moved into ``stash[0:3]`` (type, value, traceback) so no exception is left set while
    the caller unwinds (its locks' ``__exit__`` would fail)."""
    cdef int r
    with gil:
        r = PyErr_CheckSignals()
        if r != 0:
            PyErr_Fetch(&stash[0], &stash[1], &stash[2])
    return r != 0


cdef int _raise_pending() except -1:
    """Propagate the exception that ``_interrupted`` left set."""
    return -1


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
    const double* V
    Py_ssize_t d
    double thr              # the threshold b
    const int32_t* qi
    const int32_t* qj
    const double* qy
    Py_ssize_t nb           # pairs in this super-block
    Py_ssize_t nc           # fixed chunks; chunk c owns pairs [c*nb/nc, (c+1)*nb/nc), its
    double scale            # accumulator (out, stride ld, for c = 0, else acc + (c-1)*d*d,
    double* wsc             # stride d) and scratch slot c
    Py_ssize_t dp
    int32_t* didx
    double* dval
    Py_ssize_t w
    double* out
    Py_ssize_t ld
    double* acc
    double csum[MAX_CHUNKS] # per chunk: sum of its c_b
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
        job.csum[c] = _sparse_chunk(
            job.indptr, job.ind, job.val, job.V, d, job.thr, job.qi, job.qj, job.qy,
            c * job.nb // job.nc, (c + 1) * job.nb // job.nc, job.scale,
            job.wsc + c * job.dp, job.didx + c * job.w, job.dval + c * job.w,
            job.out if c == 0 else job.acc + (c - 1) * d * d, job.ld if c == 0 else d)


cdef void _run_chunks(SparseJob* job, int nt) noexcept nogil:
    """Run all chunks of ``job`` on the calling thread plus up to nt - 1 helpers.

    A helper that cannot be started is simply not used (the caller does its work).
    """
    cdef pthread_t helpers[MAX_HELPERS]
    cdef int h, started = 0
    job.next_chunk = 0
    pthread_mutex_init(&job.mutex, NULL)
    if nt > 1 and job.nc > 1:
        for h in range(min(nt - 1, MAX_HELPERS)):
            if pthread_create(&helpers[started], NULL, _chunk_worker, job) == 0:
                started += 1
    _chunk_worker(job)
    for h in range(started):
        pthread_join(helpers[h], NULL)
    pthread_mutex_destroy(&job.mutex)


# ---------------------------------------------------------------- the core class

def _workspace_plan(Py_ssize_t n_features, bint learn_threshold, Py_ssize_t max_nnz, bint sparse):
    """Sizes of every workspace of a ``PairGradientCore`` (Python ints, checked before allocating).

    Returns a dict: ``ld`` (row stride of a point: d or d + 1), ``max_chunks``,
    ``max_nnz_diff``, ``dpad``, ``blk``, ``sb`` (super-block) and ``bytes``
    (the total). Raises ValueError when ``d > MAX_FEATURES``.
    """
    d = int(n_features)
    if d < 1:
        raise ValueError(f"X must have at least one column, got {d}")
    if d > MAX_FEATURES:
        raise ValueError(
            f"X has {d} features; MetricLearning supports at most MAX_FEATURES = {MAX_FEATURES} "
            f"(a d x d float64 matrix of {MAX_FEATURES}^2 entries is 512 MiB and each projection onto "
            "the PSD cone costs O(d^3)): reduce the dimension first (e.g. PCA or feature selection)")
    ld = d + 1 if learn_threshold else d
    max_chunks = max(1, min(MAX_CHUNKS, 1 + ACC_BYTES // (8 * d * d))) if sparse else 1
    max_nnz_diff = ((max(1, 2 * int(max_nnz)) + 15) // 16) * 16 + 16
    dpad = ((d + 7) // 8) * 8 + 8
    blk = max(16, min(1024, (1 << 17) // d))
    if sparse:
        per_pair = max(1, (2 * int(max_nnz)) ** 2 // 2)
    else:
        per_pair = 3 * d * d
    sb = int(max(MIN_SUPERBLOCK, min(SUPERBLOCK, int(WORK_PER_CHECK) // per_pair)))
    nbytes = 8 * d * d + SUPERBLOCK * 16
    if sparse:
        nbytes += (max_chunks - 1) * 8 * d * d + max_chunks * max_nnz_diff * 12 + max_chunks * dpad * 8
    else:
        nbytes += 2 * blk * d * 8 + blk * 8
    return {"ld": ld, "max_chunks": max_chunks, "max_nnz_diff": max_nnz_diff, "dpad": dpad,
            "blk": blk, "sb": sb, "bytes": nbytes}


cdef class PairGradientCore(CompiledOracle):
    """Compiled core of :class:`logt.oracles.metric.MetricLearning`.

    Holds validated data, the pair sampler and workspaces; :meth:`_setup` is
    called once by the Python subclass after validation. One call at a time per
    object (the Python methods take ``self._lock``; compiled step loops own
    their oracle).
    """

    def __cinit__(self, *args, **kwargs):
        self._exc[0] = NULL
        self._exc[1] = NULL
        self._exc[2] = NULL
        self._V = NULL
        self._acc = NULL
        self._didx = NULL
        self._dval = NULL
        self._pairbuf = NULL
        self._ybuf = NULL
        self._A = NULL
        self._M = NULL
        self._q = NULL
        self._wsc = NULL
        self._Zw = NULL
        self._Yw = NULL
        self._point_path = 0

    def __dealloc__(self):
        self._drop_stash()
        free(self._V)
        free(self._acc)
        free(self._didx)
        free(self._dval)
        free(self._pairbuf)
        free(self._ybuf)
        free(self._A)
        free(self._M)
        free(self._q)
        free(self._wsc)
        free(self._Zw)
        free(self._Yw)

    def _setup(self, X, PairSampler sampler, X_eval, ei, ej, ey, double lam, int n_threads,
               bint learn_threshold=False, double threshold=1.0, double threshold_scale=1.0):
        """Store validated data (called once by the Python subclass).

        X, X_eval : both ``scipy.sparse.csr_matrix`` (sorted indices, int64
        indptr, int32 indices, float64 data) or both C-contiguous float64
        ndarrays, with the same number of columns d; sampler : a
        :class:`PairSampler` over the rows of X; ei, ej : int32 eval pair
        indices into X_eval; ey : float64 +-1 eval labels; learn_threshold : the
        point is (d+1) x (d+1) with ``b = threshold_scale * Z[d, d]``, else ``b = threshold``;
        threshold_scale : finite > 0 (checked by the caller).
        """
        if self._V != NULL:
            raise RuntimeError("_setup may be called only once")
        cdef Py_ssize_t d = X.shape[1]
        cdef Py_ssize_t n = X.shape[0]
        if sampler.n != n:
            raise ValueError(f"the sampler covers {sampler.n} points, X has {n} rows")
        self.is_sparse = not isinstance(X, np.ndarray)
        cdef Py_ssize_t max_nnz = 0
        if self.is_sparse:
            for M_ in (X, X_eval):
                max_nnz = max(max_nnz, int(np.diff(M_.indptr).max()))
        plan = _workspace_plan(d, learn_threshold, max_nnz, self.is_sparse)
        cdef Py_ssize_t ld = plan["ld"]
        self.n_samples = n
        self.n_features = d
        self.learn_threshold = learn_threshold
        self.threshold = threshold
        self.threshold_scale = threshold_scale
        self._ld = ld
        self.shape = (ld, ld)
        self.size = ld * ld
        self.lam = lam
        self.n_threads = max(1, n_threads)
        self.n_eval_pairs = len(ei)
        self.sampler = sampler
        self._smp = &sampler.s
        keep = [X, X_eval, ei, ej, ey]
        cdef const int32_t[::1] ei_v = ei
        cdef const int32_t[::1] ej_v = ej
        cdef const double[::1] ey_v = ey
        cdef const int64_t[::1] ip
        cdef const int32_t[::1] ix
        cdef const double[::1] dv
        cdef const double[:, ::1] dx
        self._e_i = &ei_v[0] if len(ei) else NULL
        self._e_j = &ej_v[0] if len(ej) else NULL
        self._e_y = &ey_v[0] if len(ey) else NULL
        if self.is_sparse:
            for M_ in (X, X_eval):
                keep += [M_.indptr, M_.indices, M_.data]
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
        self._n_eval_rows = X_eval.shape[0]
        self._keep = keep
        # per-chunk D buffers and scratch, padded to separate cache lines (no false sharing)
        self._max_nnz_diff = plan["max_nnz_diff"]
        self._dpad = plan["dpad"]
        self._max_chunks = plan["max_chunks"]
        self._blk = plan["blk"]
        self._sb = plan["sb"]
        self.workspace_bytes = plan["bytes"]

        self._V = <double*>malloc(d * d * sizeof(double))
        self._pairbuf = <int32_t*>malloc(2 * SUPERBLOCK * sizeof(int32_t))
        self._ybuf = <double*>malloc(SUPERBLOCK * sizeof(double))
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
            # the point path (see _grad_dense_points) when its buffers fit POINT_BYTES; an
            # allocation failure only disables it
            z_rows = max(n, X_eval.shape[0])     # Z serves the training and the evaluation points
            if 8 * d * (z_rows + n) <= POINT_BYTES:
                self._Zw = <double*>malloc(z_rows * d * sizeof(double))
                self._Yw = <double*>malloc(n * d * sizeof(double))
                if self._Zw == NULL or self._Yw == NULL:
                    free(self._Zw)
                    free(self._Yw)
                    self._Zw = NULL
                    self._Yw = NULL
                else:
                    self.workspace_bytes += 8 * d * (z_rows + n)
        if self._V == NULL or self._pairbuf == NULL or self._ybuf == NULL:
            raise MemoryError("MetricLearning workspace")

    cdef void _drop_stash(self) noexcept:
        Py_XDECREF(self._exc[0])
        Py_XDECREF(self._exc[1])
        Py_XDECREF(self._exc[2])
        self._exc[0] = NULL
        self._exc[1] = NULL
        self._exc[2] = NULL

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
        return self._grad(x, NULL, NULL, NULL, B, rng, self.n_threads, out)

    cdef int _grad(self, const double* W, const int32_t* pi, const int32_t* pj, const double* py,
                   Py_ssize_t B, bitgen_t* rng, int n_threads, double* out) noexcept nogil:
        """out = mean over B pairs of g_hat(W); pairs from (pi, pj, py) or, if rng != NULL, drawn."""
        cdef Py_ssize_t d = self.n_features, ld = self._ld, a, e
        cdef double csum = 0.0
        cdef double thr = self.threshold_scale * W[d * ld + d] if self.learn_threshold else self.threshold
        cdef int info = 0
        if self.is_sparse:
            info = self._grad_sparse(W, pi, pj, py, B, rng, n_threads, thr, out, &csum)
        elif self._use_points(B, self.n_samples):
            info = self._grad_dense_points(W, pi, pj, py, B, rng, thr, out, &csum)
        else:
            info = self._grad_dense(W, pi, pj, py, B, rng, thr, out, &csum)
        if info != 0:
            return info
        if self.learn_threshold:
            # d(loss)/dZ[d, d] = -s mean(c) (b = s Z[d, d]); the last row and column carry only
            # the regularizer
            for a in range(d):
                out[a * ld + d] = self.lam * W[a * ld + d]
                out[d * ld + a] = self.lam * W[d * ld + a]
            out[d * ld + d] = -self.threshold_scale * csum + self.lam * W[d * ld + d]
        return 0

    cdef void _block(self, bitgen_t* rng, Py_ssize_t s0, Py_ssize_t nb,
                            const int32_t* pi, const int32_t* pj, const double* py,
                            const int32_t** qi, const int32_t** qj, const double** qy) noexcept nogil:
        """Pairs ``s0 .. s0+nb-1`` of one call: drawn from ``rng`` into the pair buffers, or,
        when ``rng`` is NULL, the given ``pi``/``pj``/``py``."""
        if rng != NULL:
            draw_block(self._smp, rng, nb, self._pairbuf, self._pairbuf + SUPERBLOCK, self._ybuf)
            qi[0] = self._pairbuf
            qj[0] = self._pairbuf + SUPERBLOCK
            qy[0] = self._ybuf
        else:
            qi[0] = pi + s0
            qj[0] = pj + s0
            qy[0] = py + s0

    cdef int _grad_sparse(self, const double* W, const int32_t* pi, const int32_t* pj, const double* py,
                          Py_ssize_t B, bitgen_t* rng, int n_threads, double thr,
                          double* out, double* csum_out) noexcept nogil:
        cdef Py_ssize_t d = self.n_features, ld = self._ld
        cdef Py_ssize_t a, e, c, s0, nb
        cdef Py_ssize_t nc = self._n_chunks(B)
        cdef int nt = <int>min(<Py_ssize_t>n_threads, nc)
        cdef double scale = 1.0 / <double>B
        cdef double* acc
        cdef const int32_t* qi
        cdef const int32_t* qj
        cdef const double* qy
        cdef double s, csum = 0.0, work = 0.0
        cdef double pair_work = <double>WORK_PER_CHECK / <double>self._sb
        cdef SparseJob job
        _fill_V(W, d, ld, self._V)
        job.indptr = self._indptr
        job.ind = self._ind
        job.val = self._val
        job.V = self._V
        job.d = d
        job.thr = thr
        job.nc = nc
        job.scale = scale
        job.wsc = self._wsc
        job.dp = self._dpad
        job.didx = self._didx
        job.dval = self._dval
        job.w = self._max_nnz_diff
        job.out = out
        job.ld = ld
        job.acc = self._acc
        # chunk 0 accumulates in out, chunk c > 0 in self._acc[(c-1)*d*d]
        memset(out, 0, ld * ld * sizeof(double))
        if nc > 1:
            memset(self._acc, 0, (nc - 1) * d * d * sizeof(double))
        s0 = 0
        while s0 < B:
            nb = min(self._sb, B - s0)
            if rng != NULL and s0 > 0 and work >= WORK_PER_CHECK:
                work = 0.0
                if _interrupted(self._exc):
                    return INTERRUPTED
            self._block(rng, s0, nb, pi, pj, py, &job.qi, &job.qj, &job.qy)
            job.nb = nb
            _run_chunks(&job, nt)
            for c in range(nc):
                csum += job.csum[c]
            work += nb * pair_work
            s0 += nb
        # sum the chunks in order, fold acc + acc^T, add lam * W
        for a in range(d):
            s = out[a * ld + a]
            for c in range(1, nc):
                s += self._acc[(c - 1) * d * d + a * d + a]
            out[a * ld + a] = s + self.lam * W[a * ld + a]
            for e in range(a + 1, d):
                s = out[a * ld + e] + out[e * ld + a]
                for c in range(1, nc):
                    acc = self._acc + (c - 1) * d * d
                    s += acc[a * d + e] + acc[e * d + a]
                out[a * ld + e] = s + self.lam * W[a * ld + e]
                out[e * ld + a] = s + self.lam * W[e * ld + a]
        csum_out[0] = csum
        return 0

    cdef int _grad_dense(self, const double* W, const int32_t* pi, const int32_t* pj, const double* py,
                         Py_ssize_t B, bitgen_t* rng, double thr,
                         double* out, double* csum_out) noexcept nogil:
        cdef Py_ssize_t d = self.n_features, ld = self._ld
        cdef Py_ssize_t s0, nb, t0, tb, b, a, npos, nneg
        cdef const int32_t* qi
        cdef const int32_t* qj
        cdef const double* qy
        cdef double* A = self._A
        cdef double* M = self._M
        cdef double* q = self._q
        cdef double y, c, r, csum = 0.0, work = 0.0
        cdef double pair_work = 3.0 * <double>d * <double>d
        cdef int n = <int>d, kk, ldc = <int>ld
        cdef double one = 1.0, mone = -1.0, beta = 0.0
        cdef double scale = 1.0 / <double>B
        memset(out, 0, ld * ld * sizeof(double))
        s0 = 0
        while s0 < B:
            nb = min(<Py_ssize_t>SUPERBLOCK, B - s0)
            self._block(rng, s0, nb, pi, pj, py, &qi, &qj, &qy)
            t0 = 0
            while t0 < nb:
                if rng != NULL and work >= WORK_PER_CHECK:
                    work = 0.0
                    if _interrupted(self._exc):
                        return INTERRUPTED
                tb = min(self._blk, nb - t0)
                _dense_q(self._dense, d, qi + t0, qj + t0, tb, W, ld, A, M, q)
                # sqrt(|c|)-scaled rows: c > 0 compacted into M[0:npos], c < 0 into A[0:nneg]
                npos = 0
                nneg = 0
                for b in range(tb):
                    y = qy[t0 + b]
                    c = y * sigmoid_neg(y * (thr - q[b])) * scale
                    csum += c
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
                    dsyrk(b"U", b"N", &n, &kk, &one, M, &n, &beta, out, &ldc)
                    beta = 1.0
                if nneg > 0:
                    kk = <int>nneg
                    dsyrk(b"U", b"N", &n, &kk, &mone, A, &n, &beta, out, &ldc)
                    beta = 1.0
                work += tb * pair_work
                t0 += tb
            s0 += nb
        # row-major lower triangle holds the sum: mirror and add lam * W
        _mirror_add_lam(out, W, d, ld, self.lam)
        csum_out[0] = csum
        return 0

    @property
    def point_path(self):
        """Dense data: how gradients and the loss are computed -- "auto" (default: the cheaper
        by the flop model of ``_use_points``), "pairs" (O(d^2) per pair) or "points" (``Z = X W``
        and the pair Laplacian, O(n d^2) per call + O(d) per pair). Same draws and the same
        value up to rounding; "points" falls back to "pairs" when its buffers (``8 d (2n)``
        bytes) exceed ``POINT_BYTES``. Ignored for sparse data."""
        return ("auto", "pairs", "points")[self._point_path]

    @point_path.setter
    def point_path(self, value):
        names = {"auto": 0, "pairs": 1, "points": 2}
        if value not in names:
            raise ValueError(f"point_path must be one of {sorted(names)}, got {value!r}")
        self._point_path = names[value]

    cdef bint _use_points(self, Py_ssize_t n_pairs, Py_ssize_t n_rows) noexcept nogil:
        """Dense data: whether ``n_pairs`` pairs over ``n_rows`` points go through the point path.

        The pair path costs about ``1.5 B d^2`` multiply-adds at BLAS speed, the point path
        ``2 n d^2`` at BLAS speed plus ``O(d)`` scattered work per pair. Measured on this
        code (n = 100..5000, d = 4..200, one thread) the point path wins from ``B`` about
        ``1.5 n``-``2 n`` on (2.0-2.5x faster at ``B = 4 n`` for d >= 64, neutral for d = 4);
        hence ``B >= 2 n``. Deterministic in (B, n), so a seed always takes the same path.
        """
        if self._Zw == NULL or self._point_path == 1:
            return False
        if self._point_path == 2:
            return True
        return n_pairs >= 2 * n_rows

    cdef int _grad_dense_points(self, const double* W, const int32_t* pi, const int32_t* pj,
                                const double* py, Py_ssize_t B, bitgen_t* rng, double thr,
                                double* out, double* csum_out) noexcept nogil:
        """The dense gradient through the points: the same pairs (same draws) as ``_grad_dense``.

        ``sum_b c_b D_b D_b^T = X^T L X`` with ``L = sum_b c_b (e_i - e_j)(e_i - e_j)^T``
        (a weighted graph Laplacian on the n points). So: ``Z = X W`` (one dgemm), per pair
        ``q_b = (x_i - x_j) . (z_i - z_j)`` and ``Y += c_b (e_i - e_j) D_b^T`` (O(d) each),
        then ``X^T Y`` (one dsyr2k, symmetric by construction). O(n d^2 + B d) instead of
        O(B d^2): the win when B exceeds n (late epochs).
        """
        cdef Py_ssize_t d = self.n_features, ld = self._ld, n = self.n_samples
        cdef Py_ssize_t s0, nb, b
        cdef const int32_t* qi
        cdef const int32_t* qj
        cdef const double* qy
        cdef const double* X = self._dense
        cdef double* Z = self._Zw
        cdef double* Y = self._Yw
        cdef double* D = self._A
        cdef double y, c, q, csum = 0.0, work = 0.0
        cdef double pair_work = 6.0 * <double>d
        cdef int di = <int>d, ni = <int>n, ldw = <int>ld, ldc = <int>ld
        cdef double one = 1.0, zero = 0.0, half = 0.5
        cdef double scale = 1.0 / <double>B
        # column-major: Z (d x n) = W^T (d x d, ld) @ X (d x n); q = D^T W^T D = D^T W D
        dgemm(b"N", b"N", &di, &ni, &di, &one, <double*>W, &ldw, <double*>X, &di, &zero, Z, &di)
        memset(Y, 0, n * d * sizeof(double))
        work = 2.0 * <double>n * <double>d * <double>d
        s0 = 0
        while s0 < B:
            nb = min(<Py_ssize_t>SUPERBLOCK, B - s0)
            if rng != NULL and work >= WORK_PER_CHECK:
                work = 0.0
                if _interrupted(self._exc):
                    return INTERRUPTED
            self._block(rng, s0, nb, pi, pj, py, &qi, &qj, &qy)
            for b in range(nb):
                q = _diff_dot(X, Z, d, qi[b], qj[b], D)
                y = qy[b]
                c = y * sigmoid_neg(y * (thr - q)) * scale
                csum += c
                if qi[b] != qj[b]:       # i == j: D = 0 (and the rows would alias)
                    logt_row_update(c, D, Y + <Py_ssize_t>qi[b] * d, Y + <Py_ssize_t>qj[b] * d, d)
            work += nb * pair_work
            s0 += nb
        # column-major upper of out (= row-major lower) = (X^T Y + Y^T X) / 2 = X^T L X
        dsyr2k(b"U", b"N", &di, &ni, &half, <double*>X, &di, Y, &di, &zero, out, &ldc)
        _mirror_add_lam(out, W, d, ld, self.lam)
        csum_out[0] = csum
        return 0

    def mean_grad(self, x, B, rng, out=None):
        """Mean of ``B`` stochastic gradients at ``x`` (shape ``self.shape``), in one call.

        x : array of shape ``self.shape``; B : int >= 1; rng : ``numpy.random.Generator``;
        out : optional float64 C-contiguous array of shape ``self.shape``.
        A long call can be interrupted (Ctrl-C raises ``KeyboardInterrupt``).
        """
        from logt._kernels._base import _as_point, _check_out
        if isinstance(B, bool) or not isinstance(B, (int, np.integer)):
            raise TypeError(f"B must be an int, got {type(B).__name__}")
        if B < 1:
            raise ValueError(f"B must be >= 1, got {B}")
        a = _as_point(x, self.shape, "x")
        out = _check_out(out, self.shape)
        if np.shares_memory(a, out):
            a = a.copy()
        cdef double[::1] xb = a.reshape(-1)
        cdef double[::1] ob = out.reshape(-1)
        cdef bitgen_t* bg = bitgen_of(rng)
        cdef Py_ssize_t nb = B
        cdef int info
        self._drop_stash()
        with self._lock, rng.bit_generator.lock:
            with nogil:
                info = self.mean_grad_into(&xb[0], nb, bg, &ob[0])
        if info == INTERRUPTED and self._exc[0] != NULL:
            PyErr_Restore(self._exc[0], self._exc[1], self._exc[2])     # steals the references
            self._exc[0] = NULL
            self._exc[1] = NULL
            self._exc[2] = NULL
            _raise_pending()
        if info != 0:
            raise RuntimeError(f"{type(self).__name__}.mean_grad failed (code {info})")
        return out

    def _mean_grad_pairs(self, W, i, j, out=None, n_threads=None, y=None):
        """Mean gradient over GIVEN pairs ``(i[b], j[b])`` (private; for tests).

        W : ``self.shape`` float64; i, j : int arrays of equal length B >= 1 with
        ``0 <= i, j < n_samples`` (``i == j`` allowed: D = 0 contributes only
        through the threshold); y : the pairs' labels (+-1); default: label
        equality of the sampler's classes.
        """
        from logt._kernels._base import _as_point, _check_out
        Wa = _as_point(W, self.shape, "W")
        i = np.ascontiguousarray(i, dtype=np.int32)
        j = np.ascontiguousarray(j, dtype=np.int32)
        if i.ndim != 1 or i.shape != j.shape or len(i) == 0:
            raise ValueError("i and j must be 1-D of the same nonzero length")
        if min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= self.n_samples:
            raise ValueError(f"pair indices must be in [0, {self.n_samples})")
        if y is None:
            if self._smp.lab == NULL:
                raise ValueError("this oracle has no class labels: pass y")
            lab = self.sampler._keep[0]
            y = np.where(lab[i] == lab[j], 1.0, -1.0)
        y = np.ascontiguousarray(y, dtype=np.float64)
        if y.shape != i.shape or not np.isin(y, (-1.0, 1.0)).all():
            raise ValueError("y must hold one label -1 or +1 per pair")
        out = _check_out(out, self.shape)
        if np.shares_memory(Wa, out):
            Wa = Wa.copy()
        cdef int nt = self.n_threads if n_threads is None else max(1, int(n_threads))
        cdef double[::1] wb = Wa.reshape(-1)
        cdef double[::1] ob = out.reshape(-1)
        cdef int32_t[::1] iv = i
        cdef int32_t[::1] jv = j
        cdef double[::1] yv = y
        cdef Py_ssize_t B = len(i)
        cdef int info
        with self._lock:
            with nogil:
                info = self._grad(&wb[0], &iv[0], &jv[0], &yv[0], B, NULL, nt, &ob[0])
        if info != 0:
            raise RuntimeError(f"pair gradient failed (code {info})")
        return out

    # -------------------------------------------------------------- objective

    cdef double _eval_loss_sparse(self, const double* W, double thr) noexcept nogil:
        cdef Py_ssize_t d = self.n_features
        cdef Py_ssize_t b, k
        cdef double total = 0.0, q
        _fill_V(W, d, self._ld, self._V)
        for b in range(self.n_eval_pairs):
            k = _sparse_diff(self._e_indptr, self._e_ind, self._e_val, self._e_i[b], self._e_j[b],
                             self._wsc, self._didx, self._dval)
            q = _sparse_quad(self._V, d, k, self._didx, self._dval) if k > 0 else 0.0
            total += _logit_loss(self._e_y[b] * (thr - q))
        return total / <double>self.n_eval_pairs

    cdef double _eval_loss_dense(self, const double* W, double thr) noexcept nogil:
        cdef Py_ssize_t d = self.n_features
        cdef Py_ssize_t t0 = 0, tb, b, a, ne = self._n_eval_rows
        cdef double total = 0.0, q
        cdef int di = <int>d, ni = <int>ne, ldw = <int>self._ld
        cdef double one = 1.0, zero = 0.0
        if self._use_points(self.n_eval_pairs, ne):
            # Z (d x ne, column-major) = W^T X_eval; q = (x_i - x_j) . (z_i - z_j)
            dgemm(b"N", b"N", &di, &ni, &di, &one, <double*>W, &ldw, <double*>self._e_dense, &di,
                  &zero, self._Zw, &di)
            for b in range(self.n_eval_pairs):
                q = _diff_dot(self._e_dense, self._Zw, d, self._e_i[b], self._e_j[b], self._A)
                total += _logit_loss(self._e_y[b] * (thr - q))
            return total / <double>self.n_eval_pairs
        while t0 < self.n_eval_pairs:
            tb = min(self._blk, self.n_eval_pairs - t0)
            _dense_q(self._e_dense, d, self._e_i + t0, self._e_j + t0, tb, W, self._ld,
                     self._A, self._M, self._q)
            for b in range(tb):
                total += _logit_loss(self._e_y[t0 + b] * (thr - self._q[b]))
            t0 += tb
        return total / <double>self.n_eval_pairs

    def _eval_loss(self, W):
        """Mean logit loss ``log(1 + exp(-z))`` over the fixed evaluation pairs (no regularizer)."""
        from logt._kernels._base import _as_point
        Wa = _as_point(W, self.shape, "W")
        cdef double[::1] wb = Wa.reshape(-1)
        cdef Py_ssize_t d = self.n_features, ld = self._ld
        cdef double thr = self.threshold_scale * wb[d * ld + d] if self.learn_threshold else self.threshold
        cdef double r
        with self._lock:
            with nogil:
                if self.is_sparse:
                    r = self._eval_loss_sparse(&wb[0], thr)
                else:
                    r = self._eval_loss_dense(&wb[0], thr)
        return r
