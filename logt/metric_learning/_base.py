"""Shared machinery of the metric learners: input checks, scaling, the fit core, Mahalanobis methods."""
import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp

from logt import params as _params
from logt._result import ConvergenceWarning
from logt._rng import check_rng
from logt._threads import single_threaded_blas
from logt.domains import PSDCone
from logt.metric_learning import subspace as _subspace
from logt.metric_learning._compat import BaseEstimator, NotFittedError
from logt.metric_learning.optimizer import check_optimizer, run_minimize
from logt.metric_learning.scaling import SCALINGS, apply_scaling, clip_rows, fit_scaling
from logt.metric_learning.scaling import extreme_unit as _extreme_unit, max_abs as _max_abs
from logt.oracles.metric import check_threshold_scale, label_codes

__all__ = ["MahalanobisLearner", "DegenerateMetricWarning", "ZERO_METRIC_RTOL", "ZERO_CHECK_BATCH", "check_points",
           "check_pairs", "check_fitted", "varying_features", "distinct_points", "first_appearance", "row_blocks",
           "take_rows", "distinct_weights", "metric_is_zero", "MAX_INPUT_FEATURES", "DISTINCT_MAX_SHARE",
           "MAX_FIT_MAGNITUDE", "check_fit_magnitude"]

# W* = 0 is the optimum exactly when the loss's gradient at 0, G0, is PSD; a non-zero optimum has
# lambda_max(W*) of the order of ||G0|| / lam (near 0 the loss is about linear: W* ~ P(-G0) / lam),
# while the projections turn an optimum W* = 0 into eigenvalues of eps * ||iterate|| (1e-18 where met).
# So the learned W is zero at working precision when lambda_max(W) <= ZERO_METRIC_RTOL * ||G0||_F / lam,
# with G0 the mean gradient of ZERO_CHECK_BATCH samples at 0 (its own fixed seed: the caller's stream is untouched).
ZERO_METRIC_RTOL = 1e-8
# the widest input: the principal subspace's randomized range finder holds (d, k + 16) float64 arrays
MAX_INPUT_FEATURES = 2**18
ZERO_CHECK_BATCH = 1024
# the largest |x| a fit takes: 2^1000 (1.1e301) leaves 2^23 (8 million) such values to add before a sum
# overflows float64's 2^1024 (means, variances, squared row norms); beyond it a fit divides by infinity
MAX_FIT_MAGNITUDE = 2.0 ** 1000


class DegenerateMetricWarning(UserWarning):
    """The learned metric is zero: the objective's optimum is ``W = 0``, so the metric carries no
    information (every point maps to 0). Raised by :class:`logt.MetricLearner` and
    :class:`logt.PairsMetricLearner` after a fit; ``components_`` is then exactly 0."""


def metric_is_zero(W, oracle):
    """Whether the learned PSD ``W`` (m, m; the metric block of the oracle's point) is zero at working
    precision: ``lambda_max(W) <= ZERO_METRIC_RTOL * ||G0||_F / lam`` with ``G0`` the metric block of
    ``oracle.mean_grad(0, ZERO_CHECK_BATCH, default_rng(0))`` (scale-free: the test reads W against the
    size of the loss's own gradient, whatever the data's scale)."""
    W = np.asarray(W, dtype=np.float64)
    return _largest_is_zero(float(np.linalg.eigvalsh(0.5 * (W + W.T))[-1]) if W.size else 0.0, oracle)


def _largest_is_zero(lmax, oracle):
    """:func:`metric_is_zero` from ``lmax``, the largest eigenvalue of ``W``."""
    if lmax <= 0.0:
        return True
    g0 = oracle.mean_grad(np.zeros(oracle.shape), ZERO_CHECK_BATCH, np.random.default_rng(0))
    G0 = np.asarray(oracle.split_point(g0)[0])
    return lmax <= ZERO_METRIC_RTOL * float(np.linalg.norm(G0)) / float(oracle.lam)


def _zero_is_no_worse(x, m, oracle, fx=None):
    """Whether the metric block ``W = x[:m, :m]`` set to 0 (the threshold kept) has an objective on the
    oracle's evaluation sample at most that of ``x``. A stopped stochastic run whose optimum is ``W* = 0`` ends
    at a small noisy ``W`` that the precision test above cannot call zero (accelerated stages do not land on
    the cone's vertex as logT's projections do); its objective is then no better than the zero metric's.
    ``fx``: ``oracle.value(x)`` when already known (a run's ``result.fun``), else computed."""
    if not hasattr(oracle, "value"):
        return False
    x = np.asarray(x, dtype=np.float64)
    x0 = x.copy()
    x0[:m, :m] = 0.0
    return float(oracle.value(x0)) <= float(oracle.value(x) if fx is None else fx)


def check_fitted(est):
    if not hasattr(est, "components_"):
        raise NotFittedError(
            f"This {type(est).__name__} instance is not fitted yet. Call 'fit' with appropriate "
            "arguments before using this estimator.")


def _check_n_features(d, name):
    if d > MAX_INPUT_FEATURES:
        raise ValueError(
            f"{name} has {d} features; the metric learners support at most MAX_INPUT_FEATURES = "
            f"{MAX_INPUT_FEATURES} (their principal subspace needs O(d (k + 16)) memory): reduce the dimension "
            "first (e.g. feature hashing or selection)")


_MISSING_REMEDY = (" The metric learners take no missing values: impute them first (e.g. "
                   "sklearn.impute.SimpleImputer) or drop those rows.")


def _not_finite_remedy(values):
    """What to do about the non-finite entries of ``values`` (an ndarray): impute NaN, replace infinities."""
    if np.isnan(values).any():
        return _MISSING_REMEDY
    return " Replace the infinite values first (e.g. clip them to the finite range of their feature)."


def _non_numeric_remedy(X):
    """The remedy for an object array that is not numbers: where the first string or missing value
    (None, NaN-like objects such as pandas.NA) sits, and what to do about it (error path only: one pass)."""
    flat = X.reshape(X.shape[0], -1) if X.ndim >= 2 else X.reshape(-1, 1)
    for (i, j), v in np.ndenumerate(flat):
        try:
            float(v)                       # numbers, and strings of numbers, convert
        except (TypeError, ValueError):
            if isinstance(v, (str, bytes)):
                return (f" (row {i}, column {j} holds the string {v!r}). Encode categorical columns as numbers "
                        "first, e.g. one 0/1 column per category with pandas.get_dummies or "
                        "sklearn.preprocessing.OneHotEncoder (the learners scale 0/1 columns as if balanced)")
            return f" (row {i}, column {j} holds {v!r}).{_MISSING_REMEDY}"
    return ""


def check_points(X, name="X", est=None, d=None, allow_sparse=True, contiguous=True):
    """2-D finite float64 (C-contiguous ndarray or CSR; ``contiguous=False``: a float64 view is kept when its
    rows are contiguous, e.g. one side of a (n_pairs, 2, d) array); checks the column count against ``d``."""
    if sp.issparse(X):
        if not allow_sparse:
            raise TypeError(f"{name} must be dense, got a sparse matrix")
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
        _check_n_features(X.shape[1], name)
        if X.dtype.kind == "c":
            raise ValueError(f"Complex data not supported: {name} must be real")
        X = sp.csr_matrix(X, dtype=np.float64)
        if not np.isfinite(X.data).all():
            raise ValueError(f"Input {name} contains NaN or infinity.{_not_finite_remedy(X.data)}")
    else:
        if hasattr(X, "columns") and hasattr(X, "to_numpy"):       # a DataFrame
            X = X.to_numpy()
        X = np.asarray(X)
        if X.dtype.kind == "c":
            raise ValueError(f"Complex data not supported: {name} must be real")
        if X.dtype == object:
            try:
                X = X.astype(np.float64)          # numbers stored as objects; strings raise below
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{name} must be numeric: {exc}{_non_numeric_remedy(X)}") from None
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise ValueError(f"{name} must be numeric, got dtype {X.dtype}")
        if X.ndim != 2:
            raise ValueError(f"Expected 2D array, got {X.ndim}D array instead: {name} must have shape "
                             f"(n_samples, n_features), got {X.shape}. Reshape your data (e.g. X.reshape(-1, 1) for a "
                             "single feature)")
        _check_n_features(X.shape[1], name)
        if contiguous or X.dtype != np.float64 or X.strides[1] != X.itemsize:
            X = np.ascontiguousarray(X, dtype=np.float64)
        if not np.isfinite(X).all():
            raise ValueError(f"Input {name} contains NaN or infinity.{_not_finite_remedy(X)}")
    if X.shape[0] < 1:
        raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is "
                         f"required ({name}).")
    if X.shape[1] < 1:
        raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                         f"required ({name}).")
    if d is not None and X.shape[1] != d:
        who = type(est).__name__ if est is not None else "the estimator"
        raise ValueError(f"{name} has {X.shape[1]} features, but {who} is expecting {d} features as input.")
    return X


def check_fit_magnitude(X, name="X"):
    """A ValueError when the largest ``|x|`` of the checked ``X`` (dense or CSR) exceeds ``MAX_FIT_MAGNITUDE``
    (2^1000): a fit sums such values (means, variances, squared norms), and near float64's maximum the sums
    overflow; before this check, data of 5e307 left the default's check with a NaN accuracy (a silent wrong
    choice) and data of 2^1023 raised an OverflowError."""
    m = _max_abs(X)
    if m > MAX_FIT_MAGNITUDE:
        raise ValueError(
            f"{name}'s largest magnitude, {m:.3g}, is too close to float64's maximum (1.8e308) to fit on (at most "
            f"2^1000 = {MAX_FIT_MAGNITUDE:.3g}): means, variances and squared distances would overflow. Divide "
            f"{name} by a power of two first (e.g. {name} * 2.0**-100, exact): the learned metric's distances scale "
            "with the data and its neighbours do not change")


def check_pairs(pairs, est, d=None, name="pairs"):
    """``(a, b)``: the two (n_pairs, d) float64 point arrays of ``pairs`` (n_pairs, 2, d); views of ``pairs``
    when it holds float64 with contiguous rows (no copy: rows contiguous, not the arrays)."""
    if sp.issparse(pairs):
        raise TypeError(f"{name} must be a dense array of shape (n_pairs, 2, n_features)")
    P = np.asarray(pairs)
    if P.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} must be real")
    if P.ndim != 3 or P.shape[1] != 2:
        raise ValueError(f"{name} must have shape (n_pairs, 2, n_features), got {P.shape}")
    if P.shape[0] < 1:
        raise ValueError(f"{name} is empty (shape {P.shape})")
    if d is not None and P.shape[2] != d:
        raise ValueError(f"{name} have {P.shape[2]} features, but {type(est).__name__} is expecting "
                         f"{d} features as input.")
    a = check_points(P[:, 0, :], name, est, contiguous=False)
    b = check_points(P[:, 1, :], name, est, contiguous=False)
    return a, b


def check_labels(y, n, name="y"):
    """1-D labels of length ``n`` without NaN; returns ``(y, classes, codes)``."""
    if y is None:
        raise ValueError(f"requires y to be passed, but the target {name} is None")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one label per row of X), got shape {y.shape}"
                         + ("; use y.ravel()" if y.ndim == 2 and 1 in y.shape else ""))
    if len(y) != n:
        raise ValueError(f"X has {n} samples but {name} has {len(y)} labels (inconsistent numbers of samples)")
    if y.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} must be real")
    unlabelled = (f"Input {name} contains NaN or infinity. Every row needs a class label: drop the unlabelled rows "
                  "first.")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError(unlabelled)
    if y.dtype.kind == "O":
        for v in y:
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError(unlabelled)
    _check_not_continuous(y, name)
    classes, codes = label_codes(y, name)
    return y, classes, codes


def _check_not_continuous(y, name):
    """A ValueError when ``y`` (1-D, finite) holds float labels that are not whole numbers: regression targets,
    not classes (scikit-learn's ``type_of_target`` "continuous", which its classifiers and NCA reject too;
    whole-number floats such as 1.0 / 2.0 are class labels)."""
    if y.dtype.kind == "f":
        frac = y != np.floor(y)
    elif y.dtype.kind == "O":
        frac = np.array([isinstance(v, (float, np.floating)) and float(v) != math.floor(v) for v in y], dtype=bool)
    else:
        return
    if frac.any():
        v = y[np.flatnonzero(frac)[0]]
        raise ValueError(
            f"Unknown label type: continuous. {name} holds float values that are not whole numbers (e.g. "
            f"{float(v):g}): the metric learners learn from class labels, not regression targets. If the values "
            f"are classes, pass them as int or str (e.g. {name}.astype(str)); to learn from a continuous target, "
            "bin it first (e.g. numpy.digitize on its quantiles)")


def _active_columns(X, active):
    """``X`` restricted to the features marked by ``active`` (X itself when all are)."""
    return X if active.all() else X[:, active]


def scaled_active(X, active):
    """``(Xa, unit)``: the ``active`` columns of ``X`` (all of them: None) over ``unit``, 1.0 unless their squares
    would under- or overflow (1e-200, 1e200; exact: the principal directions are those of ``X``, a mean is
    ``unit`` times Xa's)."""
    Xa = X if active is None else _active_columns(X, active)
    unit = _extreme_unit(Xa)
    return (Xa if unit == 1.0 else Xa / unit), unit


def top_rows(components, k):
    """(k, d): the first ``k`` rows of ``components`` (r, d) (the learned metric's, largest eigenvalue first, so
    the rank-``k`` truncation of ``W`` in the space it was learned in: the nearest rank-``k`` matrix there in the
    Frobenius norm), with rows of zeros below when ``r < k`` (an int ``n_components`` always has ``k`` rows)."""
    rows = np.zeros((k, components.shape[1]))
    m = min(k, components.shape[0])
    rows[:m] = components[:m]
    return np.ascontiguousarray(rows)


def full_mean(X, active, mean_active):
    """(d,): ``mean_active`` at the ``active`` features, the first row's values at the constant ones."""
    mean = (X[0].toarray() if sp.issparse(X) else X[0]).ravel().astype(np.float64)
    mean[active] = mean_active
    return mean


def full_rows(rows_active, active):
    """(m, d): directions given on the ``active`` features (rows of ``rows_active``, (m, active.sum())),
    zero at the constant ones."""
    rows = np.zeros((rows_active.shape[0], active.size))
    rows[:, active] = rows_active
    return rows


def varying_features(X):
    """(d,) bool: the columns of ``X`` (dense or CSR; or a tuple of dense row blocks, their rows stacked) that are
    not exactly constant over its rows.

    All True when every column is constant (nothing to restrict to).
    """
    parts = X if isinstance(X, tuple) else (X,)
    d = parts[0].shape[1]
    parts = [P for P in parts if P.shape[0]]
    if not parts:
        return np.ones(d, dtype=bool)
    if sp.issparse(parts[0]):
        hi = parts[0].max(axis=0).toarray().ravel()
        lo = parts[0].min(axis=0).toarray().ravel()
    else:
        hi = np.max([P.max(axis=0) for P in parts], axis=0)
        lo = np.min([P.min(axis=0) for P in parts], axis=0)
    active = hi != lo
    return active if active.any() else np.ones(d, dtype=bool)


def row_blocks(parts, rows):
    """``(start, block)`` over the rows of the dense arrays ``parts`` stacked (row ``start`` of the stack first),
    blocks of at most ``rows`` rows, views (never across two parts)."""
    start = 0
    for P in parts:
        for s in range(0, P.shape[0], rows):
            yield start + s, P[s:s + rows]
        start += P.shape[0]


def take_rows(parts, index, columns=None):
    """Rows ``index`` (m,) int of the dense arrays ``parts`` stacked, at the ``columns`` ((d,) bool; None: all):
    a new (m, d') array, gathered from each part (no stacked copy)."""
    if len(parts) == 1:
        P = parts[0]
        return P[index] if columns is None or columns.all() else P[np.ix_(index, columns)]
    cols = None if columns is None or columns.all() else columns
    out = np.empty((index.size, parts[0].shape[1] if cols is None else int(cols.sum())))
    start = 0
    for P in parts:
        mine = (index >= start) & (index < start + P.shape[0])
        out[mine] = P[index[mine] - start] if cols is None else P[np.ix_(index[mine] - start, cols)]
        start += P.shape[0]
    return out


DISTINCT_BLOCK = 2 ** 20    # distinct_points hashes and compares this many entries a block (8 MiB)
DISTINCT_MAX_SHARE = 0.75   # the pairs' subspace from their distinct points when these are at most this share


def hash_multipliers(d):
    """(d,) uint64: the fixed odd numbers :func:`distinct_points` multiplies a row's coordinates' bits by (odd, so
    rows that differ in one coordinate always hash apart)."""
    return np.random.default_rng(0x5EED).integers(0, 2 ** 63, size=d, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


def distinct_points(*parts):
    """``(first, inverse)``: the distinct rows of the dense arrays ``parts`` ((n_i, d) each) stacked, equal
    coordinates (``-0.0 == 0.0``) one point. ``first`` (m,) int: each distinct row's first index in the stack, in the
    order the rows first appear; ``inverse`` (n,) int: each row's place in ``first`` (``X[first][inverse]`` equals
    the stack ``X``). Each row's coordinates' bits are hashed (a sum of them times fixed odd 64-bit numbers,
    wrapping; blocks of ``DISTINCT_BLOCK`` entries) and every row then compared with its hash group's first row
    (unless it is that row), so the answer is exact; a collision (never seen) falls back to sorting the rows'
    bytes. Memory ``O(n + DISTINCT_BLOCK)`` (no stacked copy); time one pass over the rows, and one more over
    those that repeat an earlier one."""
    n, d = sum(P.shape[0] for P in parts), parts[0].shape[1]
    mult = hash_multipliers(d)
    rows = max(1, DISTINCT_BLOCK // max(d, 1))
    h = np.empty(n, dtype=np.uint64)
    for s, block in row_blocks(parts, rows):
        block = block + 0.0                          # -0.0 + 0.0 is 0.0: one bit pattern per value
        h[s:s + block.shape[0]] = (block.view(np.uint64) * mult).sum(axis=1, dtype=np.uint64)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    exact = True
    for s, block in row_blocks(parts, rows):        # each row against its hash group's first row (itself: skipped)
        ref = first[inverse[s:s + block.shape[0]]]
        other = ref != np.arange(s, s + block.shape[0])
        if other.any() and not np.array_equal(block[other], take_rows(parts, ref[other])):
            exact = False
            break
    if not exact:                                   # a hash collision: the rows' bytes sorted
        Xz = np.vstack(parts) + 0.0
        keys = Xz.view(np.dtype((np.void, Xz.dtype.itemsize * d))).ravel()
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        del Xz, keys
    return first_appearance(first, inverse)


def distinct_weights(points, need, n_active):
    """``(first, weights)``: the distinct rows ``points`` (:func:`distinct_points`' ``(first, inverse)``) and how
    often each occurs (m,), where a principal subspace of ``need`` directions on ``n_active`` varying features is
    to be found from them: at most ``DISTINCT_MAX_SHARE`` of the rows, and at least ``need + OVERSAMPLING`` of
    them above ``EXACT_MAX_FEATURES`` features (the range finder's directions); else ``(None, None)``, every row."""
    first, inverse = points
    if first.size > DISTINCT_MAX_SHARE * inverse.size or (n_active > _subspace.EXACT_MAX_FEATURES
                                                           and first.size < need + _subspace.OVERSAMPLING):
        return None, None
    return first, np.bincount(inverse, minlength=first.size)


def first_appearance(first, inverse):
    """``(first, inverse)`` of groups of rows (``first`` (m,): each group's first row; ``inverse`` (n,): each
    row's group) renumbered in the order their first rows appear."""
    order = np.argsort(first, kind="stable")
    rank = np.empty(first.size, dtype=np.int64)
    rank[order] = np.arange(first.size)
    return first[order], rank[inverse]


def _check_real(v, name, lo=0.0, strict=True):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) \
            or (v <= lo if strict else v < lo):
        raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} {lo}, got {v!r}")
    return float(v)


# T="auto": the budget from lam. Algorithm 1's excess risk scales as 1 / (lam T), so T = AUTO_T_SCALE / lam
# holds the bound fixed as lam shrinks; AUTO_T_SCALE = 200 is where the problem bank's metric problem
# ends within 1e-3 of its optimum at lam = 1e-3 (python -m logt.bench._learner_gap --loss pairs), and AUTO_T_MIN
# is where k-NN accuracy stops changing on the development data sets (flat from T = 5e4 to 1e6 at
# lam = 0.1; docs/guide/metric-learning.md).
AUTO_T_MIN = 100_000
AUTO_T_SCALE = 200.0
AUTO_T_MAX = 100_000_000


SOFTMAX_BUDGET_DIVISOR = 5    # T="auto" for the softmax loss: auto_budget(lam) / 5 anchors

# T="auto" re-runs a fit once whose run fell short of what its own analysis needs (a structural verdict with a
# budget that suffices, ``result.params["convergence"]["T_suffices"]``: the curvature estimate's L/lam asks for
# longer stages than the budget's projections allow), at REGROW_MARGIN times that budget (the re-run's own
# estimates vary by ~20% and their batches grow with T), when that is at most REGROW_MAX_FACTOR times the auto
# budget and its work (regrow_work) at most REGROW_WORK. On imbalanced classes (rare classes far from the others:
# L/lam of 1e3-1e6 at W = 0) the first run fell short on a quarter to a third of random problems;
# docs/guide/metric-learning.md, "When T='auto' re-runs".
REGROW_MARGIN = 1.5
REGROW_MAX_FACTOR = 32
# regrow_work's units: one candidate difference of a (d, d) oracle sample costs d^2 + CALL_OVERHEAD, one projection
# EIGH_COST d^3 + EIGH_OVERHEAD; measured here (the softmax's mean_grad and PSDCone.project at d = 2-128, one core)
# a unit is ~0.025 ns for the samples (12 ns per candidate at d = 2, 116 ns at 64) and the projections within 2x
# (20 us at d = 8, 0.5 ms at 64, 1.1 ms at 128), so REGROW_WORK = 1.6e11 is about 4 s
CALL_OVERHEAD = 512
EIGH_COST = 40
EIGH_OVERHEAD = 1e6
REGROW_WORK = 1.6e11


def auto_budget(lam):
    """``T`` of ``T="auto"``: ``min(AUTO_T_MAX, max(AUTO_T_MIN, ceil(AUTO_T_SCALE / lam)))`` pair gradients
    (1e5 for lam >= 2e-3, 2e5 at lam = 1e-3, 2e6 at 1e-4)."""
    return int(min(AUTO_T_MAX, max(AUTO_T_MIN, math.ceil(AUTO_T_SCALE / float(lam)))))


def regrow_budget(res, T, oracle):
    """The budget at which ``T="auto"`` re-runs a fit whose run ``res`` (at budget ``T``) fell short of its
    analysis (:data:`REGROW_MARGIN` x its verdict's ``T_suffices``), or None: the run converged, its verdict names
    no budget (e.g. the end-of-run check failed), or the re-run would exceed ``REGROW_MAX_FACTOR * T`` or
    ``REGROW_WORK`` (:func:`regrow_work`)."""
    if res.success:
        return None
    need = (res.params.get("convergence") or {}).get("T_suffices")
    if not need:
        return None
    T2 = int(math.ceil(REGROW_MARGIN * int(need)))
    if T2 <= T or T2 > min(REGROW_MAX_FACTOR * T, AUTO_T_MAX):
        return None
    return T2 if regrow_work(res, T2, oracle) <= REGROW_WORK else None


def regrow_work(res, T2, oracle):
    """The work of a re-run at budget ``T2`` (units of ``REGROW_WORK``), from the first run ``res``'s projections
    scaled by ``T2 / n_calls``: ``T2 w (d^2 + CALL_OVERHEAD) + (T2 / n_calls) n_projections (EIGH_COST d^3 +
    EIGH_OVERHEAD)`` with ``d`` the oracle's side and ``w`` the candidate differences per oracle sample (the
    softmax: its mean candidate count; pairs 1)."""
    d = float(oracle.shape[0])
    anchors = getattr(oracle, "anchors", None)
    w = float(oracle.candidates.size) / anchors.size if anchors is not None and anchors.size else 1.0
    scale = T2 / max(int(res.n_calls), 1)
    return (T2 * w * (d * d + CALL_OVERHEAD)
            + scale * int(res.n_projections) * (EIGH_COST * d ** 3 + EIGH_OVERHEAD))


def _other_loss_hint(loss):
    """The zero-metric warning's last words: the other loss to try (``loss`` the one fitted; None: pairs given
    by the user, PairsMetricLearner)."""
    if loss in ("triplets", "softmax"):
        return "; try loss='pairs'."
    if loss == "pairs":
        return "; on dense input try loss='softmax' (it weighs each point's nearest neighbours, not every pair)."
    return "."


class MahalanobisLearner(BaseEstimator):
    """Base of :class:`MetricLearner` and :class:`PairsMetricLearner` (not for direct use).

    Fitted attributes shared by both: ``components_`` (rank, d) with
    ``W = components_.T @ components_`` in the ORIGINAL feature space,
    ``b_`` the threshold on the squared distance (``d_W^2(x, x') < b_`` is the
    model's "similar"; in the scaled space), ``threshold_scale_`` (``s``: a learned
    ``b_ = s * beta`` with ``beta`` the optimizer's coordinate, regularized as
    ``(lam/2) (b_/s)^2``; 1.0 for a fixed threshold), ``center_`` and ``scale_`` the fitted internal scaling,
    ``active_features_`` ((d,) bool: the features that vary over the training
    points; the optimizer runs on these only, and ``W`` is 0 on the others),
    ``n_clipped_`` (training rows found to be outliers by the internal scaling and
    pulled in to the unit sphere for the fit; :mod:`logt.metric_learning.scaling`),
    ``n_features_in_``, ``n_calls_``, ``n_projections_``, ``n_epochs_``,
    ``result_`` (the :class:`logt.MinimizeResult`, in the scaled space of the
    active features).
    """

    # ---- checks ------------------------------------------------------------------
    def _check_common_params(self):
        check_optimizer(self.method, self.params, self.options)
        if isinstance(self.T, str):
            if self.T != "auto":
                raise TypeError(f"T must be an int or 'auto', got {self.T!r}")
        else:
            _params.check_T(self.T)
        _check_real(self.lam, "lam")
        if self.scaling not in SCALINGS:
            raise ValueError(f"scaling must be one of {SCALINGS}, got {self.scaling!r}")
        thr = self.threshold
        if not (thr == "learn" if isinstance(thr, str) else False):
            _check_real(thr, "threshold", strict=False)
        check_threshold_scale(self.threshold_scale)
        self._check_n_components()
        if isinstance(self.n_eval_pairs, bool) or not isinstance(self.n_eval_pairs, numbers.Integral) \
                or self.n_eval_pairs < 1:
            raise ValueError(f"n_eval_pairs must be an int >= 1, got {self.n_eval_pairs!r}")
        check_rng(self.rng) if not isinstance(self.rng, np.random.Generator) else None

    @property
    def _auto_budget(self):
        """Whether ``T`` is ``"auto"`` (the budget from ``lam``, re-run once when short: :func:`regrow_budget`)."""
        return isinstance(self.T, str) and self.T == "auto"

    def _budget(self):
        """The budget of oracle calls: ``T``, or for ``T="auto"`` :func:`auto_budget` of ``lam`` (pair
        gradients), divided by ``SOFTMAX_BUDGET_DIVISOR`` for the softmax loss (one call is an anchor with
        all its candidates, about ``3 + 2 n_neighbors`` pair gradients' work)."""
        if not self._auto_budget:
            return int(self.T)
        T = auto_budget(self.lam)
        return T // SOFTMAX_BUDGET_DIVISOR if getattr(self, "loss_", None) == "softmax" else T

    @property
    def _learn_threshold(self):
        return isinstance(self.threshold, str) and self.threshold == "learn"

    def _oracle_threshold_scale(self):
        """The oracle's ``threshold_scale`` (``b = s * beta``): the estimator's ("auto" or a number),
        or 1.0 for a fixed threshold (unused there)."""
        return self.threshold_scale if self._learn_threshold else 1.0

    # ---- fitting -------------------------------------------------------------------
    def _scale_fit(self, X):
        """The training points scaled (``center_``, ``scale_``) and restricted to the features that vary.

        A feature constant over the training rows adds exactly 0 to every pair
        difference, so the loss does not depend on the metric's row and column there
        and the regularizer keeps them at 0: the optimizer runs on the other features
        only (``active_features_``), and the metric is embedded back with zeros.
        """
        center, scale, outliers = fit_scaling(X, self._scaling_mode(), return_outliers=True)
        self.center_, self.scale_ = center, scale
        Xs = apply_scaling(X, center, scale)
        active = varying_features(Xs)
        self.active_features_ = active
        self.whitening_, self.whitening_shrinkage_ = None, math.nan      # MetricLearner's whiten may set them
        Xs, self.n_clipped_ = clip_rows(Xs, outliers)     # outlier rows pulled in to the unit sphere
        if active.all():
            return Xs
        return Xs[:, active] if sp.issparse(Xs) else np.ascontiguousarray(Xs[:, active])

    def _scaling_mode(self):
        """The mode :meth:`_scale_fit` uses: ``scaling``, except that "auto" on the principal coordinates of an
        int ``n_components`` on wide input (where the default too learns on a subspace,
        :func:`subspace.uses_subspace`) is "max_norm": the coordinates keep the data's units (one common factor).
        Standardized, each of the ``k`` coordinates would weigh the same however little of the variance it
        holds: the weakest (1/3,500 of the strongest on natural-image patches) carry noise, and the metric
        learned from there fell up to 0.25 below plain Euclidean k-NN (docs/guide/high-dimensional.md, "Data units
        for n_components"). On few features the metric is full rank (an int ``n_components``: its top rows) and
        the features, standardized as before, may come in unrelated units. ``MetricLearner``'s check sets
        ``_wide_subspace`` too where it keeps the default's principal directions in the data's units
        (``MetricLearner._principal_units_check``), for the refit on every row."""
        if self.scaling == "auto" and getattr(self, "_wide_subspace", False):
            return "max_norm"
        return self.scaling

    def _minimize(self, oracle, gen, stacklevel=3, zero_fallback=None):
        """Run logT on ``oracle`` over the PSD cone and set the metric; ``stacklevel`` points a
        DegenerateMetricWarning at the caller of ``fit``, whose message names what follows a zero metric
        (``zero_fallback``, :meth:`_zero_metric_message`)."""
        T = self._budget()
        with single_threaded_blas():
            res = run_minimize(oracle, PSDCone(oracle.shape[0]), T, self.method, self.params,
                               self.options, gen, warn=False)      # fit's end says it (_fitted)
            T2 = regrow_budget(res, T, oracle) if self._auto_budget else None
            if T2 is not None:                                     # T="auto": once more, at the budget it needs
                first = res.params["convergence"]
                res = run_minimize(oracle, PSDCone(oracle.shape[0]), T2, self.method, self.params,
                                   self.options, gen, warn=False)
                res.params["regrown"] = {"T": T, "T_suffices": first.get("T_suffices"), "rerun_T": T2,
                                         "cause": first.get("cause")}
        W, b = oracle.split_point(res.x)
        s, U = np.linalg.eigh(0.5 * (W + W.T))        # one eigendecomposition: the zero test and components_
        if _largest_is_zero(float(s[-1]), oracle) or (res.method == "logt_acc"
                                                     and _zero_is_no_worse(res.x, W.shape[0], oracle, res.fun)):
            s = np.zeros_like(s)
            warnings.warn(self._zero_metric_message(zero_fallback), DegenerateMetricWarning,
                          stacklevel=stacklevel)
        self._set_metric(s, U, b)
        self.threshold_scale_ = float(oracle.threshold_scale)      # 1.0 for a fixed threshold
        self.n_calls_ = res.n_calls
        self.n_projections_ = res.n_projections
        self.n_epochs_ = res.n_epochs
        self.result_ = res
        return res

    def _fitted(self, stacklevel=3):
        """The end of ``fit``: a ``logt.ConvergenceWarning`` at the caller of ``fit`` (``stacklevel``: this
        method's frames up to it) when the run behind ``result_`` did not converge (``result_.success`` False:
        its cause and remedy), saying whether the check kept plain distances instead; returns self."""
        res = self.result_
        verdict = res.params.get("convergence") or {}
        if res.success or verdict.get("ok", True):
            return self
        choice = getattr(self, "metric_choice_", "learned")
        kept = ""
        if choice not in ("learned", "default"):          # "default": a learned metric, this run
            plain = ("plain Euclidean distances on the varying features" if choice == "euclidean"
                     else "the principal subspace's plain distances")
            kept = (f" The check kept {plain} instead (metric_choice_={choice!r}): the model does not "
                    "use this run, but a converged run may learn a metric that beats them.")
        warnings.warn(
            f"{type(self).__name__}: learning the metric did not converge (result_.success is False, method "
            f"{res.method!r}): {verdict['cause']}.{self._regrow_note(res)} Remedy: {verdict['remedy']}; T, method "
            f"and lam are this estimator's parameters, logt.minimize's other options (such as proj_frac) go in "
            f"options=.{kept}", ConvergenceWarning, stacklevel=stacklevel)
        return self

    def _regrow_note(self, res):
        """The ConvergenceWarning's words on ``T="auto"``'s re-run (:func:`regrow_budget`): made, or why not."""
        if not self._auto_budget:
            return ""
        again = res.params.get("regrown")
        if again:
            need = again.get("T_suffices")
            why = f" ({REGROW_MARGIN:g}x the {need:,} the first run's estimates asked for)" if need else ""
            return f" T='auto' ran it twice: at T = {again['T']:,}, then at {again['rerun_T']:,}{why}."
        if (res.params.get("convergence") or {}).get("T_suffices"):
            return (f" T='auto' re-runs a fit at the budget it needs only up to {REGROW_MAX_FACTOR}x its own "
                    f"budget and a work cap of about 4 s (logt.metric_learning._base.regrow_budget).")
        return ""

    def _zero_metric_message(self, fallback=None):
        """The DegenerateMetricWarning's text for what follows a zero metric (``fallback``): ``"euclidean"``,
        plain Euclidean distances replace it (the default's check on few features); ``"checked"``, a check against
        plain distances on rows it was not fitted on (the subspace's, where a zero metric scores what chance
        does); ``None``, the zero metric is the model."""
        if fallback not in (None, "euclidean", "checked"):
            raise ValueError(f"unknown zero-metric fallback {fallback!r}")
        if fallback == "euclidean":
            what = ("The default's check keeps plain Euclidean distances on the varying features instead "
                    "(metric_choice_='euclidean'; check=False keeps the zero metric)")
        elif fallback == "checked":
            what = ("The check compares it with plain distances on rows it was not fitted on, where a zero metric "
                    "scores what chance does: metric_choice_ says which it kept (check=False keeps the zero metric)")
        else:
            what = "transform() maps every point to 0, and distances or k-NN on it carry no information"
        return (f"{type(self).__name__}: the learned metric is zero (W = 0 is the optimum of this objective at "
                f"lam={self.lam!r}: no direction brings similar points closer than dissimilar ones on average). "
                f"{what}. The labels may not depend on the features through a Mahalanobis distance"
                + _other_loss_hint(getattr(self, "loss_", None)))

    def _set_metric(self, s, U, b):
        """components_ in the original space from ``W = U diag(s) U^T`` (ascending eigenvalues ``s``) on the
        scaled (and, with ``whitening_``, whitened) active features; the columns of constant features are
        exactly 0. A zero ``W`` gives one row of zeros (rank 0 kept as a (1, d) map, so transform's output
        keeps a column)."""
        tol = len(s) * np.finfo(np.float64).eps * max(float(s.max()), 0.0)
        keep = s > tol
        if not keep.any():
            keep[-1] = True               # W = 0: U's last column times sqrt(0) = 0
            s = np.maximum(s, 0.0)
        Lm = (U[:, keep] * np.sqrt(s[keep])).T[::-1]     # largest eigenvalue first
        if self.whitening_ is not None:                  # W acts on the whitened rows x @ whitening_
            Lm = Lm @ self.whitening_.T
        active = self.active_features_
        if not active.all():
            full = np.zeros((Lm.shape[0], active.size))
            full[:, active] = Lm
            Lm = full
        self.components_ = np.ascontiguousarray(Lm / self.scale_[None, :])
        self.b_ = float(b)

    # ---- the principal subspace (n_components) ---------------------------------------
    def _check_n_components(self, d=None):
        k = self.n_components
        if k is None:
            return
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(f"n_components must be None or an int >= 1, got {k!r}")
        if d is not None and k > d:
            raise ValueError(f"n_components={k} must not exceed the number of features ({d})")

    def _subspace_fit(self, X, gen, codes=None, holdout=True, distinct=False):
        """``(Z, active, fit_rows)``: ``Z`` is ``X`` itself (full rank) or its coordinates ``(n, k)`` in
        the subspace (sets ``subspace_`` (k, d) and ``subspace_mean_`` (d,); None when not used);
        ``active`` (d,) bool marks the features that vary over the rows of ``X``; ``fit_rows`` (n,) bool
        marks the rows the metric is fitted on (None: all of them).

        A subspace only where :func:`subspace.uses_subspace` says so (wide input); on few features the metric
        is full rank, and an int ``n_components`` keeps its top ``k`` rows (:meth:`_subspace_finish`).
        ``n_components=None``: of rank
        :func:`subspace.auto_rank`; with labels ``codes`` the basis also spans the class means outside
        it (:func:`subspace.class_mean_directions`, from the fit rows) and a stratified share of the
        rows is held out for the default's check (``MetricLearner._check_hits``,
        :func:`subspace.holdout_split`; None when too few: the check is cross-fitted), and the check's further
        candidate's standardized class-mean directions are kept in ``_standardized_rows`` (from the fit rows).
        ``holdout=False`` (``check=False``): no rows are held out (``fit_rows`` None, the class-mean directions
        from every row). An int ``k``: the top-``k`` principal directions (from every row); with labels
        ``codes``, ``holdout`` and wide input, the same share of the rows is held out for the check. The
        randomized range finder (``d > EXACT_MAX_FEATURES`` only) and the split draw from generators spawned
        from ``gen``, so ``gen``'s own stream is unchanged.

        The pairs learner (no labels) passes ``X`` as a tuple of dense row blocks, its pairs' first and second
        points, their rows stacked: on wide input they are never stacked (the coordinates ``Z`` are), and with
        ``distinct=True`` the directions are found from the distinct rows (:func:`distinct_points`: a point in
        several pairs is one), each weighted by how often it occurs (:func:`subspace.principal_subspace`'s
        ``weights``: the same directions, to rounding, at the cost of the distinct rows), when they are at most
        ``DISTINCT_MAX_SHARE`` of the rows and enough for the range finder. ``distinct`` may also be those
        distinct rows, ``(first, inverse)`` as :func:`distinct_points` gives them (the check's fold fits: from
        their parent's); either way they are kept in ``_distinct_rows`` (None where not found)."""
        self.subspace_ = self.subspace_mean_ = None
        self._standardized_rows = self._principal_top = self._distinct_rows = None
        parts = X if isinstance(X, tuple) else (X,)
        n, d = sum(P.shape[0] for P in parts), parts[0].shape[1]
        self._check_n_components(d)
        active = varying_features(X)             # constant features: exactly 0 in the basis
        n_active = int(active.sum())
        k = self.n_components
        wide = _subspace.uses_subspace(n, n_active)
        # an int n_components on wide input: the principal coordinates keep the data's units (_scaling_mode)
        self._wide_subspace = k is not None and wide
        if not wide:                    # full rank (an int n_components: its top k rows, _subspace_finish)
            return (X if len(parts) == 1 else np.vstack(parts)), active, None
        if k is not None:
            if k > n and d > _subspace.EXACT_MAX_FEATURES:
                raise ValueError(f"n_components={k} needs at least as many samples: got {n} (with more than "
                                 f"{_subspace.EXACT_MAX_FEATURES} features the subspace is found from the samples)")
            k_fit = min(k, n_active)
        weights = None
        if distinct is not False and codes is None and not sp.issparse(parts[0]):
            self._distinct_rows = distinct_points(*parts) if distinct is True else distinct
            need = k_fit if k is not None else max(1, min(_subspace.MAX_AUTO_RANK, n - 1, n_active))
            first, weights = distinct_weights(self._distinct_rows, need, n_active)
        if weights is not None:
            Xa, unit = scaled_active(take_rows(parts, first, active), None)
        else:                   # every row (stacked once; the coordinates below from the same rows, bit for bit)
            parts = (parts[0] if len(parts) == 1 else np.vstack(parts),)
            Xa, unit = scaled_active(parts[0], active)
        sub_rng = gen.spawn(1)[0] if Xa.shape[1] > _subspace.EXACT_MAX_FEATURES else None
        fit_rows = None
        if k is None:
            mean_a, basis_a = _subspace.default_principal(Xa, sub_rng, weights=weights)
            self._n_principal = basis_a.shape[0]          # the label-free rows of subspace_ (the check's folds)
            if codes is not None:
                fit_rows = _subspace.holdout_split(codes, gen.spawn(1)[0]) if holdout else None
                # from the fit rows (picked by index, not copied)
                extra = _subspace.class_mean_directions(Xa, codes, mean_a, basis_a, rows=fit_rows)
                basis_a = np.vstack([basis_a, extra])
                if holdout:          # the check's further candidate (MetricLearner; cross-fitted: from every row)
                    std = _subspace.standardized_mean_directions(Xa, codes, mean_a, basis_a, rows=fit_rows)
                    self._standardized_rows = full_rows(std, active)
            k = basis_a.shape[0]
        else:
            top = _subspace.principal_subspace(Xa, k_fit, sub_rng, weights=weights)
            mean_a, basis_a = top[:2]
            if codes is not None and holdout and wide:       # MetricLearner's check of an int n_components
                fit_rows = _subspace.holdout_split(codes, gen.spawn(1)[0])
                self._principal_top = top       # its third candidate reuses them (default_principal's top)
        basis = np.zeros((k, d))
        basis[:min(k, basis_a.shape[0])][:, active] = basis_a[:k]     # k > active features: rows of zeros
        self.subspace_mean_, self.subspace_ = full_mean(parts[0], active, mean_a * unit), basis
        Z = [_subspace.project_rows(P, self.subspace_mean_, basis) for P in parts]
        return (Z[0] if len(Z) == 1 else np.vstack(Z)), active, fit_rows

    def _subspace_finish(self, active, X=None, check=None, standardized=None, principal=None, default=None,
                         principal_units=None):
        """After the fit on the subspace coordinates: ``components_`` composed with ``subspace_``
        (``(n_components_, d)``), ``n_features_in_`` and ``active_features_`` (``active``, from
        :meth:`_subspace_fit`) back on the original features.

        ``check``: the default's check, ``(hits, how, n_rows)`` (``MetricLearner._check_hits``: each
        candidate's 1-NN hits on the checked rows), or None (no check: the learned metric).
        :func:`subspace.choose_candidate` keeps the plainest candidate unless another is ahead of it by
        more than one standard error (``metric_choice_``, ``check_accuracy_``); a chosen Euclidean metric
        is :func:`subspace.euclidean_rows` of the raw input ``X``. ``standardized``, ``principal``,
        ``principal_units``: ``MetricLearner``'s further candidates (:data:`subspace.FURTHER_CANDIDATES`), their
        metrics on the subspace extended by ``_standardized_rows`` (``MetricLearner._standardized_check``) and on
        its first ``_n_principal`` rows (``MetricLearner._principal_check``; ``principal_units``: those
        coordinates in the data's units, ``MetricLearner._principal_units_check``), or None; kept, one is a learned
        metric on that subspace. ``default``: an int ``n_components``'s third candidate
        (``MetricLearner._default_rank_check``: its coordinates, directions and metric on them), or None; kept,
        ``subspace_`` and ``subspace_mean_`` are its directions, its metric's top ``k`` rows on them
        ``components_``, and ``metric_choice_`` "default". Returns the name of the further candidate kept, or
        None."""
        self.metric_choice_ = "learned"
        if self.subspace_ is None:
            if self.n_components is not None:        # few features: the full-rank metric truncated to rank k
                self.components_ = top_rows(self.components_, self.n_components)
            self.n_components_ = self.components_.shape[0]
            return None
        if check is not None:
            self._record_check(*check)
        kept = self.metric_choice_ if self.metric_choice_ in (*_subspace.FURTHER_CANDIDATES, "default") else None
        if kept == "default":
            (self.subspace_mean_, self.subspace_), components = default[1:]
            # cross-fitted (None): no metric yet, fit learns it on every row next
            self.components_ = np.zeros((1, self.subspace_.shape[0])) if components is None else components
        elif kept == "standardized":
            self.subspace_ = np.vstack([self.subspace_, self._standardized_rows])
            self.components_ = standardized
        elif kept in ("principal", "principal_units"):
            self.subspace_ = self.subspace_[:self._n_principal]
            self.components_ = principal if kept == "principal" else principal_units
        if kept in _subspace.FURTHER_CANDIDATES:
            self.metric_choice_ = "learned"
        if self.metric_choice_ == "euclidean":
            comps = _subspace.euclidean_rows(X, active)
        elif self.metric_choice_ == "subspace":
            comps = self.subspace_.copy()
        else:
            comps = self.components_ @ self.subspace_          # (r, k) on the subspace coordinates, composed
        if self.n_components is not None:        # k rows (rank < k: rows of zeros)
            comps = top_rows(comps, self.n_components)
        self.components_ = np.ascontiguousarray(comps)
        self.n_components_ = comps.shape[0]
        self.n_features_in_ = active.size
        self.active_features_ = active
        return kept

    def _record_check(self, hits, how, n_rows):
        """The check from each candidate's 1-NN hits on the checked rows (name -> float (n_rows,),
        :func:`subspace.nn1_hits`): ``check_accuracy_`` (their means, ``how``, ``n_rows``) and
        ``metric_choice_`` (:func:`subspace.choose_candidate`; an int ``n_components``:
        :func:`subspace.choose_rank_candidate`)."""
        self.check_accuracy_ = {**{c: float(np.mean(v)) if v.size else 0.0 for c, v in hits.items()},
                                "how": how, "n_rows": n_rows}
        if self.n_components is not None:
            self.metric_choice_ = _subspace.choose_rank_candidate(hits)
        else:              # a cross-fitted check's further candidates: a wider margin (CROSSFIT_FURTHER_Z)
            self.metric_choice_ = _subspace.choose_candidate(
                hits, further_z=_subspace.CROSSFIT_FURTHER_Z if how == "cross-fitted" else None)
        if any(c in hits for c in _subspace.FURTHER_CANDIDATES):
            self.check_accuracy_["directions"] = {
                "standardized": "principal, class means, standardized class means", "principal": "principal",
                "principal_units": "principal, in the data's units"}.get(self.metric_choice_,
                                                                          "principal, class means")

    # ---- using the metric -----------------------------------------------------------
    def get_mahalanobis_matrix(self):
        """The learned PSD matrix ``W`` (d x d) on the original features: ``components_.T @ components_``.

        ``W`` carries the inverse square of the data's units, so data of 1e200 give entries of about 1e-400,
        which float64 cannot hold: a ValueError then says so (``components_`` and :meth:`transform` hold the
        same metric at any units) instead of returning a matrix of zeros or of NaN."""
        check_fitted(self)
        L = self.components_
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            M = L.T @ L
        big = float(np.abs(L).max()) if L.size else 0.0
        top = float(np.abs(M).max()) if M.size else 0.0
        if big > 0.0 and not (np.isfinite(M).all() and top >= np.finfo(np.float64).tiny):
            raise ValueError(
                f"get_mahalanobis_matrix(): the learned W = components_.T @ components_ has entries of about ("
                f"{big:.3g})^2, outside float64's range (the data's units are extreme, W scales with their inverse "
                "square). Use components_ or transform(), which hold the same metric, or fit on the data times a "
                "power of two that brings its magnitudes near 1")
        return 0.5 * (M + M.T)

    def transform(self, X):
        """Map ``X`` (n, d; dense or sparse, original units) to ``X @ components_.T`` (n, rank).

        Euclidean distances there are the learned distances ``||x - x'||_W``.
        """
        check_fitted(self)
        X = check_points(X, "X", self, self.n_features_in_)
        return np.asarray(X @ self.components_.T)

    def pair_distance(self, pairs):
        """``||x - x'||_W`` for each pair; ``pairs`` of shape (n_pairs, 2, d). Returns (n_pairs,)."""
        check_fitted(self)
        a, b = check_pairs(pairs, self, self.n_features_in_)
        return self._points_distance(a, b)

    def _points_distance(self, a, b):
        """:meth:`pair_distance` of checked points ``a``, ``b`` (n_pairs, d). Returns (n_pairs,)."""
        return np.linalg.norm((a - b) @ self.components_.T, axis=1)

    def pair_score(self, pairs):
        """``-||x - x'||_W`` (higher means more similar, metric-learn's convention). Returns (n_pairs,)."""
        return -self.pair_distance(pairs)

    def get_metric(self):
        """A function ``metric(u, v, squared=False)`` giving the learned distance of two points (d,).

        Usable as ``sklearn.neighbors.KNeighborsClassifier(metric=learner.get_metric())``
        (for speed, prefer k-NN on :meth:`transform`'s output: same distances).
        """
        check_fitted(self)
        Lt = self.components_.T.copy()
        d = self.n_features_in_

        def metric(u, v, squared=False):
            u = np.asarray(u, dtype=np.float64).reshape(-1)
            v = np.asarray(v, dtype=np.float64).reshape(-1)
            if u.shape != (d,) or v.shape != (d,):
                raise ValueError(f"u and v must be vectors of {d} features, got {u.shape} and {v.shape}")
            z = (u - v) @ Lt
            q = float(z @ z)
            return q if squared else math.sqrt(q)

        return metric

    def __sklearn_is_fitted__(self):
        return hasattr(self, "components_")
