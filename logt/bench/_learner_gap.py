"""``MetricLearner()`` with default arguments on the bank's metric data: its ``F`` against the optimum of the
same objective (the exact pair distribution of its sampler, :func:`logt.metric_learning.reference.solve`).

``python -m logt.bench._learner_gap [--T 200000] [--seeds 3]`` prints one row per ``lam``.
"""
import argparse

import numpy as np


def learner_gap(lam, T=200_000, seed=0, **kw):
    """Fit ``MetricLearner(lam=lam, T=T, rng=seed, **kw)`` on :func:`logt.bench.bank.metric_data`; returns
    ``(F, F*, gap, n_projections, n_calls, L_est)`` with ``F`` the exact objective at the fit."""
    from logt.bench.bank import metric_data
    from logt.metric_learning import MetricLearner
    from logt.metric_learning.reference import objective, pair_distribution, solve
    import logt.metric_learning.supervised as sup
    X, y = metric_data()
    captured = {}
    orig = sup.MetricLearner._minimize

    def spy(self, oracle, gen):
        captured["oracle"] = oracle
        return orig(self, oracle, gen)

    sup.MetricLearner._minimize = spy
    try:
        est = MetricLearner(lam=lam, T=T, rng=seed, **kw).fit(X, y)
    finally:
        sup.MetricLearner._minimize = orig
    o = captured["oracle"]
    A = o.X.toarray() if hasattr(o.X, "toarray") else np.asarray(o.X)
    codes = np.unique(y, return_inverse=True)[1]
    P, Y = pair_distribution(codes, est.sampling, neighbors=o.neighbors)
    learn = est.threshold == "learn"
    thr = 0.0 if learn else float(est.threshold)
    ts = o.threshold_scale
    W, b, Fstar, info = solve(A, P, Y, lam, threshold=thr, learn_threshold=learn, tol=1e-10, threshold_scale=ts)
    Z = est.result_.x
    d = A.shape[1]
    F = objective(A, P, Y, Z[:d, :d], Z[d, d] if learn else thr, lam, learn_threshold=learn, threshold_scale=ts)
    return F, Fstar, F - Fstar, est.n_projections_, est.n_calls_, est.result_.params.get("L_est")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--T", type=int, default=200_000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--params", default="auto")
    a = ap.parse_args(argv)
    print("| lam | params | F - F* (mean, max over seeds) | projections | oracle calls | L_est |")
    print("|---|---|---|---|---|---|")
    for lam in (0.1, 0.01, 0.001):
        rs = [learner_gap(lam, a.T, s, params=a.params) for s in range(a.seeds)]
        gaps = [r[2] for r in rs]
        print(f"| {lam:g} | {a.params} | {np.mean(gaps):.2e}, {max(gaps):.2e} | {np.mean([r[3] for r in rs]):.0f} | "
              f"{np.mean([r[4] for r in rs]):.0f} | {np.mean([r[5] or np.nan for r in rs]):.3g} |", flush=True)


if __name__ == "__main__":
    main()
