"""What the compiled metric oracles without a threshold (triplets, neighbour softmax) share in Python."""
import math

import numpy as np

__all__ = ["ThresholdlessMetric"]


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
