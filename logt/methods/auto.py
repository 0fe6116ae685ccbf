"""``method="auto"`` (the default of ``logt.minimize``): logT's epochs or the accelerated stages, chosen
from what the run measures at ``x0``.

The choice rule (:func:`choose`)
--------------------------------
Both candidates shrink the excess along the weakest direction (curvature
``lam``, where the start can be furthest off) by a constant factor per segment
while their mini-batches grow geometrically, which is what gives ``O(1/T)``:

* **logT's epochs** (``method="logt"``, auto rule): an epoch of ``M`` updates
  of step ``eta`` contracts the weakest direction's distance by
  ``(1 - e^-c) / c`` with ``c = M eta lam``, and the batch doubles between
  epochs, halving the variance. The epochs keep up with the batch when the
  excess shrinks at least as fast, ``((1 - e^-c) / c)^2 <= 1/2``, i.e.
  ``c >= EPOCH_C_MIN = 0.738`` (:data:`logt.params.EPOCH_C_MIN`). That needs
  ``M >= 2 c L_est/lam`` updates, ``2 M + 1`` projections per epoch: linear
  in ``L/lam``. Under the projection cap (``0.75%`` of ``T``) the auto rule
  caps ``M`` and raises the step to at most ``0.75/L_est``, so
  ``c = min(1, 0.75 M_cap lam / L_est)``: the epochs contract while
  ``M_cap >= 0.98 L_est/lam``.
* **The accelerated stages** (``method="logt_acc"``, auto rule): a stage of
  ``N(N+1) >= 32 L/lam`` AC-SA iterations contracts the excess by ``1/8``
  whatever ``L/lam`` is, with ``N ~ 5.7 sqrt(L/lam)`` projections, while the
  batch grows 4x (:mod:`logt.methods.logt_acc`); their last segment is averaged
  mini-batch SGD, which averages the noise along every direction it mixes.

So: the epochs when they contract (``c >= EPOCH_C_MIN``), the stages
otherwise. Where the epochs contract, the run is exactly ``method="logt"``'s
(the same measurements, the same random stream, the same result; that is
the paper's toy, the metric learners' defaults and most problems with
``L/lam`` up to ``~0.01 T / log T``). Where they cannot, the stages need
``~sqrt(L/lam)`` projections per contraction instead of ``~L/lam``; they run
under a projection budget of ``2%`` of ``T``; when not even one contracting
stage fits there, ``T`` is too small for ``L/lam`` and the run says so
(``success=False``, the ``T`` that would suffice).

Measurements (at ``x0``, before the choice, counted and charged to ``T``):
the curvature estimate ``L_est`` (at most 2% of ``T``) and the gradient noise
(at most 1%), exactly as ``method="logt"`` makes them
(:func:`logt.methods.logt.auto_estimates`). ``result.method`` names the method
that ran; ``result.params["chosen_by"]`` says why.
"""

from logt import params as _params
from logt.methods._base import Method, Option, probability, register
from logt.methods.logt import LogT, auto_estimates, auto_params
from logt.methods.logt_acc import PROJ_FRAC, LogTAcc, refine_L

__all__ = ["Auto", "choose"]


BIAS_RATIO_MAX = 30.0    # the epochs' worst-case leftover bias may be at most this many times their noise


def epochs_bias_ratio(c, n_epochs, sigma2, mean_sq, T):
    """Worst-case excess left by logT's epochs over the noise they end at (see :func:`choose`).

    ``K = n_epochs`` epochs with ``c = M eta lam`` leave ``rho^K`` of the start's excess along
    the weakest direction, ``rho = ((1 - e^-c) / c)^2``; that excess is at most
    ``D0 = ||grad F(x0)||^2 / (2 lam)`` (``mean_sq`` estimates the squared norm at ``x0``);
    the doubling batches end at a noise excess of about ``(4/3) sigma2 / (lam T)``
    (``c^2 sigma2 / (6 lam M B_K)`` of the last epoch, ``B_K ~ T / (4 M)``, doubled for the
    earlier epochs' share). Returns ``rho^K D0 / that = rho^K mean_sq T / (8/3 sigma2)``
    (infinite without noise, 0 when no noise was measured).
    """
    if not mean_sq > 0.0:
        return 0.0
    if not sigma2 > 0.0:
        return float("inf")
    rho = _params.epoch_rho(c)
    return rho ** n_epochs * mean_sq * T / (8.0 / 3.0 * sigma2)


def choose(c, L_est, lam, bias_ratio=0.0):
    """``(method, reason)``: ``"logt"`` when the epochs contract (``c = M eta lam >= EPOCH_C_MIN``) and
    are not bias-limited (``bias_ratio <= BIAS_RATIO_MAX``, :func:`epochs_bias_ratio`), else
    ``"logt_acc"``; ``reason`` states the numbers."""
    at = f"L_est/lam = {L_est / lam:.3g}"
    if c < _params.EPOCH_C_MIN:
        return "logt_acc", (f"auto: logT's epochs cannot contract within the projection cap (M eta lam = "
                            f"{c:.3g} < {_params.EPOCH_C_MIN:.3g} at {at}); accelerated stages need "
                            "~sqrt(L/lam) projections per contraction")
    if bias_ratio > BIAS_RATIO_MAX:
        return "logt_acc", (f"auto: logT's epochs contract (M eta lam = {c:.3g} at {at}) but too few of them "
                            f"fit to remove the start's error at this gradient noise (worst-case bias "
                            f"{bias_ratio:.3g} > {BIAS_RATIO_MAX:g} times the noise level): accelerated "
                            "stages contract faster per projection")
    return "logt", (f"auto: logT's epochs contract within the projection cap (M eta lam = {c:.3g} >= "
                    f"{_params.EPOCH_C_MIN:.3g} at {at}; worst-case bias {bias_ratio:.3g} <= "
                    f"{BIAS_RATIO_MAX:g} times the noise level)")


@register
class Auto(Method):
    """The default method: logT's epochs or the accelerated stages, chosen after the estimate at ``x0``.

    See :mod:`logt.methods.auto` for the rule. Needs only ``lam``; a given ``L``
    caps the curvature estimate.

    Options
    -------
    proj_frac : float in (0, 1) or None. None (default): logT's epochs keep
        their cap (``logt.params.AUTO_PROJ_FRAC = 0.75%`` of ``T``) and the
        stages get ``logt_acc.PROJ_FRAC = 2%``; a number sets both.

    ``result.method`` is ``"logt"`` or ``"logt_acc"``; ``result.params`` holds
    that method's auto parameters plus ``chosen_by`` (the reason) and
    ``contraction`` (``M eta lam`` of logT's first epoch). Counts: those of the
    method that ran (the measurements at ``x0`` are counted in both).
    """

    name = "auto"
    label = "auto"
    summary = "logT's epochs when they contract within the projection cap, else accelerated stages"
    rate = "O(1/T)"
    projections = "logt: <= 0.75% of T; logt_acc: <= 2% of T"
    uses_minibatches = True
    options = {"proj_frac": Option(None, probability, "projection budget as a fraction of T (default: "
                                                      "0.75% for the epochs, 2% for the stages)")}

    def prepare(self, run):
        frac = self.values["proj_frac"]
        est = auto_estimates(run, frac)
        noise = est["noise"]
        epochs = _params.auto_schedule(run.T - run.n_calls, est["M"], est["B1"])[0]
        ratio = epochs_bias_ratio(est["c"], len(epochs), noise["sigma2"], noise["mean_sq"], run.T)
        method, reason = choose(est["c"], est["L"], run.lam, ratio)
        if method == "logt":
            p = auto_params(run, est)
        else:
            L, det = refine_L(run, est["L"], est["det"])
            extra = {"L_est_raw": est["L_raw"], "estimate_calls": det["calls"], "L_estimate_x0": est["L"],
                     "estimate_B": det["B"], "refined_B": det["refined_B"], "noise_sigma2": noise["sigma2"],
                     "noise_mean_sq": noise["mean_sq"], "noise_calls": noise["n_samples"],
                     "contraction": est["c"]}
            p = LogTAcc(proj_frac=frac if frac is not None else PROJ_FRAC).auto_params(run, L, extra)
        p.update(chosen=method, chosen_by=reason, epochs_bias_ratio=ratio)
        return p

    @staticmethod
    def _impl(params):
        return LogT() if params["chosen"] == "logt" else LogTAcc()

    def init_state(self, run, params, x0):
        return self._impl(params).init_state(run, params, x0)

    def drive(self, run, params, state):
        return self._impl(params).drive(run, params, state)
