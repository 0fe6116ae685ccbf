"""``MetricLearner()`` with default arguments on the bank's metric data: its ``F`` against the optimum of the
same objective (the neighbour softmax over its candidate lists, :func:`logt.metric_learning.reference.solve_softmax`;
with ``--loss pairs`` the exact pair distribution of its sampler, :func:`logt.metric_learning.reference.solve`).

``python -m logt.bench._learner_gap [--T auto] [--seeds 3] [--loss pairs]`` prints one row per ``lam``.
"""
import argparse

import numpy as np


def learner_gap(lam, T="auto", seed=0, **kw):
    """Fit ``MetricLearner(lam=lam, T=T, rng=seed, **kw)`` on :func:`logt.bench.bank.metric_data`; returns
    ``(F, F*, gap, n_projections, n_calls, L_est)`` with ``F`` the exact objective of the loss fitted (``loss_``:
    the neighbour softmax by default, the pair loss with ``loss="pairs"``) at the fit and ``F*`` its optimum from
    :mod:`logt.metric_learning.reference`."""
    from logt.bench.bank import metric_data
    from logt.metric_learning import MetricLearner
    from logt.metric_learning.reference import objective, pair_distribution, softmax_objective, solve, solve_softmax
    import logt.metric_learning.supervised as sup
    X, y = metric_data()
    captured = {}
    orig = sup.MetricLearner._minimize

    def spy(self, oracle, gen, **kw):      # the fitted estimator's own oracle (the check's fits are others)
        captured[id(self)] = oracle
        return orig(self, oracle, gen, **kw)

    sup.MetricLearner._minimize = spy
    try:
        est = MetricLearner(lam=lam, T=T, rng=seed, **kw).fit(X, y)
    finally:
        sup.MetricLearner._minimize = orig
    o = captured[id(est)]
    Z = est.result_.x
    if est.loss_ == "softmax":
        _, Fstar, _ = solve_softmax(o)
        F = softmax_objective(o.X, o.anchors, o.ptr, o.candidates, o.n_targets_per_anchor, o.unit, Z, lam)
    elif est.loss_ == "pairs":
        A = o.X.toarray() if hasattr(o.X, "toarray") else np.asarray(o.X)
        codes = np.unique(y, return_inverse=True)[1]
        P, Y = pair_distribution(codes, est.sampling, neighbors=o.neighbors)
        learn = est.threshold == "learn"
        thr = 0.0 if learn else float(est.threshold)
        ts = o.threshold_scale
        _, _, Fstar, _ = solve(A, P, Y, lam, threshold=thr, learn_threshold=learn, tol=1e-10, threshold_scale=ts)
        d = A.shape[1]
        F = objective(A, P, Y, Z[:d, :d], Z[d, d] if learn else thr, lam, learn_threshold=learn, threshold_scale=ts)
    else:
        raise ValueError(f"no reference optimum for loss={est.loss_!r}")
    return F, Fstar, F - Fstar, est.n_projections_, est.n_calls_, est.result_.params.get("L_est")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--T", default="auto", type=lambda v: v if v == "auto" else int(float(v)),
                    help='the budget: "auto" (default: the learner\'s) or a number')
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--params", default="auto")
    ap.add_argument("--loss", default=None, choices=("softmax", "pairs"),
                    help="the loss (default: the learner's default, the softmax on the bank's dense data)")
    a = ap.parse_args(argv)
    print("| lam | loss | params | F - F* (mean, max over seeds) | projections | oracle calls | L_est |")
    print("|---|---|---|---|---|---|---|")
    for lam in (0.1, 0.01, 0.001):
        rs = [learner_gap(lam, a.T, s, params=a.params, loss=a.loss) for s in range(a.seeds)]
        gaps = [r[2] for r in rs]
        print(f"| {lam:g} | {a.loss or 'default'} | {a.params} | {np.mean(gaps):.2e}, {max(gaps):.2e} | "
              f"{np.mean([r[3] for r in rs]):.0f} | "
              f"{np.mean([r[4] for r in rs]):.0f} | {np.mean([r[5] or np.nan for r in rs]):.3g} |", flush=True)


if __name__ == "__main__":
    main()
