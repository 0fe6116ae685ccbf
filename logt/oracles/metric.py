"""Regularized distance metric learning (Jin, Wang, Zhou, NIPS 2009): the paper's Fig. 2 oracle.

    F(W) = E_{(i, j)} [ l(y_ij * (1 - ||x_i - x_j||_W^2)) ] + (lam / 2) * ||W||_F^2,

``||x||_W^2 = x^T W x``, ``l(z) = log(1 + exp(-z))``, ``y_ij = +1`` when ``x_i`` and
``x_j`` have the same label, ``-1`` otherwise; ``(i, j)`` a uniformly random
ordered pair of distinct training instances. With ``||x|| <= 1``, ``F`` is
``L = lam + 4`` smooth and ``lam``-strongly convex (Frobenius norm).
"""
import math
import os

import numpy as np
import scipy.sparse as sp

from .._kernels._pairs import PairGradientCore, _sample_pairs
from .._rng import check_rng

__all__ = ["MetricLearning"]

_NORM_TOL = 1e-12


def _n_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _check_X(X, name):
    """CSR (sorted, int64 indptr, int32 indices, float64 data) or C-contiguous float64 ndarray."""
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()          # also sorts the indices
        X.eliminate_zeros()
        if not np.isfinite(X.data).all():
            raise ValueError(f"{name} contains NaN or Inf")
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int64)),
                          shape=X.shape)
        X.indptr = X.indptr.astype(np.int64)   # scipy may downcast in the constructor
        X.indices = X.indices.astype(np.int32)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (a CSR matrix or ndarray), got shape {X.shape}")
        if not (np.issubdtype(X.dtype, np.floating) or np.issubdtype(X.dtype, np.integer)
                or X.dtype == bool):
            raise TypeError(f"{name} must be numeric, got dtype {X.dtype}")
        X = np.ascontiguousarray(X, dtype=np.float64)
        if not np.isfinite(X).all():
            raise ValueError(f"{name} contains NaN or Inf")
        norms = np.linalg.norm(X, axis=1)
    if X.shape[0] > 2**31 - 1:
        raise ValueError(f"{name} has too many rows ({X.shape[0]} > 2**31 - 1)")
    if X.shape[1] < 1:
        raise ValueError(f"{name} must have at least one column")
    if norms.size and norms.max() > 1 + _NORM_TOL:
        k = int(np.argmax(norms))
        raise ValueError(
            f"row {k} of {name} has norm {norms[k]:.6g} > 1; scale the instances with "
            "logt.datasets.normalize_rows (the smoothness bound L = lam + 4 needs ||x|| <= 1)")
    return X


def _check_y(y, n, name, name_X):
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {y.shape}")
    if len(y) != n:
        raise ValueError(f"{name_X} has {n} rows but {name} has {len(y)} labels")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError(f"{name} contains NaN or Inf")
    return y


class MetricLearning(PairGradientCore):
    """Stochastic oracle of regularized distance metric learning over d x d matrices ``W``.

    Parameters
    ----------
    X : scipy.sparse CSR matrix or ndarray, shape (n, d)
        Training instances with ``||x_i|| <= 1`` (use
        :func:`logt.datasets.normalize_rows`). Sparse input uses the sparse
        kernel, a dense ndarray the BLAS kernel.
    y : array, shape (n,)
        Labels; at least two distinct values (``y_ij`` is label equality).
    lam : float > 0
        Regularization ``lam`` (the paper: 0.1), also the strong convexity.
    X_eval, y_eval : optional
        Data for :meth:`value` (default: the training data); e.g. a test set.
    n_eval_pairs : int
        Number of fixed evaluation pairs for :meth:`value` (the paper: 10^4).
    eval_rng : seed for drawing the evaluation pairs once, at construction.
    n_threads : int, optional
        Threads of the sparse kernel (default ``min(2, usable cores)``); B below
        ~2048 pairs always runs serially. The result does not depend on it
        (fixed chunks summed in a fixed order: bit-identical).

    Attributes
    ----------
    shape : (d, d);  n_samples : n;  n_features : d;  lam;
    L : ``lam + 4`` (``||D||^2 <= 4`` since ``||x|| <= 1``);
    R : ``sqrt(2 log(1 + e) / lam)``, radius of a Frobenius ball containing
        ``W_*``: at ``W = 0`` every margin is ``y_ij = +-1``, so
        ``F(0) <= log(1 + e)``, and ``(lam/2)||W_*||^2 <= F(W_*) <= F(0)``
        (the loss is >= 0);
    G : ``4 + lam * R`` = ``4 + sqrt(2 lam log(1 + e))``: bound on ``||g_hat(W)||_F``
        for ``||W||_F <= R``, since ``|y_ij sigmoid(-z)| < 1`` and
        ``||D D^T||_F = ||D||^2 <= 4``. Use :meth:`grad_bound` for other radii.

    Notes
    -----
    ``mean_grad(W, B, rng)`` draws ``B`` ordered pairs uniformly from the
    ``n (n - 1)`` pairs ``i != j`` (``i`` uniform, then ``j`` uniform among the
    others, unbiased bounded integers from the generator's 64-bit stream) and
    returns ``D_B^T diag(c) D_B / B + lam * W``. The output is symmetric when
    ``W`` is. One object serves one call at a time.
    """

    def __init__(self, X, y, lam=0.1, *, X_eval=None, y_eval=None, n_eval_pairs=10_000,
                 eval_rng=0, n_threads=None):
        if isinstance(lam, bool) or not isinstance(lam, (int, float, np.integer, np.floating)):
            raise TypeError(f"lam must be a real number, got {type(lam).__name__}")
        lam = float(lam)
        if not (lam > 0 and math.isfinite(lam)):
            raise ValueError(f"lam must be finite and > 0, got {lam}")
        if n_threads is None:
            n_threads = min(2, _n_cpus())
        if isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)) or n_threads < 1:
            raise ValueError(f"n_threads must be an int >= 1 or None, got {n_threads!r}")
        if isinstance(n_eval_pairs, bool) or not isinstance(n_eval_pairs, (int, np.integer)) \
                or n_eval_pairs < 1:
            raise ValueError(f"n_eval_pairs must be an int >= 1, got {n_eval_pairs!r}")

        X = _check_X(X, "X")
        y = _check_y(y, X.shape[0], "y", "X")
        n, d = X.shape
        if n < 2:
            raise ValueError(f"X must have at least 2 samples, got {n}")
        classes, codes = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"y must contain at least two classes, got only {classes[0]!r}")

        if (X_eval is None) != (y_eval is None):
            raise ValueError("give both X_eval and y_eval, or neither")
        if X_eval is None:
            Xe, ye = X, y
        else:
            Xe = _check_X(X_eval, "X_eval")
            ye = _check_y(y_eval, Xe.shape[0], "y_eval", "X_eval")
            if Xe.shape[1] != d:
                raise ValueError(f"X_eval has {Xe.shape[1]} columns, X has {d}")
            if Xe.shape[0] < 2:
                raise ValueError(f"X_eval must have at least 2 samples, got {Xe.shape[0]}")
            if sp.issparse(X) and not sp.issparse(Xe):
                Xe = _check_X(sp.csr_matrix(Xe), "X_eval")
            elif not sp.issparse(X) and sp.issparse(Xe):
                Xe = np.ascontiguousarray(Xe.toarray())
        ei, ej = _sample_pairs(Xe.shape[0], int(n_eval_pairs), check_rng(eval_rng))
        ey = np.where(ye[ei] == ye[ej], 1.0, -1.0)

        self._setup(X, codes.astype(np.int32), Xe, ei, ej, ey, lam, int(n_threads))
        self.L = lam + 4.0
        self.R = math.sqrt(2.0 * math.log1p(math.e) / lam)
        self.G = self.grad_bound(self.R)
        self.classes = classes
        self.eval_pairs = (ei, ej)
        self.X, self.X_eval = X, Xe

    def grad_bound(self, radius):
        """``4 + lam * radius``: bound on ``||g_hat(W)||_F`` for ``||W||_F <= radius``."""
        return 4.0 + self.lam * float(radius)

    def value(self, W):
        """``F(W)`` estimated on the fixed evaluation pairs: mean logit loss + ``(lam/2) ||W||_F^2``.

        W : (d, d) finite float64 (symmetry not required). The loss is computed
        stably (finite for any finite ``z``); the regularizer may overflow to
        ``inf`` only if ``||W||_F^2`` does.
        """
        W = np.asarray(W, dtype=np.float64)
        loss = self._eval_loss(W)
        return loss + 0.5 * self.lam * float(np.vdot(W, W))

    def __repr__(self):
        kind = "sparse" if self.is_sparse else "dense"
        return (f"MetricLearning(n={self.n_samples}, d={self.n_features}, lam={self.lam}, "
                f"{kind}, n_eval_pairs={self.n_eval_pairs}, n_threads={self.n_threads})")
