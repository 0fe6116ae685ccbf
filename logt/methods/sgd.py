"""Projected SGD with step ``eta_t = 1/(lam*t)``: one oracle call and one projection per step."""
import numpy as np

from logt.methods._base import Method, Option, one_of, register
from logt.methods._stepper import STEP_INVERSE

CHUNK = 1 << 16     # steps per compiled call between checkpoint opportunities


def sgd_grid(T, per_octave=4):
    """Trace points: a geometric grid of steps in ``[1, T]`` (``per_octave`` per doubling), always ending at T."""
    num = max(2, int(np.ceil(per_octave * np.log2(max(T, 2)))) + 1)
    return np.unique(np.round(np.geomspace(1, T, num)).astype(np.int64))


@register
class SGD(Method):
    """Projected SGD, step ``1/(lam t)``: one oracle call and one projection per step.

    When ``L`` is known (given or ``oracle.L``) the step is ``min(1/L, 1/(lam t))``:
    the first ``L/lam`` steps of size ``1/(lam t) > 2/L`` would blow up along the
    stiff directions on an unbounded domain. With ``L = lam`` (the paper's toy)
    nothing changes.

    Options
    -------
    average : "last" (default: the last iterate ``w_T``, the paper's SGD on the
        toy), "uniform" (the mean of ``w_1..w_T``, in ``D`` by convexity) or
        "suffix" (the mean of the last ``ceil(T/2)`` iterates, Rakhlin, Shamir
        and Sridharan 2012: ``O(1/T)`` for strongly convex ``F``; trace rows in
        the first half show the current iterate).
    cap : True (default) or False. True: with a known ``L > lam`` the step is
        ``min(1/L, 1/(lam t))`` (a deviation from the paper's ``1/(lam t)``);
        False: the paper's step exactly.

    Counts: ``n_calls = n_projections = T``. The trace has a row per point of a
    geometric grid of steps.
    """

    name = "sgd"
    label = "SGD"
    summary = "projected SGD, step 1/(lam t)"
    rate = "O(log T / T) (averaged), O(1/T) on the toy"
    projections = "T"
    options = {"average": Option("last", one_of("last", "uniform", "suffix"), "returned point"),
               "cap": Option(True, one_of(True, False),
                             "cap the step at 1/L when L > lam is known (False: the paper's 1/(lam t))")}

    def prepare(self, run):
        # the first steps 1/(lam t) exceed 2/L while t < L/(2 lam): on an unbounded domain they blow
        # up along the stiff directions; with a known L the step is capped at 1/L (L = lam: unchanged)
        cap = (1.0 / run.L if self.values["cap"] and run.L is not None and run.L > run.lam
               else None)
        out = {"step": "1/(lam*t)", "average": self.values["average"]}
        if cap is not None:
            out.update(step="min(1/L, 1/(lam*t))", step_cap=cap)
        return out

    def init_state(self, run, params, x0):
        x = np.array(x0, dtype=np.float64, order="C", copy=True)
        return {"x": x, "xsum": np.zeros_like(x), "t": 0}

    def _current(self, st, average, start=0):
        if average == "suffix":
            n = st["t"] - start
            return st["x"] if n <= 0 else st["xsum"] / n
        return st["x"] if average == "last" else st["xsum"] / st["t"]

    @staticmethod
    def _suffix_start(T):
        """Suffix averaging sums the iterates of steps ``T//2 + 1 .. T`` (``ceil(T/2)`` of them)."""
        return T // 2

    def drive(self, run, params, st):
        T, average = run.T, params["average"]
        cap = params.get("step_cap") or 0.0
        x, xsum = st["x"], st["xsum"]
        grid = sgd_grid(T)
        start = self._suffix_start(T) if average == "suffix" else 0
        while st["t"] < T:
            t = st["t"]
            nxt = int(grid[np.searchsorted(grid, t, side="right")])
            n = min(nxt - t, CHUNK)
            if t < start:
                n = min(n, start - t)       # suffix: the sum restarts after step `start`
            run.steps(x, xsum, n, STEP_INVERSE, eta=cap, lam=run.lam, t0=t)
            if t + n == start:
                xsum.fill(0.0)
            st["t"] = t + n
            if st["t"] == nxt:
                t = st["t"]
                step = 1.0 / (run.lam * t)
                if run.boundary(st, self._current(st, average, start), step=t, eta=min(step, cap or step)) and t < T:
                    break
            else:
                run.boundary(st, record=False)
        if average == "suffix":
            return self._current(st, average, start).copy(), 0
        out = x.copy() if average == "last" else xsum / st["t"]
        return out, 0
