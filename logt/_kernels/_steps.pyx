# cython: language_level=3
"""Compiled projected-SGD step loops (the baselines' hot path).

One step: ``g = g_hat(x)`` (one oracle call), ``x <- Pi_D(x - step*g)`` (one
projection), ``xsum += x``. The whole loop runs without the GIL through the
C-level methods of ``CompiledOracle`` and ``CompiledDomain``, so SGD and
Epoch-GD at ``T = 10**6`` measure oracle calls and projections, not the
interpreter. The driver (``logt.methods``, through ``logt._run.Run``) calls
``run_steps`` once per segment and does all the counting.

Every step checks the gradient, the updated point and the projected point
for NaN/Inf, so a diverging run stops at the step where it happens. Pending
signals (Ctrl-C) are checked every ~20 ms of wall-clock time: the clock is
read every few steps (the stride adapts so a read happens every 0.5-2 ms of
work, whatever a step costs) and the GIL is taken only for the check.
"""
import numpy as np

from cpython.exc cimport PyErr_CheckSignals
from libc.math cimport fabs, isfinite, sqrt
from numpy.random cimport bitgen_t
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

from logt._kernels._base cimport CompiledDomain, CompiledOracle, bitgen_of
from logt._kernels._free cimport ConstraintFunction, LinearOracle

# step rules
cdef enum:
    RULE_CONSTANT = 0      # step = eta
    RULE_INVERSE = 1       # step = 1 / (lam * t), capped at eta when eta > 0

STEP_CONSTANT = RULE_CONSTANT
STEP_INVERSE = RULE_INVERSE

# status codes of run_steps
cdef enum:
    S_DONE = 0
    S_BAD_GRADIENT = 1       # the oracle returned NaN/Inf
    S_ORACLE_FAILED = 2      # mean_grad_into returned a nonzero code (in info)
    S_PROJECTION_FAILED = 3  # project_inplace returned a nonzero code (in info)
    S_BAD_ITERATE = 4        # x - step*g overflowed to Inf (or NaN)
    S_BAD_PROJECTION = 5     # the projection returned NaN/Inf
    S_CONSTRAINT_FAILED = 6  # value_grad returned a nonzero code (in info)
    S_LMO_FAILED = 7         # lmo_into returned a nonzero code (in info)
    S_BAD_LMO = 8            # the LMO returned NaN/Inf

DONE = S_DONE
BAD_GRADIENT = S_BAD_GRADIENT
ORACLE_FAILED = S_ORACLE_FAILED
PROJECTION_FAILED = S_PROJECTION_FAILED
BAD_ITERATE = S_BAD_ITERATE
BAD_PROJECTION = S_BAD_PROJECTION
CONSTRAINT_FAILED = S_CONSTRAINT_FAILED
LMO_FAILED = S_LMO_FAILED
BAD_LMO = S_BAD_LMO

cdef long long SIGNAL_EVERY_NS = 20000000      # check pending signals every 20 ms


cdef inline long long _now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <long long>ts.tv_sec * 1000000000 + ts.tv_nsec


def run_steps(CompiledOracle oracle, CompiledDomain domain, double[::1] x,
              double[::1] xsum, double[::1] g, Py_ssize_t n_steps, int rule,
              double eta, double lam, Py_ssize_t t0, rng, Py_ssize_t B=1):
    """Run ``n_steps`` projected stochastic gradient steps in place.

    x : (size,) current point, updated in place; xsum : (size,) gets the sum of
    the ``n_steps`` new iterates added; g : (size,) scratch for the gradient.
    rule : STEP_CONSTANT (step ``eta``) or STEP_INVERSE (step ``1/(lam*t)``,
    ``t = t0 + s`` for the ``s``-th step of this call, ``s = 1..n_steps``;
    capped at ``eta`` when ``eta > 0``: ``min(eta, 1/(lam*t))``).
    rng : the numpy Generator (its lock is held for the whole call).
    B : oracle samples averaged per step (``mean_grad_into(x, B)``; 1 = plain SGD).

    Returns ``(status, s, info, gmax)``: ``status`` one of the module's codes
    (``DONE``: all steps ran, ``s == n_steps``; otherwise the failing step
    ``s``, 1-based), ``info`` the oracle's or domain's nonzero code, ``gmax``
    the largest gradient norm seen. A pending KeyboardInterrupt (or any
    signal handler's exception) is raised after the step in progress; ``x``
    and ``xsum`` then hold a consistent state after the last finished step.
    """
    cdef Py_ssize_t n = oracle.size
    if domain.size != n or x.shape[0] != n or xsum.shape[0] != n or g.shape[0] != n:
        raise ValueError("oracle, domain and buffers must have the same size")
    if rule != STEP_CONSTANT and rule != STEP_INVERSE:
        raise ValueError(f"unknown step rule {rule}")
    if rule == STEP_INVERSE and not (lam > 0 and isfinite(lam)):
        raise ValueError(f"lam must be finite and > 0, got {lam}")
    if not isfinite(eta) or eta < 0:
        raise ValueError(f"eta must be finite and >= 0, got {eta}")
    if n_steps < 0 or t0 < 0:
        raise ValueError("n_steps and t0 must be >= 0")
    if B < 1:
        raise ValueError(f"B must be >= 1, got {B}")
    cdef bitgen_t* bg = bitgen_of(rng)
    cdef Py_ssize_t s = 0, i
    cdef int status = S_DONE, info = 0
    cdef double step, v, g2, gmax2 = 0.0
    cdef double* xp = &x[0]
    cdef double* sp = &xsum[0]
    cdef double* gp = &g[0]
    cdef long long last_check = _now_ns(), last_clock = last_check, now
    cdef Py_ssize_t stride = 1, since = 0       # read the clock every `stride` steps (adaptive)
    with oracle._lock, domain._lock, rng.bit_generator.lock:
        with nogil:
            while s < n_steps:
                s += 1
                info = oracle.mean_grad_into(xp, B, bg, gp)
                if info != 0:
                    status = S_ORACLE_FAILED
                    break
                if rule == RULE_CONSTANT:
                    step = eta
                else:
                    step = 1.0 / (lam * <double>(t0 + s))
                    if eta > 0 and step > eta:
                        step = eta
                g2 = 0.0
                for i in range(n):
                    g2 += gp[i] * gp[i]
                if not isfinite(g2):
                    for i in range(n):
                        if not isfinite(gp[i]):
                            status = S_BAD_GRADIENT
                            break
                    if status != S_DONE:
                        break
                    # every entry is finite: only the squared norm overflowed (gmax2 becomes inf)
                if g2 > gmax2:
                    gmax2 = g2
                v = 0.0
                for i in range(n):
                    xp[i] -= step * gp[i]
                    v += xp[i] * 0.0            # NaN iff some x[i] is Inf or NaN
                if v != 0.0:
                    status = S_BAD_ITERATE
                    break
                info = domain.project_inplace(xp)
                if info != 0:
                    status = S_PROJECTION_FAILED
                    break
                v = 0.0
                for i in range(n):
                    sp[i] += xp[i]
                    v += xp[i] * 0.0
                if v != 0.0:
                    status = S_BAD_PROJECTION
                    break
                since += 1
                if since >= stride:
                    since = 0
                    now = _now_ns()
                    # aim at one clock read per ~0.5-2 ms of work, whatever a step costs
                    if now - last_clock < 500000 and stride < 4096:
                        stride *= 2
                    elif now - last_clock > 2000000 and stride > 1:
                        stride //= 2
                    last_clock = now
                    if now - last_check >= SIGNAL_EVERY_NS:
                        last_check = now
                        with gil:
                            PyErr_CheckSignals()
    return status, s, info, (gmax2 ** 0.5 if isfinite(gmax2) else float("inf"))


# ---- shared pieces of the loops below -----------------------------------------------------
cdef struct _Clock:
    long long last_check
    long long last_clock
    Py_ssize_t stride
    Py_ssize_t since


cdef inline void _clock_start(_Clock* c) noexcept nogil:
    c.last_check = _now_ns()
    c.last_clock = c.last_check
    c.stride = 1
    c.since = 0


cdef inline bint _clock_due(_Clock* c) noexcept nogil:
    """Count one step; True when pending signals should be checked (about every 20 ms)."""
    cdef long long now
    c.since += 1
    if c.since < c.stride:
        return False
    c.since = 0
    now = _now_ns()
    if now - c.last_clock < 500000 and c.stride < 4096:
        c.stride *= 2
    elif now - c.last_clock > 2000000 and c.stride > 1:
        c.stride //= 2
    c.last_clock = now
    if now - c.last_check >= SIGNAL_EVERY_NS:
        c.last_check = now
        return True
    return False


cdef inline int _grad_status(const double* gp, Py_ssize_t n, double* g2_out) noexcept nogil:
    """Squared norm of g in g2_out; S_BAD_GRADIENT if an entry is NaN/Inf (an overflowing
    norm of finite entries is not an error)."""
    cdef Py_ssize_t i
    cdef double g2 = 0.0
    for i in range(n):
        g2 += gp[i] * gp[i]
    g2_out[0] = g2
    if not isfinite(g2):
        for i in range(n):
            if not isfinite(gp[i]):
                return S_BAD_GRADIENT
    return S_DONE


cdef inline bint _all_finite(const double* x, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef double v = 0.0
    for i in range(n):
        v += x[i] * 0.0            # NaN iff some x[i] is Inf or NaN
    return v == 0.0


def _check_rule(int rule, double eta, double lam):
    if rule != STEP_CONSTANT and rule != STEP_INVERSE:
        raise ValueError(f"unknown step rule {rule}")
    if rule == STEP_INVERSE and not (lam > 0 and isfinite(lam)):
        raise ValueError(f"lam must be finite and > 0, got {lam}")
    if not isfinite(eta) or eta < 0:
        raise ValueError(f"eta must be finite and >= 0, got {eta}")


def run_penalty_steps(CompiledOracle oracle, ConstraintFunction constraint, double[::1] x,
                      double[::1] xsum, double[::1] g, double[::1] cg, Py_ssize_t n_steps,
                      int rule, double eta, double lam, Py_ssize_t t0, double penalty,
                      double[::1] center, double radius, rng):
    """Run ``n_steps`` SGD steps on the penalized objective ``F(x) + penalty * max(c(x), 0)``
    WITHOUT projecting onto the domain ``D = {c <= 0}`` (Mahdavi et al. 2012).

    One step: ``g = g_hat(x)`` (one oracle call), plus ``penalty * grad c(x)`` when
    ``c(x) > 0``; ``x <- x - step * g``; if ``radius > 0``, ``x`` is pulled back into
    the ball ``||x - center|| <= radius`` (a rescaling, not a projection onto ``D``);
    ``xsum += x``. Steps as in ``run_steps`` (``rule``, ``eta``, ``lam``, ``t0``).
    x, xsum, g, cg (scratch for grad c), center : (size,) buffers.
    Returns ``(status, s, info, gmax)`` as ``run_steps``.
    """
    cdef Py_ssize_t n = oracle.size
    if (constraint.size != n or x.shape[0] != n or xsum.shape[0] != n or g.shape[0] != n
            or cg.shape[0] != n or center.shape[0] != n):
        raise ValueError("oracle, constraint and buffers must have the same size")
    _check_rule(rule, eta, lam)
    if not (isfinite(penalty) and penalty >= 0):
        raise ValueError(f"penalty must be finite and >= 0, got {penalty}")
    if not isfinite(radius):
        raise ValueError(f"radius must be finite, got {radius}")
    if n_steps < 0 or t0 < 0:
        raise ValueError("n_steps and t0 must be >= 0")
    cdef bitgen_t* bg = bitgen_of(rng)
    cdef Py_ssize_t s = 0, i
    cdef int status = S_DONE, info = 0
    cdef double step, g2, gmax2 = 0.0, cval, amax, t, nrm, f
    cdef double* xp = &x[0]
    cdef double* sp = &xsum[0]
    cdef double* gp = &g[0]
    cdef double* cp = &cg[0]
    cdef double* ctr = &center[0]
    cdef _Clock clk
    _clock_start(&clk)
    with oracle._lock, constraint._lock, rng.bit_generator.lock:
        with nogil:
            while s < n_steps:
                s += 1
                info = oracle.mean_grad_into(xp, 1, bg, gp)
                if info != 0:
                    status = S_ORACLE_FAILED
                    break
                status = _grad_status(gp, n, &g2)
                if status != S_DONE:
                    break
                if g2 > gmax2:
                    gmax2 = g2
                cval = 0.0
                info = constraint.value_grad(xp, &cval, cp)
                if info != 0:
                    status = S_CONSTRAINT_FAILED
                    break
                if rule == RULE_CONSTANT:
                    step = eta
                else:
                    step = 1.0 / (lam * <double>(t0 + s))
                    if eta > 0 and step > eta:
                        step = eta
                if cval > 0.0:
                    for i in range(n):
                        xp[i] -= step * (gp[i] + penalty * cp[i])
                else:
                    for i in range(n):
                        xp[i] -= step * gp[i]
                if not _all_finite(xp, n):
                    status = S_BAD_ITERATE
                    break
                if radius > 0.0:
                    amax = 0.0
                    for i in range(n):
                        t = fabs(xp[i] - ctr[i])
                        if t > amax:
                            amax = t
                    if amax > 0.0:
                        nrm = 0.0
                        for i in range(n):
                            t = (xp[i] - ctr[i]) / amax
                            nrm += t * t
                        nrm = amax * sqrt(nrm)
                        if nrm > radius:
                            f = radius / nrm
                            for i in range(n):
                                xp[i] = ctr[i] + (xp[i] - ctr[i]) * f
                for i in range(n):
                    sp[i] += xp[i]
                if _clock_due(&clk):
                    with gil:
                        PyErr_CheckSignals()
    return status, s, info, (gmax2 ** 0.5 if isfinite(gmax2) else float("inf"))


def run_fw_steps(CompiledOracle oracle, LinearOracle lmo, double[::1] x, double[::1] g,
                 double[::1] s_buf, const long long[::1] batches, Py_ssize_t k0, rng):
    """Run ``len(batches)`` stochastic Frank-Wolfe iterations in place (no projection).

    Iteration ``k = k0 + i + 1`` (``i = 0, 1, ...``): ``g`` = mean of ``batches[i]``
    stochastic gradients at ``x``; ``s = argmin_{s in D} <g, s>`` (the LMO);
    ``x <- (1 - gamma) x + gamma s`` with ``gamma = 2/(k + 1)``.
    x, g, s_buf : (size,) buffers. Returns ``(status, i, info, gmax)`` as ``run_steps``
    (``i`` the number of iterations run, 1-based index of the failing one).
    """
    cdef Py_ssize_t n = oracle.size, n_iter = batches.shape[0]
    if lmo.size != n or x.shape[0] != n or g.shape[0] != n or s_buf.shape[0] != n:
        raise ValueError("oracle, LMO and buffers must have the same size")
    if k0 < 0:
        raise ValueError("k0 must be >= 0")
    cdef Py_ssize_t i
    for i in range(n_iter):
        if batches[i] < 1:
            raise ValueError(f"batch sizes must be >= 1, got {batches[i]}")
    cdef bitgen_t* bg = bitgen_of(rng)
    cdef Py_ssize_t it = 0
    cdef int status = S_DONE, info = 0
    cdef double gamma, g2, gmax2 = 0.0
    cdef double* xp = &x[0]
    cdef double* gp = &g[0]
    cdef double* sp = &s_buf[0]
    cdef _Clock clk
    _clock_start(&clk)
    with oracle._lock, lmo._lock, rng.bit_generator.lock:
        with nogil:
            while it < n_iter:
                info = oracle.mean_grad_into(xp, <Py_ssize_t>batches[it], bg, gp)
                it += 1
                if info != 0:
                    status = S_ORACLE_FAILED
                    break
                status = _grad_status(gp, n, &g2)
                if status != S_DONE:
                    break
                if g2 > gmax2:
                    gmax2 = g2
                info = lmo.lmo_into(gp, sp)
                if info != 0:
                    status = S_LMO_FAILED
                    break
                if not _all_finite(sp, n):
                    status = S_BAD_LMO
                    break
                gamma = 2.0 / <double>(k0 + it + 1)
                for i in range(n):
                    xp[i] = (1.0 - gamma) * xp[i] + gamma * sp[i]
                if _clock_due(&clk):
                    with gil:
                        PyErr_CheckSignals()
    return status, it, info, (gmax2 ** 0.5 if isfinite(gmax2) else float("inf"))
