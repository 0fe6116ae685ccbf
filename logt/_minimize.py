"""``logt.minimize``: validation, parameter rules, dispatch to a method, the result."""
import math

import numpy as np

from logt import params as _params
from logt._result import MinimizeResult, Recorder
from logt._rng import check_rng
from logt._threads import single_threaded_blas
from logt.methods.epoch_gd import run_epoch_gd
from logt.methods.logt import run_logt
from logt.methods.sgd import run_sgd

METHODS = ("logt", "sgd", "epoch_gd")


def _resolve(name, given, oracle):
    return given if given is not None else getattr(oracle, name, None)


def _check_x0(x0, shape):
    if x0 is None:
        return np.zeros(shape)
    a = np.asarray(x0, dtype=np.float64)
    if a.shape != tuple(shape):
        raise ValueError(f"x0 must have shape {tuple(shape)}, got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError("x0 contains NaN or Inf")
    return np.array(a, order="C", copy=True)


def logt_params(L, lam, T, params="theorem1", eta=None, M=None, B1=None, delta=None):
    """The ``LogTParams`` that ``minimize(method="logt")`` would use (see ``logt.params``)."""
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


def minimize(oracle, domain, T, method="logt", *, L=None, lam=None, G=None,
             params="theorem1", eta=None, M=None, B1=None, delta=None, x0=None,
             rng=None, callback=None, average="last", T1=4, eta1=None):
    """Minimize ``F`` over ``domain`` with at most ``T`` stochastic gradients.

    Parameters
    ----------
    oracle : an oracle (see ``logt.oracles``): ``shape`` and ``mean_grad(w, B, rng, out)``.
    domain : a domain (see ``logt.domains``): ``shape`` and ``project(v, out)``.
    T : int, budget of oracle calls (stochastic gradients).
    method : "logt" (Algorithm 1), "sgd" (step ``1/(lam t)``) or "epoch_gd" (Hazan-Kale).
    L, lam : smoothness and strong convexity (default: ``oracle.L``, ``oracle.lam``);
        need ``0 < lam <= L``. G : gradient bound (default ``oracle.G``), reported only.
    params : "theorem1" (default), "theorem2" (needs ``delta``) or explicit
        ``eta``, ``M``, ``B1`` (logt only). Rounding: ``M`` and ``B1`` are rounded
        UP to whole numbers; counts use the rounded values (see ``logt.params``).
    x0 : start point, shape ``domain.shape`` (default zeros). It is projected onto
        the domain once before the run; that setup projection is not counted in
        ``n_projections``, which counts the method's own projections.
    rng : int seed, ``SeedSequence`` or ``Generator``; the same seed gives bit-identical results.
    callback : ``callback(state)`` after each epoch (logt, epoch_gd) or trace point
        (sgd), with ``state.x, .fun, .n_calls, .n_projections, .epoch``; return
        True to stop early (then ``success`` is False).
    average : sgd only: "last" (default, the last iterate) or "uniform" (mean of all iterates).
    T1, eta1 : epoch_gd only: first epoch length (default 4) and step (default ``1/lam``).

    Returns
    -------
    MinimizeResult with ``x, fun, n_calls, n_projections, n_epochs, params, trace``.

    Counting (logt): ``n_epochs`` is the largest ``k`` with ``2*M*B1*(2**k-1) <= T``;
    ``n_projections == 2*M*n_epochs`` and ``n_calls == 2*M*B1*(2**n_epochs - 1)``.
    sgd: ``n_calls == n_projections == T``. epoch_gd: ``T1*(2**K - 1)`` each.

    The sgd and epoch_gd step loops run compiled (no Python per step) when the
    oracle and the domain are built-in compiled ones; with a Python oracle or
    domain (``FunctionOracle``, ``CallableDomain``) they fall back to a Python
    loop. All BLAS/LAPACK work runs on one thread during the call (see README).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    T = _params.check_T(T)
    shape = tuple(getattr(domain, "shape", ()))
    if tuple(getattr(oracle, "shape", ())) != shape:
        raise ValueError(f"oracle.shape {getattr(oracle, 'shape', None)} does not match domain.shape {shape}")
    L, lam = _params.check_L_lam(_resolve("L", L, oracle), _resolve("lam", lam, oracle))
    G = _resolve("G", G, oracle)
    if average not in ("last", "uniform"):
        raise ValueError(f"average must be 'last' or 'uniform', got {average!r}")
    if method != "logt" and (eta is not None or M is not None or B1 is not None):
        raise ValueError("eta, M and B1 are parameters of method='logt' only")
    x0 = _check_x0(x0, shape)
    rng = check_rng(rng)
    rec = Recorder(oracle, callback)

    with single_threaded_blas():
        x0 = domain.project(x0, out=x0)
        if method == "logt":
            p = logt_params(L, lam, T, params, eta, M, B1, delta)
            k = _params.n_epochs(T, p.M, p.B1)
            if k == 0:
                raise ValueError(
                    f"T={T} is below one epoch of Algorithm 1: with M={p.M} and B1={p.B1} "
                    f"the minimum T is 2*M*B1 = {_params.min_T(p.M, p.B1)}")
            x, n_calls, n_proj, n_epochs = run_logt(oracle, domain, T, x0, rng, p, rec, k)
            used = p.as_dict()
        elif method == "sgd":
            x, n_calls, n_proj = run_sgd(oracle, domain, T, x0, rng, lam, rec, average)
            n_epochs = 0
            used = {"step": "1/(lam*t)", "average": average}
        else:
            x, n_calls, n_proj, n_epochs, used = run_epoch_gd(oracle, domain, T, x0, rng, lam, rec, T1, eta1)
        fun = rec.value(x)

    used.update({"L": L, "lam": lam, "G": G, "T": T})
    return MinimizeResult(
        x=x, fun=fun, n_calls=int(n_calls), n_projections=int(n_proj), n_epochs=int(n_epochs),
        method=method, params=used, trace=rec.trace(), success=not rec.stopped,
        message="stopped by callback" if rec.stopped else "budget used",
    )
