"""The driver's environment: the one place that counts, checks, records and checkpoints.

A method's driver (``logt.methods``) never calls the oracle or the domain
directly; it goes through a :class:`Run`:

* ``run.grad(w, B, out, ...)`` -- ``B`` oracle calls, counted (an oracle's own
  exception gets the method, epoch, step and ``B`` attached: as a note, or in
  the message when the exception offers ``with_context(where)``); the result is
  taken even when a user oracle ignores ``out`` and returns a new array; a
  non-finite gradient is a ``FloatingPointError`` naming the method, epoch,
  step and step size;
* ``run.project(v, out, ...)`` -- one projection, counted, checked likewise;
* ``run.steps(...)`` -- a batch of projected SGD steps (compiled when the oracle
  and the domain are), counted as one call and one projection per step;
* ``run.boundary(state, x, epoch=...)`` -- between segments: records a trace
  row (``F(x)`` with ``trace="fun"``; only the counts with ``trace="counts"``,
  which saves an evaluation of ``F`` per row), checks the iterate (finite, not
  diverged), calls the callback, writes a checkpoint when one is due. Returns
  True when the callback asks to stop.

Divergence guard: for ``F`` ``lam``-strongly convex over a convex ``D`` and any
``x0`` in ``D``, ``||x0 - w_*|| <= ||grad F(x0)|| / lam``. The mean gradients a
run draws at ``x0`` estimate ``||grad F(x0)||``; ``g0`` is the largest of their
norms (or, before any is drawn exactly at ``x0``, the first non-zero mean
gradient's), and an iterate with ``||x - x0|| > DIVERGENCE_FACTOR * ||g0|| / lam``
(1000 times the bound, far beyond any stochastic wandering of a convergent method)
is reported as diverged (``FloatingPointError``) instead of returned as a success.
The largest, not the first: one small mini-batch mean can be far below the true
gradient (a triplet loss whose 16 sampled triplets were all but inactive drew
``8e-5`` against ``||grad F(x0)|| = 0.07``), and the guard then stopped a sound run.
Before it raises, the guard draws one more mean gradient at ``x0``, of
``min(GUARD_RECHECK_CALLS, T)`` samples (once per run), and raises only if the iterate is
beyond the bound from that too: when a few rare samples carry the gradient (a metric
learner's anchors on data with 2-3% outlier rows), every mini-batch mean drawn at ``x0``
could miss them (``4e-7`` against ``0.047``, measured). The draw is in the result's
``n_calls`` (``extra_calls``) but not in the method's plan, which was made from the calls
left (charged to it, a stage planned before the draw later found a negative batch): such a
run, one the guard would have stopped, may end past ``T`` by that draw.
"""
import math

import numpy as np
from scipy.optimize import OptimizeResult

from logt._kernels._base import CompiledDomain, CompiledOracle
from logt.methods._base import GUARD_RECHECK_CALLS
from logt.methods._stepper import Stepper

DIVERGENCE_FACTOR = 1000.0


def _fmt_step(eta):
    return "" if eta is None else f" (step size {eta:.6g})"


class Run:
    """State shared by ``minimize`` and a method's driver for one run (not thread-safe)."""

    def __init__(self, method, oracle, domain, T, *, L, lam, G, rng, x0, callback=None,
                 checkpointer=None, trace="fun"):
        self.method, self.oracle, self.domain = method, oracle, domain
        self.name = method.name
        self.T, self.L, self.lam, self.G = T, L, lam, G
        self.rng = rng
        self.shape = tuple(domain.shape)
        self.x0 = x0
        self.callback = callback
        self.checkpointer = checkpointer
        self.n_calls = 0
        self.n_projections = 0
        self.stopped = False
        self.params = None
        self.grad_scale = None          # the first non-zero mean gradient's norm (the methods' scale)
        self.guard_scale = None         # the largest mean-gradient norm drawn at x0 (divergence guard)
        self.guard_rechecked = False    # whether the guard has drawn its own estimate at x0 (once per run)
        self.rescue = None              # what a safeguard's own larger draw found, when it kept the run going
        self.extra_calls = 0            # the guard's own draw: in the result's n_calls, not in the method's plan
        self._python_oracle = not isinstance(oracle, CompiledOracle)
        self._python_domain = not isinstance(domain, CompiledDomain)
        self._value = getattr(oracle, "value", None)
        self._trace_fun = trace == "fun"        # "counts": no F (nor x) per trace row
        self._stepper = None
        self.rows_calls, self.rows_proj, self.rows_val = [], [], []
        self._last = None

    # ---- oracle and domain ----------------------------------------------------------
    def where(self, epoch=None, step=None, eta=None, phase=None):
        if self.x0 is None:
            return f"the projection of x0 (method {self.name!r})"
        parts = [f"method {self.name!r}"]
        if phase is not None:
            parts.append(phase)
        if epoch is not None:
            parts.append(f"epoch {epoch}")
        if step is not None:
            parts.append(f"step {step}")
        return ", ".join(parts) + _fmt_step(eta)

    def _take(self, r, out, what, where):
        """Use the returned array ``r`` when a user's object ignored ``out``."""
        if r is out:
            return out
        try:
            a = np.asarray(r)
        except Exception:                         # noqa: BLE001 - any conversion failure
            a = None
        if a is None or a.dtype.kind not in "biuf" or a.shape != out.shape:
            got = "None" if r is None else f"{type(r).__name__} of shape {np.shape(r)}"
            raise TypeError(f"{what} must return an array of shape {out.shape} (or fill out=), "
                            f"got {got} at {where}")
        np.copyto(out, a, casting="unsafe")
        return out

    def grad(self, w, B, out, *, epoch=None, step=None, eta=None, count=True, phase=None):
        """``out`` = mean of ``B`` stochastic gradients at ``w`` (counted unless ``count=False``, checked);
        ``phase`` names a step outside the epochs in error messages (e.g. an estimate at ``x0``)."""
        if self._python_oracle:
            out.fill(np.nan)                      # a user oracle that never writes is caught below
        try:
            r = self.oracle.mean_grad(w, B, self.rng, out=out)
        except Exception as exc:                 # add the driver's position (epoch, step, B)
            where = f"{self.where(epoch, step, eta, phase)}, batch B={B}"
            if callable(getattr(exc, "with_context", None)):
                raise exc.with_context(where) from exc
            if hasattr(exc, "add_note"):
                exc.add_note(f"logt: raised by oracle.mean_grad at {where}")
            raise
        if count:
            self.n_calls += B
        if r is not out:
            out = self._take(r, out, "oracle.mean_grad", self.where(epoch, step, eta, phase))
        if not np.isfinite(out).all():
            raise FloatingPointError(f"the oracle returned a non-finite (NaN or Inf) gradient at "
                                     f"{self.where(epoch, step, eta, phase)}")
        if not self.grad_scale:                   # None, or only zero gradients so far
            self.grad_scale = float(np.linalg.norm(out))
        if self._at_x0(w):
            self.guard_scale = max(self.guard_scale or 0.0, float(np.linalg.norm(out)))
        return out

    def recheck_gradient_norm(self, w, *, epoch=None, step=None, eta=None, phase=None, planned=True):
        """``(norm, B)``: the norm of one mean gradient at ``w`` of ``B`` samples, or ``(None, 0)`` when no call is
        left. The safeguards' own measurement before they stop a run (the divergence guard below, the trust balls of
        logT's and AC-SA's auto rules; once per run each): their scales are means of fewer samples, which can all
        miss the few samples that carry the gradient. ``planned``: ``B = min(GUARD_RECHECK_CALLS, T - n_calls)``,
        counted in ``n_calls`` (the caller re-plans from the calls left); else ``B = min(GUARD_RECHECK_CALLS, T)``,
        counted in ``extra_calls`` only (the guard: a method's plan, made from ``n_calls``, stays as it was)."""
        B = min(GUARD_RECHECK_CALLS, (self.T - self.n_calls) if planned else self.T)
        if B < 1:
            return None, 0
        g = np.empty(self.shape)
        self.grad(w, B, g, epoch=epoch, step=step, eta=eta, phase=phase, count=planned)
        if not planned:
            self.extra_calls += B
        return float(np.linalg.norm(g)), B

    def _at_x0(self, w):
        """Whether ``w`` is the start point (one element compared first: cheap when it is not)."""
        x0 = self.x0
        if x0 is None or w.shape != x0.shape:
            return False
        return w is x0 or (w.flat[0] == x0.flat[0] and np.array_equal(w, x0))

    def project(self, v, out, *, epoch=None, step=None, eta=None, count=True):
        """``out`` = ``Pi_D(v)`` (counted unless ``count=False``; ``out`` may be ``v``); a non-finite
        ``v`` is an error."""
        if self._python_domain:
            if not np.isfinite(v).all():
                self._non_finite_before_projection(epoch, step, eta)
            r = self.domain.project(v, out=out)
            if r is not out:
                out = self._take(r, out, "domain.project", self.where(epoch, step, eta))
            if not np.isfinite(out).all():
                raise FloatingPointError(f"the projection returned a non-finite point at "
                                         f"{self.where(epoch, step, eta)}")
        else:
            # compiled domains validate their input (ValueError for NaN/Inf) and return finite points
            try:
                self.domain.project(v, out=out)
            except ValueError:
                if not np.isfinite(v).all():
                    self._non_finite_before_projection(epoch, step, eta)
                raise
        if count:
            self.n_projections += 1
        return out

    def _non_finite_before_projection(self, epoch, step, eta):
        raise FloatingPointError(
            f"the iterate became non-finite (NaN or Inf) before a projection at "
            f"{self.where(epoch, step, eta)}; the step size is too large for this problem")

    def steps(self, x, xsum, n_steps, rule, *, eta=0.0, lam=1.0, t0=0, epoch=None, B=1):
        """``n_steps`` projected SGD steps on ``x`` in place, each with a mean of ``B`` oracle
        samples, iterates added to ``xsum`` (counted: ``B*n_steps`` calls, ``n_steps`` projections)."""
        if n_steps <= 0:
            return
        if self._stepper is None:
            self._stepper = Stepper(self)
        gmax = self._stepper.run(x, xsum, n_steps, rule, eta=eta, lam=lam, t0=t0, epoch=epoch, B=B)
        self.n_calls += n_steps * B
        self.n_projections += n_steps
        self.grad_scale = self.grad_scale or gmax         # the first non-zero scale

    def penalty_steps(self, x, xsum, n_steps, rule, *, constraint, penalty, center, radius, eta=0.0,
                      lam=1.0, t0=0, epoch=None):
        """``n_steps`` SGD steps on ``F + penalty*max(c, 0)`` WITHOUT projections onto the domain
        (one-projection SGD; see ``Stepper.penalty``): ``n_steps`` calls, no projection counted."""
        if n_steps <= 0:
            return
        if self._stepper is None:
            self._stepper = Stepper(self)
        gmax = self._stepper.penalty(x, xsum, n_steps, rule, constraint, penalty, center, radius,
                                     eta=eta, lam=lam, t0=t0, epoch=epoch)
        self.n_calls += n_steps
        self.grad_scale = self.grad_scale or gmax         # the first non-zero scale

    def fw_steps(self, x, batches, *, k0, lmo, epoch=None):
        """Stochastic Frank-Wolfe iterations ``k0+1 ..`` with mini-batches ``batches`` (see
        ``Stepper.frank_wolfe``): ``sum(batches)`` calls, no projection counted."""
        if len(batches) == 0:
            return
        if self._stepper is None:
            self._stepper = Stepper(self)
        gmax = self._stepper.frank_wolfe(x, batches, k0, lmo, epoch=epoch)
        self.n_calls += int(np.sum(batches, dtype=np.int64))
        self.grad_scale = self.grad_scale or gmax         # the first non-zero scale

    # ---- segments ---------------------------------------------------------------------
    def value(self, x):
        """``F(x)``, or None without ``oracle.value``; reuses the last trace row's F for the same point."""
        if self._value is None:
            return None
        if self._last is not None and np.array_equal(self._last[0], x):
            return self._last[1]
        return float(self._value(x))

    def setup(self, x0):
        """Project the start point once (not counted); it becomes the guard's reference ``x0``."""
        x0 = self.project(x0, x0, count=False)
        self.x0 = np.array(x0, copy=True)
        return x0

    def check_iterate(self, x, epoch=None, step=None, eta=None):
        """Raise ``FloatingPointError`` for a non-finite or diverged iterate (see the module docstring)."""
        if not np.isfinite(x).all():
            raise FloatingPointError(f"the iterate became non-finite (NaN or Inf) at "
                                     f"{self.where(epoch, step, eta)}")
        scale = max(self.grad_scale or 0.0, self.guard_scale or 0.0)
        if not scale:                             # no scale yet (or every gradient so far was 0)
            return
        diff = x - self.x0
        amax = float(np.max(np.abs(diff))) if diff.size else 0.0
        dist = amax * float(np.linalg.norm(diff / amax)) if amax > 0 else 0.0     # no overflow
        bound = DIVERGENCE_FACTOR * scale / self.lam
        if dist > bound and dist > 0 and not self.guard_rechecked:
            # every mean gradient drawn at x0 may have missed the few samples that carry the gradient: one
            # larger draw there (counted; at x0 it raises guard_scale if larger) before calling the run diverged
            self.guard_rechecked = True
            _, B = self.recheck_gradient_norm(self.x0, epoch=epoch, step=step, eta=eta, planned=False,
                                              phase="the divergence guard's estimate of ||grad F(x0)||")
            old, scale = scale, max(scale, self.guard_scale or 0.0)
            bound = DIVERGENCE_FACTOR * scale / self.lam
            if dist <= bound:
                self.rescue = (f"the divergence guard's mean of {B:,} gradients at x0 has norm {scale:.3g}, "
                               f"{scale / old:.3g} times the largest of the smaller means drawn there")
        if dist > bound and dist > 0:
            raise FloatingPointError(
                f"{self.where(epoch, step, eta)}: the iterate diverged: ||x - x0|| = {dist:.3g} exceeds "
                f"{DIVERGENCE_FACTOR:g} * ||g0|| / lam = {bound:.3g} (for a lam-strongly convex F, "
                f"||x0 - w_*|| <= ||grad F(x0)|| / lam); use a smaller step size or check L and lam")

    def boundary(self, state, x=None, *, epoch=None, step=None, record=True, eta=None):
        """End of a segment: trace row (``record``), checks, callback, checkpoint. True = stop."""
        if x is not None:
            self.check_iterate(x, epoch=epoch, step=step, eta=eta)
        if record:
            v = self.value(x) if self._trace_fun or self.callback is not None else None
            if v is not None:
                if not math.isfinite(v):
                    raise FloatingPointError(f"F(x) = {v} at {self.where(epoch, step, eta)}: the run diverged")
                self._last = (np.array(x, copy=True), v)
            self.rows_calls.append(self.n_calls)
            self.rows_proj.append(self.n_projections)
            if self._trace_fun:
                self.rows_val.append(v if self._value is not None else np.array(x, copy=True))
            if self.callback is not None:
                info = OptimizeResult(x=x, fun=v, n_calls=self.n_calls, n_projections=self.n_projections,
                                      epoch=epoch)
                if self.callback(info) is True:
                    self.stopped = True
        if self.checkpointer is not None and not self.stopped:
            self.checkpointer.maybe_save(self, state)
        return self.stopped

    def trace(self):
        out = {"n_calls": np.asarray(self.rows_calls, dtype=np.int64),
               "n_projections": np.asarray(self.rows_proj, dtype=np.int64)}
        if not self._trace_fun:
            return out
        if self._value is not None:
            out["fun"] = np.asarray(self.rows_val, dtype=np.float64)
        else:
            out["x"] = np.asarray(self.rows_val).reshape((len(self.rows_val),) + self.shape)
        return out

    # ---- checkpoint support -------------------------------------------------------------
    def snapshot(self):
        """Counters, trace rows and the gradient scales (for a checkpoint)."""
        return {"n_calls": self.n_calls, "n_projections": self.n_projections,
                "grad_scale": self.grad_scale, "guard_scale": self.guard_scale,
                "guard_rechecked": self.guard_rechecked, "rescue": self.rescue, "extra_calls": self.extra_calls,
                "trace": self.trace()}

    def restore(self, snap):
        self.n_calls = int(snap["n_calls"])
        self.n_projections = int(snap["n_projections"])
        self.grad_scale = snap["grad_scale"]
        self.guard_scale = snap.get("guard_scale")        # None in checkpoints of older releases
        self.guard_rechecked = bool(snap.get("guard_rechecked", False))
        self.rescue = snap.get("rescue")
        self.extra_calls = int(snap.get("extra_calls", 0))
        tr = snap["trace"]
        self.rows_calls = [int(v) for v in tr["n_calls"]]
        self.rows_proj = [int(v) for v in tr["n_projections"]]
        if not self._trace_fun:
            self.rows_val = []
        elif "fun" in tr:
            self.rows_val = [float(v) for v in tr["fun"]]
        else:
            self.rows_val = [np.array(v) for v in tr["x"]]
        self._last = None

