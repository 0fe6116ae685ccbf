"""The pairs learner's default on new pairs of new points, against plain Euclidean distances.

``python -m logt.bench.learners_pairs --random N [--seed S] [--wide] [--same-points]``: ``N`` seeded random problems
(few features:
:func:`logt.bench.learners_lowdim.lowdim_problem`; ``--wide``: the dense and raw-pixel kinds of
:func:`logt.bench.learners_highdim.random_problem`, 70/30 split of the points), ``PAIRS`` training pairs drawn
uniformly among the training points (similar when the labels agree) and as many test pairs among the test points
(``--same-points``: other pairs of the training points, for pairs classified among points the metric has seen).
Each problem is fitted twice, ``PairsMetricLearner(rng=i)`` (the default: ``threshold_`` calibrated on held-out
pairs, and on many features the metric checked against Euclidean distances) and ``PairsMetricLearner(rng=i,
check=False)`` (the learned metric, calibrated on the training pairs); the test pairs' accuracy of ``predict`` and
ROC AUC of both, against Euclidean distances with a threshold calibrated on the training pairs (their
distances are not fitted) and against answering the majority label. See docs/guide/metric-learning.md.
"""
import warnings

import numpy as np

from logt.bench.learners import _timed_fit

__all__ = ["PAIRS", "pairs_problem", "pairs_sweep", "pairs_row"]

PAIRS = 3000


def _draw_pairs(X, y, g, m):
    """``(pairs (m', 2, d), labels (m',))``: ``m`` index pairs drawn uniformly with ``g``, those of one point
    dropped; +1 when the two labels agree."""
    i, j = g.integers(len(y), size=m), g.integers(len(y), size=m)
    keep = i != j
    i, j = i[keep], j[keep]
    return np.stack([X[i], X[j]], axis=1), np.where(y[i] == y[j], 1, -1)


def pairs_problem(i, rng, wide=False, same_points=False):
    """``(description, Ptr, ytr, Pte, yte)``: the ``i``-th problem drawn with ``rng`` (see the module); the
    pairs are drawn with ``numpy.random.default_rng(i)``, the test pairs among the test points or, with
    ``same_points``, among the training points."""
    if wide:
        from logt.bench.learners_highdim import random_problem
        while True:                    # bag-of-words input is sparse: pairs are dense (n_pairs, 2, d) arrays
            desc, X, y = random_problem(rng)
            if not desc.startswith("bow"):
                break
        p = rng.permutation(len(y))
        n = int(0.7 * len(y))
        Xtr, ytr, Xte, yte = X[p[:n]], y[p[:n]], X[p[n:]], y[p[n:]]
    else:
        from logt.bench.learners_lowdim import lowdim_problem
        desc, Xtr, ytr, Xte, yte = lowdim_problem(i, rng)
    g = np.random.default_rng(i)
    Ptr, yptr = _draw_pairs(Xtr, ytr, g, PAIRS)
    Pte, ypte = _draw_pairs(Xtr, ytr, g, PAIRS) if same_points else _draw_pairs(Xte, yte, g, PAIRS)
    return f"{desc} n={len(ytr)} d={Xtr.shape[1]}", Ptr, yptr, Pte, ypte


def _euclidean(Ptr, ytr, Pte, yte):
    """``(accuracy, auc)`` of Euclidean distances on the test pairs, the threshold calibrated (accuracy) on the
    training pairs."""
    from logt.metric_learning.pairs import _threshold, roc_auc
    dist = lambda P: np.linalg.norm(P[:, 0] - P[:, 1], axis=1)       # noqa: E731
    t, d = _threshold(dist(Ptr), ytr), dist(Pte)
    return float(np.mean(np.where(d <= t, 1, -1) == yte)), roc_auc(yte, -d)


def pairs_sweep(n_problems=70, seed=1, wide=False, same_points=False, log=print):
    """Rows ``dict(problem, euclid, default, plain, majority, auc_euclid, auc, auc_plain, how, metric, seconds,
    seconds_plain)`` (test accuracies and ROC AUCs; ``plain`` is ``check=False``; ``how`` and ``metric`` the
    default's ``calibration_["how"]`` and ``metric_choice_``) for :func:`pairs_problem` ``0..n_problems-1``
    (skipped: training or test pairs of one label only)."""
    g = np.random.default_rng(seed)
    rows = []
    for i in range(n_problems):
        desc, Ptr, ytr, Pte, yte = pairs_problem(i, g, wide, same_points)
        if len(np.unique(ytr)) < 2 or len(np.unique(yte)) < 2:
            continue
        rows.append(pairs_row(i, desc, Ptr, ytr, Pte, yte, log))
    log(pairs_summary(rows))
    return rows


def pairs_row(i, desc, Ptr, ytr, Pte, yte, log=print):
    """One row of :func:`pairs_sweep`: ``PairsMetricLearner(rng=i)`` and its ``check=False`` fitted on the
    training pairs on one BLAS thread (warnings silenced), Euclidean distances, all scored on the test pairs;
    logged."""
    from logt import PairsMetricLearner
    from logt._threads import single_threaded_blas
    with single_threaded_blas(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, plain = PairsMetricLearner(rng=i), PairsMetricLearner(rng=i, check=False)
        t1, t0 = _timed_fit(est, Ptr, ytr), _timed_fit(plain, Ptr, ytr)
    acc_e, auc_e = _euclidean(Ptr, ytr, Pte, yte)
    r = dict(problem=desc, euclid=acc_e, auc_euclid=auc_e, auc=est.score(Pte, yte),
             default=float(np.mean(est.predict(Pte) == yte)), plain=float(np.mean(plain.predict(Pte) == yte)),
             majority=float(max(np.mean(yte > 0), np.mean(yte < 0))), how=est.calibration_["how"],
             metric=est.metric_choice_, auc_plain=plain.score(Pte, yte), seconds=t1, seconds_plain=t0)
    log(f"{i:3d} {desc:34s} accuracy: Euclidean {acc_e:.3f} default {r['default']:.3f} check=False "
        f"{r['plain']:.3f} majority {r['majority']:.3f} | AUC {r['auc']:.3f} check=False {r['auc_plain']:.3f} "
        f"Euclidean {auc_e:.3f} ({r['metric']}, {r['how']}; {t1:.2f} s / {t0:.2f} s)")
    return r


def pairs_summary(rows):
    """Lines on a sweep's rows: for the default and ``check=False``, on how many problems the test accuracy is
    below Euclidean's by more than 0.02, and below the majority answer's, the worst difference and the mean;
    the same for the ROC AUC against Euclidean's; the metrics the default kept; the fit-time ratio."""
    out = []
    for key in ("default", "plain"):
        d = np.array([r[key] - r["euclid"] for r in rows])
        m = np.array([r[key] - r["majority"] for r in rows])
        out.append(f"{key}: {len(rows)} problems: accuracy below Euclidean by more than 0.02 on "
                   f"{int((d < -0.02).sum())}, worst {d.min():+.3f}, mean {d.mean():+.4f}; below the majority "
                   f"answer by more than 0.02 on {int((m < -0.02).sum())}, worst {m.min():+.3f}")
    for key, name in (("auc", "default"), ("auc_plain", "plain")):
        a = np.array([r[key] - r["auc_euclid"] for r in rows])
        out.append(f"AUC, {name}: below Euclidean's by more than 0.02 on {int((a < -0.02).sum())}, "
                   f"worst {a.min():+.3f}, mean {a.mean():+.4f}")
    t = np.array([r["seconds"] / r["seconds_plain"] for r in rows])
    kept = {c: sum(r["metric"] == c for r in rows) for c in ("euclidean", "subspace")}
    out.append(f"the default kept plain distances on {sum(kept.values())} of {len(rows)} (Euclidean {kept['euclidean']}"
               f", the subspace's {kept['subspace']}); fit time with the check / without: median {np.median(t):.1f}x, "
               f"max {t.max():.1f}x")
    return "\n".join(out)


if __name__ == "__main__":   # python -m logt.bench.learners_pairs --random N [--seed S] [--wide] [--same-points]
    import sys
    argv = sys.argv
    pairs_sweep(int(argv[argv.index("--random") + 1]) if "--random" in argv else 70,
                seed=int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 1, wide="--wide" in argv,
                same_points="--same-points" in argv)
