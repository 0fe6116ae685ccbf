"""The result object of ``logt.minimize``."""
import numpy as np
from scipy.optimize import OptimizeResult


class MinimizeResult(OptimizeResult):
    """Outcome of ``logt.minimize`` (a dict with attribute access, like SciPy's).

    Attributes
    ----------
    x : ndarray, shape ``domain.shape`` -- the returned point (in the domain).
    fun : float or None -- ``oracle.value(x)`` when the oracle can evaluate F.
    n_calls : int -- stochastic gradients drawn (oracle calls, each of ``B`` samples counts ``B``).
    n_projections : int -- projections onto the domain made by the method.
    n_epochs : int -- complete epochs (logt, epoch_gd); 0 for sgd.
    method : str; params : dict -- the parameters actually used, after rounding.
    trace : dict of arrays -- ``n_calls``, ``n_projections`` and ``fun`` (or ``x``
        when the oracle has no ``value``), one row per epoch (logt, epoch_gd) or per
        point of a geometric grid of steps (sgd).
    success : bool; message : str -- False with a message when a callback stopped the run.
    """

    def __repr__(self):
        keys = ["method", "fun", "n_calls", "n_projections", "n_epochs", "success", "message"]
        lines = [f"{k:>14}: {self[k]!r}" for k in keys if k in self]
        lines.append(f"{'params':>14}: {self.get('params')!r}")
        x = self.get("x")
        if x is not None:
            lines.append(f"{'x':>14}: array of shape {np.shape(x)}")
        return "\n".join(lines)


class Recorder:
    """Collects trace rows and calls the user's callback (one place for both)."""

    def __init__(self, oracle, callback):
        self._value = getattr(oracle, "value", None)
        self._callback = callback
        self.rows_calls, self.rows_proj, self.rows_val = [], [], []
        self.stopped = False
        self._last = None          # (copy of the last recorded point, its F)

    def value(self, x):
        """``F(x)``, or None without ``oracle.value``; reuses the last trace row's F for the same point."""
        if self._value is None:
            return None
        if self._last is not None and np.array_equal(self._last[0], x):
            return self._last[1]
        return float(self._value(x))

    def record(self, x, n_calls, n_projections, epoch=None):
        """Add a trace row for point ``x``; returns True when the callback asks to stop."""
        v = self.value(x)
        if v is not None:
            self._last = (np.array(x, copy=True), v)
        self.rows_calls.append(n_calls)
        self.rows_proj.append(n_projections)
        self.rows_val.append(v if self._value is not None else np.array(x, copy=True))
        if self._callback is not None:
            info = OptimizeResult(x=x, fun=v, n_calls=n_calls, n_projections=n_projections, epoch=epoch)
            if self._callback(info) is True:
                self.stopped = True
        return self.stopped

    def trace(self):
        out = {"n_calls": np.asarray(self.rows_calls, dtype=np.int64),
               "n_projections": np.asarray(self.rows_proj, dtype=np.int64)}
        if self._value is not None:
            out["fun"] = np.asarray(self.rows_val, dtype=np.float64)
        else:
            out["x"] = np.asarray(self.rows_val)
        return out
