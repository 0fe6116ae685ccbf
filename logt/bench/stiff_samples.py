"""Sums of per-sample losses whose single samples are far stiffer than ``F``: the default call against averaged
SGD and against the previous release's rule (``python -m logt.bench.stiff_samples --random N [--seed S]``).

:func:`stiff_problem` draws one problem with random parameters, ``logt.oracles.LinearModel`` over a domain, of
five kinds: least squares on Gaussian rows (``"gauss"``, 20-1,000 features: a row's curvature ``||a_i||^2 ~ d``
against ``F``'s ``~1``), the same with half the columns duplicated (``"dup"``), rows of 0/1 features at 2-20%
density on 2-40 columns (``"sparse01"``: many rows all 0), columns scaled 1e-2..1e2 (``"scaled"``), and logistic
regression on Gaussian or 0/1 rows (``"logistic"``); ``n`` 500-20,000 rows, ``lam`` log-uniform in ``[1e-4, 1e-1]``
times ``F``'s smoothness, ``T`` log-uniform in ``[3e3, 1e5]``, a ball or a box, inactive at the optimum or not.
The reference ``F*`` is the bank's FISTA on the exact objective (:func:`logt.bench.bank.fista`).

:func:`stiff_sweep` runs, per problem: the default call ``logt.minimize(oracle, domain, T, lam=lam)`` (``"now"``);
the same under :func:`previous_rule` (``"before"``: the curvature estimate always capped at the oracle's ``L``,
no comparison with the start, no progress test, the epochs' structural verdict as planned, a blind estimate used
as it is); and ``method="sgd"`` with suffix averaging and ``L`` the largest single-sample curvature (the
baseline, whose steps are stable for single samples). Reported per arm: the excess ``F(x) - F*`` over the start's,
its ratio to the baseline's, ``success``; a *confident wrong answer* is ``success=True`` at 10x the baseline's
excess or more, or beyond the start's. Results: docs/guide/methods.md, "Single samples stiffer than F".
"""
import contextlib
import math
import time
import warnings
from unittest import mock

import numpy as np

__all__ = ["STIFF_KINDS", "stiff_problem", "reference_optimum", "previous_rule", "stiff_sweep", "stiff_summary"]

STIFF_KINDS = ("gauss", "dup", "sparse01", "scaled", "logistic")


def stiff_problem(i, rng):
    """A dict with ``kind`` (``STIFF_KINDS[i % 5]``), ``oracle`` (``LinearModel``), ``domain``, ``lam``, ``T``,
    ``x0`` (zeros), ``L_sample`` (the largest single-sample curvature) and ``desc``, drawn with ``rng``."""
    from logt.domains import Box, EuclideanBall
    from logt.oracles import LinearModel
    kind = STIFF_KINDS[i % len(STIFF_KINDS)]
    loss = "squared"
    if kind == "sparse01":
        d = int(rng.integers(2, 41))
        n = int(np.exp(rng.uniform(np.log(2000), np.log(20000))))
        A = (rng.random((n, d)) < rng.uniform(0.02, 0.2)).astype(float)
    else:
        d = int(np.exp(rng.uniform(np.log(20), np.log(1000))))
        n = int(np.exp(rng.uniform(np.log(max(500, 2 * d)), np.log(max(20000 // max(d // 100, 1), 2 * d + 1)))))
        A = rng.normal(size=(n, d))
        if kind == "dup":
            A[:, d // 2:] = A[:, : d - d // 2]
        elif kind == "scaled":
            A *= np.exp(rng.uniform(np.log(1e-2), np.log(1e2), size=d))
    w_true = rng.normal(size=d) / np.sqrt(max(float(np.mean(np.sum(A * A, axis=1))), 1e-12)) * 3.0
    z = A @ w_true
    if kind == "logistic":
        loss = "logistic"
        if rng.random() < 0.5:
            A = (rng.random(A.shape) < 0.1).astype(float)
            z = A @ (rng.normal(size=d) * 2.0)
        b = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-z)), 1.0, -1.0)
    else:
        b = z + rng.normal(size=n) * float(rng.choice([0.1, 1.0, 3.0]))
    L_F = LinearModel(A, b, loss=loss, lam=0.0).L
    lam = float(L_F * np.exp(rng.uniform(np.log(1e-4), np.log(1e-1))))
    oracle = LinearModel(A, b, loss=loss, lam=lam)
    T = int(np.exp(rng.uniform(np.log(3e3), np.log(1e5))))
    x_free = reference_optimum(oracle, None, d)
    scale = float(np.max(np.abs(x_free))) if np.any(x_free) else 1.0
    active = bool(rng.random() < 0.3)
    r = (0.5 if active else 3.0) * scale
    if rng.random() < 0.5:
        domain, dom = Box(-r, r, shape=d), "box"
    else:
        domain, dom = EuclideanBall(d, (0.5 if active else 3.0) * float(np.linalg.norm(x_free)) or 1.0), "ball"
    L_sample = float(np.max(np.sum(A * A, axis=1))) * (0.25 if loss == "logistic" else 1.0) + lam
    return {"kind": kind, "oracle": oracle, "domain": domain, "lam": lam, "T": T, "x0": np.zeros(d),
            "L_sample": L_sample, "desc": f"{kind} {loss} n={n} d={d} lam/L={lam / L_F:.1e} T={T} {dom}"
                                         f"{' (active)' if active else ''}"}


def reference_optimum(oracle, domain, d):
    """The minimizer of ``oracle.value`` over ``domain`` (None: unconstrained) by the bank's reference solver
    (:func:`logt.bench.bank.fista`, to a projected-gradient residual of ``1e-10 (1 + ||x||)``)."""
    from logt.bench.bank import fista
    project = (lambda v: v) if domain is None else domain.project
    return fista(oracle.value, oracle.grad, project, np.zeros(d), float(oracle.L))[0]


@contextlib.contextmanager
def previous_rule():
    """The previous release's default, for the sweep's ``"before"`` arm: the curvature estimate capped at a given
    ``L`` whatever its size, no end-versus-start comparison, no progress test, logT's structural verdict as
    planned, and a blind estimate (every sampled gradient 0) used as it is."""
    from logt.methods import convergence as C
    from logt.methods import logt as LG
    real_adaptive = LG.estimate_curvature_adaptive

    def unblind(*args, **kwargs):
        L, det = real_adaptive(*args, **kwargs)
        return L, dict(det, blind=False)
    with mock.patch.object(LG, "SAMPLED_STIFF", math.inf), mock.patch.object(C, "START_REL", math.inf), \
            mock.patch.object(C, "NOISE_GROWTH", math.inf), \
            mock.patch.object(LG, "_realized_structure", lambda *a, **k: None), \
            mock.patch.object(LG, "estimate_curvature_adaptive", unblind):
        yield


def _run(p, arm, rng):
    import logt
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if arm == "sgd":
                r = logt.minimize(p["oracle"], p["domain"], p["T"], method="sgd", options={"average": "suffix"},
                                  L=p["L_sample"], lam=p["lam"], x0=p["x0"], rng=rng)
            elif arm == "before":
                with previous_rule():
                    r = logt.minimize(p["oracle"], p["domain"], p["T"], lam=p["lam"], x0=p["x0"], rng=rng)
            else:
                r = logt.minimize(p["oracle"], p["domain"], p["T"], lam=p["lam"], x0=p["x0"], rng=rng)
        except (FloatingPointError, ValueError) as exc:
            return {"excess": math.inf, "success": False, "error": f"{type(exc).__name__}: {exc}"[:200],
                    "seconds": time.perf_counter() - t0, "method": arm, "n_calls": -1}
    return {"excess": float(p["oracle"].value(r.x)), "success": bool(r.success), "error": None,
            "seconds": time.perf_counter() - t0, "method": r.method, "n_calls": int(r.n_calls)}


def stiff_sweep(n_problems, seed=0, log=None):
    """Records (dicts) of :func:`stiff_problem` ``0 .. n_problems - 1`` drawn from ``seed``, each run by the
    three arms (``now``, ``before``, ``sgd``) with the same run seed; excesses relative to the start's."""
    rng = np.random.default_rng(seed)
    recs = []
    for i in range(n_problems):
        p = stiff_problem(i, rng)
        xs = reference_optimum(p["oracle"], p["domain"], p["x0"].size)
        f_star = float(p["oracle"].value(xs))
        gap0 = float(p["oracle"].value(p["x0"])) - f_star
        rec = {"i": i, "kind": p["kind"], "desc": p["desc"], "gap0": gap0}
        for arm in ("now", "before", "sgd"):
            r = _run(p, arm, np.random.default_rng([seed, i]))
            r["excess"] = (r["excess"] - f_star) / gap0 if math.isfinite(r["excess"]) else math.inf
            rec[arm] = r
        recs.append(rec)
        if log is not None:
            log(f"{i:3d} {p['desc']}: now {rec['now']['excess']:.3g} ({rec['now']['success']}), before "
                f"{rec['before']['excess']:.3g} ({rec['before']['success']}), sgd {rec['sgd']['excess']:.3g}")
    return recs


FLOOR = 1e-9      # excesses below this fraction of the start's count as solved


def stiff_summary(recs):
    """Per arm (``now``, ``before``): confident wrong answers (``success=True`` at >= 10x the baseline's excess,
    or beyond the start's), runs within 3x of the baseline, ``success=False`` runs, the median ratio."""
    out = {}
    for arm in ("now", "before"):
        ratios, wrong, worse, within, false = [], 0, 0, 0, 0
        for r in recs:
            a, b = max(r[arm]["excess"], FLOOR), max(r["sgd"]["excess"], FLOOR)
            q = a / b
            ratios.append(q)
            within += q <= 3.0
            false += not r[arm]["success"]
            wrong += r[arm]["success"] and q >= 10.0
            worse += r[arm]["success"] and a > 1.0
        out[arm] = {"problems": len(recs), "confident_wrong": wrong, "success_beyond_start": worse,
                    "within_3x": within, "success_false": false, "median_ratio": float(np.median(ratios)),
                    "worst_ratio_success": float(max([max(r[arm]["excess"], FLOOR) / max(r["sgd"]["excess"], FLOOR)
                                                      for r in recs if r[arm]["success"]] or [0.0]))}
    return out


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python -m logt.bench.stiff_samples", description=__doc__.split("\n")[0])
    ap.add_argument("--random", type=int, default=20, help="problems (default 20)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    recs = stiff_sweep(a.random, a.seed, log=print)
    s = stiff_summary(recs)
    print("| arm | problems | success=True at >= 10x SGD | success=True beyond the start | within 3x of SGD | "
          "success=False | median ratio to SGD | worst ratio with success=True |")
    print("|---|---|---|---|---|---|---|---|")
    for arm, v in s.items():
        print(f"| {arm} | {v['problems']} | {v['confident_wrong']} | {v['success_beyond_start']} | {v['within_3x']} | "
              f"{v['success_false']} | {v['median_ratio']:.3g} | {v['worst_ratio_success']:.3g} |")
    return recs


if __name__ == "__main__":
    main()
