"""Stochastic Frank-Wolfe with growing mini-batches (``method="frank_wolfe"``): no projections."""
import math

import numpy as np

from logt.domains._lmo import linear_oracle
from logt.methods._base import Method, Option, positive_float, register
from logt.methods.sgd import sgd_grid

CHUNK = 1 << 12     # iterations per compiled call between checkpoint opportunities


def batch(k, c):
    """Mini-batch of iteration ``k`` (1-based): ``ceil(c * (k + 1)**2)`` (at least 1)."""
    return max(1, math.ceil(c * (k + 1) ** 2 - 1e-9 * c * (k + 1) ** 2))


def schedule(T, c):
    """The mini-batches of the complete iterations that fit in ``T`` (the largest ``K`` with
    ``sum_{k<=K} batch(k, c) <= T``)."""
    out, used, k = [], 0, 1
    while True:
        b = batch(k, c)
        if used + b > T:
            return out
        out.append(b)
        used += b
        k += 1


@register
class FrankWolfe(Method):
    """Stochastic Frank-Wolfe (SFW, Hazan and Luo, ICML 2016): projection-free, one LMO per iteration.

    Iteration ``k = 1, 2, ...``: ``g`` = mean of ``m_k = ceil(c (k+1)^2)``
    oracle samples at ``x``, ``s = argmin_{s in D} <g, s>`` (the domain's
    linear minimization oracle), ``x <- (1 - gamma_k) x + gamma_k s`` with
    ``gamma_k = 2/(k+1)``. Every iterate is a convex combination of points of
    ``D``: no projection at all (the start point is projected once, in setup,
    not counted, as for every method). Hazan and Luo's Theorem: with
    ``c = (sigma/(L D))^2`` (``sigma`` the gradient noise, ``D`` the diameter),
    ``E[F(x_K) - F*] <= 4 L D^2/(K + 2)``; the ``K`` iterations use
    ``sum m_k ~ c K^3/3`` samples, so in terms of the budget the rate is
    ``O(T^(-1/3))`` (strong convexity does not improve it in general). Needs a
    compact domain with an LMO: ``EuclideanBall``, ``Box`` (finite bounds),
    ``TraceBoundedPSD``, or a domain with ``lmo(G, out=None)``.

    Options
    -------
    batch_scale : float > 0, ``c`` above (default 1).

    Counts: ``n_projections = 0``; ``K`` iterations (``params["n_lmo"]``, one
    LMO call each) with ``K`` the largest with ``sum_{k<=K} m_k <= T``;
    ``n_calls = sum_{k<=K} m_k`` (see :func:`schedule`).
    """

    name = "frank_wolfe"
    label = "SFW"
    summary = "stochastic Frank-Wolfe, batches ceil(c (k+1)^2), step 2/(k+1); LMO instead of projections"
    rate = "O(T^(-1/3))"
    projections = "0 (one LMO per iteration, ~(3T/c)^(1/3) of them)"
    uses_minibatches = True
    options = {"batch_scale": Option(1.0, positive_float, "c in m_k = ceil(c (k+1)^2)")}

    def prepare(self, run):
        linear_oracle(run.domain)            # a clear error now if the domain has none
        c = self.values["batch_scale"]
        K = len(schedule(run.T, c))
        if K == 0:
            raise ValueError(f"T={run.T} is below one Frank-Wolfe iteration: the minimum T is "
                             f"ceil(4*batch_scale) = {batch(1, c)}")
        return {"batch_scale": c, "n_lmo": K, "step": "2/(k+1)"}

    def init_state(self, run, params, x0):
        return {"x": np.array(x0, dtype=np.float64, order="C", copy=True), "k": 0}

    def drive(self, run, params, st):
        batches = np.asarray(schedule(run.T, params["batch_scale"]), dtype=np.int64)
        K = len(batches)
        lmo = linear_oracle(run.domain)
        x = st["x"]
        grid = sgd_grid(K)
        while st["k"] < K:
            k = st["k"]
            nxt = int(grid[np.searchsorted(grid, k, side="right")])
            n = min(nxt - k, CHUNK)
            run.fw_steps(x, batches[k:k + n], k0=k, lmo=lmo)
            st["k"] = k + n
            if st["k"] == nxt:
                if run.boundary(st, x, step=st["k"], eta=2.0 / (st["k"] + 1)) and st["k"] < K:
                    break
            else:
                run.boundary(st, record=False)
        return x.copy(), 0
