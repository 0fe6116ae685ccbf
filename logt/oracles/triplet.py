"""Triplet metric learning (a smooth, regularized LMNN): the oracle behind ``MetricLearner(loss="triplets")``.

    F(W) = E_{(i, j, l)} [ log(1 + exp((||x_i - x_j||_W^2 - ||x_i - x_l||_W^2) / s + 1)) ] + (lam / 2) ||W||_F^2

over PSD ``W`` (d x d), the expectation uniform over a fixed list of triplets: ``j`` one of
``i``'s ``n_neighbors`` nearest same-class points (a target neighbour), ``l`` one of its
``n_neighbors`` nearest other-class points (an impostor), kept only within ``impostor_radius``
times the distance of ``i``'s farthest target neighbour (:func:`logt.oracles.neighbors.
restrict_impostors`). Each term asks an impostor to be farther than the target neighbour by the
margin ``s`` (the distance unit: the mean squared target-neighbour distance). ``F`` is
``lam``-strongly convex and ``L``-smooth with ``L = lam + max_t ||D1 D1^T - D2 D2^T||_F^2 / (4 s^2)``
over the list (exact, computed from the data).

Where the pair loss of :class:`logt.oracles.MetricLearning` compares each pair's distance with
one global threshold, a triplet compares an anchor's target and impostor distances with each
other, which is what 1-NN needs on small, well-separated classes (docs/evidence/learner-defaults.md).
"""
import math

import numpy as np

from .._kernels._triplets import MAX_TRIPLET_FEATURES, MAX_TRIPLETS, TripletGradientCore
from .._rng import check_rng
from ._thresholdless import ThresholdlessMetric, check_dense_labelled, check_lam
from . import neighbors as nb
from .metric import MAX_EVAL_PAIRS, _check_int
from .neighbors import check_impostor_radius, pair_sq_distances_any

__all__ = ["TripletMetricLearning", "triplet_list"]


def triplet_list(X, codes, n_neighbors, impostor_radius=1.5, rng=0):
    """``(ti, tj, tl)``: three (m,) int32 arrays, every triplet ``(i, j, l)`` with ``j`` in ``i``'s
    target list and ``l`` in its (radius-restricted) impostor list, in (i, j, l) order.

    X : (n, d) float64; codes : (n,) int class codes; n_neighbors : k of both lists;
    impostor_radius : float > 0 or None (every listed impostor); rng : seed of the neighbour
    candidates (only used when a class exceeds the search's candidate cap). When the radius
    leaves no triplet, every listed impostor is kept.
    """
    sim, dis, dsim, ddis = nb.neighbor_tables(X, codes, n_neighbors, rng=rng, return_distances=True)
    keep = nb.restrict_impostors(sim, dis, dsim, ddis, impostor_radius)
    trip = _enumerate(sim, keep)
    if len(trip[0]) == 0 and keep is not dis:
        trip = _enumerate(sim, dis)
    return trip


def _enumerate(sim, dis):
    n, k = sim.shape
    i = np.repeat(np.arange(n), k * k)
    j = np.repeat(sim.reshape(-1), k)
    l = np.tile(dis, (1, k)).reshape(-1)
    ok = (j >= 0) & (l >= 0)
    return (np.ascontiguousarray(i[ok], dtype=np.int32), np.ascontiguousarray(j[ok], dtype=np.int32),
            np.ascontiguousarray(l[ok], dtype=np.int32))


class TripletMetricLearning(ThresholdlessMetric, TripletGradientCore):
    """Stochastic oracle of triplet metric learning over d x d matrices ``W`` (dense data).

    Parameters
    ----------
    X : ndarray, shape (n, d), rows with ``||x_i|| <= 1`` (as for :class:`MetricLearning`);
        at most ``MAX_TRIPLET_FEATURES = 4096`` columns. Sparse input is a TypeError (densify it).
    y : (n,) labels; at least two classes and one class with two points.
    lam : float > 0, the regularization and strong convexity.
    n_neighbors : int in [1, 256], targets and impostors listed per point (default 3).
    impostor_radius : float > 0 or None (default 1.5), see the module docstring.
    triplets : optional ``(ti, tj, tl)`` int arrays giving the list instead (``ti != tj``, ``ti != tl``).
    n_eval_triplets : int in [1, 10^7], triplets for :meth:`value` (default 10_000): the whole list
        when it is no longer (``value`` is then the exact ``F``), else a fixed uniform sample.
    eval_rng : seed of the evaluation sample and the neighbour candidates.

    Attributes
    ----------
    shape (d, d); n_samples; n_features; n_triplets; lam; unit (``s``); triplets ``(ti, tj, tl)``;
    L (exact smoothness over the list); R = ``sqrt(2 F(0) / lam)``, ``F(0) = log(1 + e)``;
    G : bound on ``||g_hat(W)||_F`` for ``||W||_F <= R``.
    """

    def __init__(self, X, y, lam=0.1, *, n_neighbors=3, impostor_radius=1.5, triplets=None,
                 n_eval_triplets=10_000, eval_rng=0):
        lam = check_lam(lam)
        n_neighbors = _check_int(n_neighbors, "n_neighbors", 1, 256)
        n_eval = _check_int(n_eval_triplets, "n_eval_triplets", 1, MAX_EVAL_PAIRS)
        impostor_radius = check_impostor_radius(impostor_radius)
        X, classes, codes = check_dense_labelled(X, y, "TripletMetricLearning", "triplet", MAX_TRIPLET_FEATURES,
                                                 "MAX_TRIPLET_FEATURES")
        n = X.shape[0]
        gen = check_rng(eval_rng)
        if triplets is None:
            if np.bincount(codes).max() < 2:
                raise ValueError("triplets need a class with at least 2 points (a target neighbour); "
                                 "every label in y is unique")
            ti, tj, tl = triplet_list(X, codes, n_neighbors, impostor_radius, gen)
        else:
            ti, tj, tl = _check_triplets(triplets, n)
        m = len(ti)
        if m > MAX_TRIPLETS:
            raise ValueError(f"{m} triplets exceed MAX_TRIPLETS = {MAX_TRIPLETS}; use fewer neighbours")
        # |D1|^2, |D2|^2 and (D1 - D2 = x_l - x_j) |x_j - x_l|^2 = |D1|^2 + |D2|^2 - 2 D1 . D2,
        # by the compiled pair-distance helper: O(d) each, no (m, d) difference arrays
        n1 = pair_sq_distances_any(X, ti, tj)
        n2 = pair_sq_distances_any(X, ti, tl)
        dot = 0.5 * (n1 + n2 - pair_sq_distances_any(X, tj, tl))
        unit = float(n1.mean())
        if not (unit > 0 and math.isfinite(unit)):
            unit = 1.0                    # every target neighbour is a duplicate: any unit will do
        ev = (np.arange(m) if m <= n_eval else np.sort(gen.choice(m, n_eval, replace=False))).astype(np.int32)
        self._setup(X, ti, tj, tl, np.ascontiguousarray(ev), lam, unit)
        # ||D1 D1^T - D2 D2^T||_F^2 = |D1|^4 + |D2|^4 - 2 (D1 . D2)^2, the squared norm of grad z times s^2
        gz2 = float(np.max(n1 * n1 + n2 * n2 - 2.0 * dot ** 2)) / unit ** 2
        self.L = lam + 0.25 * max(gz2, 0.0)
        self._gnorm = math.sqrt(max(gz2, 0.0))
        self.R = math.sqrt(2.0 * math.log1p(math.e) / lam)
        self.G = self.grad_bound(self.R)
        self.classes = classes
        self.n_neighbors = n_neighbors
        self.impostor_radius = impostor_radius
        self.triplets = (ti, tj, tl)
        self.X = X

    def __repr__(self):
        return (f"TripletMetricLearning(n={self.n_samples}, d={self.n_features}, lam={self.lam}, "
                f"n_triplets={self.n_triplets}, unit={self.unit:.4g})")


def _check_triplets(triplets, n):
    if not isinstance(triplets, (tuple, list)) or len(triplets) != 3:
        raise ValueError("triplets must be a tuple (ti, tj, tl) of three 1-D integer arrays")
    arrs = []
    for a, nm in zip(triplets, ("ti", "tj", "tl")):
        a = np.asarray(a)
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise ValueError(f"{nm} must be a 1-D integer array")
        arrs.append(a)
    ti, tj, tl = arrs
    if not (len(ti) == len(tj) == len(tl)) or len(ti) == 0:
        raise ValueError("ti, tj and tl must have the same nonzero length")
    for a, nm in zip(arrs, ("ti", "tj", "tl")):
        if a.min() < 0 or a.max() >= n:
            raise ValueError(f"{nm} must index rows of X, in [0, {n})")
    if np.any(ti == tj) or np.any(ti == tl):
        raise ValueError("a triplet's anchor ti must differ from tj and tl")
    return tuple(np.ascontiguousarray(a, dtype=np.int32) for a in arrs)
