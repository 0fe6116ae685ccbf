"""Internal scaling of the estimators: any finite data in, ``||x|| <= 1`` for the oracle.

The oracle's smoothness bound (``L = lam + 4``) needs instances of norm at most
1. The estimators fit an affine map ``x -> (x - center) / scale`` (``scale`` per
feature) on the training data and apply it everywhere (``transform``, the pair
methods, the neighbour search); the learned matrix is mapped back, so
``get_mahalanobis_matrix()`` and ``components_`` act on the user's original
features: ``W_orig = S^-1 W S^-1`` with ``S = diag(scale)`` (the centre cancels
in differences). Scaling the data by any factor scales ``scale`` by the same
factor, so the model sees the same numbers (up to rounding); data whose squares would under- or overflow
(magnitudes outside ``2^-500 .. 2^500``) are fitted after an exact division by a power of two
(:func:`extreme_unit`), and so is the spread of each feature in such units among ordinary ones. A fitted scale
below float64's smallest normal number (subnormal values) is a ValueError: its inverse would overflow. The
estimators take data up to ``2^1000`` in magnitude (``_base.MAX_FIT_MAGNITUDE``).

Modes:

* ``"standardize"`` -- per feature: subtract the mean (dense input only) and
  divide by the standard deviation (constant features keep scale 1), then divide
  everything by one common factor so the largest row norm is 1.
* ``"max_norm"`` -- subtract the mean (dense only), then one common factor so the
  largest row norm is 1 (the paper's "instances scaled to ``||x|| <= 1``", as a
  linear map).
* ``"auto"`` -- ``"standardize"`` for dense input, except that a feature taking exactly two
  values (a 0/1 indicator, a one-hot column, a boolean, in any coding) is divided by half its
  range, which is the standard deviation of a *balanced* two-valued feature
  (:func:`two_valued`; ``BALANCED_BINARY``). Standardized, a category of frequency ``p`` is
  stretched ``1 / (2 sqrt(p (1 - p)))`` times more than a balanced one (5x at 1%, 16x at
  0.1%): rare categories dominated the distances, made their rows outliers and the learned
  metric's problem stiff. ``"max_norm"`` for sparse input (centering would densify it, and
  per-feature scaling blows up rare one-hot features). On generated categorical, binary and
  mixed data the learned k-NN accuracy rose (docs/evidence/learner-defaults.md, "Two-valued
  features"); data without two-valued features take the standardization unchanged, bit for bit.
* ``None`` -- no scaling: rows must already have ``||x|| <= 1`` (a ValueError says so otherwise).

Outlier rows (every mode but ``None``): a training row whose norm after the map
exceeds ``OUTLIER_FACTOR = 5`` times the 99th percentile of the row norms is an
outlier; the mean, standard deviation and common factor are then fitted on the
other rows (repeated until no new row is flagged, at most ``MAX_OUTLIER_PASSES``
times), and :func:`clip_rows` pulls the outliers in to the unit sphere (their
direction kept) for training. Without this, one row 1e4 times larger than the
others squashed the rest by its own scale and dominated the learned metric (1-NN
below Euclidean's on generated data; docs/evidence/learner-defaults.md, "Outlier rows"). Clean
data are not affected: the largest row norm was at most 2.8 times the 99th
percentile on every development and evaluation set and on generated heavy-tailed
data (Cauchy 2.3, log-normal 1.4), so the map is the same as without the rule; a
row 10 times larger than the data's rows (ratio 5-9) is where the metric began to
suffer on the generated data. The rule is scale free, so scaling X keeps the map's
output unchanged. It breaks down beyond 1% of such rows; ``MetricLearner`` repairs
glitched rows of dense input (1% to 25% of them) before it scales
(:mod:`logt.metric_learning.outliers`).
"""
import math

import numpy as np
import scipy.sparse as sp

from logt.oracles.metric import norm_tolerance

__all__ = ["SCALINGS", "OUTLIER_FACTOR", "BALANCED_BINARY", "fit_scaling", "apply_scaling", "clip_rows", "outlier_cap",
           "extreme_unit", "max_abs", "two_valued"]

SCALINGS = ("auto", "standardize", "max_norm", None)
OUTLIER_FACTOR = 5.0        # a row beyond 5x the 99th-percentile row norm is an outlier
OUTLIER_QUANTILE = 0.99
MAX_OUTLIER_PASSES = 3
BALANCED_BINARY = True      # "auto" on dense input: a two-valued feature's scale is half its range (False: its sd)
TWO_VALUED_BLOCK = 1 << 23  # two_valued's temporary: at most this many bools a block of rows
_EPS = np.finfo(np.float64).eps
_SAFE_EXP = 500             # magnitudes outside 2^-500..2^500: squares under- or overflow, so fit on X / 2^k


def max_abs(*arrays):
    """The largest ``|x|`` over ``arrays`` (dense or sparse; 0.0 when all are empty), as ``max(|max x|, |min x|)``:
    no temporary the size of the data."""
    m = 0.0
    for X in arrays:
        data = X.data if sp.issparse(X) else X
        if data.size:
            m = max(m, abs(float(np.max(data))), abs(float(np.min(data))))
    return m


def extreme_unit(*arrays):
    """A power of two ``2^k`` near the largest magnitude in ``arrays`` (dense or CSR) when that magnitude lies
    outside 2^-500 to 2^500 (squares, variances and row norms under- or overflow there: data of 1e200 had
    an infinite variance, data of 1e-200 a zero one), else 1.0. Dividing by it is exact, so fitting on
    ``X / 2^k`` and multiplying the centre and scale back by ``2^k`` is the computation in range, and data in
    range take the unchanged path (bit for bit)."""
    m = max_abs(*arrays)
    if not (0.0 < m < np.inf):
        return 1.0
    e = math.frexp(m)[1]
    return math.ldexp(1.0, min(e, 1023)) if abs(e) > _SAFE_EXP else 1.0     # 2^1024 is not a float64


def _row_norms(X):
    if sp.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def _center_scale(X, sparse, mode, balanced_binary=False):
    """Per-feature ``(center, scale)`` of ``X`` before the common factor (see the module docstring);
    ``balanced_binary`` (dense ``X`` only): two-valued features take half their range as scale ("auto")."""
    d = X.shape[1]
    center = np.zeros(d)
    scale = np.ones(d)
    if not sparse:
        center = X.mean(axis=0)
    if mode == "standardize":
        big = abs(X).max(axis=0).toarray().ravel() if sparse else np.abs(X).max(axis=0)
        sd = _feature_sd(X, sparse)
        extreme = (big > 0) & ((big < 2.0 ** -_SAFE_EXP) | (big > 2.0 ** _SAFE_EXP))
        if extreme.any():       # a feature of 1e-170 among features of 1: its squares underflow, sd 0, "constant"
            j = np.flatnonzero(extreme)
            u = np.ldexp(1.0, np.minimum(np.frexp(big[j])[1], 1023))
            if sparse:
                Xj = sp.csr_matrix(X[:, j], copy=True)
                Xj.data /= u[Xj.indices]                # exact: powers of two
            else:
                Xj = X[:, j] / u
            sd[j] = _feature_sd(Xj, sparse) * u
        constant = sd <= 1e3 * _EPS * big          # constant up to rounding: keep scale 1
        scale = np.where(constant, 1.0, sd)
        if balanced_binary:
            two, half = two_valued(X)
            two &= ~constant
            scale[two] = half[two]
    return center, scale


def two_valued(X):
    """``(mask, half_range)``: two (d,) arrays for dense finite ``X`` (n, d): whether each column takes exactly
    two distinct values, and ``max / 2 - min / 2`` per column (no overflow). Blocks of rows bound the temporary
    to ``TWO_VALUED_BLOCK`` bools; ``O(n d)`` comparisons."""
    if X.shape[0] == 0:
        return np.zeros(X.shape[1], dtype=bool), np.zeros(X.shape[1])
    lo, hi = X.min(axis=0), X.max(axis=0)
    two = lo < hi
    step = max(1, TWO_VALUED_BLOCK // max(1, X.shape[1]))
    for r in range(0, X.shape[0], step):
        B = X[r:r + step]
        two &= ((B == lo) | (B == hi)).all(axis=0)
    return two, hi / 2 - lo / 2


def _feature_sd(X, sparse):
    """(d,) standard deviation of each column of ``X`` (dense, or CSR with its zeros counted)."""
    if not sparse:
        return X.std(axis=0)
    mean = np.asarray(X.mean(axis=0)).ravel()
    var = np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean * mean
    return np.sqrt(np.maximum(var, 0.0))


def outlier_cap(norms):
    """The row norm above which a row is an outlier: ``OUTLIER_FACTOR`` times the ``OUTLIER_QUANTILE``
    quantile of ``norms`` (the constants read at each call); ``inf`` for fewer than 2 rows."""
    if norms.size < 2:
        return np.inf
    return OUTLIER_FACTOR * float(np.quantile(norms, OUTLIER_QUANTILE))


def _check_unit_ball(X):
    """``scaling=None``: every training row of ``X`` (dense or CSR) must have norm <= 1 (with the oracle's slack,
    :func:`logt.oracles.metric.norm_tolerance`); a ValueError with the estimator's remedies otherwise."""
    norms = _row_norms(X)
    if norms.size and not norms.max() <= 1.0 + norm_tolerance(np.float64, X.shape[1]):
        i = int(np.argmax(norms))
        raise ValueError(f"scaling=None needs training rows of norm <= 1 (with n_components: their principal "
                         f"coordinates): row {i} has norm {norms[i]:.6g}; use scaling='auto' (the default) or "
                         "'max_norm', or scale the rows first (logt.datasets.normalize_rows)")


def fit_scaling(X, mode="auto", return_outliers=False):
    """``(center, scale)``: two (d,) float64 arrays for float64 ``X`` (dense ndarray or CSR).

    After :func:`apply_scaling` every training row that is not an outlier has norm
    <= 1 (exactly, in float64: the common factor carries a few ulps of margin);
    outlier rows (module docstring) are fitted around and may exceed 1.
    With ``return_outliers=True`` also returns the (n,) bool mask of the outlier rows.
    """
    if mode not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {mode!r}")
    sparse = sp.issparse(X)
    n, d = X.shape
    out = np.zeros(n, dtype=bool)
    if mode is None:
        _check_unit_ball(X)
        center, scale = np.zeros(d), np.ones(d)
        return (center, scale, out) if return_outliers else (center, scale)
    balanced = mode == "auto" and not sparse and BALANCED_BINARY
    if mode == "auto":
        mode = "max_norm" if sparse else "standardize"
    unit = extreme_unit(X)
    if unit != 1.0:                    # far outside float64's comfortable range: fit on X / 2^k (exact)
        center, scale, out = fit_scaling(X / unit, "auto" if balanced else mode, return_outliers=True)
        center, scale = center * unit, scale * unit
        _check_representable(scale)
        return (center, scale, out) if return_outliers else (center, scale)
    center, scale = _center_scale(X, sparse, mode, balanced)
    norms = _row_norms(apply_scaling(X, center, scale)) if n else np.zeros(0)
    for _ in range(MAX_OUTLIER_PASSES):
        cap = outlier_cap(norms[~out])
        if not np.isfinite(cap):
            break
        new = (norms > cap) & ~out
        if cap <= 0.0 or not new.any() or (out | new).all():
            break
        out |= new
        keep = np.flatnonzero(~out)
        center, scale = _center_scale(X[keep], sparse, mode, balanced)
        norms = _row_norms(apply_scaling(X, center, scale))
    r = float(norms[~out].max()) if n else 0.0
    if r > 0:
        scale = scale * (r * (1.0 + 8 * _EPS))
    _check_representable(scale)
    return (center, scale, out) if return_outliers else (center, scale)


def _check_representable(scale):
    """A ValueError when a fitted ``scale`` is not a normal float64 (below 2.2e-308, the values it scales are
    subnormal and ``1 / scale`` and the learned metric's entries overflow: before this check the learned metric
    came out NaN and the default's check fell back to Euclidean with only RuntimeWarnings)."""
    tiny = np.finfo(np.float64).tiny
    bad = ~(np.isfinite(scale) & (scale >= tiny))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        who = "X's values are" if (scale == scale[0]).all() else f"feature {j}'s values are"
        raise ValueError(
            f"{who} too small to scale: the fitted scale is {scale[j]:.3g}, below float64's smallest normal number "
            f"({tiny:.3g}), and its inverse overflows. Multiply X (or that feature) by a power of two first (e.g. "
            "X * 2.0**100, exact): the learned metric's neighbours do not change with the data's units")


def clip_rows(Xs, rows):
    """``Xs`` (scaled training rows, dense or CSR) with the given rows scaled down to norm 1 where above it.

    rows : (n,) bool mask (the outliers of :func:`fit_scaling`). Returns a new array (or ``Xs``
    itself when nothing is clipped) and the number of rows clipped. Only the masked rows'
    norms are computed (none on clean data).
    """
    idx = np.flatnonzero(rows)
    norms = _row_norms(Xs[idx]) if idx.size else np.zeros(0)
    big = norms > 1.0
    k = int(big.sum())
    if k == 0:
        return Xs, 0
    f = np.ones(Xs.shape[0])
    f[idx[big]] = (1.0 - 8 * _EPS) / norms[big]
    if sp.issparse(Xs):
        return sp.csr_matrix(sp.diags(f) @ Xs), k
    return Xs * f[:, None], k


def apply_scaling(X, center, scale):
    """``(X - center) / scale`` row-wise (dense), or ``X @ diag(1/scale)`` for CSR (center must be 0)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.data /= scale[X.indices]
        return X
    return (X - center) / scale
