# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""k nearest same-class and other-class candidates of each row, from a block's Gram matrix.

Used by :func:`logt.oracles.neighbors.neighbor_tables` (the tables of
``sampling="neighbors"``). The caller computes the block's inner products
``G = X[r0:r1] @ Xc^T`` with BLAS or a sparse product; this kernel turns them into
squared distances ``max(sq_i + sqc_j - 2 G_ij, 0)`` (the same expression, in the
same order, as the NumPy formula) and keeps, per row, the ``k`` smallest over the
candidates of the row's own class (``sim``) and over the others (``dis``), without the
GIL: per row the distances (``csrc/logt_sqdist.c``, vectorized), then the selection over
the runs of candidates of one class.

Order: by (distance, point index), i.e. ties go to the smaller index, which is
what :func:`neighbor_tables` promises; a row's own column is skipped. Each row
keeps a sorted list of at most ``k`` (distance, index) entries, so the result is
exactly the lexicographic ``k`` smallest whatever the order of the candidates.

Also :func:`pair_sq_distances`, the squared distances of given pairs (the learned
threshold's scale, :func:`logt.oracles.metric.pair_distance_scale`).
"""
import numpy as np

from libc.math cimport INFINITY
from libc.stdint cimport int32_t, int64_t

cdef extern from "logt_sqdist.h":
    int logt_sqdist_row(const double* g, const double* sqc, double s, double* dist, Py_ssize_t m) nogil

MAX_K = 256


cdef inline bint _before(double v, int32_t c, double w, int32_t e) noexcept nogil:
    """(v, c) < (w, e) lexicographically: distance first, then the point index."""
    return v < w or (v == w and c < e)


cdef inline void _keep(double v, int32_t c, double* vals, int32_t* idx, Py_ssize_t* count,
                       Py_ssize_t k) noexcept nogil:
    """Insert (v, c) into the sorted list (vals, idx) of ``count`` <= k entries if it is among the k smallest."""
    cdef Py_ssize_t m = count[0], p
    if m == k:
        if not _before(v, c, vals[k - 1], idx[k - 1]):
            return
        m = k - 1                      # the last entry drops out
    else:
        count[0] = m + 1
    p = m
    while p > 0 and _before(v, c, vals[p - 1], idx[p - 1]):
        vals[p] = vals[p - 1]
        idx[p] = idx[p - 1]
        p -= 1
    vals[p] = v
    idx[p] = c


cdef enum:
    GROUP = 8      # candidates tested at once against a list's k-th distance (one vector min, then each)


cdef inline void _merge_run(const double* dist, Py_ssize_t a, Py_ssize_t b, int64_t own, const int64_t* cand,
                            double* vals, int32_t* idx, Py_ssize_t* count, double* worst,
                            Py_ssize_t k) noexcept nogil:
    """Merge the candidates ``a .. b - 1`` (one class) into one sorted list. A group of ``GROUP`` whose smallest
    distance is above the list's k-th (``worst``; ``inf`` while it has fewer than k) cannot enter it and is
    skipped whole; in the others each candidate not above ``worst`` goes to ``_keep`` (the exact test)."""
    cdef Py_ssize_t j, g, e
    cdef double v, lo
    g = a
    while g < b:
        e = g + GROUP if g + GROUP <= b else b
        lo = dist[g]
        for j in range(g + 1, e):
            lo = dist[j] if dist[j] < lo else lo
        if lo <= worst[0]:
            for j in range(g, e):
                v = dist[j]
                if v <= worst[0] and j != own:
                    _keep(v, <int32_t>cand[j], vals, idx, count, k)
                    if count[0] == k:
                        worst[0] = vals[k - 1]
        g = e


cdef int _select_rows(const double* G, Py_ssize_t rows, Py_ssize_t m, const double* sqr,
                       const double* sqc, const int32_t* rcode, const int32_t* ccode,
                       const int64_t* runs, Py_ssize_t n_runs,
                       const int64_t* rself, const int64_t* cand, Py_ssize_t k,
                       int32_t* sim, int32_t* dis, double* vs, double* vd, int32_t* cs,
                       int32_t* cd, double* dist, double* simd, double* disd) noexcept nogil:
    """Returns 0, or -1 when G holds a non-finite value (the tables are then not filled).

    Two passes per row: the distances into ``dist`` (``logt_sqdist_row``, csrc/logt_sqdist.c: a
    vectorized loop that also flags a non-finite product), then the selection over the runs of candidates of one
    class (``runs``: their ``n_runs + 1`` bounds), each merged into the row's same-class or
    other-class list by ``_merge_run``. ``simd`` / ``disd`` (or NULL) receive the kept squared
    distances (``inf`` in the padding).
    """
    cdef Py_ssize_t r, ns, nd, t, q
    cdef double ws, wd
    cdef int32_t mine
    cdef int64_t own
    for r in range(rows):
        if logt_sqdist_row(G + r * m, sqc, sqr[r], dist, m):
            return -1
        mine = rcode[r]
        own = rself[r]
        ns = 0
        nd = 0
        ws = INFINITY
        wd = INFINITY
        for q in range(n_runs):
            if ccode[runs[q]] == mine:
                _merge_run(dist, runs[q], runs[q + 1], own, cand, vs, cs, &ns, &ws, k)
            else:
                _merge_run(dist, runs[q], runs[q + 1], own, cand, vd, cd, &nd, &wd, k)
        for t in range(k):
            sim[r * k + t] = cs[t] if t < ns else -1
            dis[r * k + t] = cd[t] if t < nd else -1
        if simd != NULL:
            for t in range(k):
                simd[r * k + t] = vs[t] if t < ns else INFINITY
                disd[r * k + t] = vd[t] if t < nd else INFINITY
    return 0


def select_block(G, sqr, sqc, rcode, ccode, rself, cand, Py_ssize_t k, sim, dis, simd=None, disd=None):
    """Fill ``sim`` and ``dis`` ((rows, k) int32) for one block of rows.

    G : (rows, m) float64 C-contiguous inner products with the m candidates;
    sqr : (rows,) squared norms of the block's rows; sqc : (m,) of the candidates;
    rcode : (rows,) int32 class codes; ccode : (m,) int32 class codes of the candidates;
    rself : (rows,) int64, the candidate column of each row itself or -1;
    cand : (m,) int64 point index of each candidate column; k in [1, MAX_K].
    Entries are candidate point indices sorted by (distance, index), padded with -1.
    simd, disd : None or both (rows, k) float64 C-contiguous writeable: the squared distances
    of the kept entries (``max(sq_i + sq_j - 2 G_ij, 0)``, as selected), ``inf`` in the padding.
    """
    G = np.ascontiguousarray(G, dtype=np.float64)
    if G.ndim != 2:
        raise ValueError(f"G must be 2-D, got shape {G.shape}")
    cdef Py_ssize_t rows = G.shape[0], m = G.shape[1]
    sqr = np.ascontiguousarray(sqr, dtype=np.float64)
    sqc = np.ascontiguousarray(sqc, dtype=np.float64)
    rcode = np.ascontiguousarray(rcode, dtype=np.int32)
    ccode = np.ascontiguousarray(ccode, dtype=np.int32)
    rself = np.ascontiguousarray(rself, dtype=np.int64)
    cand = np.ascontiguousarray(cand, dtype=np.int64)
    for name, a, size in (("sqr", sqr, rows), ("rcode", rcode, rows), ("rself", rself, rows),
                          ("sqc", sqc, m), ("ccode", ccode, m), ("cand", cand, m)):
        if a.shape != (size,):
            raise ValueError(f"{name} must have shape ({size},), got {a.shape}")
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k must be in [1, {MAX_K}], got {k}")
    if (simd is None) != (disd is None):
        raise ValueError("give both simd and disd, or neither")
    want_d = simd is not None
    outs = [("sim", sim, np.int32), ("dis", dis, np.int32)]
    if want_d:
        outs += [("simd", simd, np.float64), ("disd", disd, np.float64)]
    for name, out, dt in outs:
        if not (isinstance(out, np.ndarray) and out.dtype == dt and out.shape == (rows, k)
                and out.flags.c_contiguous and out.flags.writeable):
            raise ValueError(f"{name} must be a writeable C-contiguous {np.dtype(dt).name} array "
                             f"of shape ({rows}, {k})")
    if m and (cand.min() < 0 or cand.max() > np.iinfo(np.int32).max):
        raise ValueError("cand must hold point indices in [0, 2**31)")
    if rows and (rself.max() >= m or rself.min() < -1):
        raise ValueError(f"rself must be -1 or a column in [0, {m})")
    if rows == 0:
        return
    if not (np.isfinite(sqr).all() and np.isfinite(sqc).all()):
        raise ValueError("sqr and sqc must be finite")
    runs = np.concatenate(([0], np.flatnonzero(np.diff(ccode)) + 1, [m])).astype(np.int64) if m else \
        np.zeros(1, dtype=np.int64)           # bounds of the runs of candidates of one class
    cdef const int64_t[::1] runv = runs
    cdef Py_ssize_t n_runs = runs.shape[0] - 1
    dist = np.empty(max(m, 1), dtype=np.float64)
    cdef double[::1] distv = dist
    vs = np.empty(k, dtype=np.float64)
    vd = np.empty(k, dtype=np.float64)
    cs = np.empty(k, dtype=np.int32)
    cd = np.empty(k, dtype=np.int32)
    cdef const double[:, ::1] Gv = G
    cdef const double[::1] sqrv = sqr
    cdef const double[::1] sqcv = sqc
    cdef const int32_t[::1] rcv = rcode
    cdef const int32_t[::1] ccv = ccode
    cdef const int64_t[::1] rsv = rself
    cdef const int64_t[::1] cav = cand
    cdef int32_t[:, ::1] simv = sim
    cdef int32_t[:, ::1] disv = dis
    cdef double[::1] vsv = vs
    cdef double[::1] vdv = vd
    cdef int32_t[::1] csv = cs
    cdef int32_t[::1] cdv = cd
    cdef const double* gp = &Gv[0, 0] if m else NULL
    cdef const double* sqcp = &sqcv[0] if m else NULL
    cdef const int32_t* ccp = &ccv[0] if m else NULL
    cdef const int64_t* cap = &cav[0] if m else NULL
    cdef double[:, ::1] sdv
    cdef double[:, ::1] ddv
    cdef double* sdp = NULL
    cdef double* ddp = NULL
    if want_d:
        sdv = simd
        ddv = disd
        sdp = &sdv[0, 0]
        ddp = &ddv[0, 0]
    cdef int info
    with nogil:
        info = _select_rows(gp, rows, m, &sqrv[0], sqcp, &rcv[0], ccp, &runv[0], n_runs, &rsv[0], cap, k,
                     &simv[0, 0], &disv[0, 0], &vsv[0], &vdv[0], &csv[0], &cdv[0], &distv[0], sdp, ddp)
    if info != 0:
        raise ValueError("G must be finite")


def pair_sq_distances(X, i, j):
    """``||X[i[p]] - X[j[p]]||^2`` for each pair ``p``, summed over the differences (no cancellation).

    X : (n, d) float64 C-contiguous, finite; i, j : (P,) integer indices in ``[0, n)``.
    Returns (P,) float64. One pass over ``2 d`` numbers per pair without the GIL (the
    NumPy equivalent gathers two (P, d) copies first).
    """
    if not (isinstance(X, np.ndarray) and X.dtype == np.float64 and X.ndim == 2 and X.flags.c_contiguous):
        raise ValueError("X must be a C-contiguous 2-D float64 array")
    ia = np.ascontiguousarray(i, dtype=np.int64)
    ja = np.ascontiguousarray(j, dtype=np.int64)
    if ia.ndim != 1 or ia.shape != ja.shape:
        raise ValueError("i and j must be 1-D of the same length")
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], P = ia.shape[0], p, a
    out = np.zeros(P, dtype=np.float64)
    if P == 0:
        return out
    if min(ia.min(), ja.min()) < 0 or max(ia.max(), ja.max()) >= n:
        raise ValueError(f"pair indices must be in [0, {n})")
    if d == 0:
        return out
    cdef const double[:, ::1] Xv = X
    cdef const int64_t[::1] iv = ia
    cdef const int64_t[::1] jv = ja
    cdef double[::1] ov = out
    cdef const double* xi
    cdef const double* xj
    cdef double s, t
    with nogil:
        for p in range(P):
            xi = &Xv[iv[p], 0]
            xj = &Xv[jv[p], 0]
            s = 0.0
            for a in range(d):
                t = xi[a] - xj[a]
                s += t * t
            ov[p] = s
    if not np.isfinite(out).all():
        raise ValueError("X must be finite (a squared distance overflowed or is NaN)")
    return out
