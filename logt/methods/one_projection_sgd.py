"""SGD with only one projection (Mahdavi, Yang, Jin, Zhu, Yi, NIPS 2012), ``method="one_projection_sgd"``."""
import math
import numbers

import numpy as np

from logt.domains._lmo import constraint_function
from logt.methods._base import Method, Option, one_of, positive_float, register
from logt.methods._common import resolve_step_cap, step_cap_option
from logt.methods._stepper import STEP_INVERSE
from logt.methods.sgd import sgd_grid

CHUNK = 1 << 16


@register
class OneProjectionSGD(Method):
    """SGD with one projection (Mahdavi et al., NIPS 2012, the strongly convex variant).

    The domain is written as ``D = {x : c(x) <= 0}`` with a convex constraint
    function ``c`` whose subgradients have norm at least ``rho`` on the boundary.
    With ``penalty > ||grad F(w*)|| / rho`` (an exact penalty: the Lagrange
    multiplier of the constraint is at most ``||grad F(w*)||/rho``), the
    minimizer of ``F(x) + penalty * max(c(x), 0)`` over the whole space is
    ``w*``. The method runs SGD on that penalized function WITHOUT projecting,
    ``x <- x - eta_t (g_hat(x) + penalty * [c(x) > 0] grad c(x))`` with
    ``eta_t = min(cap, 1/(lam t))``, averages the iterates, and projects the
    average onto ``D`` once at the end. Published rate for strongly convex
    ``F``: ``O(log T / T)`` (uniform average).

    Formulation for logt's domains (``logt.domains.constraint_function``):
    ``EuclideanBall``: ``c = ||x - center|| - radius``; ``Box``:
    ``c = dist(x, Box)``; ``PSDCone``: ``c = -lambda_min(W)`` (subgradient
    ``-v v^T``, one eigenpair per step by LAPACK ``dsyevr``, not a full
    eigendecomposition); ``TraceBoundedPSD``:
    ``c = max(-lambda_min, (tr W - tau)/sqrt(d))``. All have ``rho = 1`` except
    the trace-bounded set (``sqrt((1 - 1/sqrt(d))/2)``). A user's domain works
    with a ``constraint(x) -> (value, subgradient)`` method.

    Options
    -------
    penalty : float > 0, the penalty weight. Default: ``2 * G / rho`` with
        ``G`` = ``minimize``'s ``G`` (``oracle.G``), an error without it.
        ``G`` must bound ``||grad F(w*)||`` for the penalty to be exact; a
        smaller penalty still returns a point of ``D`` (the final projection),
        with a larger error.
    radius : float > 0 or None (default): Mahdavi et al. keep the iterates in a
        simple ball ``B`` containing ``D``'s relevant part; here the ball
        ``||x - x0|| <= radius`` around the (projected) start point, enforced
        by a rescaling (O(size), not counted as a projection). None: no ball.
    step_cap : "1/L" (default), "none" or a float > 0 (as ``minibatch_sgd``).
    average : "uniform" (default, the published method) or "suffix" (the last
        ``ceil(T/2)`` iterates).

    Counts: ``n_calls = T``, ``n_projections = 1``. Trace rows before the end
    hold the UNPROJECTED running average (not in ``D`` in general); the last
    row is the returned projected point.
    """

    name = "one_projection_sgd"
    label = "1-proj SGD"
    summary = "SGD on F + penalty*max(c, 0) without projections; one projection at the end"
    rate = "O(log T / T)"
    projections = "1"
    options = {
        "penalty": Option(None, positive_float, "exact-penalty weight (default 2*G/rho)"),
        "radius": Option(None, positive_float, "radius of the outer ball around x0 (default none)"),
        "step_cap": Option("1/L", step_cap_option, "largest step ('1/L', 'none' or a float)"),
        "average": Option("uniform", one_of("uniform", "suffix"), "averaged iterates"),
    }

    def prepare(self, run):
        c = constraint_function(run.domain)
        penalty = self.values["penalty"]
        if penalty is None:
            if not (isinstance(run.G, numbers.Real) and math.isfinite(run.G) and run.G > 0):
                raise ValueError("method 'one_projection_sgd' needs options={'penalty': ...} (larger than "
                                 "||grad F(w*)|| / rho) or a gradient bound G (minimize's G= or oracle.G)")
            penalty = 2.0 * float(run.G) / c.rho
        return {"penalty": float(penalty), "rho": float(c.rho), "radius": self.values["radius"] or 0.0,
                "step_cap": resolve_step_cap(self.values["step_cap"], run),
                "average": self.values["average"]}

    def init_state(self, run, params, x0):
        x = np.array(x0, dtype=np.float64, order="C", copy=True)
        return {"x": x, "xsum": np.zeros_like(x), "center": x.copy(), "t": 0, "final": 0}

    def drive(self, run, params, st):
        T, cap = run.T, float(params["step_cap"])
        start = T // 2 if params["average"] == "suffix" else 0
        c = constraint_function(run.domain)
        x, xsum, center = st["x"], st["xsum"], st["center"]
        grid = sgd_grid(T)
        while st["t"] < T and not st["final"]:
            t = st["t"]
            nxt = int(grid[np.searchsorted(grid, t, side="right")])
            n = min(nxt - t, CHUNK)
            if t < start:
                n = min(n, start - t)
            run.penalty_steps(x, xsum, n, STEP_INVERSE, constraint=c, penalty=params["penalty"],
                              center=center, radius=float(params["radius"]), eta=cap, lam=run.lam, t0=t)
            if t + n == start:
                xsum.fill(0.0)
            st["t"] = t + n
            t = st["t"]
            if t == nxt and t < T:
                avg = xsum / (t - start) if t > start else x
                if run.boundary(st, avg, step=t):
                    break
            elif t < T:
                run.boundary(st, record=False)
        if not st["final"]:
            t = st["t"]
            avg = xsum / (t - start) if t > start else x.copy()
            run.project(avg, x, step=t)              # the one projection
            st["final"] = 1
            run.boundary(st, x, step=t)
        return x.copy(), 0
