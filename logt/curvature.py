"""Curvature estimate from the stochastic oracle itself (used by ``params="auto"``).

:func:`estimate_curvature` returns ``L_est``, an estimate of the largest
eigenvalue of the Hessian of ``F`` at a point ``x`` (the local smoothness, in
the Frobenius norm for matrices), using only ``mean_grad`` calls made through a
:class:`logt._run.Run`, so every call is counted in ``n_calls`` and charged to
the budget ``T``.

How
---
Hessian-vector products are differences of two mini-batch gradients drawn
with the *same* random numbers (common random numbers): the generator's state
is saved before the gradient ``g0 = g_B(x)`` and restored before every
``g_B(x + delta v)``, so both averages use the same ``B`` samples and the
sampling noise cancels in ``(g_B(x + delta v) - g0) / delta``: for a quadratic
with additive noise (the paper's toy) the product is exact, for a sum of
per-sample losses (metric learning) it is the product with the Hessian of the
``B`` sampled losses. A few steps of the Lanczos process with full
reorthogonalization on that operator give the top Ritz value ``theta``, a
lower bound on the sampled operator's largest eigenvalue that converges much
faster than the power method (after ``k`` products, the error falls like
``exp(-4 k sqrt(gap))`` for a relative gap ``gap``). Cost: ``B * (n_iter + 1)``
oracle calls.

What the estimate is (and is not)
---------------------------------
* It is the curvature of the *sampled* objective at ``x``: with a small ``B``
  a per-sample loss whose Hessian has a few large eigenvalues (metric
  learning: ``sigma''(z) ||D||^4`` for one pair) inflates it. Measured on the
  synthetic metric problem of the bank (n = 300, d = 20, lam = 1e-3) at its
  optimum, where the exact value is 0.0119: B = 16 gives 0.05-0.10, B = 64
  0.02-0.03, B = 256 0.013-0.016, B = 1024 0.0124-0.0131. An overestimate only
  makes the step smaller (safe); :func:`estimate_curvature_adaptive` doubles
  ``B`` until two successive estimates agree.
* It is local: for the logistic-type losses the curvature at the start
  ``W = 0`` (0.26 there) is 20 times the curvature near the optimum, which is
  why ``params="auto"`` re-estimates it at the start of the first epochs.
* The oracle is evaluated at ``x + delta v`` with ``||delta v|| = rel_step *
  max(||x||, ||g0|| / lam, tiny)``, which may lie just outside the domain.
"""
import math

import numpy as np

__all__ = ["estimate_curvature", "estimate_curvature_adaptive", "lanczos_top"]

REL_STEP = 1e-6         # ||delta v|| relative to the point's scale


def lanczos_top(alphas, betas):
    """Largest eigenvalue of the tridiagonal matrix (``alphas`` diagonal, ``betas`` off-diagonal)
    and the absolute last component of its eigenvector (for the residual bound ``beta_k |s_k|``)."""
    k = len(alphas)
    Tm = np.diag(np.asarray(alphas, dtype=float))
    if k > 1:
        off = np.asarray(betas[:k - 1], dtype=float)
        Tm += np.diag(off, 1) + np.diag(off, -1)
    w, S = np.linalg.eigh(Tm)
    return float(w[-1]), float(abs(S[-1, -1]))


def estimate_curvature(run, x, B, n_iter=8, *, v0=None, lam=None, tol=0.01,
                       where="the curvature estimate"):
    """Largest eigenvalue of the sampled Hessian of ``F`` at ``x`` (Lanczos on common-random-number
    gradient differences); every oracle call goes through ``run.grad`` (counted).

    Parameters
    ----------
    run : logt._run.Run (its ``rng`` is used and advanced; ``run.grad`` counts the calls).
    x : ndarray of shape ``run.shape``, the point (not modified).
    B : int >= 1, samples per gradient (the same ``B`` samples for every product).
    n_iter : int >= 1, at most this many Hessian-vector products (Lanczos steps).
    v0 : optional start vector of shape ``run.shape`` (e.g. the previous estimate's
        eigenvector); default a standard normal draw from ``run.rng``.
    lam : strong convexity (default ``run.lam``), sets the finite-difference scale.
    tol : stop early when the Ritz residual bound ``beta_k |s_k|`` falls below
        ``tol * theta``.
    where : names this estimate in the error of a non-finite gradient.

    Returns
    -------
    (L_est, details) : ``L_est`` the top Ritz value (float > 0; floored at
    ``lam``), ``details`` a dict: ``calls`` (oracle calls spent, ``B * (k + 1)``),
    ``n_products`` (``k``), ``B``, ``residual`` (the Ritz residual bound; the
    sampled operator has an eigenvalue within it of ``L_est``), ``vector`` (the
    Ritz vector, shape ``run.shape``, to warm-start the next estimate), ``grad_norm``
    (``||g_B(x)||``), ``blind`` (the mean gradient was exactly 0 and no curvature above
    ``lam`` was seen: samples that carry no gradient, e.g. all-zero rows of sparse
    data; the estimate then says nothing about ``L``).
    """
    lam = run.lam if lam is None else lam
    shape = run.shape
    rng = run.rng
    if v0 is None:
        v = rng.standard_normal(shape)
    else:
        v = np.array(v0, dtype=np.float64, copy=True)
        if not np.isfinite(v).all() or not np.any(v):
            v = rng.standard_normal(shape)
    x = np.ascontiguousarray(x, dtype=np.float64)
    calls0 = run.n_calls
    saved = rng.bit_generator.state                  # common random numbers: replay this state
    g0 = np.empty(shape)
    run.grad(x, B, g0, eta=None, phase=where)
    after = rng.bit_generator.state
    scale = max(float(np.linalg.norm(x)), float(np.linalg.norm(g0)) / lam, 1e-300)
    delta = REL_STEP * scale
    xp = np.empty(shape)
    gp = np.empty(shape)
    V = []                                           # orthonormal Lanczos vectors (flattened)
    alphas, betas = [], []
    q = v.reshape(-1) / np.linalg.norm(v)
    theta, resid, s_last = 0.0, math.inf, 1.0
    for k in range(int(n_iter)):
        np.multiply(q.reshape(shape), delta, out=xp)
        xp += x
        rng.bit_generator.state = saved
        run.grad(xp, B, gp, eta=None, phase=where)
        w = (gp - g0).reshape(-1) / delta            # ~ H_B q
        a = float(np.dot(q, w))
        V.append(q)
        alphas.append(a)
        for u in V:                                  # full reorthogonalization (twice is enough)
            w -= np.dot(u, w) * u
        for u in V:
            w -= np.dot(u, w) * u
        b = float(np.linalg.norm(w))
        theta, s_last = lanczos_top(alphas, betas)
        resid = b * s_last
        betas.append(b)
        if resid <= tol * abs(theta) or b <= 1e-12 * max(abs(a), 1e-300) or len(V) >= q.size:
            break
        q = w / b
    rng.bit_generator.state = after                  # leave the stream as after one gradient call
    # Ritz vector of the top Ritz value
    k = len(alphas)
    Tm = np.diag(np.asarray(alphas))
    if k > 1:
        off = np.asarray(betas[:k - 1])
        Tm += np.diag(off, 1) + np.diag(off, -1)
    _, S = np.linalg.eigh(Tm)
    vec = (np.stack(V, axis=1) @ S[:, -1]).reshape(shape)
    L_est = max(float(theta), float(lam))
    g0_norm = float(np.linalg.norm(g0))
    return L_est, {"calls": run.n_calls - calls0, "n_products": k, "B": int(B),
                   "residual": float(resid), "vector": vec, "grad_norm": g0_norm,
                   "blind": bool(g0_norm == 0.0 and theta <= lam * (1.0 + 1e-6))}


def estimate_curvature_adaptive(run, x, B_start, B_max, n_iter=8, *, v0=None, agree=1.25,
                                 lam=None):
    """:func:`estimate_curvature` at ``B_start, 2 B_start, ...`` (at most ``B_max``) until two
    successive estimates agree within the factor ``agree`` (a ``blind`` estimate never
    agrees: the batch keeps doubling to find samples that carry a gradient); returns the last one.

    A small batch overestimates the curvature of a sum of per-sample losses
    (see the module docstring); doubling stops when it no longer matters. The
    eigenvector of each estimate warm-starts the next. Returns ``(L_est, details)``
    as :func:`estimate_curvature`, with ``calls`` summed over all rounds and
    ``history`` the list of ``(B, L)``.
    """
    B = max(1, int(B_start))
    B_max = max(B, int(B_max))
    total, hist, prev, vec = 0, [], None, v0
    while True:
        L, det = estimate_curvature(run, x, B, n_iter, v0=vec, lam=lam, where="the curvature estimate at x0")
        total += det["calls"]
        hist.append((B, L))
        vec = det["vector"]
        if prev is not None and prev / agree <= L <= prev * agree and not det["blind"]:
            break
        if 2 * B > B_max:
            break
        prev = L
        B *= 2
    det = dict(det, calls=total, history=hist)
    return L, det
