"""Neighbour-softmax metric learning (NCA with fixed candidates): the oracle behind
``MetricLearner(loss="softmax")``.

    F(W) = mean_i [ (1/t_i) sum_{j in T_i} q_ij / s + log sum_{c in C_i} exp(-q_ic / s) ] + (lam / 2) ||W||_F^2,
    q_ic = (x_i - x_c)^T W (x_i - x_c),

over PSD ``W`` (d x d), the mean over the anchors ``i`` (the points with a class-mate). ``T_i``:
``i``'s ``n_targets`` nearest class-mates (target neighbours), ``C_i = T_i`` plus its
``n_impostors`` nearest other-class points, by Euclidean distance in the space the oracle sees.
Each term is ``-log`` of NCA's probability that ``i`` picks its target ``j`` among its candidates
(``p_ij = exp(-q_ij/s) / sum_c exp(-q_ic/s)``), averaged over the targets. With the candidates
fixed, the term is linear plus a log-sum-exp of linear functions of ``W``: ``F`` is convex (NCA,
which re-normalizes over all points and sums over all class-mates, is not), ``lam``-strongly
convex, ``>= (lam/2)||W||^2`` (each term is ``>= 0``), and ``L``-smooth with
``L = lam + max_{i, c} ||x_i - x_c||^4 / s^2`` (the variance of ``u u^T / s`` under ``p``).
``s`` is the distance unit: the mean squared target-neighbour distance.

Where the triplet loss asks every impostor to be a margin farther than every target, the softmax
weighs the impostors by how close they come (the gradient pushes ``p_ic``-weighted impostors
away and pulls the targets in), which is what k-NN needs when classes overlap.
"""
import math

import numpy as np

from .._kernels._softmax import MAX_ANCHORS, MAX_SOFTMAX_FEATURES, SoftmaxGradientCore
from .._rng import check_rng
from ._thresholdless import ThresholdlessMetric, check_dense_labelled, check_lam
from . import neighbors as nb
from .metric import MAX_EVAL_PAIRS, _check_int
from .neighbors import MAX_NEIGHBORS, pair_sq_distances_any

__all__ = ["SoftmaxMetricLearning", "candidate_lists"]


def candidate_lists(X, codes, n_targets, n_impostors, rng=0):
    """``(anchors, ptr, cand, n_t)``: the anchors (points with at least one class-mate, int32), and
    for anchor ``a`` its candidates ``cand[ptr[a]:ptr[a+1]]`` (int32), its ``n_t[a]`` nearest
    class-mates first (nearest first), then its nearest other-class points (at most ``n_impostors``).

    X : (n, d) float64; codes : (n,) int class codes 0..C-1; n_targets : int, or (C,) ints (the targets
    per point of each class); rng : seed of the neighbour search's candidate pool (used only when a class
    exceeds the cap). The cap is :func:`logt.oracles.neighbors.search_cap`'s: the search is exhaustive (the
    targets and impostors exact) while it costs at most ``SEARCH_WORK`` (e.g. up to ~21,000 rows at ``d = 10``,
    ~15,000 at ``d = 128``), else each class's pool is a seeded subsample of ``cap >= 2000`` rows.
    """
    n_max = int(np.max(n_targets))
    cap = nb.search_cap(np.bincount(codes), X.shape[1])
    sim, dis = nb.neighbor_tables(X, codes, max(n_max, n_impostors), max_candidates=cap, rng=rng)
    sim, dis = sim[:, :n_max], dis[:, :n_impostors]
    if np.ndim(n_targets) == 1:      # a row keeps its class's count (the padding -1 stays at the end)
        sim = np.where(np.arange(n_max) < np.asarray(n_targets)[codes][:, None], sim, -1)
    n_t = (sim >= 0).sum(axis=1)
    n_i = (dis >= 0).sum(axis=1)
    anchors = np.flatnonzero(n_t > 0).astype(np.int32)
    counts = (n_t + n_i)[anchors]
    ptr = np.zeros(len(anchors) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    cand = _pack(sim[anchors], dis[anchors])
    return (anchors, ptr, np.ascontiguousarray(cand, dtype=np.int32),
            np.ascontiguousarray(n_t[anchors], dtype=np.int32))


def _pack(sim, dis):
    """Row-wise: the valid (>= 0) entries of ``sim``, then those of ``dis`` (tables pad with -1 at the end)."""
    both = np.concatenate([sim, dis], axis=1)
    return both[both >= 0]


def _check_targets(n_targets):
    """``n_targets`` as an int, or as an int32 array (one per class): each in [1, MAX_NEIGHBORS]."""
    if np.ndim(n_targets) == 0:
        return _check_int(n_targets, "n_targets", 1, MAX_NEIGHBORS)
    t = np.asarray(n_targets)
    if t.ndim != 1 or t.size == 0 or t.dtype.kind not in "iu":
        raise TypeError(f"n_targets must be an int or a 1-D sequence of ints (one per class), got {n_targets!r}")
    if t.min() < 1 or t.max() > MAX_NEIGHBORS:
        raise ValueError(f"n_targets must be in [1, {MAX_NEIGHBORS}], got values from {t.min()} to {t.max()}")
    return t.astype(np.int32)


class SoftmaxMetricLearning(ThresholdlessMetric, SoftmaxGradientCore):
    """Stochastic oracle of neighbour-softmax metric learning over d x d matrices ``W`` (dense data).

    Parameters
    ----------
    X : ndarray, shape (n, d), rows with ``||x_i|| <= 1`` (as for :class:`MetricLearning`; the loss
        itself is measured in units of ``s`` and does not depend on the scale); at most
        ``MAX_SOFTMAX_FEATURES = 4096`` columns. Sparse input is a TypeError (densify it).
    y : (n,) labels; at least two classes and one class with two points.
    lam : float > 0, the regularization and strong convexity.
    n_targets : int in [1, 256], class-mates per anchor (default 3); or a sequence of such ints, one per
        class (in the order of ``np.unique(y)``): the class-mates of each class's anchors.
    n_impostors : int in [1, 256], other-class candidates per anchor (default 20).
    n_eval_anchors : int in [1, 10^7], anchors for :meth:`value` (default 10_000): all of them
        when there are no more (``value`` is then the exact ``F``), else a fixed uniform sample.
    eval_rng : seed of the evaluation sample and the neighbour candidates.

    One oracle sample is one anchor (all its candidates): ``mean_grad(W, B, rng)`` averages ``B``
    anchors drawn uniformly with replacement.

    Attributes
    ----------
    shape (d, d); n_samples; n_features; n_anchors; max_candidates; lam; unit (``s``);
    anchors, ptr, candidates, n_targets_per_anchor (the lists, see :func:`candidate_lists`);
    L (smoothness bound over the lists); R = ``sqrt(2 F(0) / lam)`` (``F(0)`` = mean log of the
    candidate counts; ``F >= (lam/2)||W||^2``); G : bound on ``||g_hat(W)||_F`` for ``||W||_F <= R``.
    """

    def __init__(self, X, y, lam=0.1, *, n_targets=3, n_impostors=20, n_eval_anchors=10_000, eval_rng=0):
        lam = check_lam(lam)
        n_targets = _check_targets(n_targets)
        n_impostors = _check_int(n_impostors, "n_impostors", 1, MAX_NEIGHBORS)
        n_eval = _check_int(n_eval_anchors, "n_eval_anchors", 1, MAX_EVAL_PAIRS)
        X, classes, codes = check_dense_labelled(X, y, "SoftmaxMetricLearning", "softmax", MAX_SOFTMAX_FEATURES,
                                                 "MAX_SOFTMAX_FEATURES")
        if np.ndim(n_targets) == 1 and len(n_targets) != len(classes):
            raise ValueError(f"n_targets has {len(n_targets)} entries for {len(classes)} classes")
        if np.bincount(codes).max() < 2:
            raise ValueError("the softmax loss needs a class with at least 2 points (a target neighbour); "
                             "every label in y is unique")
        if X.shape[0] > MAX_ANCHORS:
            raise ValueError(f"{X.shape[0]} points exceed MAX_ANCHORS = {MAX_ANCHORS}")
        gen = check_rng(eval_rng)
        anchors, ptr, cand, n_t = candidate_lists(X, codes, n_targets, n_impostors, gen)
        m = len(anchors)
        counts = np.diff(ptr)
        sq = pair_sq_distances_any(X, np.repeat(anchors, counts), cand)       # squared candidate distances
        is_target = np.arange(len(cand)) - np.repeat(ptr[:-1], counts) < np.repeat(n_t, counts)
        unit = float(sq[is_target].mean())
        if not (unit > 0 and math.isfinite(unit)):
            unit = float(sq.mean()) if sq.mean() > 0 else 1.0      # every target is a duplicate
        ev = (np.arange(m) if m <= n_eval else np.sort(gen.choice(m, n_eval, replace=False))).astype(np.int32)
        self._setup(X, anchors, ptr, cand, n_t, np.ascontiguousarray(ev), lam, unit)
        u2 = float(sq.max()) / unit                                  # max ||u||^2 / s
        self.L = lam + u2 * u2
        self._gnorm = 2.0 * u2
        self.R = math.sqrt(2.0 * float(np.mean(np.log(counts))) / lam)
        self.G = self.grad_bound(self.R)
        self.classes = classes
        self.n_targets = n_targets
        self.n_impostors = n_impostors
        self.anchors, self.ptr, self.candidates, self.n_targets_per_anchor = anchors, ptr, cand, n_t
        self.X = X

    def __repr__(self):
        return (f"SoftmaxMetricLearning(n={self.n_samples}, d={self.n_features}, lam={self.lam}, "
                f"n_anchors={self.n_anchors}, unit={self.unit:.4g})")
