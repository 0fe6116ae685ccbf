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
    success : bool -- False when a callback stopped the run.
    message : str -- how much of ``T`` was used (and whether a callback stopped the run).
    """

    def __repr__(self):
        keys = ["method", "fun", "n_calls", "n_projections", "n_epochs", "success", "message"]
        lines = [f"{k:>14}: {self[k]!r}" for k in keys if k in self]
        lines.append(f"{'params':>14}: {self.get('params')!r}")
        x = self.get("x")
        if x is not None:
            lines.append(f"{'x':>14}: array of shape {np.shape(x)}")
        return "\n".join(lines)
