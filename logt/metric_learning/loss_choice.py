"""``MetricLearner(loss="auto")`` (opt-in): the pair or the triplet loss, chosen per problem by cross-validation.

Neither loss wins everywhere (docs/evidence/learner-defaults.md): the triplet loss
(:class:`logt.oracles.TripletMetricLearning`) gives the better 1-NN on small, well-separated
classes (iris), the pair loss on overlapping ones (the ``make_classification`` development
sets). So ``"auto"`` measures it on the training data: ``CV_FOLDS``-fold stratified
cross-validation of both losses (every other parameter as given, the same folds for both),
scored by held-out k-NN accuracy in the learned metric, averaged over ``k`` in ``CV_KS``. Each
training point is held out once, so the comparison is paired point by point: the triplet loss is
chosen only when its mean gain exceeds ``CV_SE_MARGIN`` standard errors of that paired
difference (the one-standard-error rule: the pair loss, the better one on the development
sets, stays unless the evidence against it is clear).

Cross-validation fits each loss ``CV_FOLDS`` times, about 7x the cost of one fit, so it runs only
where a fit is cheap: dense data with ``n d^2 <= CV_MAX_WORK`` (``n`` rows, ``d`` features; one
point-path gradient costs ``~2 n d^2`` flops) and at least ``CV_FOLDS`` points in every class
(each training fold then keeps two). Elsewhere ``"auto"`` is the pair loss, with no extra cost.
"""
import warnings

import numpy as np
import scipy.sparse as sp

from logt.metric_learning._base import DegenerateMetricWarning

__all__ = ["LOSSES", "CV_FOLDS", "CV_KS", "CV_MAX_WORK", "CV_SE_MARGIN", "choose_loss", "prefers_triplets", "cv_applies", "knn_accuracy", "knn_correct",
           "stratified_folds"]

LOSSES = ("auto", "pairs", "triplets", "softmax")
CV_FOLDS = 3
CV_KS = (1, 5)
CV_MAX_WORK = 2**20
CV_SE_MARGIN = 1.0


def cv_applies(X, codes):
    """Whether ``loss="auto"`` cross-validates on ``X`` (n, d) with class codes ``codes`` (n,)."""
    n, d = X.shape
    return (not sp.issparse(X)) and n * d * d <= CV_MAX_WORK and np.bincount(codes).min() >= CV_FOLDS


def stratified_folds(codes, n_folds, gen):
    """(n,) fold index in ``0..n_folds-1``: each class's points in a random order (``gen``), dealt
    round-robin, so every fold holds ``floor`` or ``ceil`` of ``count / n_folds`` of each class."""
    codes = np.asarray(codes)
    fold = np.empty(len(codes), dtype=np.int64)
    for c in np.unique(codes):
        idx = np.flatnonzero(codes == c)
        fold[gen.permutation(idx)] = np.arange(len(idx)) % n_folds
    return fold


def knn_correct(Ztr, ctr, Zte, cte, k):
    """(p,) bool: whether each ``Zte`` row's ``k``-NN majority class (Euclidean, among the ``Ztr``
    rows) is its class. Ztr (m, r), Zte (p, r) float arrays; ctr (m,), cte (p,) int class codes.
    Distance ties go to the lower index, vote ties to the lower class code."""
    k = min(int(k), Ztr.shape[0])
    sq = (np.einsum("ij,ij->i", Zte, Zte)[:, None] + np.einsum("ij,ij->i", Ztr, Ztr)[None, :]
          - 2.0 * (Zte @ Ztr.T))
    near = np.argsort(sq, axis=1, kind="stable")[:, :k]
    votes = np.zeros((Zte.shape[0], int(max(ctr.max(), cte.max())) + 1))
    np.add.at(votes, (np.repeat(np.arange(Zte.shape[0]), k), ctr[near].ravel()), 1.0)
    return votes.argmax(axis=1) == cte


def knn_accuracy(Ztr, ctr, Zte, cte, k):
    """The fraction of :func:`knn_correct`."""
    return float(np.mean(knn_correct(Ztr, ctr, Zte, cte, k)))


def choose_loss(est, X, y, codes, gen):
    """``("pairs" | "triplets", scores)`` for ``est`` (a :class:`MetricLearner` with ``loss="auto"``)
    on its training data: X (n, d) the raw input, y (n,) labels, codes (n,) their class codes,
    gen a ``numpy.random.Generator`` for the folds and the fits. ``scores``: ``{"pairs": a,
    "triplets": a, "se": e}``, each loss's held-out k-NN accuracy and the standard error of their
    paired difference; None when cross-validation does not apply (:func:`cv_applies`)."""
    if not cv_applies(X, codes):
        return "pairs", None
    fold = stratified_folds(codes, CV_FOLDS, gen)
    seeds = gen.integers(2**63, size=CV_FOLDS)
    params = est.get_params(deep=False)
    correct = {}
    for loss in ("pairs", "triplets"):
        c = np.zeros((len(codes), len(CV_KS)))
        for f in range(CV_FOLDS):
            tr, te = fold != f, fold == f
            with warnings.catch_warnings():       # a zero metric is scored (by chance-level k-NN), not reported
                warnings.simplefilter("ignore", DegenerateMetricWarning)
                sub = type(est)(**{**params, "loss": loss, "rng": int(seeds[f])}).fit(X[tr], y[tr])
            Ztr, Zte = sub.transform(X[tr]), sub.transform(X[te])
            for a, k in enumerate(CV_KS):
                c[te, a] = knn_correct(Ztr, codes[tr], Zte, codes[te], k)
        correct[loss] = c.mean(axis=1)
    diff = correct["triplets"] - correct["pairs"]
    scores = {"pairs": float(correct["pairs"].mean()), "triplets": float(correct["triplets"].mean()),
              "se": float(diff.std(ddof=1) / np.sqrt(len(diff)))}
    return ("triplets" if prefers_triplets(scores) else "pairs"), scores


def prefers_triplets(scores, margin=CV_SE_MARGIN):
    """The rule on :func:`choose_loss`'s ``scores``: the triplet loss's gain is positive and above
    ``margin`` standard errors. False for ``scores=None`` (no cross-validation)."""
    if scores is None:
        return False
    gain = scores["triplets"] - scores["pairs"]
    return gain > 0 and gain > margin * scores["se"]
