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

Where the noise grows with the error the check is blind: a sum of per-sample
losses (least squares: a sample's gradient ``a (a.x - b)`` is noisier the
farther ``x`` is from the optimum), driven off by steps too long for its
single samples, ends where the noise is as large as the gradient, and ``R``
stays ``O(1)`` however far off the point is (found by a probe: ridge regression
on 300 features returned ``success=True`` 8-22x further from the optimum than
its start). Three tests guard against it: the end's gradient mapping must stay
below the largest mean gradient drawn at ``x0`` (``above_start``); when the
segment's noise is more than ``NOISE_GROWTH`` times the start's (at the same
batch: ``noise_growth``), the end point must be shown better than the start
(:func:`progress_test`); and with the oracle's ``value``, an end point above the
start's value fails where the start's mean gradient stood out of its noise
(:func:`start_resolved`). The last two are made by ``logt.minimize`` after the run.
"""
import math

import numpy as np

__all__ = ["R_MAX", "SOLVED_REL", "MIN_PAIRS", "solved_norm", "new_state", "reset", "add_gradient", "add_pair",
           "mapping_verdict", "START_REL", "ABOVE_START_REMEDY", "above_start_cause", "NOISE_GROWTH",
           "needs_progress_test", "progress_test", "value_difference", "progress_cause", "start_resolved",
           "worse_cause"]

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


START_REL = 1.0       # ||G|| at the end above this times the start's largest mean-gradient norm: no progress
MIN_PAIRS = 4         # fewer gradient pairs in the segment: the noise measured at x0 (sigma2 / B) instead


def mapping_verdict(G, st, *, eta, where, solved, batch_noise=None, shift=0.0, extra_noise=0.0,
                    start_norm=None):
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

    ``start_norm``: the largest mean-gradient norm drawn at ``x0`` (``Run.guard_scale``; None or 0: not
    compared: every gradient drawn there was 0, which says nothing of where the optimum is). ``ok`` is also False
    (``above_start`` True) when ``||G||`` (with ``shift``) exceeds it and the point is not solved: the end point
    is no closer to stationary than the start by its own gradients, whatever ``R`` (:data:`START_REL`).
    ``noise_growth``: the segment's batch noise over ``batch_noise`` (None with fewer than ``MIN_PAIRS`` pairs
    or no noise measured at ``x0``).
    """
    m = int(st["chk_m"])
    g_mid = float(np.linalg.norm(G))
    g2 = (g_mid + float(shift)) ** 2
    above = bool(start_norm) and math.sqrt(g2) > START_REL * float(start_norm) and math.sqrt(g2) > solved
    s = st["chk_dsq"] / st["chk_npair"] if st["chk_npair"] else 0.0
    if st["chk_npair"] < MIN_PAIRS and batch_noise is not None and batch_noise > 0.0:
        s = float(batch_noise)
    elif st["chk_npair"] == 0:               # no noise estimate at all: nothing to compare with
        return {"ok": not above, "R": None, "R_max": R_MAX, "grad_map_norm": math.sqrt(g2), "noise_norm": None,
                "solved_norm": float(solved), "start_norm": start_norm, "above_start": bool(above),
                "n_batches": m, "eta": float(eta), "where": where + " (not checked: no noise estimate)"}
    noise2 = s / max(m, 1) + max(float(extra_noise), 0.0)
    growth = None                            # the segment's batch noise against the start's, at the same batch
    if st["chk_npair"] >= MIN_PAIRS and batch_noise:
        growth = s / float(batch_noise)
    is_solved = math.sqrt(g2) <= solved
    R = g2 / noise2 if noise2 > 0.0 else (0.0 if is_solved else math.inf)
    ok = bool((R <= R_MAX or is_solved) and not above)
    return {"ok": ok, "R": float(R) if math.isfinite(R) else "inf", "R_max": R_MAX,
            "grad_map_norm": math.sqrt(g2), "mapping_at_mean": g_mid, "shift": float(shift),
            "noise_norm": math.sqrt(noise2), "solved_norm": float(solved), "solved": bool(is_solved),
            "start_norm": start_norm, "above_start": bool(above),
            "noise_growth": growth,
            "n_batches": m, "eta": float(eta), "where": where}


ABOVE_START_REMEDY = ("a larger T; where single samples are far stiffer than F (a sum of per-sample losses, e.g. "
                      "least squares on many features), larger first batches (options={'B1': ...}) or "
                      "method='sgd' with L the largest single-sample curvature (max_i ||a_i||^2 for least "
                      "squares), whose steps stay stable for it")


def above_start_cause(chk):
    """The verdict's cause when the end's gradient mapping is above the start's gradient (``above_start``)."""
    return (f"at the end the gradient mapping is ||G|| = {chk['grad_map_norm']:.3g}, measured on {chk['where']}, "
            f"above the largest mean gradient drawn at x0 ({float(chk['start_norm']):.3g}): the run moved away from "
            "the optimum instead of towards it (steps too long for the oracle's noise, which can grow with the "
            "distance to the optimum)")


# ---- the progress test: is the end point better than the start? ----------------------------------------------

NOISE_GROWTH = 4.0      # the end segment's batch noise above this times the start's: the progress test is made
PROGRESS_BATCHES = 8    # the test's batches (their spread is its noise)
PROGRESS_T = 2.365      # passed when F(x) - F(x0) is below zero by this many standard errors (t, 7 dof, 97.5%)
PROGRESS_FRAC = 0.02    # its calls: about this share of T, beyond the method's plan


def needs_progress_test(params):
    """Whether a passing check (``params["convergence"]``) leaves the progress test to make: the segment's
    gradient noise grew more than ``NOISE_GROWTH`` times over the start's (``noise_growth``); then the end point
    must be shown better than the start."""
    verdict = params.get("convergence")
    chk = verdict.get("check") if verdict else None
    if not verdict or not verdict["ok"] or not chk or chk.get("solved"):
        return False
    g = chk.get("noise_growth")
    return g is not None and g > NOISE_GROWTH


def progress_test(run, x, fun=None):
    """``F(x) - F(x0)`` estimated by ``PROGRESS_BATCHES`` means of the two-point Gauss-Legendre rule along the
    segment, ``(g(m-) + g(m+)) . (x - x0) / 2`` at ``m+- = x0 + (1/2 +- 1/(2 sqrt 3)) (x - x0)`` (in ``D``,
    convex): exact when ``F`` is a cubic along the segment (a quadratic: always), else up to its fourth
    derivative. Each batch draws ``b`` samples at each node, about ``PROGRESS_FRAC T`` calls in all, counted in
    ``n_calls`` beyond the method's plan; the random stream is restored afterwards, so what follows the run (a
    caller's next draws) is the same with or without the test. Returns a JSON-able dict: ``delta``, ``se`` (the
    batches' spread), ``samples``, ``better`` (``delta + PROGRESS_T se < 0``), ``worse`` (``delta - PROGRESS_T
    se > 0``).

    Why: the end-of-run check compares the gradient mapping with the noise of the gradients drawn near the
    end. Where the noise grows with the distance to the optimum (a sum of per-sample losses: least squares'
    single-sample curvature is ~``d`` times ``L``), steps too long for it leave the iterates far off, and the
    noise there grows with the error: ``R`` stays ``O(1)`` however far off the point is.

    With the oracle's ``value`` (``fun = F(x)`` given) the difference is exact instead (:func:`value_difference`)."""
    exact = value_difference(run, fun)
    if exact is not None:
        return exact
    d = x - run.x0
    h = 0.5 / math.sqrt(3.0)
    nodes = [run.x0 + (0.5 - h) * d, run.x0 + (0.5 + h) * d]
    b = max(1, int(PROGRESS_FRAC * run.T) // (2 * PROGRESS_BATCHES))
    g = np.empty(run.shape)
    saved = run.rng.bit_generator.state
    vals = []
    try:
        for _ in range(PROGRESS_BATCHES):
            v = 0.0
            for node in nodes:
                run.grad(node, b, g, phase="the progress test")
                v += 0.5 * float(np.vdot(g, d))
            vals.append(v)
    finally:
        run.rng.bit_generator.state = saved
    delta = float(np.mean(vals))
    se = float(np.std(vals, ddof=1)) / math.sqrt(PROGRESS_BATCHES)
    return {"delta": delta, "se": se, "samples": 2 * b * PROGRESS_BATCHES, "exact": False,
            "better": bool(delta + PROGRESS_T * se < 0.0), "worse": bool(delta - PROGRESS_T * se > 0.0)}


def value_difference(run, fun):
    """The progress test's dict for ``F(x) - F(x0)`` from the oracle's ``value`` (``fun = F(x)``; ``se`` 0, no
    draw), or None without a value."""
    f0 = run.value(run.x0) if fun is not None else None
    if f0 is None or not math.isfinite(f0):
        return None
    delta = float(fun) - float(f0)
    return {"delta": delta, "se": 0.0, "samples": 0, "exact": True, "better": delta < 0.0, "worse": delta > 0.0}


def progress_cause(chk, test):
    """The verdict's cause when the progress test did not find the end point better than the start."""
    est = (f"F(x) - F(x0) = {test['delta']:.3g} (the oracle's value)" if test["exact"] else
           f"F(x) - F(x0) is estimated at {test['delta']:.3g} +- {test['se']:.3g} ({test['samples']:,} samples "
           "along the segment)")
    grew = f"the gradient noise near the end is {chk['noise_growth']:.3g}x the start's"
    return (f"{grew}, and the end point is not shown better than the start: {est}; the end-of-run check cannot "
            "vouch for a point whose noise grew with its error (steps too long for an oracle whose noise grows "
            "with the distance to the optimum)")


def start_resolved(params):
    """Whether the mean gradient measured at ``x0`` stood out of its noise (``params``' ``noise_mean_sq``,
    ``noise_sigma2``, ``noise_calls``: ``||g_bar||^2 >= RESOLVED sigma2 / N``, and not 0): then ``x0`` is not
    stationary, and an end point with ``F(x) > F(x0)`` did not converge, whatever the check says."""
    from logt.gradient_noise import RESOLVED
    ms, s2, N = params.get("noise_mean_sq"), params.get("noise_sigma2"), params.get("noise_calls")
    return bool(ms and N and ms > 0.0 and ms >= RESOLVED * float(s2 or 0.0) / N)


def worse_cause(test, params):
    """The verdict's cause when the end point's value is above the start's, whose gradient was resolved."""
    return (f"the end point is worse than the start: F(x) - F(x0) = {test['delta']:.3g} (the oracle's value), "
            f"where the mean gradient at x0 stood out of its noise (norm {math.sqrt(params['noise_mean_sq']):.3g} over "
            f"{int(params['noise_calls']):,} samples); the end-of-run check, which compares the gradient with the "
            "noise near the end, cannot see it (steps too long for the oracle's single samples)")
