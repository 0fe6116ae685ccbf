"""How the metric learners call :func:`logt.minimize`: a thin pass-through.

The estimators take ``method`` (``"logt"``, ``"sgd"``, ``"epoch_gd"``),
``params`` (logT's parameter rule) and ``options`` (any other keyword of the
method, e.g. ``{"delta": 0.05}`` for Theorem 2, ``{"average": "uniform"}`` for
SGD) and hand them to :func:`logt.minimize` unchanged, so a new rule (such as a
curvature-estimating ``params="auto"``) becomes available to the estimators as
soon as ``minimize`` accepts it. Method options go to ``minimize(..., options=...)``.

``params="practical"`` (the former default; the default is now ``"auto"``, passed
to ``minimize`` unchanged) is resolved here into explicit ``eta, M, B1`` by
:func:`practical_metric_params`.
"""
import warnings

from logt import params as _params
from logt._minimize import METHODS, solve
from logt._result import ConvergenceWarning

__all__ = ["practical_metric_params", "check_optimizer", "run_minimize", "PRACTICAL_ETA_TIMES_L",
           "PRACTICAL_M", "PRACTICAL_B1"]

# --- the "practical" parameter rule (measured on mushrooms and a9a; see the docstring) ---
PRACTICAL_ETA_TIMES_L = 4.0
PRACTICAL_M = 8
PRACTICAL_B1 = 4


def practical_metric_params(L, lam, T):
    """Practical parameters of Algorithm 1 for metric learning: ``eta = 4/L``, ``M = 8``, ``B1 = 4``.

    Theorem 1 (``eta = 1/(sqrt(6) L)``, ``M = 4/(eta lam)``, ``B1 = 12 eta lam``)
    with the worst-case ``L = lam + 4 = 4.1`` and ``lam = 0.1`` gives
    ``eta = 0.0996``, ``M = 402``, ``B1 = 1``: 804 projections per epoch, i.e.
    8040 projections for ``T = 10^6``. The bound ``L = lam + 4`` assumes the
    worst case ``||x_i - x_j||^2 = 4`` at the logit loss's largest curvature;
    on real data the curvature along the path is far smaller, so a larger step
    is stable and a few updates per epoch suffice. The rule:

    * ``eta = 4 / L`` (``~0.98`` for ``L = 4.1``; ``1/(lam + 1)`` would be the
      bound for non-negative unit-norm instances, where ``||x_i - x_j||^2 <= 2``);
    * ``M = 8`` extra-gradient updates per epoch (16 projections per epoch);
    * ``B1 = 4``, reduced when needed so that at least one epoch fits in ``T``
      (``2*M*B1 <= T``); the batch then doubles every epoch as in Algorithm 1, so
      ``T`` calls take ``floor(log2(T/64 + 1))`` epochs: 16 projections per
      epoch, 208 for ``T = 10^6`` (Theorem 1: 8040).

    Evidence (``lam = 0.1``, the paper's objective, ``F`` on 10^4 test pairs, 2
    seeds each; sweeps of ``eta L`` x ``M`` x ``B1`` with ``logt.minimize``):

    * mushrooms (seeded 2/3 train split; ``F_* ~ 0.7608`` on those pairs,
      ``F(0) = 0.8105``), ``T = 10^6``, ``eta L in {0.41 (Theorem 1's), 1, 2, 4}``
      x ``M in {4, 8, 16, 32, 64}`` x ``B1 in {1, 8, 64}``: with ``eta L = 4``
      every ``M >= 4`` reached ``F = 0.7608-0.7609`` with 80-1536 projections; with
      Theorem 1's step, ``M <= 16`` ends at 0.764-0.788 and only ``M = 64``
      gets there (768-1536 projections). ``eta L = 4, M = 8, B1 = 4``: 0.76076
      after 208 projections (``T = 10^6``), 0.7608 after 160 (``T = 10^5``).
    * a9a (Adult; ``F`` on a9a.t pairs), ``eta L in {2, 4, 8}`` x ``M in {4, 8, 16}``,
      ``B1 = 4``: ``eta L = 4, M = 8`` gives 0.66553 after 208 projections
      (``T = 10^6``; best of the grid 0.66552), 0.66557 after 160 (``T = 10^5``).
    * ``eta L = 8`` is still stable on both (no better), so ``eta L = 4`` keeps a
      factor-2 margin; ``eta L = 2`` needs about one more epoch for the same ``F``.
      :mod:`logt.experiments.metric` compares the rule with Theorem 1 and the
      baselines (``python -m logt metric``).

    Returns a :class:`logt.params.LogTParams` (``rule="explicit"``).
    """
    L, lam = _params.check_L_lam(L, lam)
    T = _params.check_T(T)
    M = PRACTICAL_M
    if T < 2 * M:
        raise ValueError(f"T={T} is below one epoch of the practical rule (2*M = {2 * M} oracle calls)")
    B1 = max(1, min(PRACTICAL_B1, T // (2 * M)))
    return _params.explicit(PRACTICAL_ETA_TIMES_L / L, M, B1)


def check_optimizer(method, params, options):
    """Validate the estimators' optimizer parameters (names them in the errors)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(params, dict):
        extra = set(params) - {"eta", "M", "B1"}
        if extra or len(params) != 3:
            raise ValueError(f"params as a dict needs exactly the keys eta, M, B1, got {sorted(params)}")
    elif not isinstance(params, str):
        raise ValueError(f"params must be a rule name (e.g. 'practical', 'theorem1', 'theorem2') or a dict "
                         f"{{eta, M, B1}}, got {params!r}")
    if options is not None:
        if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
            raise TypeError(f"options must be a dict of keyword arguments for logt.minimize or None, "
                            f"got {options!r}")
        clash = {"eta", "M", "B1", "params", "rng", "T", "method", "x0"} & set(options)
        if clash:
            raise ValueError(f"options may not set {sorted(clash)}: use the estimator's own parameters "
                             "(params=, T=, method=, rng=)")


def run_minimize(oracle, domain, T, method, params, options, rng, warn=True):
    """``logt.minimize(oracle, domain, T, method, ...)`` with the estimator's optimizer parameters.

    With ``trace="counts"``: ``F`` on the evaluation pairs only at the end (``result_.fun``),
    not at every epoch, where it cost ~8% of a digits fit. ``warn=False``: no ``ConvergenceWarning``
    (the estimators issue their own at the end of ``fit``, saying what the check kept)."""
    opts = dict(options or {})
    if method == "auto" and not (isinstance(params, str) and params == "auto"):
        method = "logt"              # a logT parameter rule other than "auto" asks for logT's epochs
    if method == "logt":
        if isinstance(params, dict):
            opts.update(eta=params["eta"], M=params["M"], B1=params["B1"])
        elif params == "practical":
            p = practical_metric_params(oracle.L, oracle.lam, T)
            opts.update(eta=p.eta, M=p.M, B1=p.B1)
        else:
            opts["params"] = params
    res, warning = solve(oracle, domain, T, method=method, rng=rng, options=opts, trace="counts")
    if warn and warning is not None:
        warnings.warn(warning, ConvergenceWarning, stacklevel=2)
    return res
