"""The reference codes logt is measured against (benchmarks and ``python -m logt.bench``).

These are honest, best-effort NumPy / SciPy implementations of each hot path,
written the way a careful user would write them (vectorised where NumPy allows,
preallocated buffers where that helps, no deliberate slowness). Every speed
ratio logt reports is ``reference time / logt time`` against one of these, so
they are tested for correctness against logt's kernels and against each other
(``tests/test_bench_references.py``).

Contents
--------
Projection onto the PSD cone (paper: ``Pi_D``, an eigendecomposition):
    :func:`numpy_eigh_projection`, :func:`scipy_eigh_projection`;
    test inputs :func:`spectrum_matrices` (``SPECTRA``).
Toy oracle averaging (paper Sec. 5: ``g = W - A + mean of B symmetric Z``,
``Z_ij`` uniform on ``[-s, s]``, d = 5):
    :func:`toy_average_chunked` (best plain NumPy: uniforms into a reused
    buffer, summed per chunk), :func:`toy_average_raw_bits` (logt's 32-bit
    integer-sum algorithm in NumPy), :func:`toy_average_materialized` (the naive
    ``(B, d, d)`` array), and the one-sample :func:`toy_grad_numpy`.
Metric-learning mini-batch gradient (``D_B^T diag(c) D_B / B + lam W``):
    :func:`metric_grad_dense` (gather dense rows, BLAS products),
    :func:`metric_grad_loop` (naive per-pair loop); data
    :func:`synthetic_binary`, :func:`a9a_like`, :func:`mushrooms_like`,
    :func:`metric_data` (real LIBSVM files when present, else synthetic).
End to end:
    :func:`numpy_projected_sgd_toy`, :func:`numpy_projected_sgd_metric`:
    projected SGD "as a user would write it in NumPy" (``np.linalg.eigh`` at
    every step, step ``1/(lam t)``, the oracle in NumPy, the last iterate).
"""
import os
from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.sparse as sp

__all__ = [
    "SPECTRA", "numpy_eigh_projection", "scipy_eigh_projection", "spectrum_matrices",
    "TOY_D", "toy_average_chunked", "toy_average_raw_bits", "toy_average_materialized",
    "toy_grad_numpy", "METRIC_LAM", "metric_grad_dense", "metric_grad_loop", "triplet_grad_dense",
    "softmax_grad_dense",
    "synthetic_binary", "a9a_like", "mushrooms_like", "metric_data", "find_data_dir",
    "numpy_projected_sgd_toy", "numpy_projected_sgd_metric",
]

# --------------------------------------------------------------------------- projection

SPECTRA = ("half_negative", "5pct_negative", "psd")


def numpy_eigh_projection(A):
    """``Pi(A) = V diag(max(l, 0)) V^T`` with ``numpy.linalg.eigh`` (A symmetric (d, d))."""
    l, V = np.linalg.eigh(A)
    return (V * np.maximum(l, 0.0)) @ V.T


def scipy_eigh_projection(A):
    """The same with ``scipy.linalg.eigh`` (``check_finite=False``; LAPACK dsyevr)."""
    l, V = scipy.linalg.eigh(A, check_finite=False)
    return (V * np.maximum(l, 0.0)) @ V.T


def spectrum_matrices(d, spectrum, n=4, seed=0):
    """``n`` random symmetric (d, d) matrices ``Q diag(l) Q^T``, ``|l|`` uniform on [0.1, 1].

    spectrum : "half_negative" (``d // 2`` eigenvalues negated), "5pct_negative"
    (``max(1, round(0.05 d))`` negated) or "psd" (none negated).
    """
    if spectrum not in SPECTRA:
        raise ValueError(f"spectrum must be one of {SPECTRA}, got {spectrum!r}")
    rng = np.random.default_rng([d, SPECTRA.index(spectrum), seed])
    mats = []
    for _ in range(n):
        Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
        l = rng.uniform(0.1, 1.0, d)
        if spectrum == "half_negative":
            l[: d // 2] *= -1
        elif spectrum == "5pct_negative":
            l[: max(1, round(0.05 * d))] *= -1
        A = (Q * l) @ Q.T
        mats.append((A + A.T) / 2)
    return mats


# --------------------------------------------------------------------------- toy oracle

TOY_D = 5
TOY_CHUNK = 8192   # samples per chunk; 4096..32768 measured within a few %


def _toy_assemble(W, A, zbar):
    """``W - A + Z`` from the ``d(d+1)/2`` upper-triangle (row-major) entries ``zbar`` of Z."""
    d = W.shape[0]
    iu = np.triu_indices(d)
    Z = np.empty((d, d))
    Z[iu] = zbar
    Z.T[iu] = zbar
    return (W - A) + Z


def toy_average_chunked(W, A, B, rng, noise=1.0, buf=None):
    """Mean of ``B`` toy gradients, best plain NumPy: ``rng.random(out=buf)`` into a
    reused ``(m, TOY_CHUNK)`` buffer (``m = d(d+1)/2``), row sums accumulated.

    W, A : (d, d); B : int >= 1; rng : numpy Generator; returns (d, d).
    """
    m = W.shape[0] * (W.shape[0] + 1) // 2
    if buf is None:
        buf = np.empty((m, TOY_CHUNK))
    s = np.zeros(m)
    left = B
    while left >= buf.shape[1]:
        rng.random(out=buf)
        s += buf.sum(1)
        left -= buf.shape[1]
    if left:
        s += rng.random((m, left)).sum(1)
    return _toy_assemble(W, A, noise * (2.0 * s / B - 1.0))


def toy_average_raw_bits(W, A, B, rng, noise=1.0):
    """logt's algorithm in NumPy: raw 64-bit draws viewed as int32 pairs, summed
    exactly in int64, entry ``noise * (j + 0.5) / 2^31`` (the same 2^32-point grid)."""
    m = W.shape[0] * (W.shape[0] + 1) // 2
    bg = rng.bit_generator
    s = np.zeros(m, dtype=np.int64)
    left = B
    while left > 0:
        n = min(TOY_CHUNK, left)
        r = bg.random_raw((m * n + 1) // 2).view(np.int32)[: m * n].reshape(m, n)
        s += r.sum(1, dtype=np.int64)
        left -= n
    return _toy_assemble(W, A, noise * 2.0**-31 * (s / B + 0.5))


def toy_average_materialized(W, A, B, rng, noise=1.0):
    """The naive code: a ``(B, d, d)`` uniform array, symmetrized from its upper triangle, ``.mean(0)``."""
    d = W.shape[0]
    U = rng.uniform(-noise, noise, size=(B, d, d))
    Z = np.triu(U) + np.triu(U, 1).transpose(0, 2, 1)
    return (W - A) + Z.mean(0)


def toy_grad_numpy(W, A, rng, noise=1.0):
    """One toy gradient ``W - A + Z`` (Z symmetric, upper triangle uniform on [-noise, noise])."""
    U = rng.uniform(-noise, noise, size=W.shape)
    Z = np.triu(U)
    Z += np.triu(U, 1).T
    return (W - A) + Z


# --------------------------------------------------------------------------- metric learning

METRIC_LAM = 0.1


def _draw_pairs(n, B, rng):
    """``B`` ordered pairs ``i != j``, uniform (i uniform, j uniform among the others)."""
    i = rng.integers(0, n, size=B)
    j = rng.integers(0, n - 1, size=B)
    j += j >= i
    return i, j


def metric_grad_dense(Xd, y, W, B, rng, lam=METRIC_LAM, pairs=None):
    """``D^T diag(c) D / B + lam W`` in NumPy: gather dense rows ``D = X[i] - X[j]``
    (B, d), ``q = ((D W) * D).sum(1)``, ``c = y_ij sigmoid(-y_ij (1 - q))``.

    Xd : (n, d) dense float64, rows ``||x|| <= 1``; y : (n,) labels; W : (d, d).
    pairs : optional ``(i, j)`` index arrays of length B used instead of drawing
    from ``rng`` (for tests against other implementations on the same pairs).
    """
    i, j = _draw_pairs(Xd.shape[0], B, rng) if pairs is None else pairs
    D = Xd[i] - Xd[j]
    yy = np.where(y[i] == y[j], 1.0, -1.0)
    z = yy * (1.0 - ((D @ W) * D).sum(axis=1))
    c = yy / (1.0 + np.exp(z))
    return (D.T * c) @ D / B + lam * W


def metric_grad_loop(Xd, y, W, B, rng, lam=METRIC_LAM, pairs=None):
    """The same quantity with a naive per-pair Python loop (``c * outer(D, D)`` per pair);
    ``pairs`` as in :func:`metric_grad_dense`."""
    n = Xd.shape[0]
    G = np.zeros_like(W)
    for k in range(B):
        if pairs is None:
            i = int(rng.integers(n))
            j = int(rng.integers(n - 1))
            j += j >= i
        else:
            i, j = int(pairs[0][k]), int(pairs[1][k])
        D = Xd[i] - Xd[j]
        yy = 1.0 if y[i] == y[j] else -1.0
        c = yy / (1.0 + np.exp(yy * (1.0 - D @ W @ D)))
        G += c * np.outer(D, D)
    return G / B + lam * W


def triplet_grad_dense(Xd, triplets, t, W, unit, lam=METRIC_LAM):
    """The triplet loss's mean gradient in NumPy over list indices ``t`` (B,):
    ``sum_b sigmoid(z_b) / (s B) (D1 D1^T - D2 D2^T) + lam W`` with ``D1 = x_i - x_j``,
    ``D2 = x_i - x_l``, ``z = (D1^T W D1 - D2^T W D2) / s + 1`` (``s = unit``).

    Xd : (n, d) dense float64; triplets : ``(ti, tj, tl)`` int arrays (the oracle's list); W : (d, d).
    """
    ti, tj, tl = (a[t] for a in triplets)
    D1, D2 = Xd[ti] - Xd[tj], Xd[ti] - Xd[tl]
    z = (np.einsum("bk,kl,bl->b", D1, W, D1, optimize=True)
         - np.einsum("bk,kl,bl->b", D2, W, D2, optimize=True)) / unit + 1.0
    c = np.exp(-np.logaddexp(0.0, -z)) / (unit * len(t))
    return (D1.T * c) @ D1 - (D2.T * c) @ D2 + lam * W


def softmax_grad_dense(Xd, lists, a, W, unit, lam=METRIC_LAM):
    """The neighbour-softmax loss's mean gradient in NumPy over anchor indices ``a`` (B,), vectorized
    over the candidates: ``sum_c ([c target] / t - p_c) u_c u_c^T / (s B) + lam W``, ``u_c = x_i - x_c``,
    ``p = softmax(-u_c^T W u_c / s)`` per anchor (``s = unit``).

    Xd : (n, d) dense float64; lists : ``(anchors, ptr, cand, n_t)`` (the oracle's candidate lists);
    W : (d, d).
    """
    anchors, ptr, cand, n_t = lists
    cnt = (ptr[a + 1] - ptr[a]).astype(np.int64)
    owner = np.repeat(np.arange(len(a)), cnt)
    pos = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)            # index within the anchor
    U = Xd[anchors[a][owner]] - Xd[cand[ptr[a][owner] + pos]]
    z = -np.einsum("bk,kl,bl->b", U, W, U, optimize=True) / unit
    zmax = np.full(len(a), -np.inf)
    np.maximum.at(zmax, owner, z)
    e = np.exp(z - zmax[owner])
    tot = np.bincount(owner, e, minlength=len(a))
    w = -e / tot[owner]
    t = n_t[a][owner]
    w += np.where(pos < t, 1.0 / t, 0.0)
    w /= unit * len(a)
    return (U.T * w) @ U + lam * W


def synthetic_binary(n, d, nnz, seed):
    """Binary sparse data like the LIBSVM sets: ``nnz`` ones per row at random
    columns, rows scaled to unit norm (CSR, float64), random labels in {0, 1}."""
    rng = np.random.default_rng(seed)
    cols = np.argsort(rng.random((n, d)), axis=1)[:, :nnz]
    cols.sort(axis=1)
    vals = np.full(n * nnz, 1.0 / np.sqrt(nnz))
    X = sp.csr_matrix((vals, cols.ravel(), np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
    return X, rng.integers(0, 2, size=n)


def a9a_like(seed=0):
    """Synthetic stand-in for a9a (Adult): 32561 x 123, 14 nonzeros per row."""
    return synthetic_binary(32561, 123, 14, seed)


def mushrooms_like(seed=1):
    """Synthetic stand-in for mushrooms: 8124 x 112, 21 nonzeros per row."""
    return synthetic_binary(8124, 112, 21, seed)


def find_data_dir(data_dir=None):
    """The LIBSVM data folder: ``data_dir``, else ``LOGT_DATA_DIR``, else
    ``../shared/data`` next to the repository; None when none exists."""
    repo = Path(__file__).resolve().parents[2]
    for c in (data_dir, os.environ.get("LOGT_DATA_DIR"), repo.parent / "shared" / "data"):
        if c and Path(c).is_dir():
            return Path(c)
    return None


def metric_data(name, data_dir=None):
    """``(X_csr, y, source)`` for ``name`` in {"a9a", "mushrooms"}: the real training
    set when its file is in the data folder (source "real"), else the synthetic one."""
    from logt.datasets import load_adult, load_mushrooms

    d = find_data_dir(data_dir)
    if name == "a9a":
        if d is not None and (d / "a9a.gz").is_file() and (d / "a9a.t.gz").is_file():
            X, y, _, _ = load_adult(d)
            return X, y, "real"
        return (*a9a_like(), "synthetic")
    if name == "mushrooms":
        if d is not None and (d / "mushrooms.gz").is_file():
            return (*load_mushrooms(d), "real")
        return (*mushrooms_like(), "synthetic")
    raise ValueError(f"name must be 'a9a' or 'mushrooms', got {name!r}")


# --------------------------------------------------------------------------- end to end

def numpy_projected_sgd_toy(T, rng, A=None, noise=1.0, lam=1.0):
    """Projected SGD on the toy ``F(W) = 0.5 ||W - A||_F^2`` over the PSD cone, in NumPy.

    ``W_t = Pi(W_{t-1} - g_t / (lam t))``, ``g_t`` = :func:`toy_grad_numpy`,
    ``Pi`` = :func:`numpy_eigh_projection`; ``W_0 = 0``; returns ``W_T`` (5 x 5 by default).
    """
    A = np.zeros((TOY_D, TOY_D)) if A is None else np.asarray(A, dtype=np.float64)
    W = np.zeros_like(A)
    for t in range(1, T + 1):
        W = numpy_eigh_projection(W - toy_grad_numpy(W, A, rng, noise) / (lam * t))
    return W


def numpy_projected_sgd_metric(Xd, y, T, rng, lam=METRIC_LAM):
    """Projected SGD for metric learning in NumPy: one random pair per step
    (:func:`metric_grad_loop` with ``B = 1``), step ``1/(lam t)``, eigh projection;
    ``W_0 = 0``; returns ``W_T`` (d x d)."""
    d = Xd.shape[1]
    W = np.zeros((d, d))
    for t in range(1, T + 1):
        W = numpy_eigh_projection(W - metric_grad_loop(Xd, y, W, 1, rng, lam) / (lam * t))
    return W
