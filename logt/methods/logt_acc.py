"""Accelerated logT: multi-stage AC-SA with growing mini-batches (``method="logt_acc"``).

The projection count of Algorithm 1 is linear in ``L/lam`` (``2*M`` per epoch,
``M = 4 sqrt(6) L/lam``). Replacing its extra-gradient epochs by stages of an
accelerated stochastic approximation method (AC-SA, Ghadimi and Lan 2012) run
for ``N = O(sqrt(L/lam))`` iterations makes each stage contract the error by a
constant factor with ``N`` projections; growing the mini-batch geometrically from
stage to stage (as Algorithm 1 does) keeps the variance term at ``O(1/T)``. Result:
``O(1/T)`` with ``N * K = O(sqrt(L/lam) log T)`` projections.
"""
import math

import numpy as np

from logt.curvature import estimate_curvature
from logt.methods import convergence as _chk
from logt.methods._base import (Method, Option, one_of, positive_float, positive_int, probability, register,
                               trust_scale_recheck)

PARAM_RULES = ("auto", "theory", "explicit")
N_FACTOR = 32.0          # N(N+1) >= 32 L/lam: 4 L/(lam N (N+1)) <= 1/8 contraction of the bias per stage
N_LAST_FACTOR = 2.0      # the last stage: N_last(N_last+1) >= 2 L/lam, bias bound 2x (nothing follows it)
PROJ_FRAC = 0.02         # auto: the projections (the check's one included) stay below this fraction of T


def _ceil(x):
    """Ceiling that ignores floating-point noise of 1e-9 relative (so an exact 6.0 stays 6)."""
    r = round(x)
    if abs(x - r) <= 1e-9 * max(1.0, abs(x)):
        return int(r)
    return int(math.ceil(x))


def theory_N(L, lam, factor=N_FACTOR):
    """Iterations of a stage by the theory rule: the smallest ``N`` with ``N (N + 1) >= factor * L/lam``
    (``factor`` 32 for the stages before the last, 2 for the last)."""
    kappa = float(L) / float(lam)
    if not (math.isfinite(kappa) and kappa >= 1.0):
        raise ValueError(f"L/lam must be finite and >= 1, got {kappa!r}")
    if kappa > 1e16:
        raise ValueError(f"L/lam = {kappa:.3g} is too large for the theory rule (N = sqrt(32 L/lam) "
                         "iterations per stage); check L and lam or give N explicitly")
    N = max(1, _ceil(math.sqrt(factor * kappa)) - 1)
    while N * (N + 1) < factor * kappa:
        N += 1
    return N


def n_stages(T, N, N_last, B1, growth=4):
    """Stages that fit in ``T``: the largest ``K`` such that ``K - 1`` stages of ``N`` iterations with
    batches ``B1, B1 r, ..., B1 r**(K-2)`` and a last stage of ``N_last`` iterations with batches of at
    least ``B1 r**(K-1)`` cost at most ``T``:
    ``N B1 (r**(K-1) - 1)/(r - 1) + N_last B1 r**(K-1) <= T`` (``r = growth``)."""
    K, before, b = 0, 0, B1          # before = calls of the first K stages at N iterations each
    while before + N_last * b <= T:
        K += 1
        before += N * b
        b *= growth
    return K


def stage_batches(T, N, N_last, B1, growth=4):
    """Mini-batch of each stage: ``B1 r**(k-1)`` for ``k < K``; the last stage takes the rest of the
    budget, ``(T - N B1 (r**(K-1) - 1)/(r - 1)) // N_last >= B1 r**(K-1)``."""
    K = n_stages(T, N, N_last, B1, growth)
    if K == 0:
        return []
    out = [B1 * growth ** (k - 1) for k in range(1, K)]
    out.append((T - N * sum(out)) // N_last)
    return out


def counts(T, N, N_last, B1, growth=4):
    """``(K, n_calls, n_projections)``: ``K`` stages (:func:`n_stages`); ``n_projections =
    N (K - 1) + N_last``; ``n_calls = N * (sum of the first K-1 batches) + N_last * (last batch)``,
    at most ``T`` and more than ``T - N_last``."""
    b = stage_batches(T, N, N_last, B1, growth)
    if not b:
        return 0, 0, 0
    K = len(b)
    return K, N * sum(b[:-1]) + N_last * b[-1], N * (K - 1) + N_last


FALLBACK_STAGES = 4      # a budget below one contracting stage: this many restarts of P // 4 iterations


def _stage_cost(N, N_last, B1, K, growth):
    """Oracle calls of ``K`` stages with first batch ``B1`` (the last stage at its minimum batch)."""
    if growth == 1:
        return N * B1 * (K - 1) + N_last * B1
    return N * B1 * (growth ** (K - 1) - 1) // (growth - 1) + N_last * B1 * growth ** (K - 1)


K_SOLVED = 1 + math.ceil(math.log(1.0 / _chk.SOLVED_REL) / math.log(8.0))   # 8^-(K-1) <= SOLVED_REL: 11


def needed_stages(sigma2, mean_sq, L, lam, B_last, N_last):
    """Stages whose contraction takes the start's excess down to the last stage's noise level.

    The start's excess is at least ``D0 = ||grad F(x0)||^2 / (2 L)`` (``mean_sq`` estimates the
    squared norm; this is the excess when the gradient points along the stiffest direction,
    the optimistic end of ``[1/(2L), 1/(2 lam)] ||grad F(x0)||^2``); ``K - 1`` contracting
    stages and the suffix mean leave ``8 * 8^-(K-1) D0`` of it (:class:`LogTAcc`'s bound), the
    last stage's noise is ``8 sigma2 / (lam B_last (N_last + 1))``, so
    ``K = 1 + ceil(log8(lam mean_sq B_last (N_last + 1) / (2 L sigma2)))``, at least 2 and at most
    ``K_SOLVED = 11`` (``8^-10 <= SOLVED_REL = 1e-9``: solved; also without noise). With the pessimistic ``D0`` (``1/(2 lam)``) noisy problems whose gradient
    at ``x0`` lies along stiff directions got up to ``log8(L/lam)`` more stages than they need
    and ended with a smaller last batch: on ``python -m logt kappa``'s problems at
    ``L/lam = 1000``, ``T = 2e5``, 14x the excess of suffix-averaged SGD instead of 0.7x. The
    end-of-run check reports a start that was further off than this assumes.
    """
    if not mean_sq > 0.0:
        return 2
    if not sigma2 > 0.0:
        return K_SOLVED
    ratio = lam * mean_sq * B_last * (N_last + 1) / (2.0 * sigma2 * L)
    return min(K_SOLVED, max(2, 1 + math.ceil(math.log(max(ratio, 1.0)) / math.log(8.0))))


def budget_plan(R, L, lam, P, growth=4, sigma2=None, mean_sq=None):
    """The auto rule's stages for ``R`` oracle calls and at most ``P`` projections (see ``LogTAcc``).

    Returns a dict: ``N``, ``N_last`` (the theory rule's), ``B1``, ``growth``, ``batches``,
    ``fallback`` (True when not even one stage of ``N`` plus a last stage fits in ``P``),
    ``K_calls`` (the stages that ``R`` calls allow with ``B1 = 1``), ``K_proj`` (that ``P``
    projections allow) and ``K_need`` (:func:`needed_stages`, from the gradient noise
    ``sigma2`` and ``mean_sq = ||grad F(x0)||^2`` measured at ``x0``; None without them).
    """
    N = theory_N(L, lam)
    N_last = theory_N(L, lam, N_LAST_FACTOR)
    K_calls = n_stages(R, N, N_last, 1, growth)
    K_proj = (P - N_last) // N + 1 if P >= N_last else 0
    out = {"N": N, "N_last": N_last, "K_calls": K_calls, "K_proj": K_proj, "K_need": None,
           "fallback": False, "bias_limited": False, "growth": growth}
    if K_proj >= 2 and K_calls >= 2:
        K = min(K_calls, K_proj)
        B1 = 1 if K == K_calls else max(1, R // _stage_cost(N, N_last, 1, K, growth))
        while n_stages(R, N, N_last, B1, growth) > K:      # a larger first batch, fewer stages
            B1 += 1
        batches = stage_batches(R, N, N_last, B1, growth)
        if sigma2 is not None and mean_sq is not None:
            K_need = needed_stages(sigma2, mean_sq, L, lam, batches[-1], N_last)
            out["K_need"] = K_need
            if K_need > K and K_proj > K:          # bias-limited (little noise): more, shorter-batch stages
                K2 = int(min(K_need, K_proj))
                while K2 > K and _stage_cost(N, N_last, 1, K2, 1) > R:
                    K2 -= 1
                if K2 > K:
                    g = next(g for g in range(growth, 0, -1) if _stage_cost(N, N_last, 1, K2, g) <= R)
                    B1 = max(1, R // _stage_cost(N, N_last, 1, K2, g))
                    while n_stages(R, N, N_last, B1, g) > K2:
                        B1 += 1
                    batches = stage_batches(R, N, N_last, B1, g)
                    out["growth"] = g
        need = out["K_need"]
        out.update(B1=B1, batches=batches, bias_limited=need is not None and need > len(batches))
        return out
    # fallback: FALLBACK_STAGES restarts of n iterations, batches doubling, the last takes the rest
    n = max(1, min(P, R) // FALLBACK_STAGES)
    K = max(1, min(FALLBACK_STAGES, min(P, R) // n))
    B1 = max(1, R // _stage_cost(n, n, 1, K, 2))
    batches = [B1 * 2 ** (k - 1) for k in range(1, K)]
    batches.append((R - n * sum(batches)) // n)
    out.update(fallback=True, N=n, N_last=n, B1=B1, growth=2, batches=batches)
    return out


SUFFICIENT_AHEAD = 3     # sufficient_T: the grid points after the answer whose plans must pass too


def _plan_passes(T, L, lam, frac, growth, sigma2, mean_sq):
    plan = budget_plan(T, L, lam, int(frac * T) - 1, growth, sigma2=sigma2, mean_sq=mean_sq)
    return not plan["fallback"] and not plan["bias_limited"] and len(plan["batches"]) >= 2


def sufficient_T(L, lam, frac=PROJ_FRAC, growth=4, sigma2=None, mean_sq=None, above=0):
    """A budget ``T > above`` whose plan (:func:`budget_plan`, with the noise measured at ``x0``) is neither a
    fallback nor bias-limited, nor the plans of the next ``SUFFICIENT_AHEAD`` budgets: the first such ``T`` of the
    grid ``T = (N + N_last + 1)/frac * 1.25^j`` (at most ``2**62``; None beyond). Passing is not monotone in ``T``:
    a larger budget's last batch lowers the noise level the stages must reach, so it may need a stage more before
    the projections allow one (L/lam = 1,240: 12,500 passes, 15,000-20,000 do not, 25,000 on do), and a budget
    "of at least T" must not name one with failing budgets above it, nor one below the run's own (``above``)."""
    N = theory_N(L, lam)
    N_last = theory_N(L, lam, N_LAST_FACTOR)
    T = (N + N_last + 1) / frac
    found, ahead = None, 0
    while T < 2.0 ** 62:
        Ti = int(math.ceil(T))
        if Ti > above and _plan_passes(Ti, L, lam, frac, growth, sigma2, mean_sq):
            found, ahead = (Ti, 0) if found is None else (found, ahead + 1)
            if ahead == SUFFICIENT_AHEAD:
                return found
        else:
            found = None
        T *= 1.25
    return found


REFINE_B = 512          # the stages' second curvature estimate: batch up to this
REFINE_FRAC = 0.01      # ... and at most this fraction of T


def refine_L(run, L, det):
    """A second curvature estimate at ``x0`` on a larger batch, for the stages (whose steps trust ``L``
    more than logT's ``0.5/L_est``): Lanczos warm-started from the first estimate's vector on
    ``min(REFINE_B, REFINE_FRAC T / 9)`` samples, made only when that exceeds the first estimate's
    batch (a sampled Hessian of few samples, e.g. 32 rows of least squares, can miss the top
    curvature by 1.6x). Returns ``(max of both (capped by a given L), details)``; counted."""
    from logt.methods.logt import EST_ITER, _cap
    B = min(REFINE_B, int(REFINE_FRAC * run.T) // (EST_ITER + 1))
    if B <= int(det["B"]):
        return L, dict(det, refined_B=0)
    L2, det2 = estimate_curvature(run, run.x0, B, EST_ITER, v0=det.get("vector"),
                                  where="the second curvature estimate at x0")
    L2 = _cap(L2, run.L)
    return max(L, L2), dict(det, calls=det["calls"] + det2["calls"], refined_B=B, L_refined=L2)


def _param_rule(v, name):
    """``"theory"``, ``"explicit"`` or ``"auto"`` (``L`` from logT's curvature estimate, see ``LogTAcc``)."""
    return one_of(*PARAM_RULES)(v, name)


def _growth(v, name):
    v = positive_int(v, name)
    if not 2 <= v <= 7:
        raise ValueError(f"{name} must be in [2, 7] (the theory rule contracts the bias by 1/8 per stage, "
                         f"so the batch may grow by less than 8), got {v}")
    return v


@register
class LogTAcc(Method):
    """Accelerated logT: multi-stage AC-SA with growing mini-batches; ``O(1/T)`` with ``O(sqrt(L/lam) log T)`` projections.

    Algorithm. The Euclidean AC-SA method of Ghadimi and Lan ("Optimal
    stochastic approximation algorithms for strongly convex stochastic
    composite optimization I: a generic algorithmic framework", SIAM J. Optim.
    22(4), 2012) with the step sizes ``alpha_t = 2/(t+1)``,
    ``gamma_t = 4L/(t(t+1))``, restarted in stages as in their part II
    ("... II: shrinking procedures and optimal algorithms", SIAM J. Optim.
    23(4), 2013, multi-stage AC-SA), with every stochastic gradient a
    mini-batch mean whose size grows geometrically from stage to stage (as the
    doubling batches of Algorithm 1 of the logT paper). With ``mu = lam``,
    stage ``k = 1..K`` starts from ``p`` with ``x = x_ag = p`` and runs, for
    ``t = 1..N_k``::

        a = 2/(t+1);  g = 4L/(t(t+1))
        x_md = [(1-a)(mu+g) x_ag + a((1-a)mu + g) x] / (g + (1-a^2) mu)   # in D (convex comb.)
        G    = mean of B_k oracle samples at x_md                          # B_k calls
        x    = Pi_D([a mu x_md + ((1-a) mu + g) x - a G] / (mu + g))       # 1 projection
        x_ag = a x + (1-a) x_ag                                            # in D, no projection

    The next stage starts from ``p = x_ag``. Stages ``1..K-1`` run ``N``
    iterations, the last stage ``N_last`` (about ``N/4``) with the rest of the
    budget; it returns the mean of its ``x_ag`` over ``t = N_last//2 + 1 ..
    N_last`` (``average="suffix"``, the default; in ``D`` by convexity, no
    projection) or its last ``x_ag`` (``average="last"``).

    Parameter rule ("theory"): ``N`` = the smallest integer with
    ``N(N+1) >= 32 L/lam`` (about ``5.66 sqrt(L/lam)``), ``N_last`` the
    smallest with ``N_last(N_last+1) >= 2 L/lam`` (about ``1.41 sqrt(L/lam)``),
    ``B1 = 1``, batches ``B_k = B1 growth^(k-1)`` with ``growth = 4``.

    Why it works. AC-SA's bound with mini-batches of ``B`` samples of variance
    ``sigma^2`` reads ``E[F(x_ag) - F*] <= 2L||p - w*||^2/(t(t+1)) +
    4 sigma^2/(lam B (t+1))`` after ``t`` iterations. With
    ``||p - w*||^2 <= 2(F(p) - F*)/lam`` and ``N(N+1) >= 32 L/lam`` a stage maps
    the excess ``D`` to at most ``D/8 + 4 sigma^2/(lam B_k (N+1))``; since the
    batch grows by ``growth < 8`` per stage, the variance terms form a
    geometric series dominated by the latest stage and the initial excess
    shrinks like ``8^-K``. The last stage needs no contraction (nothing
    follows it, and the excess ``D`` it starts from is already at the
    variance level of stage ``K-1``): ``N_last(N_last+1) >= 2 L/lam`` keeps its
    bias bounded, ``2 D + 4 sigma^2/(lam B_K (N_last+1))`` for its last
    ``x_ag`` and, by convexity (``t(t+1) >= N_last(N_last+1)/4`` over the
    suffix), ``8 D + 8 sigma^2/(lam B_K (N_last+1))`` for the suffix mean.
    With ``T ~ N B1 growth^K`` this is ``E[F - F*] <= O((N B1/T)^(3/2))
    (F(x0) - F*) + O(sigma^2/(lam T))``, the optimal rate, with
    ``N (K - 1) + N_last`` projections, ``K = O(log T)``. Why the last stage
    is short: AC-SA's steps follow the worst-case ``L``, so each iteration
    injects noise also in stiff directions; measured (docs/guide/methods.md) on the
    kappa sweep and held-out problems, ``c = 2`` in ``N_last(N_last+1) >= c L/lam``
    gives up to 3x smaller excess than ``c = 8``, within noise or up to 2x
    worse on a box problem.

    Options
    -------
    params : "auto" (default), "theory" (needs ``L``) or "explicit" (give ``N``).
        "auto" needs no ``L``: ``L`` is the curvature estimate of ``logt``'s auto
        rule at ``x0`` (:func:`logt.methods.logt.estimate_at_x0`, at most 2% of
        ``T``, counted), capped by a given ``L``, and the stages are planned for
        the projection budget (below). Passing ``N`` alone means "explicit".
    L : float > 0, the smoothness the steps use (default: ``minimize``'s ``L``
        / ``oracle.L``; with "auto" it caps the estimate).
    N : int >= 1, AC-SA iterations (= projections) per stage (explicit).
    N_last : int >= 1, iterations of the last stage (explicit; default ``N``
        with ``params="explicit"``, the theory rule otherwise).
    B1 : int >= 1, the first stage's mini-batch (default 1; "auto" chooses it).
    growth : int in [2, 7], the batch growth factor per stage (default 4).
    average : "suffix" (default) or "last", the last stage's output.
    proj_frac : "auto" only: the projections stay below ``proj_frac * T``
        (default ``PROJ_FRAC = 0.02``).
    last_stage : "auto" only: "sgd" (default) replaces the last AC-SA stage by
        the averaged tail (below); "acsa" keeps it (the rule of earlier
        releases). With ``average="last"`` the last stage is AC-SA's.
    tail_momentum : "auto" only: "auto" (default) gives the tail's burn-in momentum when the tail
        is shorter than ``L/lam`` steps, kept only if a paired test finds it better (below); "off"
        keeps the tail plain. With momentum the gradient is also taken at extrapolated points
        ``x + beta (x - x_prev)``, which may lie outside ``D`` (as the curvature estimates' points
        may, by a little): an oracle that fails there (a non-finite gradient, an ``ArithmeticError``
        or ``ValueError``) stops the momentum and sends the tail back to its start
        (``tail["momentum_stopped"]`` says why); "off" never leaves ``D`` in the tail.

    The auto rule (:func:`budget_plan`). With ``N`` and ``N_last`` of the theory
    rule for the estimate ``L``, ``R`` the calls left after the estimate and
    ``P = floor(proj_frac T) - 1`` projections (one is kept for the check):

    * the stages that ``R`` calls allow with ``B1 = 1`` (``K_calls``, today's
      "theory" schedule) run when their ``N (K - 1) + N_last`` projections fit
      in ``P``;
    * else the projections limit them to ``K_proj = (P - N_last) // N + 1`` stages,
      and ``B1`` grows until exactly these fit in ``R`` (``B1`` is the largest
      first batch with ``K_proj`` stages): fewer restarts, larger batches, the
      same contraction per stage;
    * when the stages that fit cannot remove even the smallest start's error the
      gradient at ``x0`` allows (``K_need`` of :func:`needed_stages`, from the noise
      measured at ``x0``: a problem with little noise), more stages run, up to
      ``K_proj``, with the batch growing less (``growth`` 3, 2 or 1) so that they fit
      in ``R``;
    * when not even one stage plus the last fits (``K_proj < 2``: ``T`` is too
      small for ``L/lam``) the run makes ``FALLBACK_STAGES = 4`` restarts of
      ``min(P, R) // 4`` iterations (shorter than the bound needs, but restarts
      contract far better than one long stage in practice) with ``average="last"``,
      reported as ``params["fallback"]``, ``success=False`` and a
      ``ConvergenceWarning`` naming a sufficient ``T`` (:func:`sufficient_T`).

    Its ``L`` is the larger of logT's estimate at ``x0`` and a second estimate on a
    larger batch (:func:`refine_L`): AC-SA's steps trust ``L`` fully. Safeguard: a
    stage whose ``x`` or ``x_ag`` leaves the ball of radius ``4 g / lam`` around its
    start (``g`` the largest of its first gradient's norm, the run's first gradient
    norm and the batch noise ``sqrt(sigma2/B)``; ``g / lam`` bounds the distance to
    the optimum), or meets a non-finite value, is rolled back and the rest of the
    budget re-planned with a 4x larger ``L`` (``params["retries"]``; six failures are
    a ``FloatingPointError``). Before the last stage a third estimate at its start
    point, near the optimum (:func:`_last_stage_curvature`; the curvature can grow from
    ``x0`` to the optimum, e.g. a Huber loss): a larger value is the last stage's ``L``
    (``N_last`` for it), and one above ``CURVATURE_GROWTH = 2`` times the stages' ``L``
    voids their contraction (``success=False``, below). Reported: ``plan``
    (``[[N_k, B_k], ...]`` planned; the last stage's ``B`` then takes the calls left),
    ``stages`` (``[[N_k, B_k, L_k], ...]`` run), ``K_calls``, ``K_proj``, ``K_need``,
    ``failed_calls``, ``failed_projections``, ``last_estimate`` (``L``, ``B``, ``calls``,
    ``L_stages``) and ``last_estimate_calls``.

    The averaged tail (``last_stage="sgd"``, the default). The last segment is
    not an AC-SA stage but projected mini-batch SGD on all the projections
    left (:func:`_tail_start`, :func:`_drive_tail`): ``n`` steps of batch
    ``B`` (the calls left over ``n + 4``), step ``min(1/L_tail, 1/(lam (t0 +
    t)))`` with ``L_tail`` the larger of the stages' ``L`` and a curvature
    estimate on a batch of ``B`` (stable mini-batch steps) and ``t0`` the
    stages' calls over ``B`` (the start counts as that many steps' worth of
    samples); it returns one projected step from the mean of its points after
    ``burn = min(n // 2, ceil(L_tail/lam))`` steps, with their mean gradient.
    Why: the last AC-SA stage only keeps the bias bounded (nothing follows
    it) and injects noise of a ``1/(lam t)`` step also along stiff directions
    (variance ``O(tr(Sigma)/(lam n))``), while averaged SGD reaches
    ``O(tr(H^-1 Sigma)/n)`` along every direction it mixes (``n >> L/h``), and
    the step from the mean undoes the mean's bias towards the inside of ``D``
    when the minimizer is on the boundary. Measured (docs/guide/methods.md,
    docs/guide/problem-bank.md): on the grid the 90th percentile of the
    default's excess over the best baseline fell from 4.1 to 2.2; on the
    held-out family the runs reported as converged at 10x or more off fell
    from 6 to 0, and from 12 to 3 on a second family drawn afterwards.

    The momentum burn-in (``tail_momentum="auto"``, the default). A tail shorter
    than ``L_tail/lam`` steps cannot mix the weakest directions, which then stay
    where the stages put them (on a ball the stages' projections can shrink
    them: 25x off on the second family's g033). Its burn-in (not averaged
    anyway) then takes Nesterov steps, the gradient at ``x + beta (x - x_prev)``
    with ``1/(1 - beta) = min(16, L_tail/(lam n))`` (:func:`tail_momentum`),
    and a paired test (:func:`_momentum_test`, ``TAIL_TEST_FRAC = 10%`` of the
    tail's calls in 8 batches) keeps the mean of the burn-in's second half only
    when its ``F`` is below the tail's start's beyond the noise; else the tail
    goes back to its start. The averaging is plain either way: where the stages
    had left the slow directions right, momentum's wider spread hurt (on boxes:
    up to 23x) and the test sends the tail back. Measured: no run reported as
    converged at 10x or more off on the grid and four generated sets (3 before,
    g033 now 7x), within 3x on 1-2 more problems of each family.
    ``"off"``: plain averaged SGD from the start.
    Reported: ``params["tail"]`` (``n``, ``B``, ``L``, ``t0``, ``burn``,
    ``beta``, ``test_samples``, ``test`` (``delta``, ``se``, ``kept``,
    ``samples``; with momentum only), ``momentum_stopped`` (when the oracle
    failed at an extrapolated point), ``estimate_calls``, ``check_calls``,
    ``calls``, ``projections``).

    It ends with the check of :mod:`logt.methods.convergence`: with the tail,
    at its output (:func:`_tail_check`: the tail's mean gradient corrected to
    the output by two common-random-number gradient differences, 4 batches of
    ``B``, one projection); with an AC-SA last stage, on its second half (the
    mean of its gradients at the points ``x_md``, its noise from successive
    gradients, the gradient mapping at the mean ``x_md`` with step ``1/L``: one
    projection, counted). Reported as ``params["convergence"]``.

    Budget and counts (:func:`counts`): ``K`` = the largest number of stages
    with ``N B1 (growth^(K-1) - 1)/(growth - 1) + N_last B1 growth^(K-1) <= T``;
    stage ``k < K`` uses batches of ``B1 growth^(k-1)``, the last stage takes
    the rest of the budget; ``n_projections = N (K - 1) + N_last``,
    ``T - N_last < n_calls <= T``. "auto": ``n_calls = estimate_calls + noise_calls +
    sum_k N_k B_k + failed_calls + last_estimate_calls + tail["calls"] <= T`` and ``n_projections =
    sum_k N_k + failed_projections + tail["projections"] + 1`` (the check's), over ``params["stages"]``
    (the AC-SA stages that ran; with the tail it is the last segment, ``tail["projections"] = n``,
    ``tail["calls"] = estimate_calls + (n + 4) B + test["samples"]``). The trace has a row per stage and one for
    the tail.
    """

    name = "logt_acc"
    label = "logT-acc"
    summary = "multi-stage AC-SA (Ghadimi-Lan), mini-batches growing 4x per stage"
    rate = "O(1/T)"
    projections = "N*(K-1) + N_last, N ~ sqrt(32 L/lam), K ~ log4(3T/N): O(sqrt(L/lam) log T)"
    uses_minibatches = True
    options = {
        "params": Option("auto", _param_rule, "parameter rule"),
        "L": Option(None, positive_float, "smoothness used (default: minimize's L / oracle.L)"),
        "N": Option(None, positive_int, "AC-SA iterations per stage (explicit)"),
        "N_last": Option(None, positive_int, "AC-SA iterations of the last stage"),
        "B1": Option(None, positive_int, "first mini-batch size (default 1; auto: the budget rule's)"),
        "growth": Option(4, _growth, "batch growth factor per stage"),
        "average": Option("suffix", one_of("suffix", "last"), "the last stage's output"),
        "last_stage": Option("sgd", one_of("sgd", "acsa"),
                             "auto: the last segment, averaged mini-batch SGD ('sgd') or an AC-SA stage ('acsa')"),
        "tail_momentum": Option("auto", one_of("auto", "off"),
                                "auto: momentum in the tail's burn-in, kept by a paired test (tail_momentum()); "
                                "'off': plain averaged SGD"),
        "proj_frac": Option(None, probability,
                            "auto: projection budget as a fraction of T (default logt_acc.PROJ_FRAC)"),
    }

    def __init__(self, **options):
        if options.get("N") is not None and "params" not in options:
            options["params"] = "explicit"
        super().__init__(**options)

    def _check_combination(self):
        v = self.values
        if v["params"] == "explicit" and v["N"] is None:
            raise ValueError("method 'logt_acc' with params='explicit' needs N (iterations per stage)")
        if v["params"] in ("theory", "auto") and v["N"] is not None:
            raise ValueError(f"method 'logt_acc': pass either params={v['params']!r} or an explicit N, not both")
        if v["params"] == "auto" and (v["N_last"] is not None or v["B1"] is not None):
            raise ValueError("method 'logt_acc': params='auto' chooses N_last and B1; give them with "
                             "params='theory' or 'explicit'")
        if v["proj_frac"] is not None and v["params"] != "auto":
            raise ValueError(f"method 'logt_acc': proj_frac applies to params='auto' only, not {v['params']!r}")
        if v["last_stage"] != "sgd" and v["params"] != "auto":
            raise ValueError(f"method 'logt_acc': last_stage applies to params='auto' only, not {v['params']!r}")
        if v["tail_momentum"] != "auto" and v["params"] != "auto":
            raise ValueError(f"method 'logt_acc': tail_momentum applies to params='auto' only, not "
                             f"{v['params']!r}")

    def resolve_L(self, run):
        """The smoothness the steps use: the ``L`` option, else the run's ``L``; an error without either."""
        L = self.values["L"]
        if L is None:
            L = run.L
        if L is None:
            raise ValueError("method 'logt_acc' needs L (the smoothness constant: its steps use it): "
                             "pass L= to minimize, options={'L': ...}, use an oracle that defines it, "
                             "or options={'params': 'auto'} (estimates the curvature)")
        if L < run.lam:
            raise ValueError(f"method 'logt_acc': L must be >= lam, got L={L} < lam={run.lam}")
        return float(L)

    def schedule(self, L, lam, T):
        """``(N, N_last, batches)`` of the theory or explicit rule for smoothness ``L`` and budget ``T``
        (``batches`` empty when ``T`` is below one stage)."""
        v = self.values
        B1 = v["B1"] or 1
        if v["params"] in ("theory", "auto"):
            N = theory_N(L, lam)
            N_last = v["N_last"] or theory_N(L, lam, N_LAST_FACTOR)
        else:
            N = v["N"]
            N_last = v["N_last"] or N
        return N, N_last, stage_batches(T, N, N_last, B1, v["growth"])

    def prepare(self, run):
        v = self.values
        if v["params"] == "auto":
            from logt.methods.logt import estimate_at_x0, measure_noise
            L, L_raw, det = estimate_at_x0(run)        # counted in run.n_calls, charged to T
            noise = measure_noise(run)
            L, det = refine_L(run, L, det)
            return self.auto_params(run, L, {"L_est_raw": L_raw, "estimate_calls": det["calls"],
                                             "estimate_B": det["B"], "noise_sigma2": noise["sigma2"],
                                             "noise_mean_sq": noise["mean_sq"], "noise_calls": noise["n_samples"]})
        L = self.resolve_L(run)
        N, N_last, batches = self.schedule(L, run.lam, run.T - run.n_calls)
        if not batches:
            raise ValueError(f"T={run.T} is below one stage of logt_acc: with N_last={N_last} and "
                             f"B1={v['B1'] or 1} the minimum T is N_last*B1 = {N_last * (v['B1'] or 1)}")
        return {"rule": v["params"], "L_used": L, "N": N, "N_last": N_last, "B1": v["B1"] or 1,
                "growth": v["growth"], "average": v["average"], "n_stages": len(batches), "batches": batches}

    def auto_params(self, run, L_est, extra):
        """The auto rule's parameters from a curvature estimate ``L_est`` (the calls spent so far are
        ``run.n_calls``; ``extra`` is reported as is). Shared with ``method="auto"``."""
        v = self.values
        if v["L"] is not None:
            L_est = min(L_est, float(v["L"]))
        L = max(float(L_est), run.lam)
        frac = PROJ_FRAC if v["proj_frac"] is None else v["proj_frac"]
        P = int(frac * run.T) - 1
        out = {"rule": "auto", "L_used": L, "L_est": L, "proj_frac": frac, "proj_budget": P,
               "growth_max": v["growth"], "average": v["average"], "last_stage": v["last_stage"],
               "tail_momentum": v["tail_momentum"]}
        out.update(extra)
        plan = _plan(run, out, L, P)
        if not plan["batches"] or plan["batches"][-1] < 1:
            raise ValueError(f"T={run.T} leaves {run.T - run.n_calls} oracle calls after the measurements at "
                             f"x0: below one AC-SA iteration per projection of the budget; the minimum T is "
                             f"about {run.n_calls + max(1, P)}")
        out.update(_plan_report(plan))
        if plan["fallback"] or plan["bias_limited"]:
            out["structure"] = _budget_structure(run, out, L, plan)
        return out

    def init_state(self, run, params, x0):
        x = np.array(x0, dtype=np.float64, order="C", copy=True)
        st = {"x": x, "xag": x.copy(), "xsum": np.zeros_like(x), "k": 1, "t": 0}
        if params["rule"] == "auto":
            st.update(_chk.new_state(run.shape))
            st.update(g_prev=np.zeros(run.shape), checked=False, p=x.copy(), L=float(params["L_used"]),
                      plan=[[int(n), int(b)] for n, b in params["plan"]], stage=None, R_trust=-1.0,
                      retries=0, L_pre=0.0, fail_g=math.inf, rechecked=False, gref_recheck=0.0, stages=[],
                      proj0=int(run.n_projections), done=False,
                      stage_calls0=0, stage_proj0=0, failed_calls=0, failed_projections=0,
                      last_estimate=None, last_estimate_calls=0, tail=None)
        return st

    def drive(self, run, params, st):
        if params["rule"] == "auto":
            return _drive_auto(run, params, st)
        mu, L = run.lam, float(params["L_used"])
        batches = [int(b) for b in params["batches"]]
        K = len(batches)
        suffix = params["average"] == "suffix"
        x, xag, xsum = st["x"], st["xag"], st["xsum"]
        xmd = np.empty(run.shape)
        G = np.empty(run.shape)
        u = np.empty(run.shape)
        while st["k"] <= K:
            k = st["k"]
            B = batches[k - 1]
            N = int(params["N_last"]) if k == K else int(params["N"])
            while st["t"] < N:
                t = st["t"] + 1
                _acsa_step(run, x, xag, xmd, G, u, t, B, L, mu, k)
                if suffix and k == K and t > N // 2:
                    xsum += xag
                st["t"] = t
                if t < N:
                    run.boundary(st, record=False)
            if suffix and k == K:
                np.divide(xsum, N - N // 2, out=xag)        # the last stage's suffix mean
            np.copyto(x, xag)                     # the next stage starts from p = x_ag
            st.update(k=k + 1, t=0)
            if run.boundary(st, xag, epoch=k):
                break
        return xag.copy(), st["k"] - 1


def _acsa_step(run, x, xag, xmd, G, u, t, B, L, mu, k):
    """Iteration ``t`` of an AC-SA stage (see ``LogTAcc``): ``B`` calls at ``x_md`` (left in ``xmd``, the
    mean gradient in ``G``), one projection; ``x`` and ``x_ag`` updated in place."""
    a = 2.0 / (t + 1)
    g = 4.0 * L / (t * (t + 1.0))
    den = g + (1.0 - a * a) * mu
    np.multiply(xag, (1.0 - a) * (mu + g) / den, out=xmd)
    xmd += (a * ((1.0 - a) * mu + g) / den) * x
    step = a / (mu + g)
    run.grad(xmd, B, G, epoch=k, step=t, eta=step)
    np.multiply(xmd, a * mu / (mu + g), out=u)
    u += (((1.0 - a) * mu + g) / (mu + g)) * x
    u -= step * G
    run.project(u, x, epoch=k, step=t, eta=step)
    xag *= 1.0 - a
    xag += a * x


# ---- the auto rule's driver: stages from a plan, a trust ball, re-planned after a failed stage ----
TRUST = 4.0            # a stage fails when x or x_ag leaves the ball of TRUST * g / lam around its start
MAX_RETRIES = 6        # failed stages (each retried with a 4x larger L) before a FloatingPointError
RETRY_FACTOR = 4.0


def _plan(run, params, L, P_left):
    """:func:`budget_plan` for the calls and projections left (the noise measured at ``x0``)."""
    noisy = params.get("noise_calls", 0) > 0
    return budget_plan(run.T - run.n_calls, L, run.lam, P_left, params["growth_max"],
                       sigma2=params["noise_sigma2"] if noisy else None,
                       mean_sq=params["noise_mean_sq"] if noisy else None)


def _plan_report(plan):
    """The plan's entries of ``params``: ``plan`` (``[[N_k, B_k], ...]``, the last stage last) and its summary."""
    b = plan["batches"]
    stages = [[plan["N"], int(x)] for x in b[:-1]] + [[plan["N_last"], int(b[-1])]] if b else []
    return {"N": plan["N"], "N_last": plan["N_last"], "B1": plan["B1"], "growth": plan["growth"],
            "n_stages": len(b), "batches": [int(x) for x in b], "plan": stages, "K_calls": plan["K_calls"],
            "K_proj": plan["K_proj"], "K_need": plan["K_need"], "fallback": plan["fallback"]}


def _stage_start(run, params, st):
    """Take the next stage of the plan; False when the plan is empty."""
    if not st["plan"]:
        return False
    N, B = st["plan"][0]
    st["tail"] = None
    last = len(st["plan"]) == 1 and st["stages"] and not params.get("fallback")
    if last:
        N, B = _last_stage_curvature(run, params, st, int(N), int(B))
    st["stage_calls0"], st["stage_proj0"] = int(run.n_calls), int(run.n_projections)
    if last and _uses_tail(params):
        N, B = _tail_start(run, params, st, int(N))          # its estimate on the tail's batch is the tail's
    st["stage"] = [int(N), int(B)]
    np.copyto(st["p"], st["xag"])
    np.copyto(st["x"], st["xag"])
    st["R_trust"] = -1.0
    if len(st["plan"]) == 1:
        _chk.reset(st)
        st["xsum"].fill(0.0)
    return True


LAST_EST_SHARE = 0.25   # the last stage's curvature estimate costs at most this share of the stage's calls
CURVATURE_GROWTH = 2.0  # a last-stage estimate this many times the stages' L: their contraction is not guaranteed


def _last_stage_curvature(run, params, st, N, B):
    """A curvature estimate where the last stage starts (near the optimum), as logT's epochs make at every
    epoch start: AC-SA's steps trust ``L`` fully, and the curvature can grow from ``x0`` to the optimum
    (Huber losses, as more residuals enter the quadratic zone). Lanczos on ``refined_B`` (or the first
    estimate's) samples, ``EST_ITER`` products, made when it costs at most ``LAST_EST_SHARE`` of the
    stage's ``N B`` calls. A larger estimate ``L2`` becomes the stage's ``L`` (``N_last`` of the theory rule
    for it, within the projections left); the stage's batch takes the calls left. Recorded in
    ``params["last_estimate"]``; ``L2 > CURVATURE_GROWTH`` times the stages' ``L`` voids their contraction
    (:func:`_verdict`). Returns the stage's ``(N, B)``."""
    from logt.methods.logt import EST_ITER, _cap
    Bq = int(params.get("refined_B") or params.get("estimate_B") or 1)
    if (EST_ITER + 1) * Bq > LAST_EST_SHARE * N * B:
        return N, B
    c0 = int(run.n_calls)
    L2, _ = estimate_curvature(run, st["xag"], Bq, EST_ITER, where="the curvature estimate before the last stage")
    L2 = _cap(L2, run.L)
    L_stages = float(st["stages"][-1][2])
    st["last_estimate"] = {"L": float(L2), "B": Bq, "calls": int(run.n_calls) - c0, "L_stages": L_stages}
    st["last_estimate_calls"] = st.get("last_estimate_calls", 0) + int(run.n_calls) - c0
    R_left = int(run.T) - int(run.n_calls)          # >= (1 - LAST_EST_SHARE) N B > 0
    if L2 > st["L"]:
        st["L"] = float(L2)
        P_left = int(params["proj_budget"]) - (int(run.n_projections) - int(st["proj0"]))
        N = max(N, min(theory_N(L2, run.lam, N_LAST_FACTOR), P_left, R_left))
    N = max(1, min(N, R_left))
    return N, R_left // N


def _rescued_by_recheck(run, st):
    """Out of retries: whether a larger mean gradient at the stage's start
    (:func:`~logt.methods._base.trust_scale_recheck`) shows the trust ball's gradient scale was too small for the
    last failure. Then the run's ``gref`` takes it (``gref_recheck``) and the retries start over from the ``L``
    before them (once per run; logT's :func:`logt.methods.logt._rescued_by_recheck`)."""
    gnorm = trust_scale_recheck(run, st, st["p"], "the trust ball's estimate of ||grad F|| at the stage's start")
    if gnorm is None:
        return False
    gref = max(float(run.grad_scale or 0.0), st.get("gref_recheck", 0.0), 1e-300)
    run.rescue = (f"AC-SA's stage {st['k']} failed its trust ball {MAX_RETRIES + 1} times, and a larger mean of "
                  f"gradients at the stage's start has norm {gnorm:.3g}, {gnorm / gref:.3g} times the ball's scale "
                  "(the run's first mean); the stages went on from there")
    st["gref_recheck"] = max(st.get("gref_recheck", 0.0), gnorm)
    st["retries"] = 0
    return True


def _fail_stage(run, params, st, why):
    """Roll the stage back to its start with a 4x larger ``L`` and re-plan the rest of the budget (out of retries:
    raise, unless the trust ball's scale was too small, :func:`_rescued_by_recheck`: then from the ``L`` before
    the retries)."""
    if st["retries"] == 0:
        st["L_pre"] = st["L"]
    st["retries"] += 1
    rescued = st["retries"] > MAX_RETRIES and _rescued_by_recheck(run, st)
    if st["retries"] > MAX_RETRIES:
        raise FloatingPointError(
            f"method 'logt_acc' (params='auto'), stage {st['k']}: no stable smoothness found after "
            f"{MAX_RETRIES} retries, each with a {RETRY_FACTOR:g}x larger L (last L = {st['L']:.6g}; "
            f"curvature estimate {params['L_est']:.6g} at x0): {why}. The problem may not be smooth and "
            "strongly convex with the given lam; check lam, or give L")
    st["failed_calls"] += int(run.n_calls) - st["stage_calls0"]
    st["failed_projections"] += int(run.n_projections) - st["stage_proj0"]
    np.copyto(st["xag"], st["p"])
    np.copyto(st["x"], st["p"])
    if rescued:
        st["L"] = st["L_pre"]
    else:
        st["L"] = RETRY_FACTOR * max(st["L"], float(st["tail"]["L"]) if st.get("tail") else 0.0)
    st["tail"] = None
    _drop_burn_in(st)
    used = int(run.n_projections) - int(st["proj0"])
    plan = _plan(run, params, st["L"], int(params["proj_budget"]) - used)
    st["plan"] = [list(x) for x in _plan_report(plan)["plan"]]
    params["replanned"] = _plan_report(plan)
    params["fallback"] = plan["fallback"]
    params.pop("structure", None)
    if plan["fallback"] or plan["bias_limited"]:
        params["structure"] = _budget_structure(run, params, st["L"], plan)
    st.update(t=0, stage=None, R_trust=-1.0)


def _budget_structure(run, params, L, plan):
    """``params["structure"]`` of a plan that cannot do what the analysis needs within the budget."""
    frac = params["proj_frac"]
    noisy = params.get("noise_calls", 0) > 0
    T_ok = sufficient_T(L, run.lam, frac, params["growth_max"], sigma2=params["noise_sigma2"] if noisy else None,
                        mean_sq=params["noise_mean_sq"] if noisy else None, above=run.T)
    if plan["fallback"]:
        cause = (f"T = {run.T:,} is too small for the estimated L/lam = {L / run.lam:.3g}: one contracting AC-SA "
                 f"stage needs N = {theory_N(L, run.lam)} projections plus {theory_N(L, run.lam, N_LAST_FACTOR)} "
                 f"for the last stage, and {frac:.0%} of T allows {int(params['proj_budget'])}; the run made "
                 f"{len(plan['batches'])} shorter stages of {plan['N']} iterations, which the analysis does not "
                 "guarantee to contract")
    else:
        cause = (f"T = {run.T:,} is too small for the estimated L/lam = {L / run.lam:.3g} at the measured gradient "
                 f"noise: even the least error the gradient at x0 allows needs {plan['K_need']} contracting stages "
                 f"(of N = {plan['N']} projections) to reach the noise level, and {frac:.0%} of T allows "
                 f"{len(plan['batches'])}")
    where = (f"a budget of at least T = {T_ok:,} (from there the stages run in full; a start far from the "
             "optimum needs more)" if T_ok else "no budget lets the stages run in full")
    return {"ok": False, "T_suffices": T_ok, "cause": cause,
            "remedy": (f"{where}, or raise proj_frac; check lam (a lam below the true strong convexity "
                       "inflates L/lam)")}


def _drive_auto(run, params, st):
    """The auto rule's stages (see ``LogTAcc``): the plan of :func:`budget_plan`, a trust ball around each
    stage's start, a failed stage rolled back and the budget re-planned with a 4x larger ``L``, and the
    end-of-run check on the last stage's second half."""
    mu = run.lam
    x, xag, xsum = st["x"], st["xag"], st["xsum"]
    xmd = np.empty(run.shape)
    G = np.empty(run.shape)
    u = np.empty(run.shape)
    sigma2 = float(params.get("noise_sigma2") or 0.0)
    gref0 = float(run.grad_scale or 0.0)
    while not st["done"]:
        gref = max(gref0, float(st.get("gref_recheck", 0.0)))     # a rescue (_rescued_by_recheck) raises it
        if st["stage"] is None and not _stage_start(run, params, st):
            break
        N, B = st["stage"]
        k, L = st["k"], st["L"]
        last = len(st["plan"]) == 1
        if st["tail"] is not None:
            failed = _drive_tail(run, st, sigma2, gref)
            if failed is not None:
                _fail_stage(run, params, st, failed)
                continue
            st["plan"].pop(0)
            st.update(k=k + 1, t=0, stage=None, done=True)
            run.boundary(st, xag, epoch=k)
            break
        failed = None
        while st["t"] < N:
            t = st["t"] + 1
            try:
                _acsa_step(run, x, xag, xmd, G, u, t, B, L, mu, k)
            except FloatingPointError as exc:
                failed = str(exc)
                st["fail_g"] = math.inf                           # not a matter of the ball's scale
                break
            if st["R_trust"] < 0:
                st["R_trust"] = _trust_radius(G, gref, sigma2, B, mu)
            dist = max(float(np.linalg.norm(x - st["p"])), float(np.linalg.norm(xag - st["p"])))
            if not dist <= st["R_trust"]:
                st["fail_g"] = dist * mu / TRUST                  # the scale whose ball holds this iterate
                failed = (f"the iterate left the trust ball around the stage's start (distance {dist:.3g} > "
                          f"{st['R_trust']:.3g}) at iteration {t}")
                break
            if last and t > N // 2:                       # the check's segment and the suffix mean
                _check_add(st, xmd, G)
                xsum += xag
            st["t"] = t
            if t < N:
                run.boundary(st, record=False)
        if failed is not None:
            _fail_stage(run, params, st, failed)
            continue
        st["stages"].append([int(N), int(B), float(L)])
        st["plan"].pop(0)
        if last:
            if params["average"] == "suffix" and not params.get("fallback"):
                np.divide(xsum, N - N // 2, out=xag)
            _final_check(run, params, st, L, sigma2 / B)
            st["done"] = True
        np.copyto(x, xag)
        st.update(k=k + 1, t=0, stage=None)
        if run.boundary(st, xag, epoch=k):
            break
    est = st.get("last_estimate")
    if st.get("tail") is not None:
        params["tail"] = dict(st["tail"])
    params.update(stages=[list(s) for s in st["stages"]], retries=st["retries"], L_final=st["L"],
                  failed_calls=st["failed_calls"], failed_projections=st["failed_projections"],
                  last_estimate=est, last_estimate_calls=int(st.get("last_estimate_calls", 0)),
                  convergence=_verdict(params, st))
    return xag.copy(), st["k"] - 1


def _final_check(run, params, st, L, batch_noise):
    """The gradient mapping at the mean of the second half's ``x_md`` with step ``1/L`` (one projection);
    the returned point (``x_ag``) differs from that mean by ``d``, which can change the mapping by at most
    ``3 L d`` (``G`` is ``(2L + L_F)``-Lipschitz): the check uses ``||G|| + 3 L d``."""
    m = max(int(st["chk_m"]), 1)
    xbar = st["chk_xsum"] / m
    shift = 3.0 * L * float(np.linalg.norm(st["xag"] - xbar))
    _check_at(run, st, xbar, st["chk_gsum"] / m, L, "the last stage's second half", batch_noise, shift=shift)


def _trust_radius(G, gref, sigma2, B, mu):
    """The trust ball's radius around a segment's start, ``TRUST g / lam`` with ``g`` the largest of its first
    gradient's norm, the run's first gradient norm ``gref`` and the batch noise ``sqrt(sigma2 / B)``."""
    return TRUST * max(float(np.linalg.norm(G)), gref, math.sqrt(sigma2 / B)) / mu


def _check_add(st, x, G):
    """One gradient ``G`` at ``x`` into the check's segment (its sums, and its pair with the previous one)."""
    if st["chk_m"] > 0:
        _chk.add_pair(st, G, st["g_prev"])
    _chk.add_gradient(st, x, G)
    np.copyto(st["g_prev"], G)


def _check_at(run, st, w, g, L, where, batch_noise, **noise):
    """The check's verdict from the gradient mapping ``(w - Pi_D(w - g / L)) L`` at ``w`` with the gradient
    estimate ``g`` (one projection); ``noise``: ``shift`` / ``extra_noise`` of ``mapping_verdict``."""
    y = w - g / L
    run.project(y, y, epoch=st["k"], eta=1.0 / L)
    st["chk_result"] = _chk.mapping_verdict((w - y) * L, st, eta=1.0 / L, where=where,
                                            solved=_chk.solved_norm(run.grad_scale, run.lam, L),
                                            batch_noise=batch_noise, start_norm=run.guard_scale, **noise)
    st["checked"] = True


def _verdict(params, st):
    """``params["convergence"]``: the structural condition (a plan below what the analysis needs) and the check;
    a run the check finds solved (``||G||`` below :func:`logt.methods.convergence.solved_norm`) passes both."""
    structure = params.get("structure") or _curvature_growth(params, st)
    chk = st.get("chk_result")
    solved = chk is not None and chk.get("solved", False)
    structure_ok = structure is None or structure["ok"] or solved
    ok = structure_ok and (chk is None or chk["ok"])
    out = {"ok": bool(ok), "check": chk}
    if not structure_ok:
        out.update(cause=structure["cause"], remedy=structure["remedy"], T_suffices=structure["T_suffices"])
    elif chk is not None and chk.get("above_start"):
        out.update(cause=_chk.above_start_cause(chk), remedy=_chk.ABOVE_START_REMEDY)
    elif chk is not None and not chk["ok"]:
        out.update(cause=_check_cause(chk),
                   remedy="a larger T (the rate is O(1/T): 4x T for 4x less excess once the stages contract), "
                          "or check lam (a lam above the true strong convexity makes the stages too short)")
    return out


def _curvature_growth(params, st):
    """A structural failure when the curvature before the last stage exceeds ``CURVATURE_GROWTH`` times the
    ``L`` the stages ran with (their contraction assumes ``L`` >= the curvature on their path), else None."""
    est = st.get("last_estimate")
    if not est or not est["L"] > CURVATURE_GROWTH * est["L_stages"]:
        return None
    q = est["L"] / est["L_stages"]
    return {"ok": False, "T_suffices": None,
            "cause": (f"the curvature grew along the run: {est['L']:.3g} where the last stage started, {q:.3g}x "
                      f"the L = {est['L_stages']:.3g} that the stages before it ran with; "
                      "their contraction assumes L at least the curvature on their path"),
            "remedy": (f"run the stages with that curvature from the start: method='logt_acc', "
                       f"options={{'params': 'theory'}}, L={est['L']:.3g} or larger (an upper bound of the "
                       "curvature near the optimum); or start closer to the optimum")}


def _check_cause(chk):
    R = chk["R"]
    R = f"{R:.3g}" if isinstance(R, float) else R
    if chk["noise_norm"] > 0:
        return (f"at the end the gradient mapping is ||G|| = {chk['grad_map_norm']:.3g}, R = {R} times "
                f"its noise level squared ({chk['noise_norm']:.3g}; at most {chk['R_max']:g} at "
                f"convergence), measured on {chk['where']}: the run did not reach its noise floor")
    return (f"at the end the gradient mapping is ||G|| = {chk['grad_map_norm']:.3g} with noise-free "
            f"gradients ({chk['where']}): the run did not converge")


# ---- the auto rule's last segment: averaged mini-batch SGD on the projections left ----
TAIL_EST_SHARE = 0.1    # the tail's curvature estimate on its own batch costs at most this share of its calls
TAIL_CHECK_BATCHES = 4  # the check at the tail's output: two common-random-number gradient differences
                        # (2 batches each; _tail_check's spread is the two-difference formula)
TAIL_MIX = 4.0          # the tail's steps: at least this many times L_tail/lam (within the projections left)
TAIL_ACCEL_MAX = 16.0   # the burn-in's momentum: at most this speed-up 1/(1 - beta) of the slowest directions
TAIL_TEST_FRAC = 0.1    # the momentum test's samples: this fraction of the tail's step calls
TAIL_TEST_BATCHES = 8   # ... in this many batches (their spread is the test's noise)
TAIL_TEST_T = 2.365     # ... kept when its estimate is below zero by this many standard errors (t, 7 dof, 97.5%)


def _uses_tail(params):
    return params.get("last_stage", "sgd") == "sgd" and params["average"] == "suffix"


def _tail_start(run, params, st, N_last):
    """Plan the averaged tail that replaces the last AC-SA stage (``last_stage="sgd"``, ``N_last`` its
    planned length); returns ``(n, B)``.

    ``n = max(N_last, ceil(TAIL_MIX L_tail/lam))`` steps, at most the projections left (``proj_budget``
    minus those used; the tail makes ``n - 1`` step projections and one for its output, the check keeps
    its own): averaged SGD mixes a direction of curvature ``h`` in ``~L/h`` steps, so ``4 L/lam`` steps mix
    all of them and more would only shrink the batches. ``B`` = the calls left over ``n + 4``.
    The step size trusts a curvature estimate on the tail's own batch ``B`` (Lanczos, ``EST_ITER``
    products, made when it costs at most ``TAIL_EST_SHARE`` of the tail's calls): a sampled Hessian of
    ``B`` rows is stiffer than ``F``'s (least squares, logistic), and mini-batch SGD is stable for steps
    below its inverse. ``L_tail`` = the larger of it and the stages' ``L`` (a given ``L`` does not cap it:
    it bounds ``F``'s curvature, not a batch's). ``t0`` = the calls of the completed stages over ``B``:
    the start point counts as ``t0`` steps' worth of samples, so the step ``min(1/L_tail, 1/(lam (t0 + t)))``
    keeps what the stages learned where ``1/(lam t)`` steps already average (``L/lam`` small) and is
    ``1/L_tail`` elsewhere. ``burn = min(n // 2, ceil(L_tail/lam))`` steps are left out of the mean.
    ``TAIL_CHECK_BATCHES`` batches of ``B`` are kept for the check (:func:`_tail_check`)."""
    from logt.methods.logt import EST_ITER
    used = int(run.n_projections) - int(st["proj0"])
    R_left = int(run.T) - int(run.n_calls)
    n_max = max(1, min(int(params["proj_budget"]) - used, R_left // (1 + TAIL_CHECK_BATCHES)))

    def steps(L):
        return max(1, min(n_max, max(N_last, int(math.ceil(TAIL_MIX * L / run.lam)))))
    L_tail = float(st["L"])
    n = steps(L_tail)
    B = R_left // (n + TAIL_CHECK_BATCHES)
    c0 = int(run.n_calls)
    if (EST_ITER + 1) * B <= TAIL_EST_SHARE * R_left:
        L2, _ = estimate_curvature(run, st["xag"], B, EST_ITER, v0=None,
                                   where="the curvature estimate on the tail's batch")
        L_tail = max(L_tail, float(L2))
        n = steps(L_tail)
        B = (int(run.T) - int(run.n_calls)) // (n + TAIL_CHECK_BATCHES)
    beta = tail_momentum(L_tail, run.lam, n) if params.get("tail_momentum", "auto") == "auto" else 0.0
    test_samples = 0
    if beta > 0.0:                                      # the momentum test's samples come out of the batches
        R_left = int(run.T) - int(run.n_calls)
        B2 = int(R_left // (n * (1.0 + TAIL_TEST_FRAC) + TAIL_CHECK_BATCHES))
        test_samples = R_left - (n + TAIL_CHECK_BATCHES) * B2
        if n < 2 or B2 < 1 or test_samples < TAIL_TEST_BATCHES:   # too short for a burn-in and its test
            beta, test_samples = 0.0, 0
        else:
            B = B2
            st["x_prev"] = np.array(st["xag"], copy=True)
            st["burn_sum"] = np.zeros(run.shape)
    t0 = sum(int(a) * int(b) for a, b, _ in st["stages"]) / B
    burn = min(n // 2, int(math.ceil(L_tail / run.lam)))
    st["tail"] = {"n": int(n), "B": int(B), "L": L_tail, "t0": float(t0), "burn": int(burn), "beta": beta,
                  "test_samples": int(test_samples), "estimate_calls": int(run.n_calls) - c0, "calls": 0,
                  "projections": 0}
    return n, B


def tail_momentum(L, lam, n):
    """The momentum ``beta`` of the tail's burn-in, for ``n`` tail steps of size ``1/L`` at strong convexity ``lam``.

    Averaged SGD with step ``1/L`` mixes a direction of curvature ``h`` in ``~L/h`` steps, so a tail shorter than
    ``L/lam`` steps (its length is capped by the projections left) leaves the weakest directions where the stages
    put them (g033 of the second family: 25x off, the stages' projections had shrunk them). Nesterov's momentum
    speeds the slow directions up by ``A = 1/(1 - beta)`` and leaves those with ``h`` near ``L`` alone (the gradient
    is taken at the extrapolated point, so there the step cancels the momentum). ``A`` is what mixes the weakest
    direction in ``n`` steps, ``L/(lam n)``, at most ``TAIL_ACCEL_MAX``; ``A <= 1``: no momentum (0.0)."""
    A = min(TAIL_ACCEL_MAX, L / (lam * max(int(n), 1)))
    return 1.0 - 1.0 / A if A > 1.0 else 0.0


def _drop_burn_in(st):
    """Forget the momentum burn-in's state (its previous point and running sum), if any."""
    st.pop("x_prev", None)
    st.pop("burn_sum", None)


def _tail_step(mu, L_tail, t0, t):
    return min(1.0 / L_tail, 1.0 / (mu * (t0 + t)))


def _drive_tail(run, st, sigma2, gref):
    """The averaged tail (see :func:`_tail_start`): ``n`` steps ``x <- Pi_D(x - eta_t G_t)`` of ``B``
    samples each from the last stage's start ``p``; the gradient-mapping check's sums over the steps
    after ``burn`` (the mean point ``x_bar`` and mean gradient ``g_bar``); the output is one projected step
    from the mean, ``Pi_D(x_bar - eta_n g_bar)`` (a full ``1/L_tail`` step corrects the stiff directions'
    averaging error and the projection's bias of the mean towards the inside of ``D``; with the aged
    step it is small where the mean is already efficient). Returns None, or why the tail failed (the
    trust ball of the stages, a non-finite value): the caller rolls back and re-plans."""
    tl = st["tail"]
    n, B, L_tail, t0, burn = tl["n"], tl["B"], float(tl["L"]), float(tl["t0"]), tl["burn"]
    beta = float(tl.get("beta", 0.0))
    mu, k = run.lam, st["k"]
    x = st["x"]
    G = np.empty(run.shape)
    u = np.empty(run.shape)
    y = np.empty(run.shape) if beta > 0.0 else None   # the burn-in's extrapolated point
    while st["t"] < n:
        t = st["t"] + 1
        eta = _tail_step(mu, L_tail, t0, t)
        mom = beta > 0.0 and t <= burn
        try:
            if mom:                                     # the burn-in: the gradient at y = x + beta (x - x_prev)
                np.subtract(x, st["x_prev"], out=y)
                y *= beta
                y += x
                if not _extrapolated_grad(run, st, tl, y, B, G, t, eta):
                    beta = 0.0                          # the oracle failed outside D: plain from the start
                    st["t"] = t
                    if t < n:
                        run.boundary(st, record=False)
                    continue
                at = y
            else:
                at = x
                run.grad(x, B, G, epoch=k, step=t, eta=eta)
            if st["R_trust"] < 0:
                st["R_trust"] = _trust_radius(G, gref, sigma2, B, mu)
            if t > burn:
                _check_add(st, x, G)
            if t < n:
                np.multiply(G, -eta, out=u)
                u += at
                if mom:
                    np.copyto(st["x_prev"], x)
                run.project(u, x, epoch=k, step=t, eta=eta)
            if mom and t > burn // 2:
                st["burn_sum"] += x
                if t == burn:
                    _momentum_test(run, st, tl, G)
        except FloatingPointError as exc:
            st["fail_g"] = math.inf
            return str(exc)
        dist = float(np.linalg.norm(x - st["p"]))
        if not dist <= st["R_trust"]:
            st["fail_g"] = dist * mu / TRUST
            return (f"the tail's iterate left the trust ball around its start (distance {dist:.3g} > "
                    f"{st['R_trust']:.3g}) at step {t}")
        st["t"] = t
        if t < n:
            run.boundary(st, record=False)
    _drop_burn_in(st)
    m = max(int(st["chk_m"]), 1)
    xbar = st["chk_xsum"] / m
    eta = _tail_step(mu, L_tail, t0, n)
    np.multiply(st["chk_gsum"], -eta / m, out=u)
    u += xbar
    run.project(u, st["xag"], epoch=k, eta=eta)
    np.copyto(x, st["xag"])
    tl["projections"] = int(run.n_projections) - int(st["stage_proj0"])
    c0 = int(run.n_calls)
    _tail_check(run, st, xbar, L_tail, B, sigma2 / B)
    tl["check_calls"] = int(run.n_calls) - c0
    tl["calls"] = int(run.n_calls) - int(st["stage_calls0"])
    return None


def _extrapolated_grad(run, st, tl, y, B, G, t, eta):
    """The burn-in's gradient at the extrapolated point ``y`` (which may lie outside ``D``); False when the oracle
    fails there (a non-finite gradient, an ``ArithmeticError`` or ``ValueError`` such as a ``LinAlgError``): the
    momentum stops for good (``tail["momentum_stopped"]`` says why), the tail goes back to its start ``p``, and the
    step's batch is charged as asked for. An oracle defined on ``D`` only thus costs the tail its momentum, not the
    run."""
    c0 = int(run.n_calls)
    try:
        run.grad(y, B, G, epoch=st["k"], step=t, eta=eta)
        return True
    except (ArithmeticError, ValueError) as exc:
        if int(run.n_calls) == c0:
            run.n_calls += B
        tl["beta"] = 0.0
        tl["momentum_stopped"] = f"burn-in step {t}: {type(exc).__name__}: {exc}"[:300]
        np.copyto(st["x"], st["p"])
        _drop_burn_in(st)
        return False


def _momentum_test(run, st, tl, G):
    """The end of a momentum burn-in: keep the mean ``x_m`` of its second half only when ``F(x_m) < F(p)`` (``p``
    the tail's start) beyond the noise, else go back to ``p``; the rest of the tail is plain averaged SGD from
    there. The estimate of ``F(x_m) - F(p)`` is the mean, over ``test_samples`` samples in ``TAIL_TEST_BATCHES``
    batches, of ``g(m) . (x_m - p)`` at the midpoint ``m``: for a quadratic per-sample loss exactly its
    difference at the two points (the same samples at both), else up to the third derivative. Its noise is the
    gradient noise along that one direction, which is why it resolves what a gradient-norm check at the output
    cannot (g033: an improvement of ~0.03 against a gradient of ~5e-4 along the weak directions). Kept when the
    estimate plus ``TAIL_TEST_T`` standard errors (the batches' spread) is below zero. ``G`` is scratch."""
    p, x = st["p"], st["x"]
    half = tl["burn"] - tl["burn"] // 2
    xm = st["burn_sum"] / half
    d = xm - p
    mid = 0.5 * (xm + p)
    b = max(1, int(tl["test_samples"]) // TAIL_TEST_BATCHES)
    vals = []
    for _ in range(TAIL_TEST_BATCHES):
        run.grad(mid, b, G, epoch=st["k"], phase="the tail's momentum test")
        vals.append(float(np.vdot(G, d)))
    delta = float(np.mean(vals))
    se = float(np.std(vals, ddof=1)) / math.sqrt(TAIL_TEST_BATCHES)
    keep = bool(delta + TAIL_TEST_T * se < 0.0)
    tl["test"] = {"delta": delta, "se": se, "kept": keep, "samples": b * TAIL_TEST_BATCHES}
    np.copyto(x, xm if keep else p)
    np.copyto(st["x_prev"], x)


def _tail_check(run, st, xbar, L, B, batch_noise):
    """The end-of-run check at the tail's output ``y`` itself: the gradient there is the tail's mean gradient
    ``g_bar`` (at the mean point ``xbar``, noise ``s / m``) plus ``grad F(y) - grad F(x_bar)``, estimated by
    two common-random-number differences of ``B`` samples each (the same samples at ``y`` and at ``x_bar``:
    exact for a quadratic with additive noise; their spread is added to the noise level); the gradient
    mapping at ``y`` with step ``1/L`` (one projection) against that noise (:func:`logt.methods.convergence.
    mapping_verdict`). ``TAIL_CHECK_BATCHES = 4`` batches of calls."""
    m = max(int(st["chk_m"]), 1)
    y = st["xag"]
    rng, k = run.rng, st["k"]
    ga, gb = np.empty(run.shape), np.empty(run.shape)
    diffs = []
    for _ in range(TAIL_CHECK_BATCHES // 2):
        saved = rng.bit_generator.state
        run.grad(y, B, ga, epoch=k, phase="the end-of-run check")
        after = rng.bit_generator.state
        rng.bit_generator.state = saved
        run.grad(xbar, B, gb, epoch=k, phase="the end-of-run check")
        rng.bit_generator.state = after
        diffs.append(ga - gb)
    corr = np.mean(diffs, axis=0)
    spread = 0.5 * float(np.vdot(diffs[0] - diffs[1], diffs[0] - diffs[1])) / len(diffs)
    _check_at(run, st, y, st["chk_gsum"] / m + corr, L, "the tail's output (its steps after the burn-in)",
              batch_noise, extra_noise=spread)
