# cython: language_level=3
"""Compiled projected-SGD step loops (the baselines' hot path).

One step: ``g = g_hat(x)`` (one oracle call), ``x <- Pi_D(x - step*g)`` (one
projection), ``xsum += x``. The whole loop runs without the GIL through the
C-level methods of ``CompiledOracle`` and ``CompiledDomain``, so SGD and
Epoch-GD at ``T = 10**6`` measure oracle calls and projections, not the
interpreter. The driver (``logt.methods``) calls ``run_steps`` once per
segment (between trace points / epochs) and does all the counting.
"""
import numpy as np

from libc.math cimport isfinite
from numpy.random cimport bitgen_t

from logt._kernels._base cimport CompiledDomain, CompiledOracle, bitgen_of

# step rules
cdef enum:
    RULE_CONSTANT = 0      # step = eta
    RULE_INVERSE = 1       # step = 1 / (lam * t)

STEP_CONSTANT = RULE_CONSTANT
STEP_INVERSE = RULE_INVERSE


def run_steps(CompiledOracle oracle, CompiledDomain domain, double[::1] x,
              double[::1] xsum, double[::1] g, Py_ssize_t n_steps, int rule,
              double eta, double lam, Py_ssize_t t0, rng):
    """Run ``n_steps`` projected stochastic gradient steps in place.

    x : (size,) current point, updated in place; xsum : (size,) gets the sum of
    the ``n_steps`` new iterates added; g : (size,) scratch for the gradient.
    rule : STEP_CONSTANT (step ``eta``) or STEP_INVERSE (step ``1/(lam*t)``,
    ``t = t0 + s`` for the ``s``-th step of this call, ``s = 1..n_steps``).
    rng : the numpy Generator (its lock is held for the whole call).

    Returns ``(status, s)``: status 0 = done (``s == n_steps``); 1 = the oracle
    returned a non-finite gradient at step ``s``; 2 = the oracle failed at step
    ``s``; 3 = the projection failed at step ``s`` (code in ``info``), as a
    tuple ``(status, s, info)``.
    """
    cdef Py_ssize_t n = oracle.size
    if domain.size != n or x.shape[0] != n or xsum.shape[0] != n or g.shape[0] != n:
        raise ValueError("oracle, domain and buffers must have the same size")
    if rule != STEP_CONSTANT and rule != STEP_INVERSE:
        raise ValueError(f"unknown step rule {rule}")
    if rule == STEP_INVERSE and not lam > 0:
        raise ValueError("lam must be > 0")
    if n_steps < 0 or t0 < 0:
        raise ValueError("n_steps and t0 must be >= 0")
    cdef bitgen_t* bg = bitgen_of(rng)
    cdef Py_ssize_t s = 0, i
    cdef int status = 0, info = 0
    cdef double step
    cdef double* xp = &x[0]
    cdef double* sp = &xsum[0]
    cdef double* gp = &g[0]
    with oracle._lock, domain._lock, rng.bit_generator.lock:
        with nogil:
            while s < n_steps:
                s += 1
                info = oracle.mean_grad_into(xp, 1, bg, gp)
                if info != 0:
                    status = 2
                    break
                if rule == RULE_CONSTANT:
                    step = eta
                else:
                    step = 1.0 / (lam * <double>(t0 + s))
                for i in range(n):
                    if not isfinite(gp[i]):
                        status = 1
                        break
                    xp[i] -= step * gp[i]
                if status != 0:
                    break
                info = domain.project_inplace(xp)
                if info != 0:
                    status = 3
                    break
                for i in range(n):
                    sp[i] += xp[i]
    return status, s, info
