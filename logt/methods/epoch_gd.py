"""Epoch Gradient Descent (Hazan and Kale, COLT 2011) as in the paper's experiments.

Epoch ``k`` runs ``T_k = T1 * 2**(k-1)`` projected SGD steps with the fixed step
``eta_k = eta1 / 2**(k-1)`` from ``w_k``; ``w_{k+1}`` is the mean of that epoch's
``T_k`` iterates (in D by convexity, no extra projection). Complete epochs only:
``n_calls = n_projections = T1 * (2**K - 1) <= T``. Defaults ``T1 = 4``,
``eta1 = 1/lam``.
"""
import numpy as np

from logt.methods._stepper import STEP_CONSTANT, Stepper
from logt.params import epoch_gd_schedule


def run_epoch_gd(oracle, domain, T, x0, rng, lam, recorder, T1=4, eta1=None):
    """Returns ``(x, n_calls, n_projections, n_epochs, params)``."""
    if eta1 is None:
        eta1 = 1.0 / lam
    lengths = epoch_gd_schedule(T, T1)
    if not lengths:
        raise ValueError(f"T={T} is below one Epoch-GD epoch: the minimum T is T1={T1}")
    stepper = Stepper(oracle, domain, rng)
    w = np.array(x0, dtype=np.float64, order="C", copy=True)
    x = np.empty_like(w)
    xsum = np.empty_like(w)
    used = 0
    k = 0
    for k, Tk in enumerate(lengths, start=1):
        eta_k = eta1 / 2 ** (k - 1)
        np.copyto(x, w)
        xsum.fill(0.0)
        stepper.run(x, xsum, Tk, STEP_CONSTANT, eta=eta_k, t0=0, where=f"epoch {k}")
        np.divide(xsum, Tk, out=w)
        used += Tk
        if recorder.record(w, used, used, epoch=k):
            break
    return w, used, used, k, {"T1": T1, "eta1": eta1}
