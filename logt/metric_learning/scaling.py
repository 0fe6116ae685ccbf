"""Internal scaling of the estimators: any finite data in, ``||x|| <= 1`` for the oracle.

The oracle's smoothness bound (``L = lam + 4``) needs instances of norm at most
1. The estimators fit an affine map ``x -> (x - center) / scale`` (``scale`` per
feature) on the training data and apply it everywhere (``transform``, the pair
methods, the neighbour search); the learned matrix is mapped back, so
``get_mahalanobis_matrix()`` and ``components_`` act on the user's original
features: ``W_orig = S^-1 W S^-1`` with ``S = diag(scale)`` (the centre cancels
in differences). Scaling the data by any factor scales ``scale`` by the same
factor, so the model sees the same numbers (up to rounding).

Modes:

* ``"standardize"`` -- per feature: subtract the mean (dense input only) and
  divide by the standard deviation (constant features keep scale 1), then divide
  everything by one common factor so the largest row norm is 1.
* ``"max_norm"`` -- subtract the mean (dense only), then one common factor so the
  largest row norm is 1 (the paper's "instances scaled to ``||x|| <= 1``", as a
  linear map).
* ``"auto"`` -- ``"standardize"`` for dense input, ``"max_norm"`` for sparse
  (centering would densify it, and per-feature scaling blows up rare one-hot
  features).
* ``None`` -- no scaling: rows must already have ``||x|| <= 1``.
"""
import numpy as np
import scipy.sparse as sp

__all__ = ["SCALINGS", "fit_scaling", "apply_scaling"]

SCALINGS = ("auto", "standardize", "max_norm", None)
_EPS = np.finfo(np.float64).eps


def _row_norms(X):
    if sp.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def fit_scaling(X, mode="auto"):
    """``(center, scale)``: two (d,) float64 arrays for float64 ``X`` (dense ndarray or CSR).

    After :func:`apply_scaling` every training row has norm <= 1 (exactly, in
    float64: the common factor carries a few ulps of margin).
    """
    if mode not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {mode!r}")
    sparse = sp.issparse(X)
    d = X.shape[1]
    center = np.zeros(d)
    scale = np.ones(d)
    if mode is None:
        return center, scale
    if mode == "auto":
        mode = "max_norm" if sparse else "standardize"
    if not sparse:
        center = X.mean(axis=0)
    if mode == "standardize":
        if sparse:
            mean = np.asarray(X.mean(axis=0)).ravel()
            var = np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean * mean
            sd = np.sqrt(np.maximum(var, 0.0))
            big = abs(X).max(axis=0).toarray().ravel()
        else:
            sd = X.std(axis=0)
            big = np.abs(X).max(axis=0)
        constant = sd <= 1e3 * _EPS * big          # constant up to rounding: keep scale 1
        scale = np.where(constant, 1.0, sd)
    Z = apply_scaling(X, center, scale)
    r = float(_row_norms(Z).max()) if X.shape[0] else 0.0
    if r > 0:
        scale = scale * (r * (1.0 + 8 * _EPS))
    return center, scale


def apply_scaling(X, center, scale):
    """``(X - center) / scale`` row-wise (dense), or ``X @ diag(1/scale)`` for CSR (center must be 0)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.data /= scale[X.indices]
        return X
    return (X - center) / scale
