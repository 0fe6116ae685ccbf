"""The auto rules' end-of-run check: the gradient mapping at the end against its own noise level.

For ``F`` smooth and strongly convex over a convex ``D``, ``w`` is the
minimizer exactly when the gradient mapping
``G_eta(w) = (w - Pi_D(w - eta grad F(w))) / eta`` is zero. The drivers of
the auto rules estimate it, without extra oracle calls, from the gradients they
draw in their final segment (logT's last epoch, the last AC-SA stage's second
half): ``g_bar``, the mean of those ``m`` mini-batch gradients (``m B`` samples
in all), at ``w_bar``, the mean of the points where they were drawn (for a
quadratic ``F`` the mean of the gradients IS the gradient at the mean point).
Its noise is measured in the same segment from differences of gradient pairs
drawn at nearby points (``s = mean ||g_a - g_b||^2 / 2``, about ``sigma^2 / B``
per batch; the points' drift only adds to it, so it errs towards a larger
noise, i.e. towards passing), so the noise of ``g_bar`` is ``s / m``.

The statistic ``R = ||G||^2 / (s / m)`` is ``O(1)`` at a point that has reached
the noise floor of the segment's gradients (pure noise gives ``E R <= 1``; the
projection only removes noise) and grows with the remaining error: along a
direction of curvature ``h`` an error ``e`` adds ``(h e)^2`` to ``||G||^2``.
A run is reported as not converged when ``R > R_MAX``.

What it can and cannot see: with ``T/2`` samples in the final segment a
point ``10x`` off the optimal rate along ALL directions gives ``R ~ 15``; an
error of the same size confined to one direction of the weakest curvature
``lam`` among ``d`` noisy ones adds only ``~10/d`` to ``R`` (``2 lam (F - F*)``
to ``||G||^2``), below any threshold that keeps false alarms rare. So the check
catches gross failures (epochs that did not contract, a schedule that never
reached the noise floor); the choice of method and schedule
(:mod:`logt.methods.auto`) is what keeps the weak directions converging.
"""
import math

import numpy as np

__all__ = ["R_MAX", "SOLVED_REL", "MIN_PAIRS", "solved_norm", "new_state", "reset", "add_gradient", "add_pair", "mapping_verdict"]

R_MAX = 30.0          # R above this: the end point is not at the noise floor of its own gradients
SOLVED_REL = 1e-9     # an excess below this fraction of the start's counts as solved, whatever the noise


def solved_norm(g0, lam, L):
    """``||G||`` below which the end point counts as solved: ``sqrt(SOLVED_REL lam / L) ||grad F(x0)||``.

    Along a direction of curvature ``h >= lam`` the excess is ``||G||^2 / (2 h) <= ||G||^2 / (2 lam)``,
    the start's is at least ``||grad F(x0)||^2 / (2 L)``: below this norm the excess is at most
    ``SOLVED_REL`` of the start's. Without gradient noise (or with very little) the noise level of
    the check is 0 and this is the only test that can pass.
    """
    return math.sqrt(SOLVED_REL * float(lam) / float(L)) * float(g0 or 0.0)


def new_state(shape):
    """Accumulators of the check, as driver-state entries (checkpointable: arrays and floats)."""
    return {"chk_gsum": np.zeros(shape), "chk_xsum": np.zeros(shape), "chk_m": 0, "chk_dsq": 0.0,
            "chk_npair": 0}


def reset(st):
    st["chk_gsum"].fill(0.0)
    st["chk_xsum"].fill(0.0)
    st.update(chk_m=0, chk_dsq=0.0, chk_npair=0)


def add_gradient(st, x, g):
    """One mini-batch gradient ``g`` drawn at ``x`` (both added to the segment's sums)."""
    st["chk_gsum"] += g
    st["chk_xsum"] += x
    st["chk_m"] += 1


def add_pair(st, ga, gb):
    """Two independent mini-batch gradients at nearby points: ``||ga - gb||^2 / 2`` estimates the batch noise."""
    d = ga - gb
    st["chk_dsq"] += 0.5 * float(np.vdot(d, d))
    st["chk_npair"] += 1


MIN_PAIRS = 4         # fewer gradient pairs in the segment: the noise measured at x0 (sigma2 / B) instead


def mapping_verdict(G, st, *, eta, where, solved, batch_noise=None, shift=0.0, extra_noise=0.0):
    """The check's verdict (a JSON-able dict) from the gradient mapping ``G`` at the segment's mean point.

    ``ok`` is False when ``R = ||G||^2 m / s > R_MAX`` and ``||G|| > solved``
    (:func:`solved_norm`); ``R`` is reported with ``grad_map_norm = ||G||`` and
    ``noise_norm = sqrt(s / m)``. With fewer than ``MIN_PAIRS`` pairs in the segment the
    per-batch noise is ``batch_noise`` (``sigma2 / B`` from the measurement at ``x0``) when
    given; with no pair and no ``batch_noise`` (a budget too small to measure the noise, a
    segment of one gradient) the check is not made (``ok`` True, ``R`` None). ``shift`` is
    added to ``||G||``: a bound on how much the mapping can change between the segment's mean
    point and the returned point. ``extra_noise`` is added to the noise level ``s / m`` (the variance
    of a correction that moved ``G`` from the segment's mean point to the returned point).
    """
    m = int(st["chk_m"])
    g_mid = float(np.linalg.norm(G))
    g2 = (g_mid + float(shift)) ** 2
    s = st["chk_dsq"] / st["chk_npair"] if st["chk_npair"] else 0.0
    if st["chk_npair"] < MIN_PAIRS and batch_noise is not None and batch_noise > 0.0:
        s = float(batch_noise)
    elif st["chk_npair"] == 0:               # no noise estimate at all: nothing to compare with
        return {"ok": True, "R": None, "R_max": R_MAX, "grad_map_norm": math.sqrt(g2), "noise_norm": None,
                "solved_norm": float(solved), "n_batches": m, "eta": float(eta), "where": where + " (not checked: no noise estimate)"}
    noise2 = s / max(m, 1) + max(float(extra_noise), 0.0)
    is_solved = math.sqrt(g2) <= solved
    R = g2 / noise2 if noise2 > 0.0 else (0.0 if is_solved else math.inf)
    ok = bool(R <= R_MAX or is_solved)
    return {"ok": ok, "R": float(R) if math.isfinite(R) else "inf", "R_max": R_MAX,
            "grad_map_norm": math.sqrt(g2), "mapping_at_mean": g_mid, "shift": float(shift),
            "noise_norm": math.sqrt(noise2), "solved_norm": float(solved), "solved": bool(is_solved),
            "n_batches": m, "eta": float(eta), "where": where}
