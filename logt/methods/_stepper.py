"""Projected stochastic gradient steps for the baselines, compiled when possible.

``Stepper.run`` runs ``n`` steps ``x <- Pi_D(x - step*g_hat(x))`` (``g_hat`` a mean
of ``B`` samples) and adds the new iterates to ``xsum``; ``Stepper.penalty`` runs
SGD steps on ``F + penalty*max(c, 0)`` without projections (one-projection SGD);
``Stepper.frank_wolfe`` runs stochastic Frank-Wolfe iterations with a linear
minimization oracle. With a compiled oracle AND a compiled domain it runs the
nogil loop of ``logt._kernels._steps``; otherwise it falls back to a Python loop
(one interpreter round trip per step: much slower, documented in ``minimize``).
Both loops check every gradient and iterate and raise ``FloatingPointError``
naming the method, epoch, step and step size. Counting is the caller's
(``logt._run.Run.steps``).
"""
import math

import numpy as np

from logt._kernels import _steps
from logt._kernels._base import CompiledDomain, CompiledOracle
from logt._kernels._free import ConstraintFunction, LinearOracle

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

    def _raise(self, status, info, at):
        """Turn a compiled loop's status code into the exception it stands for."""
        if status == _steps.BAD_GRADIENT:
            raise FloatingPointError(f"the oracle returned a non-finite (NaN or Inf) gradient at {at}")
        if status == _steps.ORACLE_FAILED:
            raise RuntimeError(f"the oracle failed (code {info}) at {at}")
        if status == _steps.PROJECTION_FAILED:
            raise np.linalg.LinAlgError(f"the projection failed (info={info}) at {at}")
        if status == _steps.CONSTRAINT_FAILED:
            raise np.linalg.LinAlgError(f"the constraint function failed (info={info}) at {at}")
        if status == _steps.LMO_FAILED:
            raise np.linalg.LinAlgError(f"the linear minimization oracle failed (info={info}) at {at}")
        if status == _steps.BAD_LMO:
            raise FloatingPointError(f"the linear minimization oracle returned a non-finite point at {at}")
        if status == _steps.BAD_ITERATE:
            raise FloatingPointError(f"the iterate became non-finite (NaN or Inf) at {at}; "
                                     "the step size is too large for this problem")
        raise FloatingPointError(f"the projection returned a non-finite point at {at}")

    def run(self, x, xsum, n_steps, rule, eta=0.0, lam=1.0, t0=0, epoch=None, B=1):
        """Run ``n_steps`` steps in place on ``x`` (C-contiguous float64), each with a mean of ``B``
        oracle samples; steps are numbered ``t0+1 .. t0+n_steps`` in error messages. Returns the
        largest gradient norm seen."""
        where = self.run_.where
        if self.compiled:
            status, s, info, gmax = _steps.run_steps(
                self.oracle, self.domain, x.reshape(-1), xsum.reshape(-1), self._g.reshape(-1),
                n_steps, rule, eta, lam, t0, self.rng, B)
            if status == _steps.DONE:
                return gmax
            t = t0 + s
            self._raise(status, info, where(epoch, t, self._step_size(rule, eta, lam, t)))
        run, g, gmax = self.run_, self._g, 0.0
        for s in range(1, n_steps + 1):
            t = t0 + s
            step = self._step_size(rule, eta, lam, t)
            run.grad(x, B, g, epoch=epoch, step=t, eta=step, count=False)   # the caller counts in bulk
            gmax = max(gmax, float(np.linalg.norm(g)))
            x -= step * g
            run.project(x, x, epoch=epoch, step=t, eta=step, count=False)
            xsum += x
        return gmax

    def penalty(self, x, xsum, n_steps, rule, constraint, penalty, center, radius, eta=0.0, lam=1.0,
                t0=0, epoch=None):
        """``n_steps`` SGD steps on ``F + penalty * max(c, 0)`` without projecting onto the domain
        (see ``logt._kernels._steps.run_penalty_steps``); ``radius > 0`` keeps ``x`` in the ball
        ``||x - center|| <= radius``. Returns the largest gradient norm seen (of ``g_hat``)."""
        run = self.run_
        if isinstance(self.oracle, CompiledOracle) and isinstance(constraint, ConstraintFunction):
            if not hasattr(self, "_cg"):
                self._cg = np.empty(run.shape)
            status, s, info, gmax = _steps.run_penalty_steps(
                self.oracle, constraint, x.reshape(-1), xsum.reshape(-1), self._g.reshape(-1),
                self._cg.reshape(-1), n_steps, rule, eta, lam, t0, penalty, center.reshape(-1),
                radius, self.rng)
            if status == _steps.DONE:
                return gmax
            t = t0 + s
            self._raise(status, info, run.where(epoch, t, self._step_size(rule, eta, lam, t)))
        g, gmax = self._g, 0.0
        for s in range(1, n_steps + 1):
            t = t0 + s
            step = self._step_size(rule, eta, lam, t)
            run.grad(x, 1, g, epoch=epoch, step=t, eta=step, count=False)
            gmax = max(gmax, float(np.linalg.norm(g)))
            val, cg = constraint.value_and_grad(x)
            if val > 0:
                g += penalty * cg
            x -= step * g
            if not np.isfinite(x).all():
                self._raise(_steps.BAD_ITERATE, 0, run.where(epoch, t, step))
            if radius > 0:
                d = x - center
                amax = float(np.max(np.abs(d)))
                if amax > 0:
                    nrm = amax * math.sqrt(float(np.sum((d / amax) ** 2)))
                    if nrm > radius:
                        d *= radius / nrm
                        np.add(center, d, out=x)
            xsum += x
        return gmax

    def frank_wolfe(self, x, batches, k0, lmo, epoch=None):
        """Stochastic Frank-Wolfe iterations ``k = k0+1 ..`` with mini-batches ``batches``
        (see ``logt._kernels._steps.run_fw_steps``). Returns the largest gradient norm seen."""
        run = self.run_
        if not hasattr(self, "_s"):
            self._s = np.empty(run.shape)
        batches = np.ascontiguousarray(batches, dtype=np.int64)
        if isinstance(self.oracle, CompiledOracle) and isinstance(lmo, LinearOracle):
            status, i, info, gmax = _steps.run_fw_steps(
                self.oracle, lmo, x.reshape(-1), self._g.reshape(-1), self._s.reshape(-1), batches,
                k0, self.rng)
            if status == _steps.DONE:
                return gmax
            k = k0 + i
            self._raise(status, info, run.where(epoch, k, 2.0 / (k + 1)))
        g, s_, gmax = self._g, self._s, 0.0
        for i, B in enumerate(batches):
            k = k0 + i + 1
            gamma = 2.0 / (k + 1)
            run.grad(x, int(B), g, epoch=epoch, step=k, eta=gamma, count=False)
            gmax = max(gmax, float(np.linalg.norm(g)))
            lmo.lmo(g, out=s_)
            if not np.isfinite(s_).all():
                self._raise(_steps.BAD_LMO, 0, run.where(epoch, k, gamma))
            x *= 1.0 - gamma
            x += gamma * s_
        return gmax
