"""``logt.minimize``: validation, method lookup, the run context, checkpoints, the result."""
import hashlib
import math
import numbers
import os
import warnings

import numpy as np

from logt import params as _params
from logt._checkpoint import CheckpointError, Checkpointer, load as _load_checkpoint, to_json
from logt._result import ConvergenceWarning, MinimizeResult
from logt._rng import check_rng
from logt._run import Run
from logt._threads import single_threaded_blas
from logt.methods import REGISTRY, get_method
from logt.methods import convergence as _chk

# Keywords of the first release that now live in a method's options (accepted for one release).
_LEGACY_OPTIONS = ("params", "eta", "M", "B1", "delta", "average", "T1", "eta1")


def methods():
    """Names of the registered methods."""
    return tuple(REGISTRY)


METHODS = methods()


def _resolve(name, given, oracle):
    return given if given is not None else getattr(oracle, name, None)


def _check_x0(x0, shape):
    if x0 is None:
        return np.zeros(shape)
    if np.iscomplexobj(x0):
        raise TypeError("x0 must be real, got a complex array")
    try:
        a = np.asarray(x0, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"x0 must be a real array of shape {tuple(shape)}, got {type(x0).__name__}") from None
    if a.shape != tuple(shape):
        raise ValueError(f"x0 must have shape {tuple(shape)}, got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError("x0 contains NaN or Inf")
    return np.array(a, order="C", copy=True)


def _legacy_options(method, legacy):
    """Map the first release's keywords onto the method's options, with a DeprecationWarning."""
    if not legacy:
        return {}
    unknown = sorted(set(legacy) - set(_LEGACY_OPTIONS))
    if unknown:
        raise TypeError(f"minimize() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}")
    name = method if isinstance(method, str) else getattr(method, "name", None)
    cls = REGISTRY.get(name)
    if cls is None:
        raise TypeError(f"keywords {sorted(legacy)} need a method name; pass options to the method object")
    wrong = sorted(k for k in legacy if k not in cls.options)
    if wrong:
        owners = {k: [m for m, c in REGISTRY.items() if k in c.options] for k in wrong}
        hint = "; ".join(f"{k} belongs to {', '.join(map(repr, v))}" for k, v in owners.items())
        raise ValueError(f"{', '.join(wrong)} {'is not an option' if len(wrong) == 1 else 'are not options'} "
                         f"of method {name!r} ({hint})")
    warnings.warn(
        f"passing {', '.join(sorted(legacy))} to minimize() is deprecated and will be removed in the next "
        f"release; use options={{{', '.join(repr(k) + ': ...' for k in sorted(legacy))}}} or "
        f"logt.methods.{cls.__name__}(...)", DeprecationWarning, stacklevel=3)
    return dict(legacy)


def _rng_fingerprint(rng):
    return hashlib.sha256(to_json(rng.bit_generator.state).encode()).hexdigest()


def _fingerprint(meth, oracle, domain, T, L, lam, shape, x0, rng_fp, trace):
    return {
        "method": meth.name,
        "options": to_json(meth.values),
        "T": T, "L": L, "lam": lam, "shape": list(shape),
        "oracle": f"{type(oracle).__module__}.{type(oracle).__qualname__}",
        "domain": f"{type(domain).__module__}.{type(domain).__qualname__}",
        "x0_sha256": hashlib.sha256(np.ascontiguousarray(x0).tobytes()).hexdigest(),
        "rng_initial": rng_fp,
        "trace": trace,
    }


def _check_resume(path, header, fp, rng_given):
    saved = header.get("fingerprint", {})
    for key, now in fp.items():
        if key == "rng_initial" and not rng_given:
            continue                            # rng=None: the checkpoint's generator state is used as is
        if saved.get(key, "fun" if key == "trace" else None) != now:     # "trace": older files had "fun"
            what = "the rng (seed or generator state at the start)" if key == "rng_initial" else key
            raise CheckpointError(
                f"checkpoint {os.fspath(path)} was written by a different run: {what} differs "
                f"(checkpoint: {saved.get(key)!r}, now: {now!r}); resume with the same problem, method, "
                "options, T, x0 and rng")


def _check_every(v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)) or v < 0:
        raise ValueError(f"checkpoint_every must be a finite number of seconds >= 0, got {v!r}")
    return float(v)


def _default_method(method, options, legacy):
    """``method=None``: ``"auto"``, or ``"logt"`` (the earlier default) when logT's options are given."""
    if method is not None:
        return method
    return "logt" if options or legacy else "auto"


def minimize(oracle, domain, T, method=None, *, options=None, L=None, lam=None, G=None, x0=None,
             rng=None, callback=None, checkpoint=None, checkpoint_every=60.0, resume=None, trace="fun",
             **legacy):
    """Minimize ``F`` over ``domain`` with at most ``T`` stochastic gradients.

    Parameters
    ----------
    oracle : an oracle (see ``logt.oracles``): ``shape`` and ``mean_grad(w, B, rng, out)``.
    domain : a domain (see ``logt.domains``): ``shape`` and ``project(v, out)``.
    T : int (or an integral float such as ``1e6``), budget of oracle calls (stochastic gradients).
    method : None (default), a method name (table below) or a method object such as
        ``logt.methods.LogT(eta=0.1, M=4, B1=2)``. None means ``"auto"`` (see "The
        default call" below), or ``"logt"`` when ``options`` (or the first release's
        keywords) are given without a method: they are logT's, the default of
        earlier releases.
    options : dict of the named method's options (SciPy's convention), e.g.
        ``minimize(..., method="epoch_gd", options={"T1": 8})``. Unknown options are
        an error naming the method.
    L, lam : smoothness and strong convexity (default: ``oracle.L``, ``oracle.lam``);
        ``lam > 0`` is required, ``L`` (``>= lam``) only by rules that use it.
        G : gradient bound (default ``oracle.G``), reported only.
    x0 : start point, shape ``domain.shape`` (default zeros). It is projected onto
        the domain once before the run; that setup projection is not counted in
        ``n_projections``, which counts the method's own projections.
    rng : int seed, ``SeedSequence`` or ``Generator``; the same seed gives bit-identical results.
    callback : ``callback(state)`` after each epoch / stage (auto, logt, epoch_gd, logt_acc) or
        trace point (the SGD-type methods, frank_wolfe), with ``state.x, .fun, .n_calls, .n_projections, .epoch``; return
        True to stop early (then ``success`` is False).
    checkpoint : path; the run's state is saved there atomically (temporary file +
        rename) at a segment boundary whenever ``checkpoint_every`` seconds (default
        60; 0 = every boundary) have passed, and at the end.
    resume : path of a checkpoint written by the same call (same problem, method,
        options, T, x0, rng and trace): the run continues from it and finishes bit-identical
        to an uninterrupted run. A corrupt or mismatched checkpoint is a ``CheckpointError``.
    trace : "fun" (default) or "counts". ``result.trace`` has a row per epoch / stage / trace
        point with ``n_calls`` and ``n_projections``, and with "fun" also ``F`` there
        (``oracle.value``; the point ``x`` when the oracle has no ``value``). "counts" skips
        those evaluations (``F`` only once, for ``result.fun``): the choice when evaluating
        ``F`` costs a noticeable share of the run, as in the metric learners. The iterates
        are the same either way.

    Returns
    -------
    MinimizeResult
        With ``x, fun, n_calls, n_projections, n_epochs, method, params, trace,
        success, message`` (``method``: the method that ran; ``message`` says how
        much of ``T`` was used and, for a run that did not converge, why and what
        to do). ``params["rescue"]``: None, or what a safeguard's own larger draw found
        when it kept a run going that it would otherwise have stopped (the run's own
        measurements had missed the gradient; ``success`` is then False).

    Raises
    ------
    FloatingPointError
        A non-finite gradient, a non-finite iterate or a diverged iterate (far beyond
        the distance a ``lam``-strongly convex problem allows, see ``logt._run``) is a
        ``FloatingPointError`` naming the method, epoch, step and step size; a run is
        never returned as a success with such a point.

    Warns
    -----
    logt.ConvergenceWarning
        When the auto rules' diagnostics say the run did not converge (then
        ``success`` is False): epochs that cannot contract under the projection cap
        (``method="logt"`` only; the default switches to stages there), a ``T``
        below one contracting stage, or a gradient mapping at the end far above its
        noise level. The result is returned all the same.

    Notes
    -----
    **The default call.**
    ``minimize(oracle, domain, T, lam=lam)`` needs only ``lam`` (a given or the
    oracle's ``L`` caps the curvature estimate). It measures at ``x0`` the
    curvature ``L_est`` (at most 2% of ``T``) and the gradient noise (at most 1%),
    then runs (:mod:`logt.methods.auto`):

    * **logT's epochs** (``result.method == "logt"``, its auto rule) when they
      contract within their projection cap (0.75% of ``T``): ``M eta lam >= 0.738``,
      i.e. about ``M >= L_est/lam`` updates per epoch fit, and the epochs that fit
      can remove the start's error at the measured noise. Then the run is exactly
      ``method="logt"``'s (same random stream, same result).
    * **the accelerated stages** (``result.method == "logt_acc"``, its auto rule)
      otherwise: ``~5.7 sqrt(L_est/lam)`` projections per contracting stage instead
      of ``~2 L_est/lam`` per epoch, at most 2% of ``T`` in all, the last segment
      averaged mini-batch SGD (``result.params["tail"]``; its burn-in takes momentum steps, kept by a paired
      test of the objective, when it is shorter than ``L_est/lam`` steps; see ``logt.methods.LogTAcc``).
      When not even one contracting stage fits (``T`` too small for ``L/lam``) it runs
      shorter stages and reports ``success=False`` with a ``T`` that would suffice.

    ``result.params["chosen_by"]`` states the numbers behind the choice. Both end
    with a check of the run's own evidence (the gradient mapping at the end against
    its noise level, ``result.params["convergence"]``): a run whose evidence says it
    did not converge returns ``success=False``, the cause and the remedy in
    ``message``, and issues a ``logt.ConvergenceWarning``. Where the noise near the end
    grew more than 4x over the start's (noise that grows with the error: a sum of
    per-sample losses driven off), the end point must also be shown better than the
    start (the oracle's ``value``, else about ``0.02 T`` gradient samples beyond ``T``,
    counted in ``n_calls``; ``result.params["convergence"]["progress"]``). Override the default to
    reproduce the paper (``method="logt", options={"params": "theorem1"}``), to fix
    the method (``"logt"``, ``"logt_acc"``), or when projections are cheap
    (``"sgd"`` with ``average="suffix"``: the most accurate per oracle call).

    **Methods.**

    ==================== ================================================ ============= ==============================================
    method               what runs (options)                              rate          projections
    ==================== ================================================ ============= ==============================================
    "auto" (default)     "logt" or "logt_acc" with their auto rules,      O(1/T)        logt: <= 0.75% of T; logt_acc: <= 2% of T
                         chosen after the estimate at x0 (proj_frac)
    "logt"               Algorithm 1: extra-gradient epochs, doubling     O(1/T)        2*M*n_epochs = O((L/lam) log T)
                         batches (params, eta, M, B1, delta, proj_frac)
    "logt_acc"           multi-stage AC-SA (Ghadimi-Lan), batches growing O(1/T)        N*(K-1) + N_last, N ~ sqrt(32 L/lam),
                         4x per stage (params: auto (default) or theory,                N_last ~ sqrt(2 L/lam), K ~ log4(3T/N):
                         L, N, N_last, B1, growth, average, proj_frac)                  O(sqrt(L/lam) log T)
    "sgd"                projected SGD, step 1/(lam t) (average: last,    O(log T/T);   T
                         uniform, suffix)                                 suffix O(1/T)
    "epoch_gd"           Hazan-Kale Epoch-GD (T1, eta1)                   O(1/T)        T1*(2**K - 1) <= T
    "minibatch_sgd"      projected SGD on batches of B = ceil(sqrt T),    O(1/T)        T//B ~ sqrt(T)
                         step min(1/L, 1/(lam t)) (B, step_cap, average)
    "one_projection_sgd" SGD on F + penalty*max(c, 0) without projections O(log T/T)    1 (the average, at the end)
                         (Mahdavi et al. 2012) (penalty, radius,
                         step_cap, average)
    "frank_wolfe"        stochastic Frank-Wolfe, batches ceil(c (k+1)^2), O(T^(-1/3))   0; one LMO per iteration, ~(3T/c)^(1/3)
                         compact domains with an LMO (batch_scale)
    ==================== ================================================ ============= ==============================================

    When to use which: the default for a problem whose ``L/lam`` you do not know;
    ``logt_acc`` when projections are expensive and ``L/lam`` is large; ``logt`` for
    the paper's algorithm; ``sgd`` (``average="suffix"``) or ``minibatch_sgd``
    when projections are cheap (they are the most accurate per oracle call);
    ``frank_wolfe`` when the domain has a cheap LMO but an expensive projection
    (e.g. ``TraceBoundedPSD`` for large d) and a low accuracy suffices;
    ``one_projection_sgd`` when the domain is given by a constraint function
    whose value and subgradient are cheaper than a projection.

    Each method's class in ``logt.methods`` documents its options and counts.
    The keywords ``params, eta, M, B1, delta, average, T1, eta1`` of the first
    release are still accepted for one release, with a ``DeprecationWarning``.

    The step loops of the SGD-type methods and Frank-Wolfe run compiled (no Python
    per step) when the oracle and the domain (its projection, LMO or constraint
    function) are built-in compiled ones; with a Python oracle or domain
    (``FunctionOracle``, ``CallableDomain``) they fall back to a Python loop. All
    BLAS/LAPACK work runs on one thread during the call (see the reliability guide, docs/guide/reliability.md).
    """
    method = _default_method(method, options, legacy)
    legacy_opts = _legacy_options(method, legacy)
    if legacy_opts:
        if options:
            raise TypeError("pass method options either in options= or as (deprecated) keywords, not both")
        options = legacy_opts
    res, warning = solve(oracle, domain, T, method, options=options, L=L, lam=lam, G=G, x0=x0, rng=rng,
                         callback=callback, checkpoint=checkpoint, checkpoint_every=checkpoint_every,
                         resume=resume, trace=trace)
    if warning is not None:
        warnings.warn(warning, ConvergenceWarning, stacklevel=2)
    return res


def solve(oracle, domain, T, method="auto", *, options=None, L=None, lam=None, G=None, x0=None, rng=None,
          callback=None, checkpoint=None, checkpoint_every=60.0, resume=None, trace="fun"):
    """:func:`minimize` without its ``ConvergenceWarning`` (and without the first release's keywords):
    ``(result, warning)``, ``warning`` the message :func:`minimize` would warn with (None: nothing to say).
    For callers that warn in their own words, at their own caller (the metric learners' ``fit``)."""
    meth = get_method(method, options)
    T = _params.check_T(T)
    shape = tuple(getattr(domain, "shape", ()))
    if not hasattr(domain, "project"):
        raise TypeError(f"domain must have shape and project(v, out=None), got {type(domain).__name__}")
    if not hasattr(oracle, "mean_grad"):
        raise TypeError(f"oracle must have shape and mean_grad(w, B, rng, out=None), got {type(oracle).__name__}")
    if tuple(getattr(oracle, "shape", ())) != shape:
        raise ValueError(f"oracle.shape {getattr(oracle, 'shape', None)} does not match domain.shape {shape}")
    lam = _params.check_lam(_resolve("lam", lam, oracle))
    L = _params.check_L(_resolve("L", L, oracle), lam)
    G = _resolve("G", G, oracle)
    if trace not in ("fun", "counts"):
        raise ValueError(f"trace must be 'fun' or 'counts', got {trace!r}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    checkpoint_every = _check_every(checkpoint_every)
    x0 = _check_x0(x0, shape)
    rng_given = rng is not None
    rng = check_rng(rng)
    rng_fp = _rng_fingerprint(rng)

    with single_threaded_blas():
        run = Run(meth, oracle, domain, T, L=L, lam=lam, G=G, rng=rng, x0=None, callback=callback,
                  trace=trace)
        x0 = run.setup(x0)
        fp = _fingerprint(meth, oracle, domain, T, L, lam, shape, x0, rng_fp, trace)
        ckpt = Checkpointer(checkpoint, checkpoint_every, fp) if checkpoint is not None else None
        run.checkpointer = ckpt
        if resume is not None:
            header, arrays = _load_checkpoint(resume)
            _check_resume(resume, header, fp, rng_given)
            params = header["params"]
            state = dict(header["state_scalars"])
            state.update({k[len("state/"):]: np.array(v) for k, v in arrays.items() if k.startswith("state/")})
            snap = dict(header["counters"])
            snap["trace"] = {k[len("trace/"):]: v for k, v in arrays.items() if k.startswith("trace/")}
            run.restore(snap)
            rng.bit_generator.state = header["rng_state"]
        else:
            params = meth.prepare(run)
            state = meth.init_state(run, params, x0)
        run.params = params
        x, n_epochs = meth.drive(run, params, state)
        run.check_iterate(x)
        fun = run.value(x)
        if fun is not None and not math.isfinite(fun):
            raise FloatingPointError(f"F(x) = {fun} at the end of method {meth.name!r}: the run diverged")
        _progress_verdict(run, params, x, fun)
        if ckpt is not None:
            ckpt.save(run, state)

    used = dict(params)
    used.update({"L": L, "lam": lam, "G": G, "T": T})
    n_calls = run.n_calls + run.extra_calls           # the divergence guard's own draw, when it made one
    pct = 100.0 * n_calls / T
    message = f"used {n_calls:,} of T = {T:,} oracle calls ({pct:.1f}%)"
    name = params.get("chosen", meth.name)
    success = not run.stopped
    verdict = params.get("convergence")
    warning = None
    if run.stopped:
        message = "stopped by callback; " + message
    elif verdict is not None and not verdict["ok"]:
        success = False
        message = (f"did not converge: {verdict['cause']}. Remedy: {verdict['remedy']}. ({message})")
        warning = f"logt.minimize (method {name!r}): {message}"
    elif run.rescue is not None:
        # a safeguard found the gradient scale of the run's own measurements too small (rare samples carry the
        # gradient): its step, noise and verdict rest on those measurements, so it cannot vouch for the result
        success = False
        message = (f"did not converge (unverified): {run.rescue}; the run's step size, noise and convergence "
                   "estimates rest on means of fewer samples, which missed what carries the gradient (heavy-tailed "
                   "gradient noise). Remedy: a larger T, larger batches (options B1), or explicit parameters "
                   f"(L, or eta, M, B1). ({message})")
        warning = f"logt.minimize (method {name!r}): {message}"
    used["rescue"] = run.rescue
    res = MinimizeResult(
        x=x, fun=fun, n_calls=int(n_calls), n_projections=int(run.n_projections),
        n_epochs=int(n_epochs), method=name, params=used, trace=run.trace(),
        success=success, message=message,
    )
    return res, warning


def _progress_verdict(run, params, x, fun):
    """Where the auto rules' check passed but cannot vouch for the point, compare it with the start
    (``params["convergence"]["progress"]``): when the check's noise grew far above the start's, the end point must
    be shown better than the start (:func:`logt.methods.convergence.progress_test`); with the oracle's ``value``,
    an end point above the start's value fails when the start's mean gradient stood out of its noise
    (:func:`logt.methods.convergence.start_resolved`: ``x0`` is not stationary)."""
    verdict = params.get("convergence")
    if run.stopped or verdict is None or not verdict["ok"]:
        return
    if _chk.needs_progress_test(params):
        test = _chk.progress_test(run, x, fun)
        verdict = dict(verdict, progress=test)
        if not test["better"]:
            verdict.update(ok=False, cause=_chk.progress_cause(verdict["check"], test),
                           remedy=_chk.ABOVE_START_REMEDY)
        params["convergence"] = verdict
    elif _chk.start_resolved(params):
        test = _chk.value_difference(run, fun)
        if test is not None and test["worse"]:
            params["convergence"] = dict(verdict, progress=test, ok=False, cause=_chk.worse_cause(test, params),
                                         remedy=_chk.ABOVE_START_REMEDY)


def logt_params(L, lam, T, params="theorem1", eta=None, M=None, B1=None, delta=None):
    """The ``LogTParams`` that ``minimize(method="logt")`` would use for an explicit or theorem rule."""
    if eta is not None or M is not None or B1 is not None:
        if params not in ("theorem1", "explicit"):
            raise ValueError("pass either params='theorem1'/'theorem2' or explicit eta, M, B1, not both")
        return _params.explicit(eta, M, B1)
    if params == "theorem1":
        return _params.theorem1(L, lam)
    if params == "theorem2":
        return _params.theorem2(L, lam, T, delta)
    if params == "explicit":
        return _params.explicit(eta, M, B1)
    raise ValueError(f"params must be 'theorem1', 'theorem2' or 'explicit', got {params!r}")
