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

from logt.methods._base import Method, Option, one_of, positive_float, positive_int, register

PARAM_RULES = ("theory", "explicit", "auto")
N_FACTOR = 32.0          # N(N+1) >= 32 L/lam: 4 L/(lam N (N+1)) <= 1/8 contraction of the bias per stage
N_LAST_FACTOR = 2.0      # the last stage: N_last(N_last+1) >= 2 L/lam, bias bound 2x (nothing follows it)


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
    injects noise also in stiff directions; measured (README, Methods) on the
    kappa sweep and held-out problems, ``c = 2`` in ``N_last(N_last+1) >= c L/lam``
    gives up to 3x smaller excess than ``c = 8``, within noise or up to 2x
    worse on a box problem.

    Options
    -------
    params : "theory" (default; needs ``L``), "explicit" (give ``N``) or "auto"
        (no ``L`` needed: ``L`` is the curvature estimate of ``logt``'s auto rule at
        ``x0``, capped by a given ``L``; its oracle calls are counted and charged to
        ``T``; reported as ``params["L_est"]``). Passing ``N`` alone means "explicit".
    L : float > 0, the smoothness the steps use (default: ``minimize``'s ``L``
        / ``oracle.L``). An estimated ``L`` (a curvature estimate) plugs in here.
    N : int >= 1, AC-SA iterations (= projections) per stage (explicit).
    N_last : int >= 1, iterations of the last stage (explicit; default ``N``
        with ``params="explicit"``, the theory rule otherwise).
    B1 : int >= 1, the first stage's mini-batch (default 1).
    growth : int in [2, 7], the batch growth factor per stage (default 4).
    average : "suffix" (default) or "last", the last stage's output.

    Budget and counts (:func:`counts`): ``K`` = the largest number of stages
    with ``N B1 (growth^(K-1) - 1)/(growth - 1) + N_last B1 growth^(K-1) <= T``;
    stage ``k < K`` uses batches of ``B1 growth^(k-1)``, the last stage takes
    the rest of the budget; ``n_projections = N (K - 1) + N_last``,
    ``T - N_last < n_calls <= T``. The trace has a row per stage.
    """

    name = "logt_acc"
    label = "logT-acc"
    summary = "multi-stage AC-SA (Ghadimi-Lan), mini-batches growing 4x per stage"
    rate = "O(1/T)"
    projections = "N*(K-1) + N_last, N ~ sqrt(32 L/lam), K ~ log4(3T/N): O(sqrt(L/lam) log T)"
    uses_minibatches = True
    options = {
        "params": Option("theory", _param_rule, "parameter rule"),
        "L": Option(None, positive_float, "smoothness used (default: minimize's L / oracle.L)"),
        "N": Option(None, positive_int, "AC-SA iterations per stage (explicit)"),
        "N_last": Option(None, positive_int, "AC-SA iterations of the last stage"),
        "B1": Option(1, positive_int, "first mini-batch size"),
        "growth": Option(4, _growth, "batch growth factor per stage"),
        "average": Option("suffix", one_of("suffix", "last"), "the last stage's output"),
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
        """``(N, N_last, batches)`` of this method's rule for smoothness ``L`` and budget ``T``
        (``batches`` empty when ``T`` is below one stage)."""
        v = self.values
        if v["params"] in ("theory", "auto"):
            N = theory_N(L, lam)
            N_last = v["N_last"] or theory_N(L, lam, N_LAST_FACTOR)
        else:
            N = v["N"]
            N_last = v["N_last"] or N
        return N, N_last, stage_batches(T, N, N_last, v["B1"], v["growth"])

    def prepare(self, run):
        v = self.values
        extra = {}
        if v["params"] == "auto":
            from logt.methods.logt import estimate_at_x0
            L, L_raw, det = estimate_at_x0(run)        # counted in run.n_calls, charged to T
            if v["L"] is not None:
                L = min(L, float(v["L"]))
            L = max(L, run.lam)
            extra = {"L_est": L, "L_est_raw": L_raw, "estimate_calls": det["calls"], "estimate_B": det["B"]}
        else:
            L = self.resolve_L(run)
        N, N_last, batches = self.schedule(L, run.lam, run.T - run.n_calls)
        if not batches:
            raise ValueError(f"T={run.T} is below one stage of logt_acc: with N_last={N_last} and "
                             f"B1={v['B1']} the minimum T is N_last*B1 = {N_last * v['B1']}")
        return {"rule": v["params"], "L_used": L, "N": N, "N_last": N_last, "B1": v["B1"],
                "growth": v["growth"], "average": v["average"], "n_stages": len(batches), "batches": batches,
                **extra}

    def init_state(self, run, params, x0):
        x = np.array(x0, dtype=np.float64, order="C", copy=True)
        return {"x": x, "xag": x.copy(), "xsum": np.zeros_like(x), "k": 1, "t": 0}

    def drive(self, run, params, st):
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
