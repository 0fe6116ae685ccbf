"""The result object of ``logt.minimize`` and its warning."""
import numpy as np
from scipy.optimize import OptimizeResult


class ConvergenceWarning(UserWarning):
    """A run's own diagnostics say it did not converge (``result.success`` is False; the message says why
    and what to do). scikit-learn's convention: a warning, not an error, so the result is still returned."""


class MinimizeResult(OptimizeResult):
    """Outcome of ``logt.minimize`` (a dict with attribute access, like SciPy's).

    Attributes
    ----------
    x : ndarray, shape ``domain.shape`` -- the returned point (in the domain).
    fun : float or None -- ``oracle.value(x)`` when the oracle can evaluate F.
    n_calls : int -- stochastic gradients drawn (oracle calls, each of ``B`` samples counts ``B``).
    n_projections : int -- projections onto the domain made by the method.
    n_epochs : int -- complete epochs (logt, epoch_gd) or stages (logt_acc); 0 for sgd.
    method : str -- the method that ran (``method="auto"`` reports the one it chose).
    params : dict -- the parameters actually used, after rounding; the auto rules add
        ``convergence`` (``ok``, ``cause``, ``remedy``, ``check``: the run's own diagnostics)
        and ``method="auto"`` adds ``chosen_by`` (why that method).
    trace : dict of arrays -- ``n_calls``, ``n_projections`` and ``fun`` (or ``x``
        when the oracle has no ``value``), one row per epoch (logt, epoch_gd) or per
        point of a geometric grid of steps (sgd).
    success : bool -- False when a callback stopped the run, or when the run's own diagnostics
        (``params["convergence"]``, auto rules only) say it did not converge; then a
        ``logt.ConvergenceWarning`` with the same text was issued.
    message : str -- how much of ``T`` was used; whether a callback stopped the run; for an
        unconverged run, the cause and the remedy.
    """

    def __repr__(self):
        keys = ["method", "fun", "n_calls", "n_projections", "n_epochs", "success", "message"]
        lines = [f"{k:>14}: {self[k]!r}" for k in keys if k in self]
        lines.append(f"{'params':>14}: {self.get('params')!r}")
        x = self.get("x")
        if x is not None:
            lines.append(f"{'x':>14}: array of shape {np.shape(x)}")
        return "\n".join(lines)
