"""Target-pair whitening (``MetricLearner(whiten="targets")``, the default for dense input).

Before the metric is learned, the scaled training points are mapped by ``A`` (d x d) so that the
covariance of the differences of *target pairs* (each point with its ``k`` nearest class-mates,
LMNN's target neighbours) becomes the identity:

    S = E_{(i,j) targets} [ (x_i - x_j)(x_i - x_j)^T ] / 2,     A = U diag(((1 - a) s + a mu)^(-1/2)),

with ``S = U diag(s) U^T``, ``mu = tr(S) / d`` and ``a`` in ``[MIN_SHRINKAGE, 1]`` the Ledoit-Wolf
shrinkage toward ``mu I`` (:func:`ledoit_wolf_shrinkage`, computed from the pairs: no constant to tune).
The neighbour tables of the sampler are then searched again in the whitened space.

Why: with the default ``lam`` the logistic pair loss is close to its linear regime, where the optimum
is about ``P_+(E_dissimilar[D D^T] - E_similar[D D^T]) / lam``: a *difference* of second moments.
A direction along which classes differ a little but vary even less within a class (what 1-NN needs)
then gets a small weight, and one of large spread in both a large weight. After whitening the
within-class spread is 1 in every direction, so the weight follows the ratio of the two spreads (the
criterion of LDA and of KISSME-like metrics), and the neighbour lists are those of that metric. On
data the defaults were not tuned on, it raised the mean 1-NN / 5-NN accuracy (docs/evidence/learner-defaults.md:
"Target-pair whitening"). Sparse input is not whitened (the map is dense).
"""
import numpy as np
import scipy.sparse as sp

from logt.metric_learning.scaling import clip_rows, outlier_cap
from logt.oracles.neighbors import pair_sq_distances_any, target_tables

__all__ = ["WHITENINGS", "MIN_SHRINKAGE", "pair_covariance", "ledoit_wolf_shrinkage",
           "fit_whitening", "whiten_rows"]

WHITENINGS = ("targets", None)
# Floor of the shrinkage: the whitened within-class spread of any direction is at most
# 1 / sqrt(MIN_SHRINKAGE * mu) times the mean one (32x), even when S is singular (d > pairs, duplicates).
MIN_SHRINKAGE = 1e-3
_EPS = np.finfo(np.float64).eps


def pair_covariance(X, sim):
    """``(S, i, j)``: ``S = sum_p (x_i - x_j)(x_i - x_j)^T / (2 m)`` (d, d) over the ``m`` pairs ``(i, j)``
    of the table ``sim`` (n, k) (``j = sim[i, c] >= 0``), and the pairs' (m,) index arrays.

    Without an (m, d) array of differences: ``sum_p D_p D_p^T = X^T Deg X - C - C^T`` with
    ``C = X^T (P X)``, ``P`` the table as a sparse 0/1 matrix (row ``i``: its targets) and ``Deg`` the
    in- plus out-degree of the pair graph (its Laplacian): ``O(n d^2 + m d)``.
    """
    n = X.shape[0]
    valid = sim >= 0
    counts = valid.sum(axis=1)
    j = sim[valid].astype(np.int32)                       # row-major: the pairs of row 0, then row 1, ...
    i = np.repeat(np.arange(n, dtype=np.int32), counts)
    m = len(j)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    P = sp.csr_matrix((np.ones(m), j, indptr), shape=(n, n))
    deg = (counts + np.bincount(j, minlength=n)).astype(np.float64)
    C = X.T @ (P @ X)
    S = X.T @ (deg[:, None] * X) - C - C.T
    return 0.5 * (S + S.T) / (2.0 * max(m, 1)), i, j


def ledoit_wolf_shrinkage(s, q, qS, m):
    """Ledoit and Wolf's (2004) shrinkage intensity ``a`` toward ``mu I`` for the covariance of the ``m``
    samples ``D_p = (x_i - x_j) / sqrt(2)``, from their second moment's eigenvalues ``s`` (d,), their
    squared norms ``q = 2 ||D_p||^2`` and ``qS = 2 D_p^T S D_p`` ((m,) each, the factors 2 as computed):

        a = min(b2, d2) / d2,  d2 = ||S - mu I||_F^2 / d,  b2 = mean_p ||D_p D_p^T - S||_F^2 / (d m),

    using ``||D D^T - S||_F^2 = ||D||^4 - 2 D^T S D + ||S||_F^2``. ``a = 1`` when ``S`` is already ``mu I``.
    The pairs share points, so ``m`` overstates the independent samples and ``a`` errs small: hence
    the floor :data:`MIN_SHRINKAGE` applied by :func:`fit_whitening`.
    """
    d = len(s)
    mu = float(np.sum(s)) / d
    d2 = float(np.sum((s - mu) ** 2)) / d
    if not d2 > 0.0:
        return 1.0
    b2 = float(np.mean(0.25 * q * q - qS)) + float(np.sum(s * s))
    b2 = max(b2, 0.0) / (d * m)
    return min(b2, d2) / d2


def fit_whitening(X, codes, k, rng=0):
    """``(A, a)``: the whitening map (d, d) of the module docstring for dense scaled points ``X`` (n, d)
    with class codes ``codes`` (n,), ``k`` target neighbours per point, ``rng`` the neighbour candidates'
    seed; ``a`` the shrinkage used. ``(None, nan)`` when there is nothing to whiten: no target pair,
    or every target pair a duplicate (``S = 0``)."""
    sim, dsim = target_tables(X, codes, k, rng=rng)
    S, i, j = pair_covariance(X, sim)
    m = len(i)
    if m == 0:
        return None, float("nan")
    q = dsim[sim >= 0]
    s, U = np.linalg.eigh(S)
    s = np.maximum(s, 0.0)                      # PSD up to rounding
    d = len(s)
    mu = float(np.sum(s)) / d
    if not mu > 0.0 or not np.isfinite(mu):
        return None, float("nan")
    qS = pair_sq_distances_any(np.ascontiguousarray(X @ (U * np.sqrt(s))), i, j)     # 2 D^T S D
    a = min(1.0, max(MIN_SHRINKAGE, ledoit_wolf_shrinkage(s, q, qS, m)))
    ev = (1.0 - a) * s + a * mu
    return U / np.sqrt(ev), a


def whiten_rows(X, A):
    """``(Xw, f, n_clipped)``: ``X @ A / f`` with ``f`` the largest row norm of ``X @ A`` over the rows that
    are not outliers (the scaling's rule, :func:`logt.metric_learning.scaling.outlier_cap`), outlier rows pulled
    in to the unit sphere; every row of ``Xw`` then has norm <= 1."""
    Y = X @ A
    norms = np.sqrt(np.einsum("ij,ij->i", Y, Y))
    cap = outlier_cap(norms)
    out = norms > cap if cap > 0.0 else np.zeros(len(norms), dtype=bool)
    f = float(norms[~out].max()) if (~out).any() else 0.0
    f = f * (1.0 + 8 * _EPS) if f > 0.0 else 1.0
    Y /= f
    Y, n_clipped = clip_rows(Y, out)
    return np.ascontiguousarray(Y), f, n_clipped
