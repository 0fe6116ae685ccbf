"""Algorithm 1 of the paper: epochs of extra-gradient steps with doubling mini-batches.

Thin Python: epoch ``k`` makes ``M`` extra-gradient updates with mini-batches
of ``B = B1 * 2**(k-1)``; each update is two oracle calls (``oracle.mean_grad``,
compiled for built-in oracles) and two projections. The interpreter runs only
``2*M*k`` times in total, so it never dominates.
"""
import math

import numpy as np

from logt import params as _params
from logt.curvature import estimate_curvature, estimate_curvature_adaptive
from logt.gradient_noise import BATCHES_PER_ROUND, estimate_gradient_noise
from logt.methods import convergence as _chk
from logt.methods._base import (Method, Option, one_of, positive_float, positive_int, probability, register,
                               trust_scale_recheck)

PARAM_RULES = ("auto", "theorem1", "theorem2", "explicit")

# ---- the auto rule's estimate and safeguard (see LogT's docstring and docs/guide/parameters.md) ----
EST_B0 = 16           # first batch of the estimate at x0 (doubled until two estimates agree)
EST_ITER = 8          # at most this many Hessian-vector products (Lanczos steps) at x0
EST_AGREE = 1.2       # batch doubling stops when two successive estimates agree within this factor
EST_FRAC0 = 0.02      # the estimate at x0 spends at most this fraction of T
EST_ITER_EPOCH = 3    # Lanczos steps of a re-estimate at an epoch start (warm-started)
EST_EPOCH_FRAC = 0.05  # a re-estimate costs at most this fraction of its epoch's calls
EST_B_MIN = 16        # no re-estimate with fewer samples than this
ETA_GROWTH = 2.0      # the step grows by at most this factor from one epoch to the next
TRUST = 4.0           # an epoch fails when an iterate leaves the trust ball (see _trust_radius)
MAX_RETRIES = 6       # failed epochs (each retried with a 4x smaller step) before a FloatingPointError
RETRY_FACTOR = 4.0
FINAL_SHARE = 0.0     # the last epoch gets at least this share of T (0: the doubling schedule decides)

@register
class LogT(Method):
    """Algorithm 1 (Zhang, Yang, Jin, He, ICML 2013): ``O(1/T)`` excess risk with ``O(log T)`` projections.

    Epoch ``k`` makes ``M`` extra-gradient updates with step ``eta`` and
    mini-batches of ``B^k = B1 * 2**(k-1)`` oracle samples
    (``z = Pi_D(w - eta g(w))``, ``w = Pi_D(w - eta g(z))``), then restarts
    from the mean of its ``M`` points ``z``.

    Options
    -------
    params : "auto" (default), "theorem1", "theorem2" (needs ``delta``) or
        "explicit" (given ``eta``, ``M``, ``B1``); passing ``eta``, ``M`` and
        ``B1`` alone means "explicit". The theorem rules need ``L``; ``M`` and
        ``B1`` are rounded UP (see :mod:`logt.params`). "auto" needs only ``lam``.
    eta : float > 0; M : int >= 1; B1 : int >= 1 -- explicit parameters.
    delta : failure probability in (0, 1) of Theorem 2.
    proj_frac : "auto" only: ``M`` is capped so that the projections stay below
        ``proj_frac * T`` (default ``logt.params.AUTO_PROJ_FRAC = 0.0075``).

    The auto rule
    -------------
    * **Curvature**: ``L_est`` = the largest eigenvalue of the sampled Hessian
      at the epoch's start point, from a few Lanczos steps on Hessian-vector
      products formed as differences of two mini-batch gradients drawn with the
      same random numbers (:mod:`logt.curvature`), the batch doubled until two
      estimates agree within 1.2x (at most 2% of ``T``). Estimated at ``x0`` (in
      ``prepare``) and re-estimated (3 warm-started Lanczos steps, at most 5% of the
      epoch's calls, skipped when that is below 16 samples per gradient) at the start
      of every later epoch: the curvature met near the optimum can be far below the
      one at ``x0`` (logistic-type losses). The step grows by at most 2x per epoch;
      a given ``L`` caps ``L_est``.
    * **Step and epoch length** (:func:`logt.params.auto_eta_M`): ``eta = 1/(2 L_est)``,
      ``M = ceil(2 L_est/lam)`` (``M eta lam = 1``), with ``M`` capped so that the
      projections stay below ``proj_frac * T`` (0.75%); when the cap binds the step
      grows up to ``0.75/L_est`` to keep ``M eta lam`` near 1.
    * **First batch** (:func:`first_batch`, :func:`logt.params.auto_B1`): rounds of
      8 mini-batch means at ``x0`` measure the gradient's noise ``sigma2`` and its
      pooled mean (at most 1% of ``T``); ``B1 = max(1, min(k sigma2 / (M ||g_bar||^2),
      N / (2 M)))`` (``k = 1/2``, smaller when the projection cap shortens the epochs)
      skips the epochs whose noise exceeds the bias they can remove. A clear gradient
      gives the paper's ``B1 = 1``.
    * **Budget**: the batch doubles every epoch from ``B1`` and the last epoch
      absorbs what is left (:func:`logt.params.auto_schedule`), so all but fewer
      than ``2M`` of the ``T`` calls are used.
    * **Safeguard**: an epoch whose iterate leaves the trust ball around its start
      ``w_k`` (radius ``4 g (1/lam + eta sqrt(M))``, ``g`` the largest of the first
      projected gradient ``||z_1 - w_k||/eta``, the estimates' mean gradient norms and
      the batch noise ``sqrt(sigma2 / B)``: ``g/lam`` bounds the distance to the optimum
      of a lam-strongly convex ``F``), or
      meets a non-finite value, is rolled back to ``w_k`` and re-run with a 4x
      smaller step (and up to 4x more updates); after 6 failures a
      ``FloatingPointError`` says so. Every call and projection, including those
      of estimates and failed epochs, is counted.

    * **Honest success** (``params["convergence"]``): when the cap holds ``c = M eta lam``
      below ``logt.params.EPOCH_C_MIN = 0.738`` the epochs cannot contract along the
      weakest direction faster than the doubling batch halves the noise
      (``((1 - e^-c)/c)^2 > 1/2``): ``success=False`` and a ``logt.ConvergenceWarning``
      (``method="auto"``, the default, runs the accelerated stages there). Every epoch
      also yields, for free, the gradient mapping at the mean of its points:
      ``w = Pi(w_bar - eta g_bar)`` is a projected gradient step from that mean with
      the mean of its ``M`` gradients, so ``G = (w_bar - w)/eta``; the last epoch's
      ``G`` far above its noise (:mod:`logt.methods.convergence`) is reported the same way.

    ``result.params`` reports ``L_est`` (the estimate at ``x0``), ``L_final``,
    ``eta``/``M`` of the first and the last epoch, ``estimate_calls``,
    ``n_estimates``, ``B1``, ``noise_calls``, ``noise_sigma2``, ``noise_mean_sq``,
    ``retries`` and the per-epoch ``epochs`` list
    ``[(B, M, eta), ...]``.

    Counts: theorem and explicit rules: ``n_projections = 2*M*n_epochs``,
    ``n_calls = 2*M*B1*(2**n_epochs - 1) <= T``. Auto: ``n_calls = estimate
    calls + noise calls + sum over epochs of 2*M_k*B_k <= T`` and ``n_projections = sum of
    (2*M_k + 1)`` (the epoch's mean is projected once), plus the calls and
    projections of rolled-back epochs; with a constant ``M`` and no roll-back these are
    :func:`logt.params.auto_schedule`'s.
    """

    name = "logt"
    label = "logT"
    summary = "Algorithm 1: extra-gradient epochs, doubling mini-batches"
    rate = "O(1/T)"
    projections = "2*M*floor(log2(T/(2*M*B1) + 1)) = O((L/lam) log T)"
    uses_minibatches = True
    options = {
        "params": Option("auto", one_of(*PARAM_RULES), "parameter rule"),
        "eta": Option(None, positive_float, "step size (explicit)"),
        "M": Option(None, positive_int, "extra-gradient updates per epoch (explicit)"),
        "B1": Option(None, positive_int, "first mini-batch size (explicit)"),
        "delta": Option(None, probability, "failure probability (theorem2)"),
        "proj_frac": Option(None, probability,
                            "auto: projection budget as a fraction of T (default logt.params.AUTO_PROJ_FRAC)"),
    }

    def __init__(self, **options):
        if any(options.get(k) is not None for k in ("eta", "M", "B1")) and "params" not in options:
            options["params"] = "explicit"
        super().__init__(**options)

    def _check_combination(self):
        v = self.values
        given = [k for k in ("eta", "M", "B1") if v[k] is not None]
        if v["params"] == "explicit":
            if len(given) != 3:
                raise ValueError("method 'logt' with explicit parameters needs all of eta, M and B1 "
                                 f"(got {', '.join(given) or 'none'})")
        elif given:
            raise ValueError(f"method 'logt': pass either params={v['params']!r} or explicit eta, M, B1, not both")
        if v["proj_frac"] is not None and v["params"] != "auto":
            raise ValueError(f"method 'logt': proj_frac applies to params='auto' only, not {v['params']!r}")
        if v["params"] == "theorem2" and v["delta"] is None:
            raise ValueError("method 'logt' with params='theorem2' needs delta (0 < delta < 1)")

    def rule_params(self, run):
        """The ``LogTParams`` of a theorem or explicit rule (no oracle calls)."""
        v = self.values
        if v["params"] == "explicit":
            return _params.explicit(v["eta"], v["M"], v["B1"])
        if run.L is None:
            raise ValueError(f"method 'logt' with params={v['params']!r} needs L (the smoothness "
                             "constant): pass L=, use an oracle that defines it, give eta, M, B1, "
                             "or use params='auto' (estimates the curvature)")
        if v["params"] == "theorem1":
            return _params.theorem1(run.L, run.lam)
        return _params.theorem2(run.L, run.lam, run.T, v["delta"])

    def prepare(self, run):
        if self.values["params"] == "auto":
            return self._prepare_auto(run)
        p = self.rule_params(run)
        k = _params.n_epochs(run.T, p.M, p.B1)
        if k == 0:
            raise ValueError(
                f"T={run.T} is below one epoch of Algorithm 1: with M={p.M} and B1={p.B1} "
                f"the minimum T is 2*M*B1 = {_params.min_T(p.M, p.B1)}")
        out = p.as_dict()
        out["n_epochs"] = k
        return out

    def init_state(self, run, params, x0):
        st = {"w": np.array(x0, dtype=np.float64, order="C", copy=True),
              "zsum": np.zeros(run.shape), "k": 1, "t": 0, "B": int(params["B1"])}
        if params["rule"] == "auto":
            st.update(_auto_state(run, params, st["w"]))
        return st

    def drive(self, run, params, st):
        if params["rule"] == "auto":
            return _drive_auto(run, params, st)
        eta, M, K = params["eta"], int(params["M"]), int(params["n_epochs"])
        w, zsum = st["w"], st["zsum"]
        g = np.empty(run.shape)      # mean gradient at w
        f = np.empty(run.shape)      # mean gradient at z
        z = np.empty(run.shape)
        while st["k"] <= K:
            k, B = st["k"], st["B"]
            while st["t"] < M:
                t = st["t"] + 1
                run.grad(w, B, g, epoch=k, step=t, eta=eta)
                np.multiply(g, -eta, out=z)
                z += w
                run.project(z, z, epoch=k, step=t, eta=eta)            # z = Pi_D(w - eta g)
                run.grad(z, B, f, epoch=k, step=t, eta=eta)
                w -= eta * f
                run.project(w, w, epoch=k, step=t, eta=eta)            # w = Pi_D(w - eta f)
                zsum += z
                st["t"] = t
                if t < M:
                    run.boundary(st, record=False)
            np.divide(zsum, M, out=w)                    # in D by convexity: no projection
            zsum.fill(0.0)
            st.update(k=k + 1, t=0, B=2 * B)
            if run.boundary(st, w, epoch=k, eta=eta):
                break
        return w, st["k"] - 1

    # ---- the auto rule -------------------------------------------------------------------
    def _prepare_auto(self, run):
        return auto_params(run, auto_estimates(run, self.values["proj_frac"]))


def auto_estimates(run, proj_frac=None):
    """The auto rule's measurements at ``x0``, in this order (the random stream depends on it): the
    curvature estimate (:func:`estimate_at_x0`), then the gradient noise (:func:`first_batch`).

    Returns a dict with ``L`` (capped by a given ``L``), ``L_raw``, ``det`` (the estimate's
    details), ``M_cap``, ``eta``, ``M`` (:func:`logt.params.auto_eta_M`), ``c = M eta lam``,
    ``B1`` and ``noise`` (the noise measurement's details). Shared with ``method="auto"``.
    """
    L, L_raw, det = estimate_at_x0(run)
    M_cap = _params.auto_M_cap(run.T, frac=proj_frac)
    eta, M = _params.auto_eta_M(L, run.lam, M_cap)
    c = M * eta * run.lam
    B1, noise = first_batch(run, M, c)
    return {"L": L, "L_raw": L_raw, "det": det, "M_cap": M_cap, "eta": eta, "M": M, "c": c, "B1": B1,
            "noise": noise, "proj_frac": _params.AUTO_PROJ_FRAC if proj_frac is None else proj_frac}


def auto_params(run, est):
    """The auto rule's ``params`` (the schedule of :func:`logt.params.auto_schedule`) from
    :func:`auto_estimates`; a ``ValueError`` when not even one epoch fits."""
    T, lam = run.T, run.lam
    L, M, B1, det, noise = est["L"], est["M"], est["B1"], est["det"], est["noise"]
    batches, calls, proj = _params.auto_schedule(T - run.n_calls, M, B1)
    if not batches:
        raise ValueError(
            f"T={T} is below one epoch of Algorithm 1 with the auto rule: the curvature estimate "
            f"used {run.n_calls} calls and L_est = {L:.4g}, lam = {lam:.4g} give M = {M}, so one "
            f"epoch needs 2*M*B1 = {2 * M * B1} more calls; the minimum T is {run.n_calls + 2 * M * B1}")
    out = {"rule": "auto", "eta": est["eta"], "M": M, "B1": B1, "M_cap": est["M_cap"],
           "L_est": L, "L_est_raw": est["L_raw"], "estimate_B": det["B"], "estimate_calls": det["calls"],
           "grad_norm0": det["grad_norm"], "noise_sigma2": noise["sigma2"],
           "noise_mean_sq": noise["mean_sq"], "noise_calls": noise["n_samples"],
           "planned_epochs": len(batches),
           "planned_calls": calls + det["calls"], "planned_projections": proj,
           "contraction": est["c"]}
    if est["c"] < _params.EPOCH_C_MIN:
        need = math.ceil(_params.auto_M_exact(L, lam))     # auto_M, without its MAX_M refusal
        out["structure"] = {
            "ok": False,
            "cause": (f"the projection cap ({est['proj_frac']:.2%} of T) holds M = {M} below the "
                      f"{need:,} updates that one contracting epoch needs at the estimated L/lam = "
                      f"{L / lam:.3g} (M eta lam = {est['c']:.3g} < {_params.EPOCH_C_MIN:.3g}): the epochs do "
                      "not contract the error along the weakest directions"),
            "remedy": ("use method='auto' (the default: it switches to the accelerated stages of "
                       "'logt_acc' here), or method='logt_acc', or raise proj_frac; check lam")}
    return out


def estimate_at_x0(run):
    """The auto rule's curvature estimate at ``run.x0`` (shared by ``logt`` and ``logt_acc``).

    Lanczos on common-random-number gradient differences (:func:`logt.curvature.estimate_curvature_adaptive`),
    batch ``16, 32, ...`` until two estimates agree within ``EST_AGREE``, at most ``EST_FRAC0 * T``
    oracle calls, all counted in ``run.n_calls``. Returns ``(L, L_raw, details)`` with ``L =
    _cap(L_raw, run.L)`` (a given ``L`` caps the estimate unless the estimate is ``SAMPLED_STIFF`` times above
    it). A ``blind`` estimate (every gradient drawn was 0:
    samples that carry no gradient) gives ``L = run.L`` when given, else ``L_raw`` and ``run.rescue`` says so
    (the result is then ``success=False``, "unverified").
    """
    B_max = max(1, int(EST_FRAC0 * run.T) // (2 * (EST_ITER + 1)))
    L_raw, det = estimate_curvature_adaptive(run, run.x0, min(EST_B0, B_max), B_max, EST_ITER,
                                             agree=EST_AGREE)
    if det["blind"]:
        if run.L is not None:            # the only curvature information there is
            return float(run.L), L_raw, det
        run.rescue = run.rescue or (
            f"every gradient drawn for the curvature estimate at x0 ({det['calls']:,} samples) was exactly 0, so "
            f"the step rests on no curvature information (L_est = lam; pass L, an upper bound of the curvature)")
    return _cap(L_raw, run.L), L_raw, det


def first_batch(run, M, c):
    """The auto rule's ``B1`` (:func:`logt.params.auto_B1`, ``c = M eta lam`` of the first epoch) from
    the gradient noise at ``run.x0``.

    At most ``AUTO_PILOT_FRAC * T`` calls (counted); returns ``(B1, details)`` of
    :func:`logt.gradient_noise.estimate_gradient_noise` (zeros when the budget is too small
    for one round: then ``B1 = AUTO_B1``).
    """
    noise = measure_noise(run)
    if noise["n_samples"] == 0:
        return _params.AUTO_B1, noise
    return _params.auto_B1(noise["sigma2"], noise["mean_sq"], noise["n_samples"], M, c), noise


def measure_noise(run):
    """The gradient noise at ``run.x0`` (:func:`logt.gradient_noise.estimate_gradient_noise`, at most
    ``AUTO_PILOT_FRAC * T`` calls, counted); zeros (``n_samples = 0``) when the budget is below one round."""
    max_calls = int(_params.AUTO_PILOT_FRAC * run.T)
    if max_calls < BATCHES_PER_ROUND * _params.AUTO_PILOT_B0:
        return {"sigma2": 0.0, "mean_sq": 0.0, "n_samples": 0}
    return estimate_gradient_noise(run, run.x0, _params.AUTO_PILOT_B0, max_calls)


SAMPLED_STIFF = 10.0    # an estimate above this times the given L: single samples far stiffer than F (uncapped)


def _cap(L_est, L):
    """The estimate capped by a given ``L`` (the smoothness of ``F``), except where it exceeds it by more than
    ``SAMPLED_STIFF``: a sampled Hessian of a few samples that far above ``F``'s says single samples are far
    stiffer than their mean (a sum of per-sample losses: least squares' ``||a_i||^2`` against ``L``), and a
    mini-batch of that size takes steps of ``1/L`` with a noise that grows with its error (unstable where
    ``L``'s steps leave the error to grow faster than the batch averages it); the estimate is kept then."""
    if L is None or L_est > SAMPLED_STIFF * L:
        return L_est
    return min(L_est, L)


def _auto_state(run, params, w):
    return {"w0": w.copy(), "eta": float(params["eta"]), "M": int(params["M"]),
            "M_cap": int(params["M_cap"]), "L": float(params["L_est"]), "L_floor": 0.0,
            "Bk": 0, "last": False, "R_trust": -1.0, "done": False, "gref": float(params["grad_norm0"]),
            "n_est": 1, "est_calls": int(params["estimate_calls"]), "vec": np.zeros(run.shape),
            "retries": 0, "epochs": [], "L_hist": [float(params["L_est"])], "L_pre": 0.0, "fail_g": math.inf,
            "rechecked": False, **_chk.new_state(run.shape)}


def _set_L(st, L, lam):
    """Step and epoch length from the curvature ``L`` (not below the safeguard's floor)."""
    L = max(L, st["L_floor"], lam)
    st["L"] = L
    st["eta"], st["M"] = _params.auto_eta_M(L, lam, st["M_cap"])


def _epoch_start(run, st):
    """Re-estimate the curvature at the epoch's start (when affordable) and size the epoch.

    Returns False when not even one update with one sample per gradient fits in the budget.
    """
    lam = run.lam
    if st["k"] > 1:
        B_e = int(EST_EPOCH_FRAC * 2 * st["M"] * st["B"]) // (EST_ITER_EPOCH + 1)
        if B_e >= EST_B_MIN and (EST_ITER_EPOCH + 1) * B_e < run.T - run.n_calls:
            v0 = st["vec"] if np.any(st["vec"]) else None
            L_raw, det = estimate_curvature(run, st["w"], B_e, EST_ITER_EPOCH, v0=v0,
                                            where=f"the curvature estimate at the start of epoch {st['k']}")
            st["vec"] = det["vector"]
            st["est_calls"] += det["calls"]
            st["n_est"] += 1
            st["gref"] = max(st["gref"], det["grad_norm"])
            L_new = max(_cap(L_raw, run.L), st["L"] / ETA_GROWTH)
            st["L_hist"].append(float(L_new))
            _set_L(st, L_new, lam)
    M = st["M"]
    R = run.T - run.n_calls
    B = st["B"]
    reserve = int(EST_EPOCH_FRAC * 2 * M * 2 * B) + 1
    if 2 * M * (B + 2 * B) + reserve > R or run.n_calls + 2 * M * B > (1.0 - FINAL_SHARE) * run.T:
        B = _params.auto_last_batch(R, M)
        st["last"] = True
    if B < 1:
        return False
    st["Bk"] = B
    np.copyto(st["w0"], st["w"])
    st["R_trust"] = -1.0
    return True


def _trust_radius(st, s1, eta, lam, M, noise):
    """Radius of the ball around the epoch's start that a stable epoch does not leave.

    ``s1 / eta`` (the first projected gradient) and ``gref`` (the largest mean gradient
    norm of the curvature estimates so far, over more samples) bound ``||grad F||`` up to
    noise, and ``||w - w_*|| <= ||grad F(w)|| / lam`` for a lam-strongly convex F; a
    random walk of ``M`` steps of that size is allowed on top. ``noise`` is the expected
    norm of a batch mean's noise, ``sqrt(sigma2 / B)`` (``sigma2`` measured at ``x0``):
    both of the other two can be far below it by chance when the noise lives in a few
    coordinates (a balanced batch of the metric learners' +-s/2 threshold gradients
    sums to 0), and the next batch then moves by the full noise. An unstable step grows
    the iterate geometrically and leaves any such ball within a few steps.
    """
    g = max(s1 / eta, st["gref"], noise)
    return TRUST * g * (1.0 / lam + eta * math.sqrt(M))


def _rescued_by_recheck(run, st):
    """Out of retries: whether a larger mean gradient at the epoch's start
    (:func:`~logt.methods._base.trust_scale_recheck`) shows the ball's gradient scale was too small for the last
    failure. Then ``gref`` takes it, the step is the one before the retries and they start over (once per run). The
    ball's scales are means of fewer samples, which can all miss the few samples that carry the gradient: a metric
    learner's anchors on data with 2-3% outlier rows drew scales near ``1e-8`` against a gradient of ``0.05``, and
    every retry, at ever smaller steps, "left" a ball around a point it never strayed from."""
    gnorm = trust_scale_recheck(run, st, st["w0"], "the trust ball's estimate of ||grad F|| at the epoch's start")
    if gnorm is None:
        return False
    run.rescue = (f"logT's epoch {st['k']} failed its trust ball {MAX_RETRIES + 1} times, and a larger mean of "
                  f"gradients at the epoch's start has norm {gnorm:.3g}, {gnorm / max(st['gref'], 1e-300):.3g} times "
                  "the ball's scale (the largest of the smaller means); the epochs went on from there")
    st["gref"] = max(st["gref"], gnorm)
    st["retries"] = 0
    return True


def _fail_epoch(run, st, why):
    """Roll back to the epoch's start with a smaller step, or raise when out of retries (unless the trust ball's
    scale was too small: :func:`_rescued_by_recheck`)."""
    if st["retries"] == 0:
        st["L_pre"] = st["L"]                                 # the step before this run of retries
    st["retries"] += 1
    rescued = st["retries"] > MAX_RETRIES and _rescued_by_recheck(run, st)
    if st["retries"] > MAX_RETRIES:
        raise FloatingPointError(
            f"method 'logt' (params='auto'), epoch {st['k']}: no stable step size found after "
            f"{MAX_RETRIES} retries, each {RETRY_FACTOR:g}x smaller (last step size {st['eta']:.6g}; "
            f"curvature estimate {st['L_hist'][0]:.6g} at x0): {why}. The problem may not be smooth "
            "and strongly convex with the given lam; check lam, or give L, or explicit eta, M, B1")
    np.copyto(st["w"], st["w0"])
    st["zsum"].fill(0.0)
    _chk.reset(st)
    st["L_floor"] = 0.0 if rescued else st["L"] * RETRY_FACTOR       # rescued: the step before the retries
    _set_L(st, st["L_pre"] if rescued else st["L_floor"], run.lam)
    st.update(t=0, Bk=0, last=False, R_trust=-1.0)


def _drive_auto(run, params, st):
    """Algorithm 1 with the auto rule's re-estimates, budget plan and safeguard (see ``LogT``).

    One change to the epoch's mean: the points ``y_t = w_t - eta g(w_t)`` are
    averaged BEFORE projection and the mean is projected once (``z_t = Pi_D(y_t)``
    are the paper's points). In the interior both are the same; at a minimizer on
    a curved boundary the mean of projected points lies inside the domain by about
    their spread squared over the radius, a first-order loss in ``F`` there
    (ls_ball_1e2 in the bank: (F - F*) T = 149 with the mean of the ``z_t``, 9 with
    the projected mean of the ``y_t``).
    """
    w, zsum, w0 = st["w"], st["zsum"], st["w0"]
    g = np.empty(run.shape)
    f = np.empty(run.shape)
    z = np.empty(run.shape)
    y = np.empty(run.shape)
    lam = run.lam
    sigma2 = float(params.get("noise_sigma2", 0.0))       # per-sample gradient noise at x0 (0: not measured)
    while not st["done"]:
        if st["t"] == 0 and st["Bk"] == 0:
            if not _epoch_start(run, st):
                st["done"] = True
                break
        k, B, M, eta = st["k"], st["Bk"], st["M"], st["eta"]
        failed = None
        while st["t"] < M:
            t = st["t"] + 1
            try:
                run.grad(w, B, g, epoch=k, step=t, eta=eta)
                _chk.add_gradient(st, w, g)                       # the check: g(w) at w, (f, g) a pair
                np.multiply(g, -eta, out=y)
                y += w                                            # y = w - eta g(w)
                run.project(y, z, epoch=k, step=t, eta=eta)       # z = Pi_D(y)
                run.grad(z, B, f, epoch=k, step=t, eta=eta)
                _chk.add_pair(st, f, g)
                w -= eta * f
                run.project(w, w, epoch=k, step=t, eta=eta)       # w = Pi_D(w - eta g(z))
            except FloatingPointError as exc:
                failed = str(exc)
                st["fail_g"] = math.inf                           # not a matter of the ball's scale
                break
            dz = float(np.linalg.norm(z - w0))
            if st["R_trust"] < 0:
                st["R_trust"] = _trust_radius(st, dz, eta, lam, M, math.sqrt(sigma2 / B))
            dist = max(dz, float(np.linalg.norm(w - w0)))
            if not dist <= st["R_trust"]:
                # the g this iterate's ball would have needed (the radius is TRUST g (1/lam + eta sqrt(M)))
                st["fail_g"] = dist / (TRUST * (1.0 / lam + eta * math.sqrt(M)))
                failed = (f"the iterate left the trust ball around the epoch's start (distance "
                          f"{dist:.3g} > {st['R_trust']:.3g}) at step {t}")
                break
            zsum += y
            st["t"] = t
            if t < M:
                run.boundary(st, record=False)
        if failed is not None:
            _fail_epoch(run, st, failed)
            continue
        np.divide(zsum, M, out=w)
        zsum.fill(0.0)
        try:
            run.project(w, w, epoch=k, eta=eta)                   # the epoch's mean, projected once
        except FloatingPointError as exc:
            st["fail_g"] = math.inf
            _fail_epoch(run, st, str(exc))
            continue
        # the epoch's mean y = w_bar - eta g_bar, so w = Pi(y) is a projected gradient step from the mean
        # w_bar of the points where g was drawn: G = (w_bar - w) / eta is the gradient mapping there
        Gm = (st["chk_xsum"] / M - w) / eta
        st["chk_result"] = _chk.mapping_verdict(Gm, st, eta=eta, where=f"epoch {k} (of its {M} updates)",
                                                solved=_chk.solved_norm(run.grad_scale, lam, st["L"]),
                                                batch_noise=sigma2 / B, start_norm=run.guard_scale)
        _chk.reset(st)
        st["epochs"].append([int(B), int(M), float(eta)])
        st.update(k=k + 1, t=0, B=2 * B, Bk=0)
        if st["last"]:
            st["done"] = True
        if run.boundary(st, w, epoch=k, eta=eta):
            break
    _auto_report(run, params, st)
    return w, st["k"] - 1


def _auto_report(run, params, st):
    ep = st["epochs"]
    params.update({
        "L_final": st["L"], "eta_last": ep[-1][2] if ep else st["eta"], "M_last": ep[-1][1] if ep else st["M"],
        "estimate_calls": st["est_calls"], "n_estimates": st["n_est"], "retries": st["retries"],
        "L_history": list(st["L_hist"]), "epochs": [list(e) for e in ep],
        "convergence": _verdict(params, st.get("chk_result"), st["epochs"], run.lam, run.T),
    })


def realized_bias_ratio(params, contractions, T):
    """The worst-case leftover bias over the final noise (:func:`logt.methods.auto.epochs_bias_ratio`) of epochs
    of contractions ``c_k = M_k eta_k lam``: ``prod_k rho(c_k) mean_sq T / (8/3 sigma2)``
    (:func:`logt.params.epoch_rho`); None without a noise measurement (``sigma2`` or ``mean_sq`` 0, or no
    epoch)."""
    sigma2, mean_sq = params.get("noise_sigma2"), params.get("noise_mean_sq")
    if not contractions or not sigma2 or not mean_sq:
        return None
    return math.prod(_params.epoch_rho(c) for c in contractions) * mean_sq * T / (8.0 / 3.0 * sigma2)


STEP_CUT = 2.0          # an epoch's step below the planned one by this factor: cut (retries, a grown curvature)


def _realized_structure(params, epochs, lam, T):
    """A structural failure when the epochs' steps were cut along the run (retries, a curvature that grew: some
    epoch's step below the planned one by ``STEP_CUT``) so far that the epochs that ran leave a worst-case bias
    above ``BIAS_RATIO_MAX`` times their noise, where the same epochs at the planned step did not; else None."""
    from logt.methods.auto import BIAS_RATIO_MAX       # auto imports this module
    if not epochs or min(eta for _, _, eta in epochs) > params["eta"] / STEP_CUT:
        return None                                     # no step cut (re-estimates move it by a little)
    cs = [M * eta * lam for _, M, eta in epochs]
    ratio = realized_bias_ratio(params, cs, T)
    if ratio is None or ratio <= BIAS_RATIO_MAX:
        return None
    # the same epochs at the planned contraction: what the cuts alone cost (an epoch fewer than planned, when
    # the estimates' calls took its budget, is not a cut)
    planned = realized_bias_ratio(params, [params["contraction"]] * len(epochs), T)
    if planned is None or planned > BIAS_RATIO_MAX:
        return None
    eta = min(e for _, _, e in epochs)
    return {"ok": False, "realized_bias_ratio": ratio,
            "cause": (f"the epochs' step was cut along the run to eta = {eta:.3g} (planned {params['eta']:.3g}: "
                      f"the curvature or the noise met on the way), so M eta lam = {cs[-1]:.3g} in the last "
                      f"epoch and the {len(epochs)} epochs leave a worst-case bias of {ratio:.3g} times their "
                      f"noise level ({planned:.3g} at the planned step; at most {BIAS_RATIO_MAX:g})"),
            "remedy": ("a larger T, or method='logt_acc' (the accelerated stages); where single samples are far "
                       "stiffer than F (a sum of per-sample losses), explicit parameters with smaller steps")}


def _verdict(params, chk, epochs=(), lam=None, T=None):
    """``params["convergence"]``: the epochs' contraction (``structure``: planned, and as they ran) and the last
    epoch's check."""
    structure = params.get("structure")
    if (structure is None or structure["ok"]) and params.get("rule") == "auto" and T is not None \
            and lam is not None:
        structure = _realized_structure(params, epochs, lam, T) or structure
    structure_ok = structure is None or structure["ok"] or (chk is not None and chk.get("solved", False))
    ok = structure_ok and (chk is None or chk["ok"])
    out = {"ok": bool(ok), "check": chk}
    if not structure_ok:
        out.update(cause=structure["cause"], remedy=structure["remedy"])
    elif chk is not None and chk.get("above_start"):
        out.update(cause=_chk.above_start_cause(chk), remedy=_chk.ABOVE_START_REMEDY)
    elif chk is not None and not chk["ok"]:
        R = chk["R"]
        R = f"{R:.3g}" if isinstance(R, float) else R
        out.update(
            cause=(f"at the end the gradient mapping is ||G|| = {chk['grad_map_norm']:.3g}, R = {R} times its "
                   f"noise level squared ({chk['noise_norm']:.3g}; at most {chk['R_max']:g} at convergence), "
                   f"measured on {chk['where']}: the run did not reach its noise floor"),
            remedy=("a larger T, or method='auto' / 'logt_acc' (accelerated stages contract the error with "
                    "fewer projections); check lam (a lam above the true strong convexity makes the epochs "
                    "too short)"))
    return out
