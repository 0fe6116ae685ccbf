"""Algorithm 1 of the paper: epochs of extra-gradient steps with doubling mini-batches.

Thin Python: epoch ``k`` makes ``M`` extra-gradient updates with mini-batches
of ``B = B1 * 2**(k-1)``; each update is two oracle calls (``oracle.mean_grad``,
compiled for built-in oracles) and two projections. The interpreter runs only
``2*M*k`` times in total, so it never dominates.
"""
import numpy as np

from logt import params as _params
from logt.methods._base import Method, Option, one_of, positive_float, positive_int, probability, register

PARAM_RULES = ("theorem1", "theorem2", "explicit")


@register
class LogT(Method):
    """Algorithm 1 (Zhang, Yang, Jin, He, ICML 2013): ``O(1/T)`` excess risk with ``O(log T)`` projections.

    Epoch ``k`` makes ``M`` extra-gradient updates with step ``eta`` and
    mini-batches of ``B^k = B1 * 2**(k-1)`` oracle samples
    (``z = Pi_D(w - eta g(w))``, ``w = Pi_D(w - eta g(z))``), then restarts
    from the mean of its ``M`` points ``z``. Only complete epochs run: the
    largest ``k`` with ``2*M*B1*(2**k - 1) <= T``.

    Options
    -------
    params : "theorem1" (default), "theorem2" (needs ``delta``) or "explicit"
        (given ``eta``, ``M``, ``B1``); passing ``eta``, ``M`` and ``B1`` alone
        means "explicit". Theorem rules need ``L``; ``M`` and ``B1`` are rounded
        UP (see :mod:`logt.params`).
    eta : float > 0; M : int >= 1; B1 : int >= 1 -- explicit parameters.
    delta : failure probability in (0, 1) of Theorem 2.

    Counts: ``n_projections = 2*M*n_epochs``, ``n_calls = 2*M*B1*(2**n_epochs - 1) <= T``.
    """

    name = "logt"
    label = "logT"
    summary = "Algorithm 1: extra-gradient epochs, doubling mini-batches"
    rate = "O(1/T)"
    projections = "2*M*floor(log2(T/(2*M*B1) + 1)) = O((L/lam) log T)"
    uses_minibatches = True
    options = {
        "params": Option("theorem1", one_of(*PARAM_RULES), "parameter rule"),
        "eta": Option(None, positive_float, "step size (explicit)"),
        "M": Option(None, positive_int, "extra-gradient updates per epoch (explicit)"),
        "B1": Option(None, positive_int, "first mini-batch size (explicit)"),
        "delta": Option(None, probability, "failure probability (theorem2)"),
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
        if v["params"] == "theorem2" and v["delta"] is None:
            raise ValueError("method 'logt' with params='theorem2' needs delta (0 < delta < 1)")

    def rule_params(self, run):
        """The ``LogTParams`` of the chosen rule (no oracle calls)."""
        v = self.values
        if v["params"] == "explicit":
            return _params.explicit(v["eta"], v["M"], v["B1"])
        if run.L is None:
            raise ValueError(f"method 'logt' with params={v['params']!r} needs L (the smoothness "
                             "constant): pass L=, use an oracle that defines it, or give eta, M, B1")
        if v["params"] == "theorem1":
            return _params.theorem1(run.L, run.lam)
        return _params.theorem2(run.L, run.lam, run.T, v["delta"])

    def prepare(self, run):
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
        return {"w": np.array(x0, dtype=np.float64, order="C", copy=True),
                "zsum": np.zeros(run.shape), "k": 1, "t": 0, "B": int(params["B1"])}

    def drive(self, run, params, st):
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
