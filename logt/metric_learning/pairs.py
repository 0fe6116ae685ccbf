"""``PairsMetricLearner``: metric-learn's pairs API (``fit(pairs, y_pairs)``) on the O(log T) solver.

Conventions follow metric-learn's ``_PairsClassifierMixin`` (as used by its
ITML, MMC and SDML): ``pairs`` is an array of shape ``(n_pairs, 2, d)``,
``y_pairs`` holds +1 (similar) or -1 (dissimilar); ``decision_function`` is
the negative distance (higher = more similar), ``predict`` says +1 when the
distance is at most ``threshold_`` (calibrated at the end of ``fit`` with
``calibrate_threshold``, strategy "accuracy" unless ``calibration_params`` say
otherwise), ``score`` is the ROC AUC of ``decision_function``, ``classes_`` is
``[-1, 1]``.
"""
import numbers
import warnings

import numpy as np

from logt._rng import check_rng
from logt._threads import search_threads, single_threaded_blas
from logt.metric_learning._base import (MahalanobisLearner, check_fit_magnitude, check_fitted, check_pairs,
                                        distinct_points, first_appearance, top_rows)
from logt.metric_learning._compat import HAVE_SKLEARN, ClassifierMixin
from logt.metric_learning import outliers as _outliers
from logt.metric_learning import subspace as _subspace
from logt.oracles.metric import MetricLearning

__all__ = ["PairsMetricLearner", "roc_auc", "auc_difference", "point_folds", "fold_points", "CALIBRATION_STRATEGIES",
           "CALIBRATION_FOLDS", "CALIBRATION_MIN_PAIRS"]

CALIBRATION_STRATEGIES = ("accuracy", "f_beta", "max_tpr", "max_tnr")
CALIBRATION_FOLDS = 4         # folds of the distinct points for the held-out calibration (check=True)
CALIBRATION_MIN_PAIRS = 10    # held-out pairs of each label to calibrate other strategies than accuracy on them


def roc_auc(y, score):
    """Area under the ROC curve of ``score`` for labels ``y`` in {-1, +1} (ties count 1/2).

    The Mann-Whitney statistic from average ranks; needs both labels present.
    """
    from scipy.stats import rankdata
    y = np.asarray(y)
    pos = y > 0
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("ROC AUC needs both similar (+1) and dissimilar (-1) pairs")
    r = rankdata(score)
    return float((r[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _auc_parts(y, score):
    """DeLong's placement values of ``score`` for labels ``y`` in {-1, +1}: ``(v_pos, v_neg)``, for each
    similar pair the share of dissimilar ones it outscores, for each dissimilar pair the share of similar ones
    that outscore it (ties count 1/2); each has mean ``roc_auc(y, score)``."""
    from scipy.stats import rankdata
    pos = y > 0
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    r = rankdata(score)
    v_pos = (r[pos] - rankdata(score[pos])) / n_neg
    v_neg = 1.0 - (r[~pos] - rankdata(score[~pos])) / n_pos
    return v_pos, v_neg


def auc_difference(y, score_new, score_plain, groups=None):
    """``(diff, se, auc_new, auc_plain)``: the ROC AUC of ``score_new`` minus that of ``score_plain`` on the same
    pairs (labels ``y`` in {-1, +1}), its standard error (DeLong, DeLong and Clarke-Pearson 1988: the variances of
    the placement values' paired differences, similar and dissimilar pairs' added) and the two AUCs.

    ``groups`` (n,) int, or None (one group): scores are compared within a group only (the check's folds, each
    scored by its own metric, whose distances need not share a scale with another fold's); the AUCs are the
    groups' (those with both labels) weighted by their numbers of pairs, the variance the sum of the groups'
    with the squared weights. Raises ValueError when no group has both labels."""
    y = np.asarray(y)
    score_new, score_plain = np.asarray(score_new, dtype=np.float64), np.asarray(score_plain, dtype=np.float64)
    groups = np.zeros(y.size, dtype=np.int64) if groups is None else np.asarray(groups)
    if not y.ndim == score_new.ndim == score_plain.ndim == groups.ndim == 1 or \
            not y.size == score_new.size == score_plain.size == groups.size:
        raise ValueError(f"y, score_new, score_plain and groups must be 1-D of one length, got shapes {y.shape}, "
                         f"{score_new.shape}, {score_plain.shape}, {groups.shape}")
    parts = []
    for g in np.unique(groups):
        m = groups == g
        if len(np.unique(y[m])) < 2:
            continue
        (p1, n1), (p0, n0) = _auc_parts(y[m], score_new[m]), _auc_parts(y[m], score_plain[m])
        dp, dn = p1 - p0, n1 - n0
        var = (np.var(dp, ddof=1) / dp.size if dp.size > 1 else 0.0) + \
              (np.var(dn, ddof=1) / dn.size if dn.size > 1 else 0.0)
        parts.append((m.sum(), np.mean(p1), np.mean(p0), var))
    if not parts:
        raise ValueError("ROC AUC needs both similar (+1) and dissimilar (-1) pairs")
    w, a1, a0, var = (np.array(v, dtype=np.float64) for v in zip(*parts))
    w = w / w.sum()
    auc_new, auc_plain = float(w @ a1), float(w @ a0)
    return auc_new - auc_plain, float(np.sqrt(w ** 2 @ var)), auc_new, auc_plain


def point_folds(a, b, gen, n_folds=CALIBRATION_FOLDS, points=None):
    """Folds of the pairs' distinct points: ``(fa, fb)``, each (n_pairs,) int, the fold of each pair's first and
    second point. Points with equal coordinates (``a`` and ``b`` (n_pairs, d), the same point in several pairs)
    get the same fold, drawn uniformly from ``n_folds`` with ``gen`` in the order the points first appear (so
    the folds depend on which pairs share points, not on the coordinates' values). A pair is held out by fold
    ``f`` when both its points are in ``f``; it trains the fold's metric when neither is, so no held-out pair
    shares a point with the pairs its metric was fitted on (:func:`distinct_points`: no copy of the points;
    ``points``: its answer for ``a`` and ``b``, when already known)."""
    first, point = distinct_points(a, b) if points is None else points
    fold = gen.integers(n_folds, size=first.size)[point]
    n = a.shape[0]
    return fold[:n], fold[n:]


def fold_points(points, train):
    """The distinct points of the pairs ``train`` ((n_pairs,) bool) selects, as :func:`distinct_points` gives them
    for ``(a[train], b[train])``, from ``points``, its answer ``(first, inverse)`` for all the pairs ``(a, b)``: the
    same groups (equal rows share a group of all the pairs), numbered in the order they first appear, without
    hashing or comparing the points again."""
    inverse = points[1]
    n = train.size
    ids = np.concatenate([inverse[:n][train], inverse[n:][train]])
    _, first, local = np.unique(ids, return_index=True, return_inverse=True)
    return first_appearance(first, local.ravel())


def _threshold(dist, y, strategy="accuracy", min_rate=None, beta=1.0):
    """The distance threshold of ``strategy`` (see :meth:`PairsMetricLearner.calibrate_threshold`) for the pairs'
    distances ``dist`` (n,) and labels ``y`` (n,) in {-1, +1}."""
    order = np.argsort(dist, kind="stable")
    ds, ys = dist[order], y[order]
    # candidate cut k: the k closest pairs are "similar" (k = 0..n); cuts only between distinct distances
    last_of_run = np.r_[ds[1:] != ds[:-1], True]
    ks = np.r_[0, np.flatnonzero(last_of_run) + 1]
    tp = np.r_[0, np.cumsum(ys > 0)][ks]
    fp = np.r_[0, np.cumsum(ys < 0)][ks]
    P, N = int((y > 0).sum()), int((y < 0).sum())
    tn = N - fp
    tpr = tp / P if P else np.zeros(len(ks))
    tnr = tn / N if N else np.zeros(len(ks))
    if strategy == "accuracy":
        score = (tp + tn) / len(y)
    elif strategy == "f_beta":
        b2 = float(beta) ** 2
        denom = (1 + b2) * tp + b2 * (P - tp) + fp
        score = np.where(denom > 0, (1 + b2) * tp / np.where(denom > 0, denom, 1), 0.0)
    elif strategy == "max_tpr":
        score = np.where(tnr >= min_rate, tpr, -np.inf)
    else:
        score = np.where(tpr >= min_rate, tnr, -np.inf)
    if not np.isfinite(score).any():
        raise ValueError(f"no threshold reaches min_rate={min_rate} for strategy {strategy!r}")
    best = int(np.argmax(score))          # first maximum: the smallest accepted set
    k = ks[best]
    if k == 0:
        return float(np.nextafter(ds[0], -np.inf)) if ds[0] > 0 else -1.0
    return float(ds[k - 1])


def _ahead(dist, y, t_train):
    """Whether calibrating on the held-out pairs (distances ``dist``, labels ``y`` in {-1, +1}) beats the
    training pairs' threshold ``t_train`` on them by more than one standard error of the paired difference
    of correct answers (:func:`logt.metric_learning.subspace.ahead_by_se`, the rule of the learners' metric
    check). Each half of the held-out pairs (alternate ones) is answered with the accuracy threshold of the
    other half, so the held-out calibration is not scored on the pairs it was chosen on."""
    half = np.arange(dist.size) % 2 == 0
    held = np.empty(dist.size)
    for a, b in ((half, ~half), (~half, half)):
        if len(np.unique(y[a])) < 2:
            return False
        held[b] = np.where(dist[b] <= _threshold(dist[a], y[a]), 1, -1) == y[b]
    return _subspace.ahead_by_se(held, np.where(dist <= t_train, 1, -1) == y)


def _row_distances(a, b, active=None, rows=None, max_entries=2**22):
    """``||a_i - b_i||`` for rows ``a``, ``b`` (n, d): over the features ``active`` ((d,) bool; None: all), or
    of ``(a_i - b_i) @ rows.T`` (``rows`` (k, d); None: the features themselves); (n,), in blocks of rows of at
    most ``max_entries`` differences (a 32 MiB temporary)."""
    out = np.empty(a.shape[0])
    block = max(1, max_entries // max(a.shape[1], 1))
    for s in range(0, a.shape[0], block):
        diff = a[s:s + block] - b[s:s + block]
        if rows is not None:
            diff = diff @ rows.T
        elif active is not None and not active.all():
            diff = diff[:, active]
        out[s:s + block] = np.linalg.norm(diff, axis=1)
    return out


def _check_pair_labels(y, n):
    if y is None:
        raise ValueError("requires y (the pair labels) to be passed, but it is None")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per pair), got shape {y.shape}")
    if len(y) != n:
        raise ValueError(f"pairs has {n} pairs but y has {len(y)} labels")
    if y.dtype.kind not in "iufb" or not np.isin(y, (-1, 1)).all():
        found = np.unique(y) if y.dtype.kind != "O" else np.array(sorted({repr(v) for v in y}))
        shown = ", ".join(str(v) for v in found[:6]) + (", ..." if found.size > 6 else "")
        hint = ("; for 1 = similar, 0 = dissimilar pass 2 * y - 1" if y.dtype.kind in "iufb" and found.size <= 2
                and np.isin(found, (0, 1)).all() else "")
        raise ValueError(f"y must hold +1 (similar) or -1 (dissimilar) for each pair, got the values {{{shown}}}{hint}")
    return y.astype(np.int64)


class PairsMetricLearner(ClassifierMixin, MahalanobisLearner):
    """Learn a Mahalanobis distance from labelled pairs (metric-learn's pairs API).

    Minimizes ``E_p[log(1 + exp(-y_p (b - ||a_p - b_p||_W^2)))] + (lam/2)(||W||_F^2 + (b/s)^2)``
    over PSD ``W`` and ``b >= 0`` (or a fixed ``threshold``), ``p`` a random
    given pair (similar and dissimilar with probability 1/2 each when
    ``balance=True``), with :func:`logt.minimize`. Points are scaled
    internally as in :class:`MetricLearner`.

    Parameters
    ----------
    threshold
        "learn" (default) or a fixed ``b >= 0``.
    lam, T, scaling, method, params, options, n_eval_pairs, n_threads, rng, threshold_scale, n_components
        As in :class:`logt.MetricLearner` (same defaults; ``threshold_scale`` is ``s``; ``scaling="auto"``
        with an int ``n_components`` on wide input: one common factor, as there). With ``n_components`` on
        few features, the full-rank metric's top ``k`` rows (as there: on 154 pair problems of 4-123 features
        its mean held-out AUC was 0.737 against 0.685 for the previous metric on the top principal directions,
        which follow the features' units); on wide input the top ``k`` principal directions of the pairs' points
        (``check``: or the default's metric at rank ``k``).
    balance
        bool, default True: draw similar and dissimilar pairs with probability 1/2 each (False:
        uniformly from the list).
    calibration_params
        dict or None, keywords of :meth:`calibrate_threshold` used at the end of ``fit`` (default:
        accuracy).
    check
        bool, default True: check the metric and ``threshold_`` on pairs the metric was not fitted on. The pairs'
        distinct points (equal coordinates are one point) are split into ``CALIBRATION_FOLDS`` random folds
        (:func:`point_folds`); for each fold a metric with these parameters (its subspace too) is learned on
        the pairs with no point in the fold and measures the pairs with both points in it (about a quarter of
        the pairs; the fold fits: about 4-5x the fit time, a median 5-6x with an int ``n_components`` on wide
        input). The metric: with ``n_components=None`` on many features (a principal subspace,
        :func:`logt.metric_learning.subspace.uses_subspace`), the learned metric is kept only when its ROC AUC on
        the held-out pairs (within each fold, weighted by
        their pairs) beats plain Euclidean distances' on the varying features by more than one standard error
        of the paired difference (DeLong; :func:`auc_difference`, the rule of the learners' check); else
        ``components_`` is the identity's rows at the varying features (``metric_choice_ = "euclidean"``,
        ``threshold_`` calibrated on the training pairs, whose Euclidean distances are not fitted). When those
        rows would exceed ``subspace.EUCLIDEAN_MAX_ENTRIES`` entries (e.g. more than 2,896 varying features) the
        plain candidate is the principal subspace's own distances instead (each fold's subspace on its held-out
        pairs; kept: ``components_`` is ``subspace_``, ``metric_choice_ = "subspace"``, its threshold checked as
        below). With an int ``n_components`` on wide input the rank-``k`` metric (on the top ``k`` principal
        directions) is checked against the default's metric at rank ``k`` (each fold's ``n_components=None`` fit,
        its top ``k`` rows), which replaces it only when ahead by more than one standard error of the paired
        difference and is then learned again on every pair (``metric_choice_ = "default"``: ``subspace_`` the
        default's principal directions, ``components_`` its top ``k`` rows on them). On few features (full rank)
        the metric is not checked (there the learned metric was rarely behind Euclidean distances and a check on
        a quarter of the pairs cost it more than it saved). A zero learned metric
        (``DegenerateMetricWarning``) is replaced by Euclidean distances without a check. The threshold of a
        kept learned (or subspace) metric: with the accuracy strategy the one calibrated on the training pairs is kept
        unless the held-out pairs' own calibration answers them better by more than one standard error (each
        half of them answered with the other half's threshold); other strategies take the held-out
        calibration. Either way the threshold is used with the metric learned on all pairs (the folds' metrics
        are only for the check). With too few held-out pairs (accuracy: 2 of either label; other strategies:
        ``CALIBRATION_MIN_PAIRS``) it is calibrated on the training pairs, with a ``UserWarning``. A
        ``UserWarning`` too when the distances kept separate the held-out pairs no better than chance (ROC AUC,
        within each fold, not above 0.5 by two standard errors).
        False: the learned metric and a threshold calibrated on the training pairs, unchecked (metric-learn's
        convention), which overstates how well distances separate new pairs when the metric fits its pairs
        closely (few points for many features: ``predict`` can fall far below answering "dissimilar" to every
        pair); for pairs among the training points themselves on few features it is the better choice (docs:
        "The pairs learner's checks on new pairs").

    Attributes
    ----------
    components_, n_components_, subspace_, subspace_mean_, b_, threshold_scale_, center_, scale_
        As in :class:`logt.MetricLearner`.
    metric_choice_
        "learned"; "euclidean" when ``check`` kept plain Euclidean distances (``components_`` then selects the
        varying features), "subspace" when it kept the principal subspace's (``components_`` is ``subspace_``);
        ``b_`` and the scaling attributes stay those of the learned model. "default" (an int ``n_components`` on
        wide input): the default's metric at rank ``k``, ``b_``, the scaling attributes and ``result_`` those of
        its fit on every pair.
    check_accuracy_
        dict or None (no metric check ran): the held-out pairs' ROC AUC of the ``learned`` metric and of
        ``euclidean`` (or ``subspace``; an int ``n_components``: ``default``) distances, ``how`` ("held-out
        pairs") and ``n_pairs``.
    n_clipped_, active_features_, n_features_in_, n_calls_, n_projections_, n_epochs_, result_
        As in :class:`logt.MetricLearner`.
    n_repaired_
        int, the pairs' glitched points repaired before everything else (a point counted in each pair it is in;
        :func:`logt.metric_learning.outliers.glitched_pair_points`: as ``MetricLearner``'s, the label rule being
        that pairs with such a point are not labelled differently from the others); 0 on clean data.
    threshold_
        Distance threshold of :meth:`predict` (similar when ``pair_distance <= threshold_``).
    calibration_
        dict: ``how`` the threshold was calibrated at the end of ``fit`` ("cross-fitted": on the held-out
        pairs of ``check``; "training pairs, checked": on the training pairs, the held-out ones not answered
        better by their own calibration; "training pairs": unchecked; "model": one kind of pair only, the
        model's own ``sqrt(b_)``) and on how many pairs (``n_pairs``: held-out or training pairs).
    classes_
        ``array([-1, 1])``.
    """

    _tuple_size = 2
    classes_ = np.array([-1, 1])

    def __init__(self, threshold="learn", lam=0.1, T="auto", scaling="auto", method="auto",
                 params="auto", options=None, balance=True, calibration_params=None,
                 n_eval_pairs=10_000, n_threads=None, rng=None, threshold_scale="auto", n_components=None,
                 check=True):
        self.threshold = threshold
        self.lam = lam
        self.T = T
        self.scaling = scaling
        self.method = method
        self.params = params
        self.options = options
        self.balance = balance
        self.calibration_params = calibration_params
        self.n_eval_pairs = n_eval_pairs
        self.n_threads = n_threads
        self.rng = rng
        self.threshold_scale = threshold_scale
        self.n_components = n_components
        self.check = check

    def _check_params(self):
        self._check_common_params()
        if not isinstance(self.balance, (bool, np.bool_)):
            raise TypeError(f"balance must be True or False, got {self.balance!r}")
        if not isinstance(self.check, (bool, np.bool_)):
            raise ValueError(f"check must be True or False, got {self.check!r}")
        if self.calibration_params is not None and not isinstance(self.calibration_params, dict):
            raise TypeError(f"calibration_params must be a dict or None, got {self.calibration_params!r}")
        self._check_calibration(**(self.calibration_params or {}))

    def fit(self, pairs, y, calibration_params=None):
        """Learn the metric from ``pairs`` (n_pairs, 2, d) and ``y`` (n_pairs,) in {-1, +1}.

        calibration_params : overrides the constructor's for this fit (metric-learn's signature).
        Returns self.
        """
        self._check_params()
        with search_threads(self.n_threads):
            a, b = check_pairs(pairs, self)
            check_fit_magnitude(a, "pairs")
            check_fit_magnitude(b, "pairs")
            y = _check_pair_labels(y, a.shape[0])
            a, b = self._repair_glitched_points(a, b, y)
            return self._fit_points(a, b, y, calibration_params)

    def _repair_glitched_points(self, a, b, y):
        """The pairs' points ``a``, ``b`` (n_pairs, d) with their glitched rows repaired
        (:func:`logt.metric_learning.outliers.glitched_pair_points`: more than 1% of the points with entries orders
        of magnitude beyond the others', not tied to the pair labels), a warning when there are any; sets
        ``n_repaired_``. Not under ``scaling=None`` (the points are the user's)."""
        self.n_repaired_ = 0
        if self.scaling is None:
            return a, b
        a, b, ra, rb = _outliers.glitched_pair_points(a, b, y)
        self.n_repaired_ = int(ra.sum() + rb.sum())
        if self.n_repaired_:
            warnings.warn(_outliers.repair_message(self.n_repaired_, 2 * a.shape[0], "pair points"),
                          _outliers.GlitchedRowsWarning, stacklevel=3)
        return a, b

    def _fit_points(self, a, b, y, calibration_params=None, points=None):
        """:meth:`fit` on checked input: the pairs' points ``a``, ``b`` ((n_pairs, d) float64, rows contiguous) and
        labels ``y`` (n_pairs,) in {-1, +1} (the check's fold fits call it on their share of the pairs, with no
        stacked copy of them and no second validation, and with their distinct points ``points`` taken from
        their parent's: :func:`fold_points`)."""
        n = a.shape[0]
        both = len(np.unique(y)) == 2                  # both kinds of pair
        if self.balance and not both:
            raise ValueError("balance=True needs both similar (+1) and dissimilar (-1) pairs in y")
        cal = self.calibration_params if calibration_params is None else calibration_params
        if cal is not None and not isinstance(cal, dict):
            raise TypeError(f"calibration_params must be a dict or None, got {cal!r}")
        self._check_calibration(**(cal or {}))
        i = np.arange(n, dtype=np.int64)
        gen = check_rng(self.rng)
        self.check_accuracy_ = None
        with single_threaded_blas():
            # the stacked points unless a principal subspace is used (then found from the pairs' distinct points,
            # weighted; the points are not stacked, their coordinates are)
            Z, active_in, _ = self._subspace_fit((a, b), gen, distinct=True if points is None else points)
            points, self._distinct_rows = self._distinct_rows, None      # found on wide input (else None)
            # the metric check's Euclidean candidate: the identity's rows at the varying features, if not too big
            euclid = (bool(self.check) and self.n_components is None and both
                      and int(active_in.sum()) * active_in.size <= _subspace.EUCLIDEAN_MAX_ENTRIES)
            Xs = self._scale_fit(Z)
            learn = self._learn_threshold
            oracle = MetricLearning.from_pairs(
                Xs, i, i + n, y, float(self.lam), balanced=bool(self.balance),
                n_eval_pairs=int(self.n_eval_pairs), eval_rng=int(gen.integers(2**63)),
                n_threads=self.n_threads, learn_threshold=learn,
                threshold=0.0 if learn else float(self.threshold),
                threshold_scale=self._oracle_threshold_scale())
            self.n_features_in_ = Z.shape[1]
            # zero: Euclidean kept; warnings at fit's caller (fit -> _fit_points -> _minimize)
            self._minimize(oracle, gen, stacklevel=4, zero_fallback="euclidean" if euclid else None)
            self._subspace_finish(active_in)
        if not both:                              # one kind of pair only: the model's own threshold
            self.threshold_ = float(np.sqrt(max(self.b_, 0.0)))
            self.calibration_ = {"how": "model", "n_pairs": 0}
            return self._fitted(stacklevel=4)
        del Z, Xs, oracle                       # the check's fold fits need the memory
        cal = dict(cal or {})
        if euclid and not np.any(self.components_):
            self._keep_euclidean(a, b, y, active_in, cal)       # a zero metric (warned) cannot beat anything
            return self._fitted(stacklevel=4)
        self.threshold_ = _threshold(self._points_distance(a, b), y, **cal)      # the training pairs' threshold
        self.calibration_ = {"how": "training pairs", "n_pairs": int(n)}
        if self.check:
            # the metric check on a principal subspace only (few features: the learned metric was rarely behind
            # Euclidean and the check cost it more than it saved: docs, "The pairs learner's checks on new pairs")
            plain = None
            if self.subspace_ is not None:     # wide input; an int n_components: the default's metric at rank k
                plain = "default" if self.n_components is not None else "euclidean" if euclid else "subspace"
            self._check(a, b, y, cal, gen.spawn(1)[0], active_in, plain, points)
        return self._fitted(stacklevel=4)

    def _keep_euclidean(self, a, b, y, active, cal):
        """Plain Euclidean distances on the varying features ``active`` (d,) bool: ``components_`` the
        identity's rows there (``metric_choice_ = "euclidean"``), ``threshold_`` calibrated on the training
        pairs ``(a, b)`` (n_pairs, d) with labels ``y`` (their distances are not fitted: no check needed)."""
        self.components_ = _subspace.selection_rows(active)
        self.n_components_ = self.components_.shape[0]
        self.metric_choice_ = "euclidean"
        self.threshold_ = _threshold(_row_distances(a, b, active), y, **cal)
        self.calibration_ = {"how": "training pairs", "n_pairs": int(a.shape[0])}

    def _check(self, a, b, y, cal, gen, active, plain=None, points=None):
        """``check=True``: the held-out pairs' distances (:meth:`_heldout_distances`) first check the metric
        against ``plain`` distances (None: no metric check; "euclidean": on the varying features ``active``;
        "subspace": the principal subspace's, each fold's own): the learned metric is kept only when its ROC AUC
        is ahead by more than ``subspace.CHECK_Z`` standard errors of the paired difference (:func:`auc_difference`,
        within each fold); else :meth:`_keep_euclidean` or the subspace's rows. The training pairs' ``threshold_``
        of the metric kept (learned or subspace) is then replaced by the held-out pairs' own calibration when that
        answers them better (accuracy, :func:`_ahead`: needs 2 held-out pairs of each label) or always (other
        strategies: ``CALIBRATION_MIN_PAIRS`` of each); with fewer, a ``UserWarning``. Sets ``check_accuracy_``,
        ``metric_choice_`` and ``calibration_``. ``points``: the pairs' distinct points, if known."""
        dist, mask, fold, sub, folds = self._heldout_distances(a, b, y, gen, subspace=plain == "subspace",
                                                               points=points)
        yh = y[mask]
        scorable = any(len(np.unique(yh[fold == f])) == 2 for f in np.unique(fold))    # a fold with both labels
        if plain == "default" and scorable:
            dist = self._default_rank_check(a, b, y, cal, gen, folds, mask, fold, dist)
        elif plain is not None and scorable:
            other = _row_distances(a[mask], b[mask], active) if plain == "euclidean" else sub
            diff, se, auc, auc_plain = auc_difference(yh, -dist, -other, fold)
            self.check_accuracy_ = {"learned": auc, plain: auc_plain, "how": "held-out pairs",
                                    "n_pairs": int(yh.size)}
            if not diff > _subspace.CHECK_Z * se:           # the rule of subspace.choose_candidate
                if plain == "euclidean":
                    self._warn_near_chance(yh, other, fold, "plain Euclidean distances (the check's choice)")
                    self._keep_euclidean(a, b, y, active, cal)
                    return
                # the subspace's own distances; their threshold is checked below like a learned metric's
                self.components_ = self.subspace_.copy()
                self.n_components_ = self.components_.shape[0]
                self.metric_choice_ = "subspace"
                self.threshold_ = _threshold(_row_distances(a, b, rows=self.components_), y, **cal)
                dist = other
        if scorable:
            what = {"subspace": "the principal subspace's distances (the check's choice)",
                    "default": f"the distances of the default's metric at rank {self.n_components} (the check's "
                               "choice)"}
            self._warn_near_chance(yh, dist, fold, what.get(self.metric_choice_, "the learned metric's distances"))
        accuracy = cal.get("strategy", "accuracy") == "accuracy"
        need = 2 if accuracy else CALIBRATION_MIN_PAIRS
        if min(int((yh > 0).sum()), int((yh < 0).sum())) < need:
            unchecked = " and the metric against plain distances" if self.check_accuracy_ is None else ""
            warnings.warn(
                f"PairsMetricLearner: too few held-out pairs to check threshold_{unchecked} on pairs the metric was "
                f"not fitted on (fewer than {need} of a label with both points in one of {CALIBRATION_FOLDS} folds "
                "of the points); it is calibrated on the training pairs, which can overstate how well distances "
                "separate new pairs. Remedy: calibrate_threshold(pairs, y) on validation pairs.",
                UserWarning, stacklevel=4)
            return
        self.calibration_ = {"how": "training pairs, checked", "n_pairs": int(mask.sum())}
        if not accuracy or _ahead(dist, yh, self.threshold_):
            # both labels held out: every strategy's rate is reachable (all pairs dissimilar / similar)
            self.threshold_ = _threshold(dist, yh, **cal)
            self.calibration_["how"] = "cross-fitted"

    def _warn_near_chance(self, yh, dist, fold, what):
        """A ``UserWarning`` at the caller of ``fit`` when the held-out pairs' ROC AUC under the distances
        ``dist`` of the metric kept (``what``), within each fold (labels ``yh``; some fold holds both), is not
        above chance (0.5) by more than two standard errors (DeLong: :func:`auc_difference` against a constant
        score)."""
        diff, se, auc, _ = auc_difference(yh, -dist, np.zeros(yh.size), fold)
        if diff > 2.0 * se:
            return
        rank = ""
        if self.subspace_ is not None and self.n_components is not None and self.metric_choice_ == "learned":
            other = (self.check_accuracy_ or {}).get("default")
            other = "" if other is None else (f"; the check's other candidate, the default's metric at that rank, "
                                              f"was not kept (AUC {other:.3f})")
            rank = (f" With n_components={self.n_components} on wide input the metric lives in the top "
                    f"{self.n_components} principal directions, which may be noise (features in unrelated units, "
                    f"many noisy features){other}: compare n_components=None.")
        warnings.warn(
            f"PairsMetricLearner: on the {yh.size} held-out pairs (points the fold's metric was not fitted on), "
            f"{what} separate similar from dissimilar pairs no better than chance: ROC AUC {auc:.3f}, standard "
            f"error {se:.3f}, not above 0.5 by two standard errors. The labels may not depend on the features "
            f"through a distance, or there are too few pairs to learn from.{rank}", UserWarning, stacklevel=5)

    def _default_rank_check(self, a, b, y, cal, gen, folds, mask, fold, dist):
        """An int ``n_components`` on wide input: the check's candidate "default", the metric learned as the
        default learns it (``n_components=None``: on the pairs' principal subspace of :func:`subspace.auto_rank`
        directions, its coordinates standardized) truncated to its top ``k`` rows (:func:`top_rows`; rows come
        largest first). The top ``k`` principal directions the rank-``k`` metric lives in follow the largest
        variances; where those are noise (features in unrelated units) the default's wider subspace still holds
        the signal. Each fold's held-out pairs (``mask``, ``fold``, and ``folds`` from :meth:`_heldout_distances`)
        are measured under a default fitted (``check=False``, from ``gen``) on the pairs with no point in the fold;
        it replaces the learned metric only when its ROC AUC there (within each fold) is ahead of the learned
        metric's (distances ``dist``) by more than ``subspace.CHECK_Z`` standard errors (:func:`auc_difference`), and
        is then learned again on every pair (``a`` and ``b``, fit's own points; labels ``y``):
        ``subspace_`` and ``subspace_mean_`` its directions, the model's attributes (``b_``, scaling, ``result_``,
        ...) that fit's, ``metric_choice_ = "default"``, its threshold calibrated on the training pairs (``cal``;
        checked like a learned metric's by :meth:`_check`). Sets ``check_accuracy_``; returns the held-out pairs'
        distances of the metric kept."""
        fa, fb, points = folds
        k = self.n_components
        params = {**self.get_params(), "n_components": None, "check": False, "calibration_params": None,
                  "rng": gen}
        dd = np.full(a.shape[0], np.nan)
        for f in np.unique(fold):
            test = (fa == f) & (fb == f) & mask
            train = (fa != f) & (fb != f)
            est = self._quiet_fit(params, a[train], b[train], y[train], fold_points(points, train))
            dd[test] = _row_distances(a[test], b[test], rows=top_rows(est.components_, k))
        dd = dd[mask]
        yh = y[mask]
        diff, se, auc_default, auc = auc_difference(yh, -dd, -dist, fold)
        self.check_accuracy_ = {"learned": auc, "default": auc_default, "how": "held-out pairs",
                                "n_pairs": int(yh.size)}
        if not diff > _subspace.CHECK_Z * se:
            return dist
        est = self._quiet_fit(params, a, b, y, points)      # fit's own points: no copy of the pairs
        if not np.any(est.components_):        # a zero metric on every pair: the learned one stays
            return dist
        for name, value in vars(est).items():   # the model is that fit's: its subspace, scaling, b_, result_, ...
            if name.endswith("_") and not name.startswith("_") and name not in (
                    "threshold_", "calibration_", "check_accuracy_", "metric_choice_"):
                setattr(self, name, value)
        self.components_ = top_rows(est.components_, k)
        self.n_components_ = k
        self.metric_choice_ = "default"
        self.threshold_ = _threshold(_row_distances(a, b, rows=self.components_), y, **cal)
        return dd

    def _quiet_fit(self, params, a, b, y, points=None):
        """A fresh estimator with ``params`` fitted on the pairs ``a``, ``b`` (n, d; checked) with labels ``y``
        (checked) and their distinct ``points`` (:func:`distinct_points`' answer, or None), its warnings silenced
        (the check's fits)."""
        est = type(self)(**params)
        est._check_params()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est._fit_points(a, b, y, points=points)
        return est

    def _heldout_distances(self, a, b, y, gen, subspace=False, points=None):
        """``(dist, mask, fold, sub, folds)``: the held-out pairs of ``check`` (``mask``, (n_pairs,) bool), their
        distances and folds (each (mask.sum(),)) under metrics learned without their points (:func:`point_folds`
        from ``gen``; ``folds`` is ``(fa, fb, points)``, the pairs' points' folds and the distinct points, ``points``
        when given, else found here; each fold's fit on a fresh estimator with these parameters, ``check=False``,
        drawing from ``gen``, its warnings silenced, its distinct points taken from them: :func:`fold_points`)
        and, with ``subspace``, their distances in each fold's principal subspace (``sub``; else None)."""
        points = distinct_points(a, b) if points is None else points
        fa, fb = point_folds(a, b, gen, points=points)
        dist = np.full(a.shape[0], np.nan)
        sub = np.full(a.shape[0], np.nan) if subspace else None
        fold = np.full(a.shape[0], -1)
        params = {**self.get_params(), "check": False, "calibration_params": None, "rng": gen}
        for f in range(CALIBRATION_FOLDS):
            test = (fa == f) & (fb == f)
            train = (fa != f) & (fb != f)
            if not test.any() or len(np.unique(y[train])) < 2:
                continue
            est = self._quiet_fit(params, a[train], b[train], y[train], fold_points(points, train))
            dist[test] = est._points_distance(a[test], b[test])
            if subspace:                 # a fold of full rank (its points vary on few features): all of them
                sub[test] = _row_distances(a[test], b[test], rows=est.subspace_)
            fold[test] = f
        mask = ~np.isnan(dist)
        return dist[mask], mask, fold[mask], (sub[mask] if subspace else None), (fa, fb, points)

    # ---- metric-learn's pair classifier ----------------------------------------------
    def decision_function(self, pairs):
        """``-||x - x'||_W`` for each pair (higher = more similar). Returns (n_pairs,)."""
        return self.pair_score(pairs)

    def predict(self, pairs):
        """+1 (similar: ``pair_distance <= threshold_``) or -1 for each pair. Returns (n_pairs,) int."""
        check_fitted(self)
        if not hasattr(self, "threshold_"):
            raise AttributeError("threshold_ is not set: call calibrate_threshold or set_threshold")
        return np.where(self.pair_distance(pairs) <= self.threshold_, 1, -1)

    def score(self, pairs, y):
        """ROC AUC of :meth:`decision_function` against ``y`` in {-1, +1}."""
        s = self.decision_function(pairs)
        return roc_auc(_check_pair_labels(y, len(s)), s)

    def set_threshold(self, threshold):
        """Set the distance threshold of :meth:`predict`. Returns self."""
        check_fitted(self)
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) \
                or not np.isfinite(threshold):
            raise ValueError(f"threshold must be a finite real number, got {threshold!r}")
        self.threshold_ = float(threshold)
        return self

    @staticmethod
    def _check_calibration(strategy="accuracy", min_rate=None, beta=1.0):
        if strategy not in CALIBRATION_STRATEGIES:
            raise ValueError(f"strategy must be one of {CALIBRATION_STRATEGIES}, got {strategy!r}")
        if strategy in ("max_tpr", "max_tnr"):
            if isinstance(min_rate, bool) or not isinstance(min_rate, numbers.Real) or not 0 <= min_rate <= 1:
                raise ValueError(f"min_rate must be a number in [0, 1] for strategy {strategy!r}, "
                                 f"got {min_rate!r}")
        if strategy == "f_beta":
            if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not np.isfinite(beta) or beta < 0:
                raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")

    def calibrate_threshold(self, pairs_valid, y_valid, strategy="accuracy", min_rate=None, beta=1.0):
        """Choose ``threshold_`` on validation pairs (metric-learn's strategies).

        strategy : "accuracy" (maximize accuracy), "f_beta" (maximize the F-beta
        score of the similar class), "max_tpr" (largest true positive rate with a
        true negative rate >= ``min_rate``), "max_tnr" (largest true negative
        rate with a true positive rate >= ``min_rate``). The threshold is the
        distance of the last pair accepted as similar (every pair closer is
        similar too); when rejecting all pairs is best, it is just below the
        smallest distance. Returns self.
        """
        check_fitted(self)
        self._check_calibration(strategy, min_rate, beta)
        dist = self.pair_distance(pairs_valid)
        y = _check_pair_labels(y_valid, len(dist))
        self.threshold_ = _threshold(dist, y, strategy, min_rate, beta)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    def _more_tags(self):          # scikit-learn < 1.6
        return {"requires_y": True}


if not HAVE_SKLEARN:
    del PairsMetricLearner.__sklearn_tags__
