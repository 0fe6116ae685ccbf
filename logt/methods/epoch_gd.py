"""Epoch Gradient Descent (Hazan and Kale, COLT 2011) as in the paper's experiments.

Epoch ``k`` runs ``T_k = T1 * 2**(k-1)`` projected SGD steps with the fixed step
``eta_k = eta1 / 2**(k-1)`` from ``w_k``; ``w_{k+1}`` is the mean of that epoch's
``T_k`` iterates (in D by convexity, no extra projection). Complete epochs only:
``n_calls = n_projections = T1 * (2**K - 1) <= T``. Defaults ``T1 = 4``,
``eta1 = 1/lam`` (Hazan-Kale's), except when ``L > lam`` is known (given or
``oracle.L``): then ``eta1 = 1/L`` and ``T1 = ceil(4 L/lam)``, which keeps their
product ``eta1 * T1 * lam = 4`` (the first epoch's contraction) while a first
step above ``2/L`` would blow up along the stiff directions on an unbounded
domain (the PSD cone with ``L/lam = 35``: excess 1e17). A deviation from
Hazan-Kale; with ``L = lam`` (the paper's toy) nothing changes.
"""
import math

import numpy as np

from logt.methods._base import Method, Option, positive_float, positive_int, register
from logt.methods._stepper import STEP_CONSTANT
from logt.params import epoch_gd_schedule

CHUNK = 1 << 16     # steps per compiled call between checkpoint opportunities


@register
class EpochGD(Method):
    """Epoch-GD (Hazan and Kale, COLT 2011): epochs of fixed-step projected SGD, doubling length, halving step.

    Options
    -------
    T1 : int >= 1, the first epoch's length (default 4; ``ceil(4 L/lam)`` when ``L > lam`` is known).
    eta1 : float > 0, the first epoch's step (default ``1/lam``; ``1/L`` when ``L > lam`` is known).
        Give ``T1=4, eta1=1/lam`` for Hazan-Kale's exact schedule.

    Counts: ``n_calls = n_projections = T1*(2**K - 1) <= T`` for the ``K`` complete epochs.
    """

    name = "epoch_gd"
    label = "EP_GD"
    summary = "Epoch-GD (Hazan-Kale): fixed step per epoch, length doubles, step halves"
    rate = "O(1/T)"
    projections = "T1*(2**K - 1) <= T"
    options = {
        "T1": Option(None, positive_int, "first epoch length (default 4, or ceil(4 L/lam) when L > lam is known)"),
        "eta1": Option(None, positive_float, "first epoch step (default 1/lam)"),
    }

    def prepare(self, run):
        T1 = self.values["T1"]
        eta1 = self.values["eta1"]
        kappa = run.L / run.lam if run.L is not None and run.L > run.lam else None
        if eta1 is None:
            eta1 = 1.0 / run.lam if kappa is None else 1.0 / run.L
        if T1 is None:
            T1 = 4 if kappa is None else min(int(math.ceil(4 * kappa)), run.T)
        lengths = epoch_gd_schedule(run.T, T1)
        if not lengths:
            raise ValueError(f"T={run.T} is below one Epoch-GD epoch: the minimum T is T1={T1}")
        return {"T1": T1, "eta1": eta1, "n_epochs": len(lengths)}

    def init_state(self, run, params, x0):
        w = np.array(x0, dtype=np.float64, order="C", copy=True)
        return {"w": w, "x": np.empty_like(w), "xsum": np.zeros_like(w), "k": 1, "s": 0}

    def drive(self, run, params, st):
        lengths = epoch_gd_schedule(run.T, params["T1"])
        eta1 = params["eta1"]
        w, x, xsum = st["w"], st["x"], st["xsum"]
        while st["k"] <= len(lengths):
            k = st["k"]
            Tk = lengths[k - 1]
            eta_k = eta1 / 2 ** (k - 1)
            if st["s"] == 0:
                np.copyto(x, w)
                xsum.fill(0.0)
            while st["s"] < Tk:
                s = st["s"]
                n = min(Tk - s, CHUNK)
                run.steps(x, xsum, n, STEP_CONSTANT, eta=eta_k, t0=s, epoch=k)
                st["s"] = s + n
                if st["s"] < Tk:
                    run.boundary(st, record=False)
            np.divide(xsum, Tk, out=w)
            st.update(k=k + 1, s=0)
            if run.boundary(st, w, epoch=k, eta=eta_k):
                break
        return w, st["k"] - 1
