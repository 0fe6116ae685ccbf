"""The default's check of a full-rank metric (few features): the learned metric against plain Euclidean
distances, held out or cross-fitted, against scikit-learn's 1-NN on a replayed split; the final fit untouched."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from logt import DegenerateMetricWarning, MetricLearner
from logt.metric_learning import subspace as S

try:
    from ._check_rule import paired_reference
except ImportError:
    from _check_rule import paired_reference

FAST = dict(T=20_000, n_eval_pairs=2000, n_threads=1)


def _hidden_in_noise(n=300, seed=0):
    """3 classes on 3 small-scale features (0.01) beside 5 large-scale noise features (100): Euclidean
    distances see the noise only, a learned metric the classes (the check keeps it)."""
    g = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = np.hstack([0.01 * (2.0 * np.eye(3)[y] + g.standard_normal((n, 3))), 100.0 * g.standard_normal((n, 5))])
    return X, y


def _round_blobs(n=300, seed=0):
    """3 well separated isotropic classes in 10 raw features: Euclidean distances are as good as any metric
    (the check keeps them)."""
    g = np.random.default_rng(seed)
    y = np.arange(n) % 3
    return 6.0 * np.eye(10)[y] + g.standard_normal((n, 10)), y


def _replay(X, y, seed, **kw):
    """The check recomputed from outside: the split (or folds) from the generator the fit spawns first, the
    learned metric of ``check=False`` fits on the same rows with that generator, and scikit-learn's 1-NN."""
    from sklearn.neighbors import KNeighborsClassifier
    codes = np.unique(y, return_inverse=True)[1]
    cg = np.random.default_rng(seed).spawn(1)[0]
    Xe = X.toarray() if sp.issparse(X) else X

    def hits(A, tr, te):
        return KNeighborsClassifier(1, algorithm="brute").fit(A[tr], y[tr]).predict(A[te]) == y[te]

    T = kw["T"]
    fold_kw = dict(kw, T=max(int(T * S.FULL_RANK_CHECK_BUDGET), min(T, 4000)))     # fold fits: a quarter of T
    fr = S.holdout_split(codes, cg, min_rows=S.FULL_RANK_HOLDOUT_MIN)
    if fr is not None:
        ho = S.check_rows(~fr)
        m = MetricLearner(rng=cg, check=False, **kw).fit(X[fr], y[fr])               # held out: all of T
        A = np.asarray(X @ m.components_.T)
        return {"learned": hits(A, fr, ho), "euclidean": hits(Xe, fr, ho)}, "held-out"
    folds = S.fold_split(codes, cg)
    out = {"learned": np.zeros(len(y), bool), "euclidean": np.zeros(len(y), bool)}
    for f in range(S.CROSSFIT_FOLDS):
        te, tr = folds == f, folds != f
        m = MetricLearner(rng=cg, check=False, **fold_kw).fit(X[tr], y[tr])
        out["learned"][te] = hits(np.asarray(X @ m.components_.T), tr, te)
        out["euclidean"][te] = hits(Xe, tr, te)
    return out, "cross-fitted"


@pytest.mark.parametrize("problem, expected", [(_hidden_in_noise, "learned"), (_round_blobs, "euclidean"),
                                               (lambda: _hidden_in_noise(48, 1), None),
                                               (lambda: _round_blobs(40, 2), None),
                                               (lambda: _hidden_in_noise(2400, 6), "learned"),
                                               (lambda: _round_blobs(2400, 7), "euclidean")])
def test_check_against_a_replayed_split_and_scikit_learn(problem, expected):
    pytest.importorskip("sklearn")
    X, y = problem()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ml = MetricLearner(rng=5, **FAST).fit(X, y)
        ref, how = _replay(X, y, 5, **FAST)
    c = ml.check_accuracy_
    assert c["how"] == how and c["n_rows"] == ref["learned"].size
    assert (how == "held-out") == (len(y) >= 2000)             # 500 rows held out from ~2,000
    for name in ("learned", "euclidean"):
        assert c[name] == pytest.approx(ref[name].mean(), abs=1e-12)
    assert ml.metric_choice_ == paired_reference(ref, S.CHECK_Z)
    if expected is not None:
        assert ml.metric_choice_ == expected
    # the final fit is the check=False fit on every row, bit for bit; a kept Euclidean metric selects the features
    plain = MetricLearner(rng=5, check=False, **FAST).fit(X, y)
    assert np.array_equal(ml.result_.x, plain.result_.x)
    if ml.metric_choice_ == "learned":
        assert np.array_equal(ml.components_, plain.components_)
    else:
        assert np.array_equal(ml.components_, np.eye(X.shape[1])) and ml.n_components_ == X.shape[1]
        assert np.array_equal(ml.transform(X), X)


def test_check_keeps_what_is_better_on_new_points():
    """The two constructed problems on fresh test points: the kept metric is the better one there."""
    pytest.importorskip("sklearn")
    from sklearn.neighbors import KNeighborsClassifier
    for problem in (_hidden_in_noise, _round_blobs):
        X, y = problem(900, 3)
        ml = MetricLearner(rng=0, **FAST).fit(X[:300], y[:300])
        plain = MetricLearner(rng=0, check=False, **FAST).fit(X[:300], y[:300])

        def acc(est):
            A = est.transform(X)
            return KNeighborsClassifier(1).fit(A[:300], y[:300]).score(A[300:], y[300:])

        euclid = KNeighborsClassifier(1).fit(X[:300], y[:300]).score(X[300:], y[300:])
        assert acc(ml) >= max(acc(plain), euclid) - 0.01
    # measured: hidden in noise 0.80 (learned kept; Euclidean 0.34), round blobs 1.0 (Euclidean kept; learned 1.0)


def test_noise_labels_keep_euclidean_and_say_how_it_was_checked():
    """Labels independent of the features, tiny and small: the check keeps plain distances on most seeds."""
    g = np.random.default_rng(0)
    kept = []
    for s, n in enumerate((40, 60, 150, 300) * 2):
        X, y = g.standard_normal((n, 6)) * np.geomspace(0.1, 10, 6), g.integers(2, size=n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ml = MetricLearner(rng=s, **FAST).fit(X, y)
        assert ml.check_accuracy_["how"] == "cross-fitted" and ml.check_accuracy_["n_rows"] == n
        assert 0.2 < ml.check_accuracy_["learned"] < 0.8
        kept.append(ml.metric_choice_)
    assert kept.count("euclidean") >= 6, kept



def test_near_chance_is_warned_on_few_features_and_signal_is_not():
    """Labels independent of 10 features: neither the learned metric nor Euclidean distances hit the checked rows
    above a random neighbour by two standard errors, and the fit says so at its caller's line, with the
    accuracies, the margin, what it keeps and the remedies; classes with signal: no such warning."""
    import re
    g = np.random.default_rng(0)
    X, y = g.standard_normal((300, 10)), g.integers(3, size=300)
    with pytest.warns(UserWarning, match="no candidate is above chance by more than two standard errors") as rec:
        ml = MetricLearner(rng=0, **FAST).fit(X, y)
    (w,) = [w for w in rec if "above chance" in str(w.message)]
    text, acc = str(w.message), ml.check_accuracy_
    assert w.filename == __file__ and acc["how"] == "cross-fitted" and acc["n_rows"] == 300
    chance = float(re.search(r"a random neighbour (\d\.\d+)", text).group(1))
    assert chance == pytest.approx(np.sum(np.bincount(y) ** 2) / 300 ** 2, abs=5e-4)     # every row, cross-fitted
    assert f"two standard errors {2 * np.sqrt(chance * (1 - chance) / 300):.3f}" in text
    assert f"the learned metric {acc['learned']:.3f}; plain Euclidean distances {acc['euclidean']:.3f}" in text
    kept = {"learned": "the learned metric", "euclidean": "plain Euclidean distances"}[ml.metric_choice_]
    assert f"It keeps {kept}" in text and "no distance between rows captures" in text and "numpy.log1p(X)" in text
    X, y = _hidden_in_noise(300, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        MetricLearner(rng=0, **FAST).fit(X, y)

def test_a_zero_metric_keeps_euclidean_with_a_warning_that_says_so():
    """A checkerboard: no Mahalanobis metric brings class-mates closer (the pair loss's W is 0; its full-batch
    optimum is checked in tests/test_zero_metric.py): plain distances, warned."""
    X = np.array([(i, j) for i in range(8) for j in range(8)], dtype=float)
    y = (X.sum(1) % 2).astype(int)
    with pytest.warns(DegenerateMetricWarning, match="keeps plain Euclidean distances") as w:
        ml = MetricLearner(rng=0, loss="pairs", **FAST).fit(X, y)
    assert w[0].filename == __file__ and "try loss='softmax'" in str(w[0].message)
    assert ml.metric_choice_ == "euclidean" and ml.check_accuracy_ is None
    assert np.array_equal(ml.components_, np.eye(2))
    with pytest.warns(DegenerateMetricWarning, match="maps every point to 0"):
        off = MetricLearner(rng=0, check=False, loss="pairs", **FAST).fit(X, y)
    assert not off.components_.any() and off.metric_choice_ == "learned"


def test_common_scale_and_sparse_input_do_not_change_the_check():
    X, y = _hidden_in_noise(200, 4)
    a = MetricLearner(rng=1, **FAST).fit(X, y)
    b = MetricLearner(rng=1, **FAST).fit(1000.0 * X, y)
    assert a.metric_choice_ == b.metric_choice_
    assert a.check_accuracy_ == b.check_accuracy_
    # sparse input: the same check as dense input where the two fits agree (unscaled, unwhitened, balanced pairs;
    # tests/test_metric_learner.py), the Euclidean candidate's 1-NN taking CSR references
    Xp = np.abs(X) / np.abs(X).max(axis=0) / 2
    kw = dict(FAST, scaling=None, whiten=None, sampling="balanced")
    d = MetricLearner(rng=1, **kw).fit(Xp, y)
    s = MetricLearner(rng=1, **kw).fit(sp.csr_matrix(Xp), y)
    assert d.check_accuracy_ == s.check_accuracy_ and d.metric_choice_ == s.metric_choice_
    assert np.abs(d.get_mahalanobis_matrix() - s.get_mahalanobis_matrix()).max() <= 1e-9


@pytest.mark.parametrize("n", [300, 2400])
def test_an_offset_far_from_the_origin_does_not_change_the_check(n):
    # raw features near 1e9 (timestamps, ids): the check's 1-NN distances are those of the centred data, so
    # the same choice and nearly the same hits (the input itself keeps ~1e-7 of each value); before, the
    # expanded distances had no digits left and both candidates scored at chance (Euclidean kept)
    X, y = _hidden_in_noise(n, 8)
    a = MetricLearner(rng=3, **FAST).fit(X, y)
    b = MetricLearner(rng=3, **FAST).fit(X + 1e9, y)
    assert a.metric_choice_ == b.metric_choice_ == "learned"
    for c in ("learned", "euclidean"):
        assert abs(a.check_accuracy_[c] - b.check_accuracy_[c]) <= 0.02
    assert b.check_accuracy_["learned"] > 0.6            # 3 classes: far above chance


def test_nn1_hits_takes_sparse_references():
    g = np.random.default_rng(2)
    R = sp.random(120, 9, density=0.3, random_state=3, format="csr")
    Q = g.standard_normal((30, 9))
    cr, cq = g.integers(3, size=120), g.integers(3, size=30)
    assert np.array_equal(S.nn1_hits(R, cr, Q, cq, block=7), S.nn1_hits(R.toarray(), cr, Q, cq))
    assert np.array_equal(S.nn1_hits(R, cr, sp.csr_matrix(Q), cq), S.nn1_hits(R.toarray(), cr, Q, cq))


def test_check_false_and_paper_skip_the_check_and_refits_reset_it():
    X, y = _round_blobs(120, 5)
    off = MetricLearner(rng=0, check=False, **FAST).fit(X, y)
    assert off.metric_choice_ == "learned" and off.check_accuracy_ is None
    assert MetricLearner.paper(rng=0, T=20_000).fit(X, y).check_accuracy_ is None
    ml = MetricLearner(rng=0, **FAST).fit(X, y)
    assert ml.check_accuracy_ is not None
    ml.set_params(check=False).fit(X, y)                  # a refit does not keep the previous fit's check
    assert ml.check_accuracy_ is None and ml.metric_choice_ == "learned"
    # wide input: check=False learns on the subspace from every row, no held-out rows
    g = np.random.default_rng(1)
    Xw, yw = g.standard_normal((90, 300)), np.arange(90) % 3
    Xw[:, :3] += 3.0 * np.eye(3)[yw]
    w = MetricLearner(rng=0, check=False, **FAST).fit(Xw, yw)
    assert w.subspace_ is not None and w.metric_choice_ == "learned" and w.check_accuracy_ is None
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match="check must be True or False"):
            MetricLearner(check=bad).fit(X, y)


@pytest.mark.parametrize("d", [4, 400])
def test_a_class_of_one_row_does_not_break_the_cross_fitted_check(d):
    """29 rows of one class and 1 of another: the fold holding the single row has one class left to learn from
    (it used to raise there); that fold is not fitted and its rows count as misses of the learned metric."""
    g = np.random.default_rng(0)
    X, y = g.standard_normal((30, d)), np.r_[np.zeros(29, int), 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ml = MetricLearner(rng=0, **FAST).fit(X, y)
    assert ml.check_accuracy_["how"] == "cross-fitted" and ml.metric_choice_ in ("euclidean", "subspace")
    assert ml.transform(X).shape[0] == 30
    assert S.can_learn(np.array([0, 0, 1])) and not S.can_learn(np.array([0, 0, 0]))
    assert not S.can_learn(np.array([0, 1, 2])) and not S.can_learn(np.array([1, 1, 1, 1]))


def test_the_check_never_breaks_a_fit_that_works_without_it():
    """Random tiny problems (3-44 rows, 1-150 features, 2-4 classes of any sizes, constant columns, sparse
    input, every loss and sampling): wherever check=False fits, the checked default fits too and maps to finite
    values (a class of one row once broke the cross-fitted folds)."""
    g = np.random.default_rng(42)
    fitted = 0
    for t in range(60):
        n, d, C = int(g.integers(3, 45)), int(g.choice([1, 2, 5, 12, 150])), int(g.integers(2, 5))
        X, y = g.standard_normal((n, d)) * (10.0 ** g.uniform(-3, 3, d)), g.integers(C, size=n)
        if g.random() < 0.3:
            y[0] = C                                        # a class of one row
        if g.random() < 0.2:
            X[:, :max(1, d // 2)] = 1.0
        if g.random() < 0.2:
            X = sp.csr_matrix(np.abs(X) * (g.random(X.shape) < 0.4))
        kw = dict(rng=t, T=2000)
        if g.random() < 0.3:
            kw["loss"] = str(g.choice(["triplets", "softmax", "auto", "pairs"]))
        if g.random() < 0.2:
            kw["sampling"] = str(g.choice(["uniform", "balanced"]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                MetricLearner(check=False, **kw).fit(X, y)
            except (ValueError, TypeError):
                continue                                    # an input the learner rejects either way
            ml = MetricLearner(**kw).fit(X, y)
        assert np.isfinite(ml.transform(X)).all() and ml.metric_choice_ in ("learned", "subspace", "euclidean")
        fitted += 1
    assert fitted >= 50
