"""Neighbour tables for neighbour-restricted pair sampling (``sampling="neighbors"``).

For every point ``i``: its ``k`` nearest same-class points (the "target
neighbours" of LMNN) and its ``k`` nearest other-class points (the nearest
"impostors"), by Euclidean distance in the space the oracle sees (the
estimator's scaled space). Computed once, in row blocks: one BLAS (or sparse)
product per block gives the inner products, and a compiled pass
(``logt._kernels._neighbors.select_block``, no GIL) turns them into squared
distances ``||x_i||^2 + ||x_j||^2 - 2 x_i . x_j`` and keeps the ``k`` smallest
of each kind per row. Ties are broken by the smaller index (exactly: the
lexicographic (distance, index) order), so the tables are deterministic.
``neighbor_tables_numpy`` is the plain NumPy version (``argpartition``; it may
pick a different one among exactly tied distances), kept as a test reference.

For large ``n`` the search is restricted to a seeded random subset of at most
``max_candidates`` candidates per class (default 2000) (so the cost is ``O(n * C * d)``
instead of ``O(n^2 d)``); the tables then hold approximate neighbours, which
is all the sampler needs. The neighbour softmax (:func:`logt.oracles.softmax.candidate_lists`) sets the cap
with :func:`search_cap`: every class whole while the search stays within :data:`SEARCH_WORK` (its
targets are then the exact nearest class-mates), else the largest cap (at least 2000) that does.

:func:`restrict_impostors` then keeps, of each point's other-class list, only the
points within ``impostor_radius`` times the distance of its farthest listed
same-class neighbour (LMNN's "impostors": the other-class points that compete
with the target neighbours). A point far from every other class then adds no
dissimilar pair, so its easy pairs no longer dominate the gradient.
"""
import numpy as np
import scipy.sparse as sp

from logt._kernels._neighbors import pair_sq_distances, select_block
from logt import _threads

__all__ = ["neighbor_tables", "neighbor_tables_numpy", "target_tables", "restrict_impostors",
           "table_sq_distances", "search_cap", "MAX_NEIGHBORS", "MAX_CANDIDATES", "SEARCH_WORK"]

MAX_NEIGHBORS = 256           # k above this is a ValueError (tables are n * k int32 each)
MAX_CANDIDATES = 2000         # neighbor_tables' default per-class cap of the candidate pool
SEARCH_WORK = 5 * 10**10      # search_cap's budget: n * pool * (d + SELECT_COST), about 1 s on one core here
SELECT_COST = 96              # a distance's selection pass, in units of one feature's product (measured: ~2 ns
                              # per distance at d = 25, ~3.3 ns at d = 100 on this project's 2-core machine)


def search_cap(class_sizes, n_features, work=SEARCH_WORK, floor=MAX_CANDIDATES):
    """The per-class cap of :func:`neighbor_tables`' candidate pool for a search of ``n = sum(class_sizes)`` rows
    in ``n_features`` dimensions: ``max(class_sizes)`` (no class subsampled, the tables exact) when
    ``n * n * (n_features + SELECT_COST) <= work``, else the largest cap ``c >= floor`` with
    ``n * sum_c min(m_c, c) * (n_features + SELECT_COST) <= work`` (``floor`` when none is).

    class_sizes : (C,) ints, the rows of each class; n_features : int >= 1; work : float > 0. The pool
    ``sum_c min(m_c, c)`` is then at most ``max(n, C * floor)`` and, above the floor, at most
    ``sqrt(work / SELECT_COST)`` (~22,800) columns: the block buffers (256 rows x pool doubles per thread) stay
    below 50 MB."""
    sizes = sorted(int(m) for m in np.asarray(class_sizes).ravel())
    n, per_distance = sum(sizes), int(n_features) + SELECT_COST

    def fits(c):                                     # Python ints: exact against the budget
        return n * sum(min(m, c) for m in sizes) * per_distance <= work

    if not sizes or fits(sizes[-1]):                 # the exhaustive search fits
        return sizes[-1] if sizes else floor
    if not fits(floor):
        return floor
    lo, hi = floor, sizes[-1]                        # the largest c in [lo, hi) that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _sqnorms(X):
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


def _kbest(D, k):
    """Columns of the k smallest entries of each row of D, sorted by (value, column).

    ``argpartition`` is deterministic for a given input, so the tables are too.
    """
    k = min(k, D.shape[1])
    if k < D.shape[1]:
        idx = np.argpartition(D, k - 1, axis=1)[:, :k]
    else:
        idx = np.broadcast_to(np.arange(D.shape[1]), D.shape)
    vals = np.take_along_axis(D, idx, 1)
    order = np.lexsort((idx, vals), axis=1)
    return np.take_along_axis(idx, order, 1)


def _candidates(X, codes, max_candidates, rng):
    """``(cand_all, XcT, sq, sqc, pos)``: candidate points grouped by class (a seeded subsample of
    at most ``max_candidates`` per class), their dense transposed rows (d, m), the squared norms
    of all rows and of the candidates, and the candidate column of each point (-1: none)."""
    gen = np.random.default_rng(rng)
    cand = []
    for c in range(int(codes.max()) + 1):
        members = np.flatnonzero(codes == c)
        if len(members) > max_candidates:
            members = np.sort(gen.choice(members, max_candidates, replace=False))
        cand.append(members)
    cand_all = np.concatenate(cand)
    Xc = X[cand_all]
    if sp.issparse(Xc):
        Xc = Xc.toarray()          # sparse rows times a dense candidate block: one fast product per block
    sq = _sqnorms(X)
    pos = np.full(X.shape[0], -1, dtype=np.int64)
    pos[cand_all] = np.arange(len(cand_all))
    return cand_all, np.ascontiguousarray(Xc.T), sq, sq[cand_all], pos


def neighbor_tables(X, codes, k, max_candidates=MAX_CANDIDATES, rng=0, block=256, return_distances=False,
                    n_threads=None):
    """``(sim, dis)``: two (n, k) int32 arrays of neighbour indices, padded with -1
    (``(sim, dis, dsim, ddis)`` with ``return_distances``: also their (n, k) squared
    distances as the selection computed them, ``inf`` in the padding).

    X : (n, d) float64 ndarray or CSR; codes : (n,) int class codes 0..C-1;
    k : neighbours per list (1..MAX_NEIGHBORS); max_candidates : per-class cap
    of the candidate pool (seeded subsample with ``rng`` when a class is larger).
    ``sim[i]`` never contains ``i``; a point whose class has m < k + 1 members
    has ``m - 1`` same-class entries. n_threads : threads over the row blocks (None: every CPU this process
    may use), each with one BLAS thread; the tables and distances do not depend on it (each row's products,
    on one BLAS thread, and its selection are the same in any thread). Below
    ``logt._threads.PARALLEL_MIN_ENTRIES`` distances the blocks run inline with BLAS as it is set.
    """
    codes = np.asarray(codes)
    n = X.shape[0]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= MAX_NEIGHBORS:
        raise ValueError(f"n_neighbors must be an int in [1, {MAX_NEIGHBORS}], got {k!r}")
    cand_all, XcT, sq, sqc, pos = _candidates(X, codes, max_candidates, rng)
    sim = np.full((n, k), -1, dtype=np.int32)
    dis = np.full((n, k), -1, dtype=np.int32)
    ccode = np.ascontiguousarray(codes[cand_all], dtype=np.int32)
    cidx = cand_all.astype(np.int64)
    rcodes = np.ascontiguousarray(codes, dtype=np.int32)
    dense = not sp.issparse(X)
    dsim = np.empty((n, k)) if return_distances else None
    ddis = np.empty((n, k)) if return_distances else None

    def rows(starts):
        buf = np.empty((min(block, n), XcT.shape[1])) if dense else None     # one block buffer, reused
        for r0 in starts:
            r1 = min(n, r0 + block)
            if dense:
                G = np.matmul(X[r0:r1], XcT, out=buf[:r1 - r0])
            else:
                G = np.ascontiguousarray(np.asarray(X[r0:r1] @ XcT), dtype=np.float64)
            # compiled: distances sq_i + sq_j - 2 G_ij (clipped at 0), k smallest per row by (distance, column)
            select_block(G, sq[r0:r1], sqc, rcodes[r0:r1], ccode, pos[r0:r1], cidx, k, sim[r0:r1], dis[r0:r1],
                         None if dsim is None else dsim[r0:r1], None if ddis is None else ddis[r0:r1])

    starts = range(0, n, block)
    m = XcT.shape[1]
    _threads.run_blocks(rows, starts, _threads.block_workers(n_threads, len(starts), n * m, min(block, n) * m))
    return (sim, dis, dsim, ddis) if return_distances else (sim, dis)


def target_tables(X, codes, k, max_candidates=MAX_CANDIDATES, rng=0, block=256, n_threads=None):
    """``(sim, dsim)``: the same-class half of :func:`neighbor_tables` (``k`` nearest class-mates of each
    point and their squared distances; same candidates and tie rule: its ``sim``, and its ``dsim`` up to the
    rounding of the inner products, which are taken in other blocks).

    X : (n, d) float64 dense ndarray; codes : (n,) int class codes 0..C-1. The products are
    taken class by class (rows of class ``c`` against the candidates of class ``c`` only), so the
    cost is about ``1/C`` of the full search. n_threads : as for :func:`neighbor_tables`.
    """
    codes = np.asarray(codes)
    n = X.shape[0]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= MAX_NEIGHBORS:
        raise ValueError(f"n_neighbors must be an int in [1, {MAX_NEIGHBORS}], got {k!r}")
    if sp.issparse(X):
        raise TypeError("target_tables needs dense X")
    cand_all, XcT, sq, sqc, pos = _candidates(X, codes, max_candidates, rng)
    ccode = np.ascontiguousarray(codes[cand_all], dtype=np.int32)
    bounds = np.searchsorted(ccode, np.arange(int(codes.max()) + 2))   # class c: columns bounds[c]:bounds[c+1]
    cidx = cand_all.astype(np.int64)
    Xc = np.ascontiguousarray(XcT.T)               # (m, d): each class's candidates are a contiguous block
    sim = np.full((n, k), -1, dtype=np.int32)
    dsim = np.full((n, k), np.inf)

    def blocks(tasks):
        for c, r in tasks:
            lo, hi = int(bounds[c]), int(bounds[c + 1])
            m = len(r)
            G = X[r] @ Xc[lo:hi].T
            rself = np.where(pos[r] >= 0, pos[r] - lo, -1)          # the row's own column in this class
            s_out, d_out = np.empty((m, k), dtype=np.int32), np.empty((m, k), dtype=np.int32)
            sd_out, dd_out = np.empty((m, k)), np.empty((m, k))
            select_block(G, sq[r], sqc[lo:hi], np.full(m, c, dtype=np.int32), ccode[lo:hi], rself, cidx[lo:hi],
                         k, s_out, d_out, sd_out, dd_out)
            sim[r], dsim[r] = s_out, sd_out

    tasks = []                      # (class, its rows of one block)
    for c in range(len(bounds) - 1):
        rows = np.flatnonzero(codes == c)
        tasks += [(c, rows[r0:r0 + block]) for r0 in range(0, len(rows), block)]
    per_class = np.diff(bounds)                                     # candidates of each class
    entries = int(np.bincount(codes, minlength=len(per_class)) @ per_class)
    _threads.run_blocks(blocks, tasks, _threads.block_workers(n_threads, len(tasks), entries,
                                                              block * int(per_class.max())))
    return sim, dsim


def neighbor_tables_numpy(X, codes, k, max_candidates=MAX_CANDIDATES, rng=0, block=512):
    """The same tables in plain NumPy (``argpartition`` per class): the reference of the tests."""
    codes = np.asarray(codes)
    n = X.shape[0]
    n_classes = int(codes.max()) + 1
    cand_all, XcT, sq, sqc, pos = _candidates(X, codes, max_candidates, rng)
    sim = np.full((n, k), -1, dtype=np.int32)
    dis = np.full((n, k), -1, dtype=np.int32)
    bounds = np.searchsorted(codes[cand_all], np.arange(n_classes + 1))   # class c: columns bounds[c]:bounds[c+1]
    cand_code = codes[cand_all]
    for r0 in range(0, n, block):
        r1 = min(n, r0 + block)
        D = sq[r0:r1, None] + sqc[None, :] - 2.0 * np.asarray(X[r0:r1] @ XcT)
        np.maximum(D, 0.0, out=D)
        p = pos[r0:r1]
        own = np.flatnonzero(p >= 0)
        D[own, p[own]] = np.inf                      # never pair i with itself
        rc = codes[r0:r1]
        for c in range(n_classes):
            mine = np.flatnonzero(rc == c)
            if len(mine) == 0:
                continue
            sub = D[mine, bounds[c]:bounds[c + 1]]
            idx = _kbest(sub, k)
            vals = np.take_along_axis(sub, idx, 1)
            sim[r0 + mine, :idx.shape[1]] = np.where(np.isfinite(vals), cand_all[idx + bounds[c]], -1)
        D[rc[:, None] == cand_code[None, :]] = np.inf
        idx = _kbest(D, k)
        vals = np.take_along_axis(D, idx, 1)
        dis[r0:r1, :idx.shape[1]] = np.where(np.isfinite(vals), cand_all[idx], -1)
    # valid entries first in each row (padding at the end)
    for T in (sim, dis):
        order = np.argsort(T < 0, axis=1, kind="stable")
        T[:] = np.take_along_axis(T, order, 1)
    return sim, dis


def table_sq_distances(X, T):
    """(n, k) squared distances ``||X[i] - X[T[i, c]]||^2`` of a neighbour table ``T`` (``inf`` where
    ``T`` is -1). X : (n, d) float64 ndarray or CSR. For tables given by the caller; the estimator
    takes them from :func:`neighbor_tables` (``return_distances=True``) at no extra cost."""
    T = np.asarray(T)
    rows, cols = np.nonzero(T >= 0)
    out = np.full(T.shape, np.inf)
    out[rows, cols] = pair_sq_distances_any(X, rows, T[rows, cols])
    return out


def restrict_impostors(sim, dis, dsim, ddis, radius):
    """``dis`` with, in each row, only the other-class points within ``radius`` times the distance of
    the row's farthest same-class neighbour in ``sim`` (padded with -1 at the row ends, order kept).

    sim, dis : (n, k) int tables of :func:`neighbor_tables`; dsim, ddis : (n, k) their squared
    distances (``neighbor_tables(..., return_distances=True)`` or :func:`table_sq_distances`);
    radius : float > 0 (``inf`` or None keeps every entry; checked by
    :func:`check_impostor_radius`). A row without a same-class neighbour keeps
    its whole list; a row whose listed same-class neighbours all lie at distance 0 (duplicates)
    keeps only other-class points at distance 0. When no row keeps any entry (every class far from
    the others) ``dis`` is returned unchanged, so the sampler still has dissimilar pairs. Returns a
    new (n, k) int32 array (or ``dis``).
    """
    radius = check_impostor_radius(radius)
    sim = np.asarray(sim)
    dis = np.asarray(dis)
    if radius is None or np.isinf(radius):
        return dis
    reach = np.where(sim >= 0, dsim, -np.inf).max(axis=1)        # farthest target neighbour (-inf: none)
    reach = np.where(np.isfinite(reach), reach * (radius * radius), np.inf)
    keep = (dis >= 0) & (np.asarray(ddis) <= reach[:, None])
    if not keep.any():
        return dis
    order = np.argsort(~keep, axis=1, kind="stable")             # kept entries first, in their order
    return np.take_along_axis(np.where(keep, dis, -1), order, 1).astype(np.int32)

def check_impostor_radius(radius):
    """``None`` or a float ``> 0`` (``inf`` allowed): the ``impostor_radius`` of the "neighbors" sampler."""
    if radius is None:
        return None
    if isinstance(radius, bool) or not isinstance(radius, (int, float, np.integer, np.floating)):
        raise TypeError(f"impostor_radius must be None or a number > 0, got {radius!r}")
    radius = float(radius)
    if not radius > 0.0:
        raise ValueError(f"impostor_radius must be None or a number > 0, got {radius!r}")
    return radius


def pair_sq_distances_any(X, i, j):
    """(P,) float64 ``||x_i[p] - x_j[p]||^2`` for dense (compiled :func:`pair_sq_distances`) or CSR ``X``."""
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    if sp.issparse(X):
        D = X[i] - X[j]
        return np.asarray(D.multiply(D).sum(axis=1), dtype=np.float64).ravel()
    return pair_sq_distances(np.ascontiguousarray(X, dtype=np.float64), i, j)
