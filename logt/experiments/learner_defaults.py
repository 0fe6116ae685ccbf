"""Evidence for ``MetricLearner``'s defaults, measured on data sets that are NOT the evaluation targets.

``python -m logt.experiments.learner_defaults [--quick]`` fits the estimator on
scikit-learn's iris and on synthetic data (``make_classification`` with
redundant features, ``make_blobs`` with added noise features; all generated
offline from fixed seeds), with a 70/30 stratified split and standardized
features as in the comparison report, and prints 1-NN / 5-NN test accuracy
minus Euclidean k-NN's for a grid of settings (sampling, threshold, lam, T).
The evaluation targets (wine, breast cancer, digits, mushrooms, adult) are never
used here. The chosen defaults and the numbers are in docs/guide/metric-learning.md and docs/evidence/learner-defaults.md.

``--sweep NAME`` runs one sweep around the defaults (the pair loss's budget, lam-k, threshold-scale, impostor-radius;
whiten; the softmax's softmax-budget, softmax-lam-k), with
``--family`` on the 60 random generated problems of ``--loss-family`` instead of the development sets;
``--outliers`` measures the internal scaling's outlier rule on generated data;
``--generated`` checks the defaults against Euclidean and NCA on seeded problems
unlike the development sets (imbalance, noise features, tiny n, heavy tails, ...);
``--loss-choice`` compares the pair loss, the triplet loss and ``loss="auto"``'s
cross-validated choice under several standard-error margins on both kinds of problem;
``--loss-family`` does it on 60 random generated problems (:func:`random_problem`), binned by how
separated their classes are (Euclidean leave-one-out 1-NN accuracy on the training part), and counts
fits whose metric is zero (:class:`logt.DegenerateMetricWarning`).
"""
import argparse
import itertools
import sys
import time

import numpy as np


def dev_datasets(quick=False):
    """``(name, X, y)`` of the development data (no download)."""
    from sklearn.datasets import load_iris, make_blobs, make_classification
    X, y = load_iris(return_X_y=True)
    yield "iris", X, y
    for s in range(1 if quick else 3):
        X, y = make_classification(n_samples=600, n_features=20, n_informative=4, n_redundant=4, n_classes=3,
                                   n_clusters_per_class=2, class_sep=1.0, random_state=s)
        yield f"classif3_{s}", X, y
    for s in range(1 if quick else 2):
        X, y = make_blobs(n_samples=500, centers=4, n_features=5, cluster_std=2.5, random_state=s)
        X = np.hstack([X, np.random.default_rng(s).normal(size=(len(X), 15)) * 3])
        yield f"blobs_noise_{s}", X, y
    if not quick:
        X, y = make_classification(n_samples=800, n_features=30, n_informative=6, n_redundant=0, n_classes=5,
                                   n_clusters_per_class=1, class_sep=1.5, flip_y=0.02, random_state=11)
        yield "classif5", X, y


def knn_accuracy(Ztr, ytr, Zte, yte, ks=(1, 5)):
    from sklearn.neighbors import KNeighborsClassifier
    return [KNeighborsClassifier(k).fit(Ztr, ytr).score(Zte, yte) for k in ks]


def split(X, y, seed=0):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte


def grid(quick=False):
    lams = (1e-1, 1e-2, 1e-3) if quick else (1e-1, 3e-2, 1e-2, 3e-3, 1e-3)
    Ts = (200_000,) if quick else (200_000, 1_000_000)
    out = []
    for lam, T in itertools.product(lams, Ts):
        out.append(("neighbors k=10, learned b", dict(sampling="neighbors", n_neighbors=10, threshold="learn",
                                                     lam=lam, T=T, loss="pairs")))
        if not quick:
            out.append(("neighbors k=5, learned b", dict(sampling="neighbors", n_neighbors=5, threshold="learn",
                                                        lam=lam, T=T, loss="pairs")))
            out.append(("balanced, learned b", dict(sampling="balanced", threshold="learn", lam=lam, T=T,
                                                    loss="pairs")))
            out.append(("uniform, b=1 (paper)", dict(sampling="uniform", threshold=1.0, lam=lam, T=T,
                                                     scaling="max_norm", loss="pairs")))
    return out


def run(quick=False, seeds=(0,), log=print):
    from logt.metric_learning import MetricLearner
    data = list(dev_datasets(quick))
    rows = {}
    for name, X, y in data:
        Xtr, Xte, ytr, yte = split(X, y)
        e = knn_accuracy(Xtr, ytr, Xte, yte)
        for label, kw in grid(quick):
            key = (label, kw["lam"], kw["T"])
            for seed in seeds:
                t0 = time.perf_counter()
                est = MetricLearner(rng=seed, check=False, **kw).fit(Xtr, ytr)
                sec = time.perf_counter() - t0
                a = knn_accuracy(est.transform(Xtr), ytr, est.transform(Xte), yte)
                rows.setdefault(key, []).append((a[0] - e[0], a[1] - e[1], sec))
        log(f"done {name}")
    out = []
    for key, v in rows.items():
        v = np.array(v)
        out.append((key, v[:, 0].mean(), v[:, 1].mean(), v[:, 0].min(), v[:, 1].min(), v[:, 2].mean()))
    return out


def sweep(settings, splits=3, quick=False, log=print, family=False):
    """Mean / worst k-NN gain over Euclidean of ``MetricLearner(**kw)`` (current defaults otherwise) for each
    ``(label, kw)`` in ``settings``, over the development sets (``family=True``: the 60 problems of
    :func:`random_problem`, never used to choose a default) and ``splits`` stratified splits each
    (split ``s`` and ``rng=s``). Returns ``[(label, mean1, mean5, worst1, worst5, median_fit_s)]``."""
    from logt._threads import single_threaded_blas
    from logt.metric_learning import MetricLearner
    rows = {label: [] for label, _ in settings}
    data = (random_problem(i) for i in range(8 if quick else 60)) if family else dev_datasets(quick)
    with single_threaded_blas():
        for name, X, y in data:
            for s in range(splits):
                Xtr, Xte, ytr, yte = split(X, y, s)
                e = knn_accuracy(Xtr, ytr, Xte, yte)
                for label, kw in settings:
                    t0 = time.perf_counter()
                    est = MetricLearner(rng=s, check=False, **kw).fit(Xtr, ytr)
                    sec = time.perf_counter() - t0
                    a = knn_accuracy(est.transform(Xtr), ytr, est.transform(Xte), yte)
                    rows[label].append((a[0] - e[0], a[1] - e[1], sec))
            log(f"done {name}")
    out = []
    for label, v in rows.items():
        v = np.array(v)
        out.append((label, v[:, 0].mean(), v[:, 1].mean(), v[:, 0].min(), v[:, 1].min(), float(np.median(v[:, 2]))))
    return out


SWEEPS = {
    # the pair loss (the default on dense input until the softmax; still the default on sparse input):
    # the budget T at the default lam (T="auto" gives 1e5 there)
    "budget": [(f"T={T:.0e}", {"T": T, "loss": "pairs"}) for T in (50_000, 100_000, 200_000, 500_000, 1_000_000)],
    # lam x n_neighbors with T="auto"
    "lam-k": [(f"lam={lam:g}, k={k}", {"lam": lam, "n_neighbors": k, "loss": "pairs"})
              for lam in (0.3, 0.1, 0.03, 0.01) for k in (5, 10, 20)],
    # impostor_radius: which other-class neighbours give dissimilar pairs (None: all n_neighbors)
    "impostor-radius": [(f"impostor_radius={r}", {"impostor_radius": r, "loss": "pairs"})
                        for r in (None, 1.0, 1.5, 2.0, 3.0)],
    # the neighbour softmax (the default on dense input): its budget in anchors (T="auto" gives 2e4 at lam 0.1,
    # each anchor ~3 + 2 n_neighbors pair gradients; measured with 5 targets per point, the default then), and
    # lam x targets (triplet_neighbors) x impostors (2 n_neighbors)
    "softmax-budget": [(f"T={T:.0e}", {"T": T, "loss": "softmax", "triplet_neighbors": 5})
                       for T in (5_000, 10_000, 20_000, 50_000, 100_000)],
    "softmax-lam-k": [(f"lam={lam:g}, targets={t}, impostors={2 * k}",
                       {"lam": lam, "triplet_neighbors": t, "n_neighbors": k, "loss": "softmax"})
                      for lam in (0.3, 0.1, 0.03) for t in (1, 3, 5) for k in (5, 10)],
    # target-pair whitening (the default) against the scaled space (the previous model), both losses
    "whiten": [(f"loss={loss}, whiten={w!r}", {"loss": loss, "whiten": w})
               for loss in ("pairs", "triplets") for w in (None, "targets")],
    # the learned threshold's unit: "auto" (RMS squared pair distance) against 1 (the previous model)
    "threshold-scale": [(f"lam={lam:g}, threshold_scale={s}", {"lam": lam, "threshold_scale": s, "loss": "pairs"})
                        for lam in (0.1, 0.01, 0.001) for s in ("auto", 1.0)],
}


def outlier_rows(seeds=(100, 101, 102), factors=(5, 10, 30, 100, 1e4), log=print):
    """1-NN accuracy with one training row multiplied by each factor, with the scaling's outlier rule
    (:data:`logt.metric_learning.scaling.OUTLIER_FACTOR`) and without it (the constant set to inf for the
    comparison). Generated data only (``make_classification(400, 12, n_informative=5, n_classes=4)``).
    Returns ``[(factor, [acc without rule per seed], [acc with rule per seed], [flagged per seed])]``."""
    from sklearn.datasets import make_classification
    import logt.metric_learning.scaling as scaling
    from logt._threads import single_threaded_blas
    from logt.metric_learning import MetricLearner
    out = []
    with single_threaded_blas():
        for f in (1,) + tuple(factors):
            row = ([], [], [])
            for seed in seeds:
                X, y = make_classification(400, 12, n_informative=5, n_classes=4, random_state=seed)
                Xtr, Xte, ytr, yte = split(X, y, 0)
                Xo = Xtr.copy()
                Xo[0] *= f
                for k, factor in ((0, np.inf), (1, scaling.OUTLIER_FACTOR)):
                    old, scaling.OUTLIER_FACTOR = scaling.OUTLIER_FACTOR, factor
                    try:        # the pair loss: the model this rule was measured with
                        est = MetricLearner(rng=0, check=False, loss="pairs").fit(Xo, ytr)
                    finally:
                        scaling.OUTLIER_FACTOR = old
                    row[k].append(knn_accuracy(est.transform(Xtr), ytr, est.transform(Xte), yte, ks=(1,))[0])
                    if k == 1:
                        row[2].append(est.n_clipped_)
            out.append((f, *row))
            log(f"done factor {f:g}")
    return out


def generated_problems(seed):
    """``(name, X, y)`` of seeded problems unlike the development sets (none is used to choose a default):
    class imbalance, 195 noise features, redundant features, 40 points, heavy-tailed noise features,
    duplicated columns on a 1e6 offset, 8 classes, float32 input, an outlier row (1e4 x), and one far
    class beside two touching ones (:func:`far_class`)."""
    from sklearn.datasets import make_classification as mc
    rng = np.random.default_rng(seed)
    yield ("imbalance 95/5",) + mc(600, 10, n_informative=4, n_classes=2, weights=[0.95], random_state=300 + seed)
    yield ("200 features, 5 informative",) + mc(500, 200, n_informative=5, n_redundant=0, n_classes=3,
                                                 random_state=310 + seed)
    yield ("14 redundant features",) + mc(500, 20, n_informative=4, n_redundant=14, n_classes=3,
                                           random_state=320 + seed)
    yield ("40 points",) + mc(40, 8, n_informative=4, n_classes=2, random_state=330 + seed)
    X, y = mc(500, 8, n_informative=4, n_classes=3, random_state=340 + seed)
    yield "6 Cauchy noise features", np.hstack([X, rng.standard_cauchy((500, 6))]), y
    X, y = mc(500, 8, n_informative=4, n_classes=3, random_state=350 + seed)
    yield "duplicated columns + 1e6", np.hstack([X, X[:, :3]]) + 1e6, y
    yield ("8 classes",) + mc(800, 30, n_informative=6, n_classes=8, n_clusters_per_class=1, random_state=360 + seed)
    X, y = mc(500, 10, n_informative=4, n_classes=3, random_state=370 + seed)
    yield "float32 input", X.astype(np.float32), y
    X, y = mc(400, 12, n_informative=5, n_classes=4, random_state=100 + seed)
    X[0] *= 1e4
    yield "one outlier row (1e4 x)", X, y
    yield ("one far class, two touching",) + far_class(seed)


def far_class(seed, n=100, d=6):
    """``(X, y)``: 3 classes of ``n`` points in ``d`` dimensions; class 0 lies 6 units out on axis 0, classes
    1 and 2 touch, 1.6 apart on axis 3 (unit noise on the other axes, 0.5 on these two). With every
    other-class neighbour in the sampler the far class's easy pairs set the metric; the impostor
    restriction (``impostor_radius``) is for this case."""
    rng = np.random.default_rng(400 + seed)
    X = rng.standard_normal((3 * n, d))
    X[:, [0, 3]] *= 0.5
    y = np.repeat([0, 1, 2], n)
    X[y == 0, 0] += 6.0
    X[y == 1, 3] += 0.8
    X[y == 2, 3] -= 0.8
    return X, y


def generated(seeds=(0, 1, 2), log=print):
    """k-NN accuracy of Euclidean, ``MetricLearner()``, ``MetricLearner(check=False)`` (the learned metric
    without the default's check) and NCA on :func:`generated_problems` (70/30 split, standardized; the outlier
    row stays in the training part). Returns ``[(name, eucl (1, 5), ml (1, 5), learned (1, 5), nca (1, 5), rows
    clipped, retries)]``, accuracies averaged over the seeds."""
    import warnings
    from sklearn.neighbors import NeighborhoodComponentsAnalysis
    from logt._threads import single_threaded_blas
    from logt.metric_learning import MetricLearner
    rows = {}
    with single_threaded_blas(), warnings.catch_warnings():
        warnings.simplefilter("ignore")            # NCA's convergence warnings
        for seed in seeds:
            for name, X, y in generated_problems(seed):
                Xtr, Xte, ytr, yte = split(X, y, 0)
                if name.startswith("one outlier"):
                    Xtr, ytr = np.vstack([X[:1], Xtr]), np.concatenate([y[:1], ytr])    # raw outlier row
                e = knn_accuracy(Xtr, ytr, Xte, yte)
                ml = MetricLearner(rng=seed).fit(Xtr, ytr)
                a = knn_accuracy(ml.transform(Xtr), ytr, ml.transform(Xte), yte)
                lm = MetricLearner(rng=seed, check=False).fit(Xtr, ytr)
                c = knn_accuracy(lm.transform(Xtr), ytr, lm.transform(Xte), yte)
                nca = NeighborhoodComponentsAnalysis(random_state=seed).fit(Xtr, ytr)
                b = knn_accuracy(nca.transform(Xtr), ytr, nca.transform(Xte), yte)
                rows.setdefault(name, []).append(e + a + c + b + [ml.n_clipped_, ml.result_.params.get("retries", 0)])
            log(f"done seed {seed}")
    out = []
    for name, v in rows.items():
        v = np.array(v, dtype=float)
        m = v.mean(0)
        out.append((name, tuple(m[0:2]), tuple(m[2:4]), tuple(m[4:6]), tuple(m[6:8]), int(v[:, 8].sum()),
                    int(v[:, 9].sum())))
    return out


def _both_losses(Xtr, Xte, ytr, yte, seed):
    """Fit ``MetricLearner(loss="pairs")`` and ``loss="triplets"`` (``rng=seed``) on the training part. Returns
    ``({loss: (1-NN, 5-NN) test accuracy}, {loss: whether the fit's metric is zero}, scores)`` with ``scores``
    ``loss="auto"``'s cross-validation scores exactly as its fit computes them (None where it does not apply)."""
    import warnings
    from logt._rng import check_rng
    from logt.metric_learning import DegenerateMetricWarning, MetricLearner
    from logt.metric_learning import loss_choice as lc
    acc, zero = {}, {}
    for loss in ("pairs", "triplets"):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always", DegenerateMetricWarning)
            m = MetricLearner(loss=loss, rng=seed, check=False).fit(Xtr, ytr)
        zero[loss] = any(issubclass(x.category, DegenerateMetricWarning) for x in w)
        acc[loss] = tuple(knn_accuracy(m.transform(Xtr), ytr, m.transform(Xte), yte))
    codes = np.unique(ytr, return_inverse=True)[1]
    _, scores = lc.choose_loss(MetricLearner(rng=seed), Xtr, ytr, codes, check_rng(seed).spawn(1)[0])
    return acc, zero, scores


def loss_choice(margins=(0.0, 1.0, 2.0), quick=False, log=print):
    """Test k-NN accuracy of ``MetricLearner(loss="pairs")``, ``loss="triplets"`` and the
    cross-validated choice (:mod:`logt.metric_learning.loss_choice`) with each standard-error margin
    in ``margins``, per problem: the development sets (iris 20 splits, the others 3) and
    :func:`generated_problems` (seeds 0-2). Returns ``[(kind, name, {label: (1-NN, 5-NN)},
    {margin: times triplets chosen}, runs)]``, accuracies averaged over the runs."""
    import warnings
    from logt._threads import single_threaded_blas
    from logt.metric_learning import loss_choice as lc

    def problems():
        for name, X, y in dev_datasets(quick):
            for s in range(20 if name == "iris" and not quick else 3 if not quick else 1):
                yield ("development", name) + split(X, y, s) + (s,)
        for seed in ((0,) if quick else (0, 1, 2)):
            for name, X, y in generated_problems(seed):
                Xtr, Xte, ytr, yte = split(X, y, 0)
                if name.startswith("one outlier"):
                    Xtr, ytr = np.vstack([X[:1], Xtr]), np.concatenate([y[:1], ytr])
                yield "generated", name, Xtr, Xte, ytr, yte, seed

    rows = {}
    with single_threaded_blas(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind, name, Xtr, Xte, ytr, yte, s in problems():
            acc, _, sc = _both_losses(Xtr, Xte, ytr, yte, s)
            picks = {z: lc.prefers_triplets(sc, z) for z in margins}
            for z, trip in picks.items():
                acc[f"auto (margin {z:g} se)"] = acc["triplets" if trip else "pairs"]
            rows.setdefault((kind, name), []).append((acc, picks))
            log(f"{kind} {name} {s}")
    out = []
    for (kind, name), runs in rows.items():
        mean = {k: tuple(np.mean([r[0][k] for r in runs], axis=0)) for k in runs[0][0]}
        chosen = {z: sum(r[1][z] for r in runs) for z in margins}
        out.append((kind, name, mean, chosen, len(runs)))
    return out


def random_problem(i):
    """``(description, X, y)``: the ``i``-th problem of a seeded random family (seed ``5000 + i``), never
    used to choose a default. Two thirds ``make_classification`` (120-700 points, 4-30 features, 2-8
    informative, sometimes redundant ones, 2-6 classes, one or two clusters per class, ``class_sep`` in
    [0.5, 3], label noise 0-5%), one third ``make_blobs`` (2-6 centres in 2-7 dimensions, spread 0.5-4)
    with 0-19 Gaussian noise features."""
    from sklearn.datasets import make_blobs, make_classification
    r = np.random.default_rng(5000 + i)
    kind = int(r.integers(3))
    n = int(r.choice([120, 200, 400, 700]))
    if kind < 2:
        d = int(r.integers(4, 31))
        inf = int(r.integers(2, min(d, 8) + 1))
        red = int(r.integers(0, d - inf + 1)) if r.random() < 0.5 else 0
        c = int(r.integers(2, 7))
        while c * (1 + kind) > 2 ** inf:
            c -= 1
        X, y = make_classification(n, d, n_informative=inf, n_redundant=red, n_classes=c,
                                   n_clusters_per_class=1 + kind, class_sep=float(r.uniform(0.5, 3.0)),
                                   flip_y=float(r.choice([0, 0.01, 0.05])), random_state=int(r.integers(2**31)))
        return f"classification n={n} d={d} informative={inf} redundant={red} classes={c} clusters={1 + kind}", X, y
    c, d0, dn = int(r.integers(2, 7)), int(r.integers(2, 8)), int(r.integers(0, 20))
    X, y = make_blobs(n, centers=c, n_features=d0, cluster_std=float(r.uniform(0.5, 4.0)),
                      random_state=int(r.integers(2**31)))
    X = np.hstack([X, r.normal(size=(n, dn)) * r.uniform(0.5, 3)])
    return f"blobs n={n} d={d0}+{dn} noise classes={c}", X, y


def loo_1nn(X, y):
    """Leave-one-out Euclidean 1-NN accuracy of X (n, d) with labels y (n,): how separated the classes are."""
    from logt.metric_learning.subspace import loo_1nn_accuracy
    return float(loo_1nn_accuracy(np.asarray(X, dtype=np.float64), np.asarray(y)))


def loss_family(n_problems=60, splits=3, log=print):
    """Pair loss, triplet loss and ``loss="auto"`` (its one-standard-error rule) on :func:`random_problem`
    ``0..n_problems-1``, ``splits`` stratified 70/30 splits each (learners seeded with the split). Returns
    ``[(i, description, split, a0, euclid (1, 5), {loss: (1-NN, 5-NN)}, auto's loss, {loss: zero metric})]``
    with ``a0`` the training part's :func:`loo_1nn`."""
    import warnings
    from logt._threads import single_threaded_blas
    from logt.metric_learning import loss_choice as lc
    out = []
    with single_threaded_blas(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n_problems):
            desc, X, y = random_problem(i)
            for s in range(splits):
                Xtr, Xte, ytr, yte = split(X, y, s)
                acc, zero, sc = _both_losses(Xtr, Xte, ytr, yte, s)
                auto = "triplets" if lc.prefers_triplets(sc) else "pairs"
                out.append((i, desc, s, loo_1nn(Xtr, ytr), tuple(knn_accuracy(Xtr, ytr, Xte, yte)), acc, auto, zero))
            log(f"problem {i}: {desc}")
    return out


LOSS_FAMILY_BINS = ((0.0, 0.6), (0.6, 0.8), (0.8, 0.9), (0.9, 0.95), (0.95, 1.01))


def loss_family_table(rows):
    """Markdown rows of :func:`loss_family`'s results: per bin of the problem's mean ``a0``, the mean 1-NN / 5-NN
    of each loss and of ``"auto"``, and the problems where the triplet loss is better / worse (mean 1-NN)."""
    per = {}
    for i, desc, s, a0, e, acc, auto, zero in rows:
        per.setdefault(i, []).append((a0, e, acc["pairs"], acc["triplets"], acc[auto], zero["pairs"], zero["triplets"]))
    probs = [(np.mean([r[0] for r in v]), *(np.mean([r[k] for r in v], axis=0) for k in (1, 2, 3, 4)),
              sum(r[5] for r in v), sum(r[6] for r in v)) for v in per.values()]
    lines = ["| Euclidean LOO 1-NN (train) | problems | Euclidean | pairs (default) | triplets | auto | "
             "triplets better / worse (1-NN) | zero metric (pairs / triplets fits) |",
             "|---|---:|---|---|---|---|---|---|"]
    for lo, hi in LOSS_FAMILY_BINS + ((0.0, 1.01),):
        sel = [p for p in probs if lo <= p[0] < hi]
        if not sel:
            continue
        m = [np.mean([p[k] for p in sel], axis=0) for k in (1, 2, 3, 4)]
        better = sum(p[3][0] > p[2][0] for p in sel)
        worse = sum(p[3][0] < p[2][0] for p in sel)
        label = "all" if (lo, hi) == (0.0, 1.01) else f"[{lo:g}, {min(hi, 1.0):g}{']' if hi > 1 else ')'}"
        lines.append(f"| {label} | {len(sel)} | " + " | ".join(f"{a[0]:.3f} / {a[1]:.3f}" for a in m)
                     + f" | {better} / {worse} | {sum(p[5] for p in sel)} / {sum(p[6] for p in sel)} |")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m logt.experiments.learner_defaults", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sweep", choices=sorted(SWEEPS),
                    help="instead of the grid: one sweep around the current defaults, 3 splits per data set")
    ap.add_argument("--family", action="store_true",
                    help="with --sweep: on the 60 random generated problems instead of the development sets")
    ap.add_argument("--outliers", action="store_true",
                    help="instead: 1-NN accuracy with one training row scaled up, with and without the outlier rule")
    ap.add_argument("--generated", action="store_true",
                    help="instead: Euclidean / MetricLearner() / NCA on seeded problems unlike the development sets")
    ap.add_argument("--loss-choice", action="store_true",
                    help="instead: pair loss / triplet loss / loss='auto' (by standard-error margin) per problem")
    ap.add_argument("--loss-family", action="store_true",
                    help="instead: pair loss / triplet loss / loss='auto' on 60 random generated problems, by class separation")
    args = ap.parse_args(argv)
    if args.loss_family:
        rows = loss_family(n_problems=8 if args.quick else 60, splits=1 if args.quick else 3,
                           log=lambda m: print(m, file=sys.stderr))
        print("\n".join(loss_family_table(rows)))
        return 0
    if args.loss_choice:
        res = loss_choice(quick=args.quick, log=lambda m: print(m, file=sys.stderr))
        labels = list(res[0][2])
        print("| problem | runs | " + " | ".join(f"{k} 1-NN / 5-NN" for k in labels) + " | triplets chosen (margin 0 / 1 / 2 se) |")
        print("|---|---:|" + "---|" * (len(labels) + 1))
        for kind, name, mean, chosen, n in res:
            cells = " | ".join(f"{mean[k][0]:.3f} / {mean[k][1]:.3f}" for k in labels)
            print(f"| {name} ({kind}) | {n} | {cells} | {' / '.join(str(v) for v in chosen.values())} |")
        return 0
    if args.generated:
        print("| problem (3 seeds) | Euclidean 1-NN / 5-NN | MetricLearner() | MetricLearner(check=False) | NCA | "
              "rows clipped | retries |")
        print("|---|---|---|---|---|---:|---:|")
        for name, e, a, c, b, nc, rt in generated(log=lambda m: print(m, file=sys.stderr)):
            print(f"| {name} | {e[0]:.3f} / {e[1]:.3f} | {a[0]:.3f} / {a[1]:.3f} | {c[0]:.3f} / {c[1]:.3f} | "
                  f"{b[0]:.3f} / {b[1]:.3f} | {nc} | {rt} |")
        return 0
    if args.outliers:
        print("| row factor | 1-NN without the rule (seeds 100-102) | with the rule | rows clipped |")
        print("|---:|---|---|---|")
        for f, off, on, nc in outlier_rows(log=lambda m: print(m, file=sys.stderr)):
            print(f"| {f:g} | {' / '.join(f'{a:.3f}' for a in off)} | {' / '.join(f'{a:.3f}' for a in on)} | "
                  f"{' / '.join(str(c) for c in nc)} |")
        return 0
    if args.sweep:
        res = sweep(SWEEPS[args.sweep], quick=args.quick, log=lambda m: print(m, file=sys.stderr), family=args.family)
        print("| setting | mean gain 1-NN | mean gain 5-NN | worst 1-NN | worst 5-NN | median fit s |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, g1, g5, w1, w5, sec in res:
            print(f"| {label} | {g1:+.3f} | {g5:+.3f} | {w1:+.3f} | {w5:+.3f} | {sec:.3f} |")
        return 0
    res = run(quick=args.quick)
    print("| setting | lam | T | mean gain 1-NN | mean gain 5-NN | worst 1-NN | worst 5-NN | fit s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for (label, lam, T), g1, g5, w1, w5, sec in sorted(res, key=lambda r: -(r[1] + r[2])):
        print(f"| {label} | {lam:g} | {T:,} | {g1:+.3f} | {g5:+.3f} | {w1:+.3f} | {w5:+.3f} | {sec:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
