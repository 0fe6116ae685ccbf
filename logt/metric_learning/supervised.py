"""``MetricLearner``: supervised Mahalanobis metric learning ``fit(X, y)`` with O(log T) projections."""
import warnings

import numpy as np
import scipy.sparse as sp

from logt._rng import check_rng
from logt._threads import search_threads, single_threaded_blas
from logt.metric_learning._base import (MahalanobisLearner, _active_columns, check_fit_magnitude, check_labels,
                                        check_points, full_mean, full_rows, scaled_active, top_rows)
from logt.metric_learning import outliers as _outliers
from logt.metric_learning import subspace as _subspace
from logt.metric_learning._compat import HAVE_SKLEARN, TransformerMixin
from logt.metric_learning.loss_choice import LOSSES, choose_loss
from logt.oracles.neighbors import MAX_NEIGHBORS
from logt.metric_learning.whitening import WHITENINGS, fit_whitening, whiten_rows
from logt.oracles.metric import SAMPLINGS, MetricLearning, plain_label
from logt.oracles.neighbors import check_impostor_radius
from logt.oracles.softmax import SoftmaxMetricLearning
from logt.oracles.triplet import TripletMetricLearning

__all__ = ["MetricLearner", "DEFAULTS", "PAPER", "softmax_targets"]

# Defaults, chosen by measurement on data sets that are not the evaluation targets
# (see docs/guide/metric-learning.md, logt.experiments.learner_defaults and docs/evidence/learner-defaults.md).
DEFAULTS = dict(sampling="neighbors", n_neighbors=10, threshold="learn", lam=0.1, T="auto",
                scaling="auto", threshold_scale="auto", impostor_radius=1.5, loss=None, triplet_neighbors=None,
                whiten="targets")
# triplet_neighbors=None: the targets per point of the triplet loss and of the softmax on a subspace (chosen by the
# wide sweeps), and of the softmax on few features: per class, one per ROWS_PER_TARGET rows of the class, within
# FULL_RANK_SOFTMAX_TARGETS (chosen by the few-feature sweeps: docs/guide/metric-learning.md, "The loss")
TARGETS = 3
FULL_RANK_SOFTMAX_TARGETS = (5, 12)
ROWS_PER_TARGET = 25
# The parameters only the pair loss reads: one set away from its default makes loss=None the pair loss.
PAIR_ONLY = ("sampling", "threshold", "threshold_scale")
# The paper's Fig. 2 objective: uniform pairs, fixed threshold 1, lam = 0.1, instances in the unit ball (its
# learned metric as is: no check against plain distances).
PAPER = dict(sampling="uniform", threshold=1.0, lam=0.1, scaling="max_norm", loss="pairs", whiten=None, check=False)


def _nothing_to_beat(hits, further_z=None):
    """Whether the check's choice so far (:func:`subspace.choose_candidate` of ``hits``, ``further_z`` its
    further candidates' margin) hits every checked row: then no further candidate is fitted."""
    return bool(np.all(hits[_subspace.choose_candidate(hits, further_z=further_z)]))


def softmax_targets(sizes):
    """The softmax's targets per point on few features, per class: ``round(m / ROWS_PER_TARGET)`` for a class
    of ``m`` rows, within ``FULL_RANK_SOFTMAX_TARGETS`` (5 up to 137 rows, 12 from 288). sizes : (C,) ints;
    returns (C,) int32. A large class's nearest class-mates are close even when many; a small class's
    farther ones may sit in another of its clusters (docs/guide/metric-learning.md, "The loss")."""
    lo, hi = FULL_RANK_SOFTMAX_TARGETS
    return np.clip(np.rint(np.asarray(sizes) / ROWS_PER_TARGET), lo, hi).astype(np.int32)


class MetricLearner(TransformerMixin, MahalanobisLearner):
    """Learn a Mahalanobis distance from labelled points, with O(log T) projections.

    On dense input (and on a subspace's coordinates) minimizes, over PSD ``W``, the neighbour softmax of
    :class:`logt.oracles.SoftmaxMetricLearning` (NCA's soft-neighbour likelihood over each point's fixed
    candidates, its nearest class-mates and other-class points: convex)::

        F(W) = mean_i [ (1/t_i) sum_{j in T_i} q_ij / s + log sum_{c in C_i} exp(-q_ic / s) ] + (lam/2) ||W||_F^2

    (``q_ic = ||x_i - x_c||_W^2``, ``s`` the mean squared target distance); on sparse input the logistic pair
    loss over PSD ``W`` and a threshold ``b >= 0``::

        F(W, b) = E_{(i,j)} [ log(1 + exp(-y_ij (b - ||x_i - x_j||_W^2))) ] + (lam/2) (||W||_F^2 + (b/s)^2)

    (``s`` = ``threshold_scale``, ``y_ij = +1`` for equal labels) on the compiled pair oracle
    :class:`logt.oracles.MetricLearning`; either with :func:`logt.minimize` (Algorithm 1 by default).
    The data are scaled internally (``scaling``), so raw features of any
    magnitude work; the learned metric refers to the original features.

    ``loss`` chooses the objective: "pairs" (the pair loss on any input), "softmax" (dense input or a
    subspace), "triplets" (:class:`logt.oracles.TripletMetricLearning`, a smooth LMNN: each anchor's target
    neighbour closer than its impostors by a margin) or "auto" (the pair or the triplet loss, chosen per problem
    by cross-validation, :mod:`logt.metric_learning.loss_choice`).

    Parameters
    ----------
    loss
        None (default), "pairs", "triplets", "softmax" or "auto". None: "softmax" on dense input and
        whenever the metric is learned on a principal subspace (its coordinates are dense); "pairs" on sparse
        input on few features, and whenever a parameter marked (pairs) below is set away from its default
        (``sampling``, ``threshold``, ``threshold_scale``: setting one asks for the pair loss). On many classes,
        or classes of several clusters, the softmax's metric is far ahead of the pair loss's (on few features
        the pair loss's metric may even be zero); elsewhere they are level
        (``docs/guide/metric-learning.md``, "The loss"). "softmax": each
        point's ``triplet_neighbors`` nearest class-mates against them and its ``2 n_neighbors``
        nearest other-class points; dense input (or a subspace); ``T="auto"`` is then
        ``auto_budget(lam) / 5`` anchors (each costs about ``3 + 2 n_neighbors`` pair gradients).
        "triplets" wins on small, well-separated
        classes and loses on overlapping ones (``docs/guide/metric-learning.md``). "auto": 3-fold
        stratified cross-validation of "pairs" and "triplets" on the training data (held-out 1-NN
        and 5-NN accuracy) when a fit is cheap (dense, ``n d^2 <= 2^20``, every class >= 3
        points), the triplet loss only when better by more than one standard error; else
        "pairs". It costs ~7 fits and is not the default: at n ~ 100 the cross-validation
        rarely detects the better loss. The choice is ``loss_``.
        The parameters below marked (pairs) are read by the pair loss only.
    triplet_neighbors
        None (default) or an int in [1, 256]: targets and impostors listed per point for the triplet loss
        (``impostor_radius`` restricts the impostors as for pairs), and the softmax loss's targets per point.
        None: for the softmax on few features (the full-rank path), per class, one per 25 rows of the class
        between 5 and 12 (:func:`softmax_targets`: 5 up to 137 rows, 12 from 288); else 3 (the triplet loss, the
        softmax on a subspace); ``triplet_neighbors_`` holds the values used. The softmax's targets and
        impostors are the exact nearest ones while the search costs at most
        :func:`logt.oracles.neighbors.search_cap`'s budget (up to ~21,000 rows at 10 features, ~15,000 at 128),
        beyond that nearest within a seeded subsample of each larger class (at least 2,000 rows).
    sampling
        (pairs) "neighbors" (default), "balanced" or "uniform" -- which pairs one
        oracle call draws. "neighbors": similar and dissimilar pairs with
        probability 1/2 each, ``j`` among ``i``'s ``n_neighbors`` nearest
        same-class resp. other-class points (in the scaled input space; LMNN's
        target neighbours and impostors); "balanced": the same over all
        class-mates resp. all other-class points; "uniform": any pair (the paper's).
    n_neighbors
        int in [1, 256], neighbours per list for "neighbors" (default 10); the softmax loss's candidates include
        ``i``'s ``2 n_neighbors`` nearest other-class points.
    impostor_radius
        float > 0 or None, for "neighbors" and the triplet loss (default 1.5; not read by the softmax, which
        weighs its other-class candidates by how close they come): of ``i``'s
        ``n_neighbors`` nearest other-class points only those within ``impostor_radius``
        times the distance of ``i``'s farthest same-class neighbour are kept (LMNN's
        impostors; :func:`logt.oracles.neighbors.restrict_impostors`). A point
        far from every other class then draws no dissimilar pair, so the easy pairs
        stop dominating the metric. None keeps all ``n_neighbors`` (the previous model).
    threshold
        (pairs) "learn" (default: ``b`` is fitted) or a number ``b >= 0`` kept
        fixed (the paper: 1).
    threshold_scale
        (pairs) "auto" (default) or a number ``s > 0``: the unit in which a
        learned ``b`` is regularized (``(lam/2) (b/s)^2``; the optimizer's coordinate
        is ``b/s``). "auto": ``s = sqrt(E ||x_i - x_j||^4)`` over the sampler's pairs
        (the ``n_eval_pairs`` evaluation pairs), the size of a typical pair's
        ``D D^T``, so ``b`` and ``W`` are regularized in the same units whatever the
        data's scale, and the threshold's curvature (``s^2/4`` instead of ``1/4``) no
        longer sets the step size. ``1.0`` is the previous model. Ignored for a fixed
        threshold.
    lam
        float > 0, the regularization (default 0.1, as in the paper).
    T
        int or "auto" (default), budget of oracle samples: pair gradients (pair loss), anchors (softmax: each about
        ``3 + 2 n_neighbors`` candidates) or triplets. "auto": ``max(1e5, 200 / lam)`` (capped at 1e8), a fifth
        of it in anchors for the softmax: 1e5 pairs or 2e4 anchors at the default ``lam``; see
        ``logt.metric_learning.auto_budget``. A run that falls short of what its own analysis needs is run once
        more at 1.5x the budget it names (within 32x and a work cap; ``result_.params["regrown"]``,
        ``logt.metric_learning._base.regrow_budget``). An int is used as given, once.
    scaling
        "auto" (default: per-feature standardization for dense input, a feature of
        two values divided by half its range, as if balanced, so rare categories are
        not stretched; one common factor for sparse; with an int ``n_components`` on
        wide input, where the default too takes a subspace, one common factor: the
        principal coordinates keep the data's units, unless the check keeps the
        default's directions, ``metric_choice_ == "default"``), "standardize" (every
        dense feature by its standard deviation), "max_norm" or None; see
        :mod:`logt.metric_learning.scaling`. Every mode ends with instances of
        norm <= 1 (the oracle's smoothness bound).
    n_components
        None (default) or an int ``k``: the number of rows of ``components_``, so ``transform`` maps to
        ``k`` dimensions (scikit-learn's and metric-learn's convention). An int on few features (where the
        default learns a full-rank metric): that metric, learned as with ``check=False``, truncated to its
        top ``k`` rows (largest eigenvalues of ``W`` in the scaled, whitened space it is learned in; rows of
        zeros below its rank): the fit of ``MetricLearner(check=False)`` bit for bit, its first ``k``
        rows. It finds the directions the labels need whatever the features' units, where the top
        principal directions (the previous model) follow the largest raw variances: on wine (proline in
        the hundreds) ``k = 2`` gave 0.72 against 0.98 (docs/guide/metric-learning.md, "n_components on
        few features"). An int on wide input (where the default too takes a subspace): the metric is
        learned on the top-``k`` principal directions of the training points and composed with them,
        and ``check`` compares it with those directions themselves (PCA to ``k``) and with the default's
        directions' metric truncated to rank ``k``. None: the
        full-rank metric when the varying features are few (at most 128 and fewer than the samples),
        else a subspace: the top principal directions (rank
        :func:`logt.metric_learning.subspace.auto_rank`: the fewest holding 95% of the variance, 16 to
        64) plus the span of the class means outside them (at most ``n_classes - 1`` directions). The
        metric (the softmax loss, unless ``loss`` says otherwise) is then learned on 75% of each class
        and checked by 1-NN on the other 25% (at most 2,000 of those rows, ``subspace.CHECK_MAX_ROWS``)
        against the subspace's Euclidean metric and, on dense input, plain Euclidean distances on the
        raw features: the plainest of them (Euclidean, else the subspace) is kept unless another is
        ahead of it on the same rows by more than one standard error
        (``subspace.choose_candidate``); then two further candidates, a metric learned with the class
        means' standardized directions added (``subspace.standardized_mean_directions``) and one learned
        on the principal directions alone (with few rows per class in many features the class-mean
        directions are mostly their rows' noise), in turn replace the choice so far only when ahead of
        it by one standard error too; a kept learned metric is learned again on all rows
        (``metric_choice_``, ``check_accuracy_``: the check's numbers, from the 75% fit). Classes too
        small to hold 20 rows out: the check is cross-fitted instead (4 stratified folds, each row's
        hits under a subspace found, and a metric learned, without its fold; the further candidates too, kept
        only when ahead by two standard errors, ``subspace.CROSSFIT_FURTHER_Z``; up to 12 more fits, at such
        ``n`` a few tenths of a second). When no candidate hits the checked rows above a random neighbour by two
        binomial standard errors (:func:`logt.metric_learning.subspace.near_chance`), a ``UserWarning`` says
        so, with the accuracies and the remedies (more rows, comparable units; counts spanning decades:
        ``numpy.log1p(X)`` first). See ``docs/guide/high-dimensional.md``. The full-rank metric is checked
        too (``check``).
    whiten
        "targets" (default) or None. "targets": after the scaling, dense input is mapped so
        that the differences of target pairs (each point and its ``n_neighbors`` nearest
        class-mates) have identity covariance (Ledoit-Wolf shrinkage toward a multiple of
        the identity), and the neighbour lists are searched in that space; the metric is
        then learned there and mapped back (:mod:`logt.metric_learning.whitening`). Every
        loss. Sparse input is not whitened. None: the scaled space (the previous model).
    check
        True (default) or False. With ``n_components=None``, whether the learned metric is checked against plain
        distances on rows it was not fitted on and replaced by them unless it is ahead by more than one standard
        error of the paired 1-NN hit difference (:func:`logt.metric_learning.subspace.choose_candidate`); when
        neither is above chance on those rows (:func:`logt.metric_learning.subspace.near_chance`) a ``UserWarning``
        says so. A subspace: as described under ``n_components``. An int ``n_components`` on wide input: the metric
        is learned on 75% of each class (cross-fitted on 4 folds when fewer than 20 rows would be held out, each
        fold's principal directions found without it) and kept, learned again on all rows, unless the principal
        coordinates themselves hit more of the checked rows (then PCA to ``k``: ``metric_choice_ == "subspace"``,
        ``components_`` is ``subspace_``; :func:`logt.metric_learning.subspace.choose_rank_candidate`); there is no
        plain-Euclidean candidate (its rank would not be ``k``). A third candidate (held out or cross-fitted as the
        others): the default's directions (its principal ones, the class-mean and the standardized class-mean
        directions), the metric learned there as the default learns it (per-feature scaling of those coordinates),
        truncated to its top ``k`` rows; it replaces the choice only when ahead of it by more than one standard
        error, and is then learned again on all rows (``metric_choice_ == "default"``, ``subspace_`` those
        directions). The top principal directions follow the largest variances; where those are noise (features in
        unrelated units, few informative ones) the class means still find the classes: on 307 wide problems at
        ``k = 2, 3, 8, 64`` it raised the mean k-NN accuracy from 0.437 to 0.529 (better by more than 0.02 on 304
        fits of 1,228, worse on 2; docs/guide/high-dimensional.md, "The default's directions for n_components"). When no
        candidate is above chance on the checked rows (:func:`logt.metric_learning.subspace.near_chance`) a
        ``UserWarning`` says so. On 287 wide fits at ``k = 64`` the check turned 22 learned metrics below Euclidean
        k-NN by more than 0.02 into 3 (``docs/guide/high-dimensional.md``, "The check of n_components"); cost:
        median 2.5x the fit time of ``check=False`` held out (1.95x at ``k = 64``, 4x at ``k = 8``), 9x cross-fitted
        (a few dozen rows: at most 0.7 s); on few features an int ``n_components`` is not checked (the full-rank
        metric's top rows; Euclidean distance has rank ``d``).
        Full rank (few features): after the final fit on every
        row (untouched), the metric learned with these parameters is compared with Euclidean distances on the
        raw varying features, cross-fitted on 4 stratified folds at a quarter of the budget below ~2,000 rows
        (fewer than ``subspace.FULL_RANK_HOLDOUT_MIN`` = 500 rows to hold out), else learned at the full budget
        on 75% of each class and checked on the other 25% (at most 2,000 rows); a kept Euclidean metric makes
        ``components_`` the identity's rows at the varying features (raw units: invariant to one common scale
        factor, not to per-feature scales). A zero learned metric (``DegenerateMetricWarning``) is replaced by
        Euclidean distances without a check. Cost: about 3.4x the fit time of ``check=False`` on small problems,
        one fit on 75% of the rows more on large ones (about 1.9x). False: the learned metric as is (and on wide
        input no rows held out). On 560 random problems of few features it turned 95 learned metrics below
        Euclidean k-NN by more than 0.02 into 8 (``docs/guide/metric-learning.md``, "The check on few
        features").
    method
        "auto" (default: :func:`logt.minimize`'s default call), "logt" (Algorithm 1), "logt_acc", "sgd"
        or "epoch_gd".
    params
        logT's parameter rule: "auto" (default: the curvature is estimated
        from the oracle and the epochs sized from it, see ``logt.methods.logt.LogT``;
        its oracle calls count in ``T``), "practical" (the former default, tuned on
        Mushrooms and Adult at ``lam = 0.1``: ``eta = 4/L``, ``M = 8``, ``B1 = 4``;
        :func:`logt.metric_learning.practical_metric_params`; it stalls when
        ``M eta lam << 1``, e.g. ``lam = 0.001``), any rule name ``logt.minimize``
        accepts ("theorem1", "theorem2", ...) or a dict ``{"eta", "M", "B1"}``.
        Ignored by the other methods.
    options
        dict or None, further keywords for ``logt.minimize`` (e.g.
        ``{"delta": 0.05}`` for "theorem2", ``{"average": "uniform"}`` for sgd).
    n_eval_pairs
        int, pairs drawn once from the sampler to report ``F`` at the end
        (``result_.fun``), default 10_000. ``result_.trace`` holds the counts per epoch
        only (``logt.minimize(..., trace="counts")``).
    n_threads
        None or an int in [1, 64]: threads of the sparse pair kernel (None: up to 2) and of the fit's blocked
        searches on many rows, the neighbour tables and the check's 1-NN (None: one per CPU this process may
        use). The result does not depend on it. Set 1 when fits run in parallel already (e.g.
        ``GridSearchCV(n_jobs=...)``).
    rng
        int seed, ``SeedSequence``, ``Generator`` or None: all randomness of
        ``fit`` (pairs, evaluation pairs, neighbour candidates). The same seed
        gives bit-identical fits.

    Attributes
    ----------
    n_components_
        int, the number of rows of ``components_``.
    subspace_, subspace_mean_
        (k, d) and (d,), the principal subspace the metric was learned on, or None (full rank, and an int
        ``n_components`` on few features: the full-rank metric's top rows); ``metric_choice_ == "default"``: the
        default's directions (``(m, d)``, ``m`` not ``k``) its metric was learned on. With a
        subspace, ``center_``, ``scale_`` and ``whitening_`` refer to its ``k`` coordinates.
    metric_choice_
        "learned"; "subspace" when the check kept the subspace's Euclidean metric (for an int ``n_components``:
        the top principal directions, ``components_`` is ``subspace_``); "default" (an int ``n_components`` on
        wide input) when it kept the metric learned on the default's directions, truncated to rank ``k``; "euclidean"
        when it kept plain Euclidean distances (``check``; ``components_`` then selects the varying features,
        or, when that would exceed ``subspace.EUCLIDEAN_MAX_ENTRIES`` entries, is ``n - 1`` orthonormal
        rows spanning the training rows' differences: the same nearest neighbours among the training rows
        from any point; ``subspace.span_rows``).
    check_accuracy_
        dict, or None (no check ran: ``check=False``, an int ``n_components`` on few features, or a zero learned
        metric): the 1-NN accuracies of the check, ``learned``, ``euclidean`` and, on a subspace, ``subspace``
        (there ``euclidean`` on dense input with ``n_components=None`` only, see above; an int ``n_components``:
        ``default`` too, absent when the choice before it hit every row), ``how`` ("held-out",
        or "cross-fitted" when the classes are too small to hold out 20 rows) and ``n_rows`` checked; on the
        default's subspace (held out or cross-fitted), also
        ``standardized`` (the metric learned with the standardized class-mean directions), ``principal``
        (the metric learned on the principal directions alone) and ``principal_units`` (the
        same in the data's units, not standardized), each absent when the check's choice so far hit every row
        (``standardized`` also without such directions; ``principal_units`` also where ``principal`` is absent
        or ``scaling`` is not "auto"),
        and ``directions``: the directions ``subspace_`` holds ("principal, class means", "principal, class
        means, standardized class means", "principal" or "principal, in the data's units": then ``scale_`` is
        one common factor, as an int ``n_components`` scales its coordinates).
    components_
        (rank, d), ``L`` with ``W = L^T L`` on the original features
        (metric-learn's name); ``get_mahalanobis_matrix()`` returns ``W``. A learned metric's rows come in
        decreasing order of ``W``'s eigenvalues in the space it is learned in, so its first ``k`` rows are its
        rank-``k`` truncation there (what an int ``n_components`` is on few features).
    b_
        the threshold on the squared distance (learned or the fixed one), in the scaled space;
        nan for the softmax and triplet losses, which have no threshold.
    threshold_scale_
        the ``s`` used (1.0 for a fixed threshold and for the softmax and triplet losses).
    loss_
        "pairs", "triplets" or "softmax", the loss fitted.
    triplet_neighbors_
        ndarray of shape (n_classes,), int32: the targets per point of each class (in ``classes_`` order) that
        ``triplet_neighbors`` resolved to (read by the triplet and softmax losses).
    loss_scores_
        ``{"pairs": a, "triplets": a}``, the cross-validated accuracies behind ``loss="auto"``'s choice,
        or None (not run).
    center_, scale_
        (d,), the internal scaling ``(x - center_) / scale_`` (fitted without the
        outlier rows: a row beyond 5x the 99th-percentile row norm).
    n_clipped_
        int, training rows found to be outliers and pulled in to the unit sphere
        for the fit (0 on clean data; :mod:`logt.metric_learning.scaling`; with the whitening,
        also the rows it found to be outliers).
    n_repaired_
        int, glitched training rows repaired before everything else (any ``scaling`` but None): more than 1%
        (and 5) of the rows, at most 25%, above a gap in the robust row norms (sparse input: robust magnitudes
        of the nonzeros), their entries beyond the other rows' range replaced by the features' medians (sparse:
        typical nonzero values; or the whole row scaled back); a
        :class:`~logt.metric_learning.outliers.GlitchedRowsWarning` says so. 0 on clean data
        (:mod:`logt.metric_learning.outliers`).
    whitening_
        (d_active, d_active) or None, the map from the scaled active features to the space
        the metric is learned in (``whiten="targets"``; None when not whitened).
    whitening_shrinkage_
        Its Ledoit-Wolf shrinkage ``a`` (nan when not whitened).
    active_features_
        (d,) bool, the features that vary over the training rows.
        A constant feature adds 0 to every pair difference, so ``W`` is exactly 0 in
        its row and column at the optimum; the optimizer runs on the others only
        (``(d - constant)^2`` instead of ``d^2`` per pair, ``(d - constant)^3`` per projection).
    classes_, n_features_in_, n_calls_, n_projections_, n_epochs_
        The labels, the number of input features, the oracle calls, projections and epochs of the run.
    result_
        the :class:`logt.MinimizeResult` (in the scaled space of the active
        features: ``x`` is ``diag(W, b)`` with a learned threshold, ``fun`` is ``F``
        on the evaluation pairs).

    Notes
    -----
    Use :meth:`paper` for the paper's Fig. 2 setting. Parameters are stored as given and checked in
    :meth:`fit`.
    """

    def __init__(self, sampling="neighbors", n_neighbors=10, threshold="learn", lam=0.1, T="auto",
                 scaling="auto", method="auto", params="auto", options=None, n_eval_pairs=10_000,
                 n_threads=None, rng=None, threshold_scale="auto", impostor_radius=1.5, loss=None,
                 triplet_neighbors=None, whiten="targets", n_components=None, check=True):
        self.sampling = sampling
        self.n_neighbors = n_neighbors
        self.threshold = threshold
        self.lam = lam
        self.T = T
        self.scaling = scaling
        self.method = method
        self.params = params
        self.options = options
        self.n_eval_pairs = n_eval_pairs
        self.n_threads = n_threads
        self.rng = rng
        self.threshold_scale = threshold_scale
        self.impostor_radius = impostor_radius
        self.loss = loss
        self.triplet_neighbors = triplet_neighbors
        self.whiten = whiten
        self.n_components = n_components
        self.check = check

    @classmethod
    def paper(cls, **kwargs):
        """The paper's Fig. 2 setting: uniform pairs, fixed threshold 1, ``lam = 0.1``,
        instances scaled into the unit ball by one common factor (``scaling="max_norm"``).
        ``kwargs`` override any parameter."""
        return cls(**{**PAPER, **kwargs})

    # ---- scikit-learn tags --------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    def _more_tags(self):          # scikit-learn < 1.6
        return {"requires_y": True, "preserves_dtype": [np.float64]}

    def _check_params(self):
        self._check_common_params()
        if self.sampling not in SAMPLINGS:
            raise ValueError(f"sampling must be one of {SAMPLINGS}, got {self.sampling!r}")
        for name in ("n_neighbors", "triplet_neighbors"):
            k = getattr(self, name)
            if k is None and name == "triplet_neighbors":
                continue
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= MAX_NEIGHBORS:
                what = "None or an int" if name == "triplet_neighbors" else "an int"
                raise ValueError(f"{name} must be {what} in [1, {MAX_NEIGHBORS}], got {k!r}")
        check_impostor_radius(self.impostor_radius)
        if self.loss is not None and (not isinstance(self.loss, str) or self.loss not in LOSSES):
            raise ValueError(f"loss must be None or one of {LOSSES}, got {self.loss!r}")
        if not (self.whiten is None or (isinstance(self.whiten, str) and self.whiten in WHITENINGS)):
            raise ValueError(f"whiten must be one of {WHITENINGS}, got {self.whiten!r}")
        if not isinstance(self.check, (bool, np.bool_)):
            raise ValueError(f"check must be True or False, got {self.check!r}")

    def fit(self, X, y):
        """Learn the metric from ``X`` (n, d; dense or sparse, magnitudes up to ``2^1000``) and labels ``y`` (n,).

        Pairs with equal labels are "similar". Needs at least 2 samples and 2
        classes ("balanced"/"neighbors": and a class with 2 samples). Returns self.
        """
        self._check_params()
        with search_threads(self.n_threads):
            X = check_points(X, "X", self)
            check_fit_magnitude(X)
            y, classes, codes = check_labels(y, X.shape[0])
            if X.shape[0] < 2:
                raise ValueError(f"Found array with {X.shape[0]} sample(s) (shape={X.shape}) while a minimum "
                                 f"of 2 is required by {type(self).__name__}.")
            if len(classes) < 2:
                raise ValueError(f"{type(self).__name__} needs at least 2 classes in y (pairs of both kinds), "
                                 f"got 1 class: {plain_label(classes[0])!r}")
            if (self.sampling != "uniform" or self.loss not in (None, "pairs")) and np.bincount(codes).max() < 2:
                what = (f"loss={self.loss!r}" if self.loss not in (None, "pairs") else
                        "the default (the neighbour softmax, or neighbour pairs)" if self.loss is None
                        and self.sampling == DEFAULTS["sampling"] else f"sampling={self.sampling!r}")
                raise ValueError(f"{what} needs a class with at least 2 samples "
                                 "(a similar pair); every label in y is unique")
            gen = check_rng(self.rng)
            self.check_accuracy_ = None
            X = self._repair_glitched_rows(X, codes)
            with single_threaded_blas():
                # Z: X unless a subspace
                Z, active_in, fit_rows = self._subspace_fit(X, gen, codes, holdout=bool(self.check))
            self._full_rank = self.subspace_ is None
            # the check runs for the default and for an int n_components on wide input (few features: not checked)
            checked = bool(self.check) and (self.n_components is None or self._wide_subspace)
            # the full-rank check's generator, spawned before anything else draws from gen's children: the check
            # is the same whatever the loss (loss="auto" spawns its folds' generator next)
            check_gen = gen.spawn(1)[0] if self.subspace_ is None and checked else None
            loss, scores = self.loss, None
            if loss is None:
                loss = self._default_loss(Z)
            if loss in ("triplets", "softmax") and sp.issparse(Z):
                raise TypeError(f"loss={loss!r} needs dense X; densify it (X.toarray()), use loss='pairs', or "
                                "n_components (the subspace coordinates are dense)")
            Zall, codes_all = Z, codes
            if fit_rows is not None:                 # the default's held-out rows: for the check only
                Z, codes, y = Z[fit_rows], codes[fit_rows], y[fit_rows]
            if loss == "auto":
                # the folds' generator is spawned: gen's own stream (and so the final fit) is untouched
                loss, scores = choose_loss(self, Z, y, codes, gen.spawn(1)[0])
            self.classes_ = classes
            self.loss_, self.loss_scores_ = loss, scores
            # a zero full-rank metric: Euclidean kept; on a checked subspace: the check follows (the warning says so)
            fallback = ("euclidean" if check_gen is not None else
                        "checked" if self.subspace_ is not None and checked else None)
            self._fit_metric(Z, codes, gen, zero_fallback=fallback)
            with single_threaded_blas():
                check = (self._check_hits(X, Zall, codes_all, fit_rows, active_in, gen)
                         if self.subspace_ is not None and checked else None)
                extended, metric, principal, principal_units, default = None, None, None, None, None
                if check is not None and fit_rows is not None and self.n_components is None:
                    # the further candidates' fits draw from spawned generators: gen's own stream (the refit below)
                    # is untouched
                    extended, metric = self._standardized_check(X, Zall, codes_all, fit_rows, check[0],
                                                                gen.spawn(1)[0])
                    gen_principal = gen.spawn(1)[0]
                    principal = self._principal_check(Zall, codes_all, fit_rows, check[0], gen_principal)
                    if principal is not None:        # its form in the data's units next (spawned from its generator)
                        principal_units = self._principal_units_check(Zall, codes_all, fit_rows, check[0],
                                                                      gen_principal.spawn(1)[0])
                elif check is not None and self.n_components is None:
                    # cross-fitted: the same two further candidates on the check's folds (spawned generators too)
                    extended, metric, principal, principal_units = self._further_crossfit(
                        X, Zall, codes_all, active_in, check[0], gen.spawn(1)[0], gen.spawn(1)[0])
                elif check is not None and self.n_components is not None:
                    # an int n_components: the default's directions, truncated to rank k (a spawned generator too)
                    default = self._default_rank_check(X, codes_all, fit_rows, active_in, check[0], gen.spawn(1)[0])
                kept = self._subspace_finish(active_in, X, check, metric, principal, default, principal_units)
                if check is not None:
                    self._warn_near_chance(check[0], codes_all, fit_rows, kept=kept)
                if kept == "standardized":
                    Zall = extended
                elif kept in ("principal", "principal_units"):
                    Zall = Zall[:, :self._n_principal]
                    # the refit on every row scales the coordinates as the candidate did (_scaling_mode)
                    self._wide_subspace = kept == "principal_units"
                elif kept == "default":
                    Zall = default[0]
                    self._wide_subspace = False         # its coordinates scaled as the default scales them
            self._standardized_rows = self._check_folds = self._principal_top = None
            if self.metric_choice_ == "default" or (self.metric_choice_ == "learned" and
                                                    (fit_rows is not None or kept is not None)):
                # the check kept a learned metric: learn it again on every row (the held-out ones included; a
                # cross-fitted further candidate: first learned on every row here)
                choice = self.metric_choice_
                self._fit_metric(Zall, codes_all, gen)
                with single_threaded_blas():
                    self._subspace_finish(active_in)
                self.metric_choice_ = choice
            if check_gen is not None:
                # the full-rank metric, checked after its final fit (which is untouched: the check's fits draw
                # from a spawned generator); a zero metric (warned) cannot beat anything: Euclidean, unchecked
                with single_threaded_blas():
                    if np.any(self.components_):
                        self._full_rank_check(X, codes_all, active_in, check_gen)
                    else:
                        self.metric_choice_ = "euclidean"
                    if self.metric_choice_ == "euclidean":
                        # the identity's rows at the varying features (as many rows as the learned metric may have)
                        self.components_ = _subspace.selection_rows(active_in)
                        self.n_components_ = self.components_.shape[0]
            self.triplet_neighbors_ = self._targets(codes_all)
            return self._fitted()

    def _targets(self, codes):
        """The targets per point of the loss fitted, one per class present in ``codes`` (int32, in class order):
        ``triplet_neighbors``; None: :func:`softmax_targets` of the class sizes for the softmax on the full-rank
        path (``self._full_rank``, as :meth:`fit` or a check's fit sets it), else ``TARGETS``."""
        sizes = np.bincount(codes)
        sizes = sizes[sizes > 0]
        if self.triplet_neighbors is None and self.loss_ == "softmax" and getattr(self, "_full_rank", False):
            return softmax_targets(sizes)
        k = TARGETS if self.triplet_neighbors is None else int(self.triplet_neighbors)
        return np.full(len(sizes), k, dtype=np.int32)

    def _default_loss(self, Z):
        """What ``loss=None`` fits on ``Z`` (the features or a subspace's coordinates): "pairs" on sparse input
        (the softmax needs dense rows) and whenever a parameter of the pair loss only (``PAIR_ONLY``) is set away
        from its default; else "softmax"."""
        if sp.issparse(Z) or any(getattr(self, name) != DEFAULTS[name] for name in PAIR_ONLY):
            return "pairs"
        return "softmax"

    def _repair_glitched_rows(self, X, codes):
        """``X`` with its glitched rows repaired (:func:`logt.metric_learning.outliers.glitched_rows`: more than 1%
        of the rows with entries orders of magnitude beyond the others', those entries replaced by the features'
        medians, or for sparse ``X`` their typical nonzero values), a warning when there are any; sets
        ``n_repaired_``. Not under ``scaling=None`` (the rows are the user's)."""
        self.n_repaired_ = 0
        if self.scaling is None:
            return X
        X, rows = _outliers.glitched_rows(X, codes)
        self.n_repaired_ = int(rows.sum())
        if self.n_repaired_:
            warnings.warn(_outliers.repair_message(self.n_repaired_, X.shape[0], sparse=sp.issparse(X)),
                          _outliers.GlitchedRowsWarning, stacklevel=3)
        return X

    def _full_rank_check(self, X, codes, active, gen):
        """The default's check of a full-rank metric (few features): the metric learned with these parameters
        on rows it is then checked without, against plain Euclidean distances on the varying raw features, by
        1-NN. Cross-fitted (4 stratified folds, :func:`subspace.fold_split`: every row checked under a metric
        learned without its fold, each fold's fit at ``subspace.FULL_RANK_CHECK_BUDGET`` of the budget) when fewer
        than ``subspace.FULL_RANK_HOLDOUT_MIN`` rows would be held out, i.e. below ~2,000 rows; else learned at
        the full budget on 75% of each class (:func:`subspace.holdout_split`) and checked on the other 25% (at
        most ``subspace.CHECK_MAX_ROWS``). Splits and fits draw from ``gen``. :func:`subspace.choose_candidate` keeps
        Euclidean unless the learned metric is ahead by more than one standard error. Sets ``check_accuracy_``
        and ``metric_choice_`` (:meth:`_record_check`; :meth:`fit` then applies a Euclidean choice). The check's
        fits run on fresh estimators (warnings silenced); the final fit (``self``'s metric, learned on every row)
        is untouched."""
        n = X.shape[0]
        Xe = _active_columns(X, active)

        T_fold = _subspace.fold_budget(self._budget(), _subspace.FULL_RANK_CHECK_BUDGET)

        def learned_on(rows, T=None):
            return np.asarray(X @ self._check_fit(X[rows], codes[rows], gen, T).components_.T)

        fit_rows = _subspace.holdout_split(codes, gen, min_rows=_subspace.FULL_RANK_HOLDOUT_MIN)
        if fit_rows is None:
            folds = _subspace.fold_split(codes, gen)
            learned = np.zeros(n)
            for f in range(_subspace.CROSSFIT_FOLDS):
                te = folds == f
                tr = ~te
                if te.any() and _subspace.can_learn(codes[tr]):
                    A = learned_on(tr, T_fold)
                    learned[te] = _subspace.split_hits(A, codes, tr, te)
            Xe = Xe.toarray() if sp.issparse(Xe) else Xe          # ~2,000 rows x at most 128 features
            hits = {"learned": learned, "euclidean": _subspace.crossfit_hits(Xe, codes, folds)}
            how, n_check = "cross-fitted", n
        else:
            fr, ho = fit_rows, _subspace.check_rows(~fit_rows)
            A = learned_on(fr)
            hits = {c: _subspace.split_hits(B, codes, fr, ho) for c, B in (("learned", A), ("euclidean", Xe))}
            how, n_check = "held-out", int(ho.size)
        self._record_check(hits, how, n_check)
        self._warn_near_chance(hits, codes, fit_rows, stacklevel=4)

    def _fit_metric(self, Z, codes, gen, zero_fallback=None):
        """Scale (and whiten) ``Z`` (n, k), build the oracle of ``loss_`` and run logT: ``components_`` on
        ``Z``'s features (``zero_fallback``: what a zero metric's warning says follows, see
        :meth:`_zero_metric_message`)."""
        loss = self.loss_
        with single_threaded_blas():
            Xs = self._scale_fit(Z)
            eval_seed = int(gen.integers(2**63))
            Xs = self._whiten_fit(Xs, codes, eval_seed)
            self.n_features_in_ = Z.shape[1]
            targets = self._targets(codes)
            if loss == "softmax":
                oracle = SoftmaxMetricLearning(
                    Xs, codes, float(self.lam), n_targets=targets,
                    n_impostors=min(2 * int(self.n_neighbors), MAX_NEIGHBORS), n_eval_anchors=int(self.n_eval_pairs),
                    eval_rng=eval_seed)
            elif loss == "triplets":
                oracle = TripletMetricLearning(
                    Xs, codes, float(self.lam), n_neighbors=int(targets[0]),
                    impostor_radius=self.impostor_radius, n_eval_triplets=int(self.n_eval_pairs),
                    eval_rng=eval_seed)
            else:
                learn = self._learn_threshold
                oracle = MetricLearning(
                    Xs, codes, float(self.lam), n_eval_pairs=int(self.n_eval_pairs), eval_rng=eval_seed,
                    n_threads=self.n_threads, sampling=self.sampling, n_neighbors=int(self.n_neighbors),
                    learn_threshold=learn, threshold=0.0 if learn else float(self.threshold),
                    threshold_scale=self._oracle_threshold_scale(), impostor_radius=self.impostor_radius)
            self._minimize(oracle, gen, stacklevel=4, zero_fallback=zero_fallback)

    def _check_hits(self, X, Z, codes, fit_rows, active, gen):
        """The default's check on a subspace: ``(hits, how, n_rows)`` for :meth:`_subspace_finish`, each
        candidate's 1-NN hits on the checked rows (name -> float (n_rows,)): the learned metric (the
        current ``components_`` on the subspace coordinates ``Z`` of all rows, fitted on ``fit_rows``),
        the subspace itself and, on dense input (:func:`subspace.euclidean_candidate`), the raw features
        ``X``. On the held-out rows (``~fit_rows``, at most ``subspace.CHECK_MAX_ROWS``) against the fit
        rows, or, when nothing is held out (``fit_rows`` None), cross-fitted on every row
        (:meth:`_crossfit_hits`, from a generator spawned from ``gen``)."""
        if fit_rows is None:
            # too few rows to hold any out: cross-fitted (a metric is never checked on its own rows)
            folds, h = self._crossfit_hits(X, codes, active, gen.spawn(1)[0])
            self._check_folds = folds               # for an int n_components' third candidate
            hits = lambda A, columns=None: _subspace.crossfit_hits(A, codes, folds, columns=columns)  # noqa: E731
            how, n_check = "cross-fitted", Z.shape[0]
        else:
            fr, ho = fit_rows, _subspace.check_rows(~fit_rows)
            hits = lambda A, columns=None: _subspace.split_hits(A, codes, fr, ho, columns)   # noqa: E731
            how, n_check = "held-out", int(ho.size)
            h = {"learned": hits(Z @ self.components_.T), "subspace": hits(Z)}
        if self.n_components is None and _subspace.euclidean_candidate(X, active):
            h["euclidean"] = hits(X, active)        # the rows at the varying features: no copy of all of them
        return h, how, n_check

    def _warn_near_chance(self, hits, codes, fit_rows, stacklevel=3, kept=None):
        """The check (the default's, on wide input or on few features, or an int ``n_components``'s): a
        ``UserWarning`` at the caller of ``fit`` (``stacklevel`` from here) when its best candidate (``hits``:
        name -> float (m,), every candidate scored) is not above chance (:func:`subspace.near_chance`: a
        neighbour drawn at random, two standard errors) on the checked rows (held out: ``~fit_rows`` against
        ``fit_rows``; cross-fitted: every row). Then whatever the check keeps is no better than a random
        neighbour there: the labels may not depend on the features, or
        the class information sits where no candidate looks (the principal directions follow the largest
        variances: features in unrelated units, many noisy features, counts spanning decades), and the user is
        told so with the remedies. On few features (no subspace) the candidates are the full-rank metric and
        Euclidean distances on the raw features. Cross-fitted, a further candidate counts only when ``kept`` (the
        further candidate :meth:`_subspace_finish` kept, or None): the best of five candidates on a few dozen rows
        is above chance by luck more often than the best of three, which is why the rule keeps one only by
        ``subspace.CROSSFIT_FURTHER_Z`` standard errors (measured: one scored and not kept silenced the warning on
        a tiny problem whose labels are independent of the features, and on fits that kept plain distances)."""
        if fit_rows is None:
            hits = {c: h for c, h in hits.items() if c not in _subspace.FURTHER_CANDIDATES or c == kept}
            ref = query = np.ones(codes.size, dtype=bool)
        else:
            ref, query = fit_rows, _subspace.check_rows(~fit_rows)
        chance = _subspace.chance_hits(codes, ref, query)
        best = max(hits.values(), key=lambda h: float(np.mean(h)))
        if not _subspace.near_chance(best, chance):
            return
        acc, k = self.check_accuracy_, self.n_components
        if k is None:
            names = {"learned": "the learned metric", "subspace": "the subspace's Euclidean metric",
                     "euclidean": "plain Euclidean distances",
                     "standardized": "the metric with the standardized class means",
                     "principal": "the metric on the principal directions alone",
                     "principal_units": "the metric on the principal directions alone, in the data's units"}
            who, compare = type(self).__name__, f"It keeps {names[self.metric_choice_]} (metric_choice_). "
        else:
            names = {"learned": f"the rank-{k} metric on the top {k} principal directions",
                     "subspace": f"PCA to {k}", "default": f"the default's directions' metric truncated to rank {k}"}
            who, compare = f"{type(self).__name__}(n_components={k})", (
                "Compare n_components=None (its check also compares plain distances), for a rank-k map its learned "
                "metric truncated, MetricLearner().fit(X, y).components_[:k] (when its metric_choice_ is "
                "'learned': rows come largest first). ")
        scored = "; ".join(f"{names[c]} {acc[c]:.3f}" for c in names if c in hits)
        where = ("the directions tried miss the ones they need (the principal directions follow the largest "
                 "variances: features in unrelated units, many noisy features)" if self.subspace_ is not None else
                 "the features bear on the labels in a way no distance between rows captures (features in "
                 "unrelated units, skewed ones)")
        warnings.warn(
            f"{who}: on the {acc['n_rows']} rows the check scored ({acc['how']}), no candidate is above chance by "
            f"more than two standard errors (1-NN accuracy: {scored}; a random neighbour {chance:.3f}, two "
            f"standard errors {_subspace.chance_margin(chance, best.size):.3f}). The labels may not depend on the "
            f"features, or {where}. {compare}Remedies: more rows, "
            "features rescaled to comparable units, or, for counts spanning decades (gene expression, raw "
            "intensities), numpy.log1p(X): the metric is linear in the features and cannot undo their skew.",
            UserWarning, stacklevel=stacklevel)

    def _standardized_check(self, X, Z, codes, fit_rows, hits, gen):
        """The held-out check's further candidate: the metric learned, on the fit rows, on the subspace
        extended by the standardized class-mean directions (:func:`subspace.standardized_mean_directions`,
        from the fit rows; ``_standardized_rows``, (m, d)); its 1-NN hits on the held-out rows go into
        ``hits["standardized"]`` and :func:`subspace.choose_candidate` keeps it only when it beats the check's
        choice among the others by more than one standard error. ``Z`` (n, k): every row's subspace
        coordinates; ``gen`` draws the candidate's fit (a fresh estimator, warnings silenced). Returns every
        row's coordinates in the extended subspace (n, k + m) and the candidate's ``components_`` on them, or
        ``(None, None)`` (no candidate) when there are no such directions or the check's choice hits every
        checked row (nothing to beat)."""
        rows = self._standardized_rows
        if rows is None or rows.shape[0] == 0 or _nothing_to_beat(hits):
            return None, None
        Z2 = np.hstack([Z, _subspace.project_rows(X, self.subspace_mean_, rows)])
        return Z2, self._held_out_candidate("standardized", Z2, codes, fit_rows, hits, gen)

    def _further_crossfit(self, X, Z, codes, active, hits, gen_standardized, gen_principal):
        """The two further candidates when the check is cross-fitted (``fit_rows`` None; the check's folds,
        ``_check_folds``): each fold's rows scored under a metric learned on the other folds' rows, on the
        directions found from those rows as the default finds them (:func:`subspace.default_principal`, then
        the class-mean directions), extended by their standardized class-mean directions
        (:func:`subspace.standardized_mean_directions`; ``hits["standardized"]``), and on those principal
        directions alone (``hits["principal"]``). Skipped as the held-out check skips them
        (:meth:`_standardized_check`, :meth:`_principal_check`): no such directions from every row, or the
        choice so far hits every row; the standardized one also where its directions outnumber the principal ones
        (many classes: 800 classes of 3 rows in 1,850 features took 127 s with it, 49 s without the further
        candidates); a fold whose other rows have nothing to learn from
        (:func:`subspace.can_learn`): misses. The rule keeps one only when ahead of the choice by
        ``subspace.CROSSFIT_FURTHER_Z`` standard errors (two: a few dozen checked rows). With many classes of a few
        rows, too few to hold any out, the class-mean directions are mostly the rows' own noise: there the
        principal directions alone are the better metric (docs/guide/high-dimensional.md, "Further candidates when
        cross-fitted").

        Then, where the choice so far (these two included) still misses a row and ``scaling`` is "auto", the third:
        each fold's principal coordinates again, the metric in the data's units (:meth:`_principal_units_check`;
        ``hits["principal_units"]``; its fits from a generator spawned from ``gen_principal`` after the principal
        candidate's). Measured on classes of 2-4 rows: plain distances (0.42 on new rows) gave way to it (0.87).

        ``gen_standardized``, ``gen_principal``: each candidate's fits (fresh estimators, warnings silenced, at
        ``subspace.CROSSFIT_BUDGET`` of the budget, at least 4,000 calls, as the learned candidate's fold fits)
        and range finders (above ``subspace.EXACT_MAX_FEATURES`` features). Returns ``(extended, standardized,
        principal, principal_units)`` as the held-out candidates give them: every row's coordinates on the
        subspace extended by ``_standardized_rows`` (from every row; None when not a candidate), and, for a
        candidate the rule may keep, a placeholder metric (one zero row on its coordinates: kept, :meth:`fit`
        learns it on every row), else None."""
        std_rows, kp = self._standardized_rows, self._n_principal
        # the standardized candidate only where its directions are no more than the principal ones: each of its
        # fits' projections is an eigendecomposition of that size, and with more classes than that, of few rows
        # each, class-mean directions of either kind are their rows' noise (the principal candidate's case)
        do_std = std_rows is not None and 0 < std_rows.shape[0] <= kp
        do_principal = kp < Z.shape[1]
        if not (do_std or do_principal) or _nothing_to_beat(hits):
            return None, None, None, None
        folds = self._check_folds
        Xa, unit = scaled_active(X, active)
        wide = Xa.shape[1] > _subspace.EXACT_MAX_FEATURES
        T_fold = _subspace.fold_budget(self._budget(), _subspace.CROSSFIT_BUDGET)
        h = {name: np.zeros(codes.size) for name in ("standardized", "principal")}
        fold_principal = {}        # each fold's principal coordinates (every row), for the data-units candidate
        for f in range(_subspace.CROSSFIT_FOLDS):
            te = folds == f
            tr = ~te
            if not te.any() or not _subspace.can_learn(codes[tr]):
                continue
            mean_a, principal_a = _subspace.default_principal(Xa[tr], gen_standardized.spawn(1)[0] if wide else None)
            mean = full_mean(X, active, mean_a * unit)
            bases = {"principal": principal_a} if do_principal else {}
            if do_std:
                extended_a = np.vstack([principal_a, _subspace.class_mean_directions(Xa, codes, mean_a, principal_a,
                                                                                     rows=tr)])
                bases["standardized"] = np.vstack([extended_a, _subspace.standardized_mean_directions(
                    Xa, codes, mean_a, extended_a, rows=tr)])
            for name, basis_a in bases.items():
                Zf = _subspace.project_rows(X, mean, full_rows(basis_a, active))
                g = gen_standardized if name == "standardized" else gen_principal
                h[name][te] = self._fold_hits(Zf, codes, tr, te, g, T_fold)
                if name == "principal":
                    fold_principal[f] = Zf
        extended = metric = principal = principal_units = None
        if do_std:
            hits["standardized"] = h["standardized"]
            extended = np.hstack([Z, _subspace.project_rows(X, self.subspace_mean_, std_rows)])
            metric = np.zeros((1, extended.shape[1]))
        if do_principal and not _nothing_to_beat(hits, _subspace.CROSSFIT_FURTHER_Z):
            hits["principal"] = h["principal"]
            principal = np.zeros((1, kp))
            if self.scaling == "auto" and not _nothing_to_beat(hits, _subspace.CROSSFIT_FURTHER_Z):
                # the same fold coordinates in the data's units (their fits from a generator spawned after the
                # principal candidate's)
                g = gen_principal.spawn(1)[0]
                hu = np.zeros(codes.size)
                for f, Zf in fold_principal.items():
                    hu[folds == f] = self._fold_hits(Zf, codes, folds != f, folds == f, g, T_fold, data_units=True)
                hits["principal_units"] = hu
                principal_units = np.zeros((1, kp))
        return extended, metric, principal, principal_units

    def _principal_check(self, Z, codes, fit_rows, hits, gen):
        """The held-out check's other further candidate: the metric learned, on the fit rows, on the principal
        coordinates alone (``Z``'s first ``_n_principal`` columns, without the class-mean directions). With few
        rows per class in many features, a class mean's direction outside the principal subspace is mostly the
        sampling noise of its own rows: along it the fit rows of that class stand apart by construction and new
        rows do not, and a metric learned with it can score near zero on new rows (measured on the 16 problems of
        ``python -m logt.bench.learners_highdim --identities 30`` whose check held rows out, 4-11 rows per class
        and d 300-4,000: 0.00-0.99, median 0.09, on the checked rows, where the principal coordinates alone
        scored 0.53-1.00, median 1.00, ahead on all 16). Its 1-NN hits on the held-out rows go into
        ``hits["principal"]``; :func:`subspace.choose_candidate` keeps it only when it beats the check's choice by
        more than one standard error. ``gen`` draws its fit (a fresh estimator, warnings silenced). Returns its
        ``components_`` on the principal coordinates, or None (no class-mean directions, or the check's choice
        hits every checked row)."""
        kp = self._n_principal
        if kp >= Z.shape[1] or _nothing_to_beat(hits):
            return None
        return self._held_out_candidate("principal", Z[:, :kp], codes, fit_rows, hits, gen)

    def _principal_units_check(self, Z, codes, fit_rows, hits, gen):
        """The held-out check's third further candidate, after :meth:`_principal_check` (and only where that one
        ran): the metric learned, on the fit rows, on the same principal coordinates (``Z``'s first
        ``_n_principal`` columns) scaled as an int ``n_components`` scales them, in the data's units (one common
        factor, "max_norm", :meth:`_scaling_mode`), not standardized. Standardized, each coordinate weighs the
        same however little of the variance it holds; where the classes differ along the leading directions and
        not in their means (classes made of several clusters whose means coincide,
        :func:`logt.experiments.highdim_data.multimodal`) the weak coordinates' noise drowns them, and the learned
        metric fell to the other candidates' level (docs/guide/high-dimensional.md, "A probe of unseen kinds of
        data"). Its 1-NN hits on the held-out rows go into ``hits["principal_units"]``;
        :func:`subspace.choose_candidate` keeps it only when it beats the check's choice so far (the other further
        candidates included) by more than one standard error, and :meth:`fit` then learns it again on every row
        in the same units. Cross-fitted, :meth:`_further_crossfit` scores it fold by fold. ``gen`` draws its fit
        (a fresh estimator, warnings silenced). Returns its
        ``components_`` on the principal coordinates, or None (the check's choice so far hits every checked
        row; or ``scaling`` is not "auto": a scaling the user chose is kept)."""
        if self.scaling != "auto" or _nothing_to_beat(hits):
            return None
        return self._held_out_candidate("principal_units", Z[:, :self._n_principal], codes, fit_rows, hits, gen,
                                        data_units=True)

    def _default_rank_check(self, X, codes, fit_rows, active, hits, gen):
        """An int ``n_components`` on wide input, the check's third candidate ("default"): the default's
        directions (:meth:`_default_directions`), the metric learned on them as the default learns it (per-feature
        scaling, softmax), truncated to its top ``k`` rows (:func:`top_rows`). The top ``k`` principal
        directions, which the other two candidates live in, follow the largest variances; where those are noise
        (features in unrelated units, few informative features) the class means still point at the classes.
        Held out: the directions' principal part from every row, the class-mean parts and the metric from the fit
        rows; cross-fitted (``fit_rows`` None; the check's folds, ``_check_folds``): each fold's rows under
        directions and a metric from the other folds only (:meth:`_default_rank_crossfit`). Its 1-NN hits on the
        checked rows go into ``hits["default"]``; :func:`subspace.choose_rank_candidate` keeps it only when ahead of
        the choice by more than one standard error, and :meth:`fit` then learns it again on every row. ``gen``:
        the range finders' generators (above ``subspace.EXACT_MAX_FEATURES`` features) and the fits'. Returns
        every row's coordinates on the directions ``Z`` (n, m), the directions ``(mean (d,), basis (m, d))`` and
        the metric's ``components_`` on ``Z`` (r, m; None when cross-fitted), or None (the choice hits every
        checked row: nothing to beat; cross-fitted: not kept)."""
        if _nothing_to_beat(hits):
            return None
        if fit_rows is None:
            return self._default_rank_crossfit(X, codes, active, hits, gen)
        Z, directions = self._default_directions(X, codes, active, None, fit_rows, gen)
        return Z, directions, self._held_out_candidate("default", Z, codes, fit_rows, hits, gen, as_default=True,
                                                       rank=self.n_components)

    def _default_rank_crossfit(self, X, codes, active, hits, gen):
        """The third candidate cross-fitted on the check's folds (``_check_folds``): each fold's rows scored under
        the default's directions found from the other folds' rows and the metric learned there (a fold whose
        other rows have nothing to learn from, :func:`subspace.can_learn`: misses). When the rule keeps it,
        every row's coordinates on the directions found from all rows (``(Z, directions, None)``: :meth:`fit`
        learns its metric on them), else None."""
        folds, k = self._check_folds, self.n_components
        h = np.zeros(codes.size)
        for f in range(_subspace.CROSSFIT_FOLDS):
            te = folds == f
            tr = ~te
            if not te.any() or not _subspace.can_learn(codes[tr]):
                continue
            Z, _ = self._default_directions(X, codes, active, tr, tr, gen)
            components = self._check_fit(Z[tr], codes[tr], gen, as_default=True).components_
            h[te] = _subspace.split_hits(Z @ top_rows(components, k).T, codes, tr, te)
        hits["default"] = h
        if _subspace.choose_rank_candidate(hits) != "default":
            return None
        return (*self._default_directions(X, codes, active, None, None, gen), None)

    def _default_directions(self, X, codes, active, principal_rows, mean_rows, gen):
        """``(Z (n, m), (mean (d,), basis (m, d)))``: the default's directions, its principal ones
        (:func:`subspace.default_principal`) of the rows ``principal_rows`` (a bool mask; None: every row) and
        the class-mean and standardized class-mean directions of the rows ``mean_rows``, and every row's
        coordinates on them. ``gen``: the range finder's (above ``subspace.EXACT_MAX_FEATURES`` features). From
        every row, the fit's own top principal directions (``_principal_top``) are reused when they are enough
        (``k >= 64``, or as many as the rows allow)."""
        Xa, unit = scaled_active(X, active)
        rng = gen.spawn(1)[0] if Xa.shape[1] > _subspace.EXACT_MAX_FEATURES else None
        if principal_rows is None:     # every row: the top principal directions the fit found, when enough
            mean_a, basis_a = _subspace.default_principal(Xa, rng, top=self._principal_top)
        else:
            mean_a, basis_a = _subspace.default_principal(Xa[principal_rows], rng)
        basis_a = np.vstack([basis_a, _subspace.class_mean_directions(Xa, codes, mean_a, basis_a, rows=mean_rows)])
        basis_a = np.vstack([basis_a, _subspace.standardized_mean_directions(Xa, codes, mean_a, basis_a,
                                                                             rows=mean_rows)])
        mean, basis = full_mean(X, active, mean_a * unit), full_rows(basis_a, active)
        return _subspace.project_rows(X, mean, basis), (mean, basis)

    def _held_out_candidate(self, name, Zc, codes, fit_rows, hits, gen, as_default=False, rank=None,
                            data_units=False):
        """A further candidate of the held-out check: the metric learned (:meth:`_check_fit`, from ``gen``;
        ``as_default``: scaled as the default's; ``data_units``: in the data's units) on the fit rows of the
        coordinates ``Zc`` (n, k); its 1-NN hits on the checked held-out rows (with ``rank``: of its top ``rank``
        rows, :func:`top_rows`) go into ``hits[name]``. Returns its ``components_`` (on ``Zc``'s coordinates,
        untruncated)."""
        fr, ho = fit_rows, _subspace.check_rows(~fit_rows)
        components = self._check_fit(Zc[fr], codes[fr], gen, as_default=as_default,
                                     data_units=data_units).components_
        A = Zc @ (components if rank is None else top_rows(components, rank)).T
        hits[name] = _subspace.split_hits(A, codes, fr, ho)
        return components

    def _crossfit_hits(self, X, codes, active, gen):
        """``(folds, {"learned": hits, "subspace": hits})`` for the default's check when no rows can be held
        out: each row's fold (:func:`subspace.fold_split`, from ``gen``) and whether its 1-NN among the
        other folds' rows is of its class, in the subspace found as the default finds it
        (:func:`subspace.default_principal` on the ``active`` features, then the class-mean directions; an int
        ``n_components``: that many principal directions, at most one fewer than those rows) from
        the other folds' rows only, and under the metric learned there, with these parameters, from the other
        folds only. The principal directions too: they hold no labels, but with fewer rows than features each
        row's own noise fills its share of the directions found with it, so in them the checked rows would
        look unlike new rows (measured: a learned metric whose new rows scored 0.71 scored 0.03 on its
        checked rows, and plain distances were kept). A fold whose other rows hold one class only, or no two
        points of a class, has nothing to learn from (:func:`subspace.can_learn`): its rows count as misses of
        the learned metric. The fold fits run on fresh estimators (``self`` is untouched), their warnings
        silenced, the default's at ``subspace.CROSSFIT_BUDGET`` of the budget (at least 4,000 calls: as its further
        candidates' and the full-rank check's fold fits; an int ``n_components``': at the whole budget); the range
        finder (above ``subspace.EXACT_MAX_FEATURES`` features) draws from generators spawned from ``gen``."""
        folds = _subspace.fold_split(codes, gen)
        Xa, unit = scaled_active(X, active)
        wide = Xa.shape[1] > _subspace.EXACT_MAX_FEATURES
        # the default's fold fits at a share of the budget (an int n_components': the whole of it)
        T_fold = (_subspace.fold_budget(self._budget(), _subspace.CROSSFIT_BUDGET) if self.n_components is None
                  else None)
        hits = {c: np.zeros(X.shape[0]) for c in ("learned", "subspace")}
        for f in range(_subspace.CROSSFIT_FOLDS):
            te = folds == f
            tr = ~te
            if not te.any():
                continue
            rng = gen.spawn(1)[0] if wide else None
            if self.n_components is None:
                mean_a, principal_a = _subspace.default_principal(Xa[tr], rng)
            else:       # the top principal directions, at most as many as the other folds' rows span
                k = max(1, min(self.n_components, Xa.shape[1], int(np.count_nonzero(tr)) - 1))
                mean_a, principal_a = _subspace.principal_subspace(Xa[tr], k, rng)[:2]
            mean = full_mean(X, active, mean_a * unit)
            principal = full_rows(principal_a, active)
            if self.n_components is None:
                principal = np.vstack([principal, _subspace.class_mean_directions(X[tr], codes[tr], mean, principal)])
            Z = _subspace.project_rows(X, mean, principal)
            hits["subspace"][te] = _subspace.split_hits(Z, codes, tr, te)
            if not _subspace.can_learn(codes[tr]):
                continue
            hits["learned"][te] = self._fold_hits(Z, codes, tr, te, gen, T_fold)
        return folds, hits

    def _fold_hits(self, Zc, codes, tr, te, gen, T, data_units=False):
        """A cross-fitted fold's 1-NN hits: the rows ``te`` (bool (n,)) of the coordinates ``Zc`` (n, k) against the
        rows ``tr``, under the metric learned on the rows ``tr`` (:meth:`_check_fit`, from ``gen``, budget ``T``;
        ``data_units`` as there). Returns float (te.sum(),)."""
        A = Zc @ self._check_fit(Zc[tr], codes[tr], gen, T, data_units=data_units).components_.T
        return _subspace.split_hits(A, codes, tr, te)

    def _check_fit(self, Z, codes, gen, T=None, as_default=False, data_units=False):
        """A check's fit: a fresh estimator with these parameters (and ``loss_``; budget ``T`` if given) fitted
        by :meth:`_fit_metric` on ``Z`` (m, k) with labels ``codes``, drawing from ``gen``, its warnings silenced;
        ``self`` is untouched. ``as_default``: scaled as the default scales its subspace's coordinates (not
        as an int ``n_components``'s principal coordinates, :meth:`_scaling_mode`); ``data_units``: scaled as
        an int ``n_components``' (in the data's units) whatever ``self`` is."""
        est = type(self)(**self.get_params())
        est.loss_, est._full_rank = self.loss_, self._full_rank
        # the same scaling (_scaling_mode)
        est._wide_subspace = data_units or (getattr(self, "_wide_subspace", False) and not as_default)
        if T is not None:
            est.T = T
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est._fit_metric(Z, codes, gen)
        return est

    def _whiten_fit(self, Xs, codes, seed):
        """``Xs`` (scaled, active features) mapped by the target-pair whitening (``whiten="targets"``, dense
        input; sets ``whitening_`` and ``whitening_shrinkage_``), or ``Xs`` itself."""
        if self.whiten is None or sp.issparse(Xs):
            return Xs
        A, a = fit_whitening(Xs, codes, int(self.n_neighbors), rng=seed)
        if A is None:
            return Xs
        Xw, f, n_clipped = whiten_rows(Xs, A)
        self.whitening_ = A / f
        self.whitening_shrinkage_ = a
        self.n_clipped_ += n_clipped
        return Xw

    def fit_transform(self, X, y=None, **fit_params):
        """``fit(X, y).transform(X)``."""
        return self.fit(X, y, **fit_params).transform(X)


if not HAVE_SKLEARN:      # the stand-in has no tags API
    del MetricLearner.__sklearn_tags__
