"""Projected stochastic gradient steps for the baselines, compiled when possible.

``Stepper.run`` runs ``n`` steps ``x <- Pi_D(x - step*g_hat(x))`` and adds the new
iterates to ``xsum``. With a compiled oracle AND a compiled domain it runs the
nogil loop of ``logt._kernels._steps``; otherwise it falls back to a Python loop
(one interpreter round trip per step: much slower, documented in ``minimize``).
"""
import numpy as np

from logt._kernels import _steps
from logt._kernels._base import CompiledDomain, CompiledOracle

STEP_CONSTANT = _steps.STEP_CONSTANT
STEP_INVERSE = _steps.STEP_INVERSE


def non_finite_error(where, step):
    return FloatingPointError(f"the oracle returned a non-finite (NaN or Inf) gradient at {where}, step {step}")


class Stepper:
    """Step runner bound to one oracle, domain and rng; ``compiled`` tells which loop runs."""

    def __init__(self, oracle, domain, rng):
        self.oracle, self.domain, self.rng = oracle, domain, rng
        self.compiled = isinstance(oracle, CompiledOracle) and isinstance(domain, CompiledDomain)
        self._g = np.empty(domain.shape, dtype=np.float64)

    def run(self, x, xsum, n_steps, rule, eta=0.0, lam=1.0, t0=0, where="run"):
        """Run ``n_steps`` steps in place on ``x`` (C-contiguous float64); ``where`` names
        the epoch/segment in error messages; steps are numbered ``t0+1 .. t0+n_steps``."""
        if n_steps <= 0:
            return
        if self.compiled:
            status, s, info = _steps.run_steps(
                self.oracle, self.domain, x.reshape(-1), xsum.reshape(-1), self._g.reshape(-1),
                n_steps, rule, eta, lam, t0, self.rng)
            if status == 1:
                raise non_finite_error(where, t0 + s)
            if status == 2:
                raise RuntimeError(f"the oracle failed at {where}, step {t0 + s}")
            if status == 3:
                raise np.linalg.LinAlgError(f"the projection failed at {where}, step {t0 + s} (info={info})")
            return
        g = self._g
        for s in range(1, n_steps + 1):
            self.oracle.mean_grad(x, 1, self.rng, out=g)
            if not np.isfinite(g).all():
                raise non_finite_error(where, t0 + s)
            step = eta if rule == STEP_CONSTANT else 1.0 / (lam * (t0 + s))
            x -= step * g
            self.domain.project(x, out=x)
            xsum += x
