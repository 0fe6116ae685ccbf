"""Neighbour tables of ``sampling="neighbors"``: logt's compiled selection vs the NumPy version.

Both compute the same block inner products (BLAS for dense rows, a sparse product
for CSR rows); then logt's ``select_block`` (one pass, no GIL, k smallest by
(distance, index)) against ``neighbor_tables_numpy`` (distances and masks in NumPy,
``argpartition`` per class). k = 10, default candidate cap (2,000 per class).

Cases: dense 1,257 x 64 with 10 classes (digits' training size) and sparse
4,000 x 123 with 14 nonzeros per row, 2 classes (a9a-like rows; a subset keeps
the suite short).

Threads: the search over a large set (20,000 x 48 rows of 10 classes, 20,000 candidates: the
subspace coordinates of an MNIST-sized fit) on one thread against row blocks in every CPU's thread (the
session runs one BLAS thread: conftest.py); the same tables, checked. And the default check's 1-NN hits
(6,000 held-out rows against 24,000, 48 coordinates), one thread against every CPU. With
``--benchmark-disable``: 3,000 and 1,000 x 3,000 rows (a smoke run).

The neighbour softmax's candidate lists on 12,000 x 25 rows of 2 classes (6,000 rows each): every class searched
whole (``search_cap``'s rule: the targets exact) against the former fixed cap of 2,000 candidates per class; the
cost of exact targets, and a check that they are at least as near (smoke run: 3,000 rows, no class capped).

Also the squared distances of given pairs (``pair_sq_distances``, the learned threshold's scale)
against the NumPy gather-and-sum.

Run:  python -m pytest bench/bench_neighbor_tables.py
"""
import numpy as np
import pytest

from logt.bench.references import synthetic_binary
from logt.oracles.neighbors import neighbor_tables, neighbor_tables_numpy

_CASES = {}


def _case(name):
    if name not in _CASES:
        rng = np.random.default_rng(3)
        if name == "dense_1257x64":
            y = rng.integers(0, 10, 1257)
            X = rng.standard_normal((1257, 64)) + 2.0 * rng.standard_normal((10, 64))[y]
        else:
            X, y = synthetic_binary(4000, 123, 14, 5)
        _CASES[name] = (X, np.unique(y, return_inverse=True)[1])
    return _CASES[name]


@pytest.mark.parametrize("impl", ["logt", "numpy"])
@pytest.mark.parametrize("name", ["dense_1257x64", "sparse_4000x123"])
def test_neighbor_tables(benchmark, name, impl):
    X, codes = _case(name)
    benchmark.group = f"neighbour tables {name} k=10"
    fn = neighbor_tables if impl == "logt" else neighbor_tables_numpy
    sim, dis = benchmark(fn, X, codes, 10)
    assert sim.shape == dis.shape == (X.shape[0], 10)
    # both are the k nearest: the same distances row by row (they may differ among exact ties)
    s2, d2 = (neighbor_tables_numpy if impl == "logt" else neighbor_tables)(X, codes, 10)
    Xd = X.toarray() if hasattr(X, "toarray") else X
    for T1, T2 in ((sim, s2), (dis, d2)):
        rows = np.arange(0, X.shape[0], 97)
        for i in rows:
            a, b = T1[i][T1[i] >= 0], T2[i][T2[i] >= 0]
            np.testing.assert_allclose(np.sort(((Xd[a] - Xd[i]) ** 2).sum(1)),
                                       np.sort(((Xd[b] - Xd[i]) ** 2).sum(1)), rtol=1e-9, atol=1e-9)


def _pair_sq_numpy(X, i, j):
    D = X[i] - X[j]
    return np.einsum("ij,ij->i", D, D)


@pytest.mark.parametrize("impl", ["logt", "numpy"])
def test_pair_sq_distances(benchmark, impl):
    """The learned threshold's scale: squared distances of the 10,000 evaluation pairs (digits' size)."""
    from logt._kernels._neighbors import pair_sq_distances
    X, _ = _case("dense_1257x64")
    rng = np.random.default_rng(4)
    i, j = rng.integers(0, X.shape[0], 10_000), rng.integers(0, X.shape[0], 10_000)
    benchmark.group = "pair squared distances 10,000 pairs, d=64"
    fn = pair_sq_distances if impl == "logt" else _pair_sq_numpy
    got = benchmark(fn, X, i, j)
    np.testing.assert_allclose(got, _pair_sq_numpy(X, i, j), rtol=1e-12)


_BIG = {}


def _big():
    if not _BIG:
        rng = np.random.default_rng(5)
        y = rng.integers(0, 10, 30_000)
        X = rng.standard_normal((30_000, 48)) + 1.5 * rng.standard_normal((10, 48))[y]
        _BIG["X"], _BIG["y"] = X, y
    return _BIG["X"], _BIG["y"]


@pytest.mark.parametrize("threads", ["one thread", "every CPU"])
def test_neighbor_tables_threads(benchmark, threads):
    X, y = _big()
    n = 3000 if benchmark.disabled else 20_000
    X, y = X[:n], y[:n]
    benchmark.group = "neighbour tables 20,000 x 48, 10 classes, k=20: threads"
    n = 1 if threads == "one thread" else None
    got = benchmark.pedantic(neighbor_tables, (X, y, 20), {"n_threads": n, "return_distances": True}, rounds=3)
    ref = neighbor_tables(X, y, 20, n_threads=1 if n is None else None, return_distances=True)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("threads", ["one thread", "every CPU"])
def test_nn1_hits_threads(benchmark, threads, monkeypatch):
    from logt import _threads
    from logt.metric_learning.subspace import nn1_hits
    X, y = _big()
    m = 4000 if benchmark.disabled else 30_000
    X, y = X[:m], y[:m]
    R, cr, Q, cq = X[:m * 4 // 5], y[:m * 4 // 5], X[m * 4 // 5:], y[m * 4 // 5:]
    benchmark.group = "check 1-NN hits 6,000 x 24,000, 48 coordinates: threads"
    ref = nn1_hits(R, cr, Q, cq)
    if threads == "one thread":
        monkeypatch.setattr(_threads, "n_cpus", lambda: 1)
    got = benchmark.pedantic(nn1_hits, (R, cr, Q, cq), rounds=3)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("pool", ["search_cap (whole classes)", "2,000 per class"])
def test_softmax_candidate_search(benchmark, pool):
    import contextlib

    from logt.bench.learners_lowdim import fixed_search_cap
    from logt.oracles.neighbors import MAX_CANDIDATES
    from logt.oracles.softmax import candidate_lists
    n = 3000 if benchmark.disabled else 12_000
    rng = np.random.default_rng(6)
    y = np.arange(n) % 2
    X = rng.standard_normal((n, 25)) + 0.7 * rng.standard_normal((2, 25))[y]
    benchmark.group = "softmax candidate lists 12,000 x 25, 2 classes, 12 targets + 20 impostors"
    exact = candidate_lists(X, y, 12, 20)
    with contextlib.nullcontext() if pool == "search_cap (whole classes)" else fixed_search_cap(MAX_CANDIDATES):
        anchors, ptr, cand, n_t = benchmark.pedantic(candidate_lists, (X, y, 12, 20), rounds=3)
    # every row's 12th target is at least as far as with whole classes (equal when no class exceeds the cap)
    a2, p2, c2, t2 = exact
    for i in range(0, n, 211):
        far = ((X[cand[ptr[i]:ptr[i] + n_t[i]]] - X[i]) ** 2).sum(1).max()
        far2 = ((X[c2[p2[i]:p2[i] + t2[i]]] - X[i]) ** 2).sum(1).max()
        assert far2 <= far * (1 + 1e-12)
