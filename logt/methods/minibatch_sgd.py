"""Mini-batch projected SGD with a fixed batch (``method="minibatch_sgd"``): ``O(sqrt T)`` projections."""
import math

import numpy as np

from logt.methods._base import Method, Option, one_of, positive_int, register
from logt.methods._common import resolve_step_cap, step_cap_option
from logt.methods._stepper import STEP_INVERSE
from logt.methods.sgd import sgd_grid

CHUNK = 1 << 16     # steps per compiled call between checkpoint opportunities


def default_batch(T):
    """``ceil(sqrt(T))``: the largest batch that keeps SGD's ``O(1/T)`` rate (the paper's Section 1)."""
    B = math.isqrt(T)
    return B if B * B == T else B + 1


def counts(T, B):
    """``(n_steps, n_calls, n_projections) = (T//B, B*(T//B), T//B)``."""
    n = T // B
    return n, B * n, n


@register
class MinibatchSGD(Method):
    """Mini-batch projected SGD: ``T//B`` steps ``w <- Pi_D(w - eta_t * mean of B gradients)``.

    Step ``t`` (``t = 1 .. T//B``) has size ``eta_t = min(cap, 1/(lam t))``. With
    a fixed batch the rate stays ``O(1/T)`` only for ``B <= sqrt(T)`` (the
    paper's Section 1); the default ``B = ceil(sqrt(T))`` makes about
    ``sqrt(T)`` projections. ``B = 1`` is plain SGD with a step cap.

    Options
    -------
    B : int >= 1, the batch (default ``ceil(sqrt(T))``).
    step_cap : "1/L" (default: cap at ``1/L`` when ``L`` is known, no cap
        otherwise), "none", or a float > 0. An uncapped ``1/(lam t)`` step
        overshoots for ``t < L/(2 lam)`` and can blow up on ill-conditioned problems.
    average : "last" (default) or "suffix" (mean of the last ``ceil(n/2)`` of
        the ``n = T//B`` iterates, Rakhlin, Shamir and Sridharan 2012).

    Counts: ``n_calls = B*(T//B)``, ``n_projections = T//B`` (see :func:`counts`).
    """

    name = "minibatch_sgd"
    label = "mini-batch SGD"
    summary = "projected SGD on mini-batches of fixed size B = ceil(sqrt(T))"
    rate = "O(1/T) for B <= sqrt(T)"
    projections = "T//B ~ sqrt(T)"
    uses_minibatches = True
    options = {
        "B": Option(None, positive_int, "batch size (default ceil(sqrt(T)))"),
        "step_cap": Option("1/L", step_cap_option, "largest step ('1/L', 'none' or a float)"),
        "average": Option("last", one_of("last", "suffix"), "returned point"),
    }

    def prepare(self, run):
        B = self.values["B"] or default_batch(run.T)
        if B > run.T:
            raise ValueError(f"method 'minibatch_sgd': the batch B={B} exceeds the budget T={run.T}")
        n, _, _ = counts(run.T, B)
        return {"B": B, "n_steps": n, "step": "min(cap, 1/(lam*t))",
                "step_cap": resolve_step_cap(self.values["step_cap"], run),
                "average": self.values["average"]}

    def init_state(self, run, params, x0):
        x = np.array(x0, dtype=np.float64, order="C", copy=True)
        return {"x": x, "xsum": np.zeros_like(x), "t": 0}

    @staticmethod
    def _current(st, start, average):
        n = st["t"] - start
        return st["xsum"] / n if average == "suffix" and n > 0 else st["x"]

    def drive(self, run, params, st):
        B, n_steps, cap = int(params["B"]), int(params["n_steps"]), float(params["step_cap"])
        average = params["average"]
        start = n_steps // 2 if average == "suffix" else 0       # suffix: steps start+1 .. n_steps
        x, xsum = st["x"], st["xsum"]
        grid = sgd_grid(n_steps)
        while st["t"] < n_steps:
            t = st["t"]
            nxt = int(grid[np.searchsorted(grid, t, side="right")])
            n = min(nxt - t, CHUNK)
            if t < start:
                n = min(n, start - t)
            run.steps(x, xsum, n, STEP_INVERSE, eta=cap, lam=run.lam, t0=t, B=B)
            if t + n == start:
                xsum.fill(0.0)
            st["t"] = t + n
            if st["t"] == nxt:
                t = st["t"]
                step = 1.0 / (run.lam * t)
                if run.boundary(st, self._current(st, start, average), step=t,
                                eta=min(step, cap) if cap > 0 else step) and t < n_steps:
                    break
            else:
                run.boundary(st, record=False)
        return self._current(st, start, average).copy(), 0
