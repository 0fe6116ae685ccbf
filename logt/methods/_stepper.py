"""Projected stochastic gradient steps for the baselines, compiled when possible.

``Stepper.run`` runs ``n`` steps ``x <- Pi_D(x - step*g_hat(x))`` and adds the new
iterates to ``xsum``. With a compiled oracle AND a compiled domain it runs the
nogil loop of ``logt._kernels._steps``; otherwise it falls back to a Python loop
(one interpreter round trip per step: much slower, documented in ``minimize``).
Both loops check every gradient and iterate and raise ``FloatingPointError``
naming the method, epoch, step and step size. Counting is the caller's
(``logt._run.Run.steps``).
"""
import numpy as np

from logt._kernels import _steps
from logt._kernels._base import CompiledDomain, CompiledOracle

STEP_CONSTANT = _steps.STEP_CONSTANT
STEP_INVERSE = _steps.STEP_INVERSE


class Stepper:
    """Step runner bound to one ``Run``; ``compiled`` tells which loop runs."""

    def __init__(self, run):
        self.run_ = run
        self.oracle, self.domain, self.rng = run.oracle, run.domain, run.rng
        self.compiled = isinstance(self.oracle, CompiledOracle) and isinstance(self.domain, CompiledDomain)
        self._g = np.empty(run.shape, dtype=np.float64)

    def _step_size(self, rule, eta, lam, t):
        if rule == STEP_CONSTANT:
            return eta
        step = 1.0 / (lam * t)
        return eta if 0 < eta < step else step          # STEP_INVERSE capped at eta > 0 (as the C loop)

    def run(self, x, xsum, n_steps, rule, eta=0.0, lam=1.0, t0=0, epoch=None):
        """Run ``n_steps`` steps in place on ``x`` (C-contiguous float64); steps are numbered
        ``t0+1 .. t0+n_steps`` in error messages. Returns the largest gradient norm seen."""
        where = self.run_.where
        if self.compiled:
            status, s, info, gmax = _steps.run_steps(
                self.oracle, self.domain, x.reshape(-1), xsum.reshape(-1), self._g.reshape(-1),
                n_steps, rule, eta, lam, t0, self.rng)
            if status == _steps.DONE:
                return gmax
            t = t0 + s
            at = where(epoch, t, self._step_size(rule, eta, lam, t))
            if status == _steps.BAD_GRADIENT:
                raise FloatingPointError(f"the oracle returned a non-finite (NaN or Inf) gradient at {at}")
            if status == _steps.ORACLE_FAILED:
                raise RuntimeError(f"the oracle failed (code {info}) at {at}")
            if status == _steps.PROJECTION_FAILED:
                raise np.linalg.LinAlgError(f"the projection failed (info={info}) at {at}")
            if status == _steps.BAD_ITERATE:
                raise FloatingPointError(f"the iterate became non-finite (NaN or Inf) at {at}; "
                                         "the step size is too large for this problem")
            raise FloatingPointError(f"the projection returned a non-finite point at {at}")
        run, g, gmax = self.run_, self._g, 0.0
        for s in range(1, n_steps + 1):
            t = t0 + s
            step = self._step_size(rule, eta, lam, t)
            run.grad(x, 1, g, epoch=epoch, step=t, eta=step, count=False)   # the caller counts in bulk
            gmax = max(gmax, float(np.linalg.norm(g)))
            x -= step * g
            run.project(x, x, epoch=epoch, step=t, eta=step, count=False)
            xsum += x
        return gmax
