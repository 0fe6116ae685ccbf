"""What the compiled metric oracles without a threshold (triplets, neighbour softmax) share in Python:
their input checks and the methods of the oracle protocol that do not depend on the loss."""
import math

import numpy as np
import scipy.sparse as sp

from .metric import _check_X, _check_y, label_codes, plain_label

__all__ = ["ThresholdlessMetric", "check_lam", "check_dense_labelled"]


def check_lam(lam):
    """``lam`` as a float: a finite real number > 0, else ValueError."""
    if isinstance(lam, bool) or not isinstance(lam, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be finite and > 0, got {lam!r}")
    return float(lam)


def check_dense_labelled(X, y, owner, kind, max_features, max_name):
    """``(X, classes, codes)``: ``X`` a dense (n, d) array with ``d <= max_features`` and rows in the unit
    ball (:func:`logt.oracles.metric._check_X`), ``y`` (n,) labels of at least two classes. ``owner`` (the
    class name), ``kind`` ("triplet", "softmax") and ``max_name`` (the limit's name) word the errors."""
    if sp.issparse(X):
        raise TypeError(f"{owner} needs dense X (an ndarray); densify it (X.toarray()) "
                        "or use the pair oracle logt.oracles.MetricLearning")
    X = np.asarray(X)
    if X.ndim == 2 and X.shape[1] > max_features:
        raise ValueError(f"X has {X.shape[1]} columns; the {kind} oracle supports at most "
                         f"{max_name} = {max_features}")
    X = _check_X(X, "X")
    y = _check_y(y, X.shape[0], "y", "X")
    classes, codes = label_codes(y, "y")
    if len(classes) < 2:
        raise ValueError(f"y must contain at least two classes, got only {plain_label(classes[0])!r}")
    return X, classes, codes


class ThresholdlessMetric:
    """Mixin of :class:`logt.oracles.TripletMetricLearning` and :class:`logt.oracles.SoftmaxMetricLearning`:
    the point is the d x d metric ``W`` itself. Needs ``_eval_loss``, ``lam`` and ``_gnorm`` (a bound on
    the loss part of ``||g_hat(W)||_F``)."""

    threshold_scale = 1.0         # no threshold: the estimators report threshold_scale_ = 1.0

    def grad_bound(self, radius):
        """``_gnorm + lam * radius``: bound on ``||g_hat(W)||_F`` for ``||W||_F <= radius``."""
        return self._gnorm + self.lam * float(radius)

    def value(self, W):
        """``F(W)`` on the evaluation sample: mean loss + ``(lam/2) ||W||_F^2``; W : (d, d) float64."""
        W = np.asarray(W, dtype=np.float64)
        return self._eval_loss(W) + 0.5 * self.lam * float(np.vdot(W, W))

    def split_point(self, W):
        """``(W, nan)``: the model has no threshold."""
        return np.asarray(W, dtype=np.float64), math.nan

    def __reduce__(self):
        raise TypeError(f"{type(self).__name__} objects do not pickle; build a new one from (X, y)")
