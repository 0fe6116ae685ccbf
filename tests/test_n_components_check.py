"""``MetricLearner``'s check of an int ``n_components`` on wide input: the metric learned on the top-``k``
principal coordinates against those coordinates themselves (PCA to ``k``), by 1-NN on held-out rows (or
cross-fitted on small classes); the rule is :func:`logt.metric_learning.subspace.choose_rank_candidate`'s (PCA only
when it hits more rows)."""
import re
import warnings

import numpy as np
import pytest

from logt import MetricLearner
from logt._rng import check_rng
from logt._threads import single_threaded_blas
from logt.metric_learning import subspace as S
from logt.metric_learning._base import top_rows

pytest.importorskip("sklearn")


def rank_reference(hits):
    """The rule written out: the principal coordinates only with more hits (count them), a tie keeps the metric;
    then the default's directions only when their hits beat that choice's by more than one standard error of the
    paired difference (computed here by hand)."""
    choice = "subspace" if sum(hits["subspace"]) > sum(hits["learned"]) else "learned"
    if "default" in hits:
        diff = np.asarray(hits["default"], dtype=float) - np.asarray(hits[choice], dtype=float)
        se = np.sqrt(np.sum((diff - diff.mean()) ** 2) / (diff.size - 1) / diff.size)
        if diff.mean() > se:
            choice = "default"
    return choice


def _dense(seed, sep):
    from logt.experiments.highdim_data import dense_classification
    return dense_classification(500, 300, n_informative=4, n_classes=3, class_sep=sep, rng=seed)


def _recorder(monkeypatch):
    """A list filled with ``(Z's shape, components_)`` of every ``_fit_metric`` call from now on."""
    fits = []
    inner = MetricLearner._fit_metric

    def recording(self, Z, codes, gen, **kw):
        inner(self, Z, codes, gen, **kw)
        fits.append((Z.shape, self.components_.copy()))
    monkeypatch.setattr(MetricLearner, "_fit_metric", recording)
    return fits


def _default_candidate(X, codes, principal_rows, mean_rows):
    """The third candidate's coordinates ``(n, m)`` and directions ``(m, d)`` as the check builds them: the
    default's principal directions of the rows ``principal_rows`` (None: every row; their span checked against
    scikit-learn's PCA), then the class-mean and the standardized class-mean directions of the rows ``mean_rows``
    (orthonormal rows, checked)."""
    from sklearn.decomposition import PCA
    Xp = X if principal_rows is None else X[principal_rows]
    mean, P = S.default_principal(Xp, None)
    r = P.shape[0]
    Q = PCA(r, svd_solver="full").fit(Xp).components_
    np.testing.assert_allclose(np.linalg.svd(P @ Q.T, compute_uv=False), 1.0, atol=1e-8)
    P = np.vstack([P, S.class_mean_directions(X, codes, mean, P, rows=mean_rows)])
    P = np.vstack([P, S.standardized_mean_directions(X, codes, mean, P, rows=mean_rows)])
    np.testing.assert_allclose(P @ P.T, np.eye(P.shape[0]), atol=1e-10)
    return (X - mean) @ P.T, P


# (seed, class_sep, the check's choice): 500 x 300, 4 informative directions, 3 classes, n_components=8
PROBLEMS = [(0, 2.5, "subspace"), (3, 2.5, "learned"), (1, 2.5, "default"), (2, 2.5, "default")]


@pytest.mark.parametrize("seed, sep, choice", PROBLEMS)
def test_n_components_check_against_scikit_learn(seed, sep, choice, monkeypatch):
    from sklearn.neighbors import KNeighborsClassifier
    X, y = _dense(seed, sep)
    k = 8
    fits = _recorder(monkeypatch)
    ml = MetricLearner(n_components=k, rng=seed, T=20_000).fit(X, y)
    # the subspace and the held-out rows as the fit finds them (the principal directions from every row)
    ref = MetricLearner(n_components=k, rng=seed)
    with single_threaded_blas():                 # as in fit: the same sums, bit for bit
        _, _, fr = ref._subspace_fit(X, check_rng(seed), y.astype(np.intp))
    assert fr is not None and (~fr).sum() == ml.check_accuracy_["n_rows"]
    if choice != "default":                      # else subspace_ holds the default's directions (below)
        np.testing.assert_array_equal(ml.subspace_, ref.subspace_)
    Zs = (X - ref.subspace_mean_) @ ref.subspace_.T
    Zd, Pd = _default_candidate(X, y, None, fr)

    def held_out_hits(Z):
        return KNeighborsClassifier(1).fit(Z[fr], y[fr]).predict(Z[~fr]) == y[~fr]
    # the first fit: on the fit rows' k coordinates; the second: the third candidate's, on the default's directions
    assert fits[0][0] == (fr.sum(), k) and fits[1][0] == (fr.sum(), Pd.shape[0])
    Ld = fits[1][1][:k]                          # its metric truncated to rank k (it has at least k rows here)
    hits = {"learned": held_out_hits(Zs @ fits[0][1].T), "subspace": held_out_hits(Zs),
            "default": held_out_hits(Zd @ Ld.T)}
    c = ml.check_accuracy_
    assert set(c) == {"learned", "subspace", "default", "how", "n_rows"} and c["how"] == "held-out"   # no raw features
    for name, h in hits.items():
        assert c[name] == pytest.approx(h.mean())
    assert ml.metric_choice_ == rank_reference(hits) == choice
    assert ml.components_.shape == (k, X.shape[1]) and ml.n_components_ == k
    if choice == "learned":            # kept: learned again on every row
        assert len(fits) == 3 and fits[2][0] == (len(y), k)
        np.testing.assert_allclose(ml.components_, fits[2][1] @ ml.subspace_, rtol=1e-12, atol=1e-12)
    elif choice == "subspace":         # the principal coordinates themselves: PCA to k, no further fit
        assert len(fits) == 2
        np.testing.assert_array_equal(ml.components_, ml.subspace_)
        np.testing.assert_allclose(ml.components_ @ ml.components_.T, np.eye(k), atol=1e-12)
    else:                              # the default's directions: their metric learned again on every row, truncated
        assert len(fits) == 3 and fits[2][0] == (len(y), Pd.shape[0])
        np.testing.assert_allclose(ml.subspace_, Pd, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ml.components_, fits[2][1][:k] @ Pd, rtol=1e-9, atol=1e-12)
        assert ml.result_.x.shape[0] == Pd.shape[0]         # result_ is that refit's run


def test_the_problems_reach_every_choice():
    assert {p[-1] for p in PROBLEMS} == {"learned", "subspace", "default"}


@pytest.mark.parametrize("seed, choice", [(3, "learned"), (1, "default")])
def test_n_components_check_is_reproducible_and_off_with_check_false(seed, choice):
    X, y = _dense(seed, 2.5)
    a, b = (MetricLearner(n_components=8, rng=seed, T=20_000).fit(X, y) for _ in range(2))
    assert a.metric_choice_ == b.metric_choice_ == choice
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_array_equal(a.subspace_, b.subspace_)
    assert a.check_accuracy_ == b.check_accuracy_
    off = MetricLearner(n_components=8, rng=seed, T=20_000, check=False).fit(X, y)
    assert off.check_accuracy_ is None and off.metric_choice_ == "learned"
    if choice == "learned":
        np.testing.assert_array_equal(off.subspace_, a.subspace_)      # the same subspace, from every row


def test_n_components_on_few_features_is_not_checked():
    # few features (not wide): the metric on k principal coordinates is learned as before, unchecked
    g = np.random.default_rng(0)
    y = g.integers(3, size=300)
    X = g.standard_normal((300, 20))
    X[:, :3] += 3.0 * np.eye(3)[y]
    assert not S.uses_subspace(300, 20)
    on = MetricLearner(n_components=4, rng=0, T=20_000).fit(X, y)
    off = MetricLearner(n_components=4, rng=0, T=20_000, check=False).fit(X, y)
    assert on.check_accuracy_ is None and on.metric_choice_ == "learned"
    np.testing.assert_array_equal(on.components_, off.components_)


def test_n_components_check_cross_fits_small_classes(monkeypatch):
    """Too few rows to hold 20 out: every row is checked under the top principal directions of the other folds'
    rows (at most one fewer than those rows) and the metric learned there, against those directions alone and
    against the default's directions of the other folds' rows with their metric truncated to rank k."""
    from sklearn.decomposition import PCA
    from sklearn.neighbors import KNeighborsClassifier
    g = np.random.default_rng(7)
    y = g.integers(3, size=60)
    X = g.standard_normal((60, 300)) * np.geomspace(0.1, 10.0, 300)
    X[:, :3] += 3.0 * np.eye(3)[y]
    k = 50                                    # above the 44-46 rows each fold's subspace is found from
    fits, folds_seen = _recorder(monkeypatch), []
    inner_split = S.fold_split

    def split(codes, gen, n_folds=S.CROSSFIT_FOLDS):
        folds_seen.append(inner_split(codes, gen, n_folds))
        return folds_seen[-1]
    monkeypatch.setattr(S, "fold_split", split)
    ml = MetricLearner(n_components=k, rng=0, T=20_000).fit(X, y)
    c = ml.check_accuracy_
    assert c["how"] == "cross-fitted" and c["n_rows"] == 60
    assert set(c) == {"learned", "subspace", "default", "how", "n_rows"}
    folds = folds_seen[0]
    sizes = [int((folds != f).sum()) for f in range(S.CROSSFIT_FOLDS)]
    # the final fit, each fold's rank-k fit, then each fold's fit of the third candidate
    assert [f[0][0] for f in fits[:9]] == [60] + sizes + sizes
    hits = {name: np.zeros(60, dtype=bool) for name in ("learned", "subspace", "default")}
    for f in range(S.CROSSFIT_FOLDS):
        te, tr = folds == f, folds != f
        kf = int(tr.sum()) - 1
        assert fits[1 + f][0][1] == kf
        # the fold's directions: the span of scikit-learn's PCA of the other folds' rows
        mean, P = S.principal_subspace(X[tr], kf, None)[:2]
        Q = PCA(kf, svd_solver="full").fit(X[tr]).components_
        np.testing.assert_allclose(np.linalg.svd(P @ Q.T, compute_uv=False), 1.0, atol=1e-8)
        Z = (X - mean) @ P.T
        # the third candidate's: the default's directions of the other folds' rows, its metric truncated to k rows
        Zd, Pd = _default_candidate(X, y, tr, tr)
        assert fits[5 + f][0] == (tr.sum(), Pd.shape[0])
        for name, A in (("subspace", Z), ("learned", Z @ fits[1 + f][1].T), ("default", Zd @ fits[5 + f][1][:k].T)):
            hits[name][te] = KNeighborsClassifier(1).fit(A[tr], y[tr]).predict(A[te]) == y[te]
    for name, h in hits.items():
        assert c[name] == pytest.approx(h.mean()), name
    # measured: 0.37, 0.28 and 0.65 (the features' scales span 0.1..10, the classes live in 3 of them)
    assert ml.metric_choice_ == rank_reference(hits) == "default"
    # kept: the default's directions from every row, their metric learned on every row, truncated to k rows
    Zd, Pd = _default_candidate(X, y, None, None)
    assert len(fits) == 10 and fits[9][0] == (60, Pd.shape[0])
    np.testing.assert_allclose(ml.subspace_, Pd, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ml.components_, top_rows(fits[9][1], k) @ Pd, rtol=1e-9, atol=1e-12)
    assert ml.components_.shape == (k, 300)


def test_choose_rank_candidate_keeps_the_metric_unless_pca_hits_more():
    ones, zeros = np.ones(40), np.zeros(40)
    assert S.choose_rank_candidate({"learned": ones, "subspace": ones}) == "learned"          # a tie
    assert S.choose_rank_candidate({"learned": zeros, "subspace": zeros}) == "learned"
    one_more = ones.copy()
    one_more[0] = 0.0
    assert S.choose_rank_candidate({"learned": one_more, "subspace": ones}) == "subspace"     # by one row
    assert S.choose_rank_candidate({"learned": ones, "subspace": one_more}) == "learned"
    shares = np.full(40, 0.5)                                   # tied neighbours' shares: 0.5 x 40 = 20 hits
    assert S.choose_rank_candidate({"learned": shares, "subspace": np.r_[ones[:20], zeros[:20]]}) == "learned"


def test_a_tie_on_the_checked_rows_keeps_the_learned_metric():
    # many classes of unequal size under a shared nuisance (imbalanced_identity_problem, seed 5, problem 14): the
    # checked rows come from the large classes, where both candidates hit every row; PCA to 64 kept on that tie
    # (the plainest-first rule) scored 0.873 / 0.564 on the test rows (an even mix of the classes), below
    # Euclidean k-NN's 0.873 / 0.600, where the learned metric scores 1.000 / 1.000
    from logt.bench.learners_highdim import imbalanced_identity_problem
    g = np.random.default_rng(5)
    for _ in range(15):
        desc, Xtr, ytr, Xte, yte, _w = imbalanced_identity_problem(g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ml = MetricLearner(n_components=64, rng=0).fit(Xtr, ytr)
    c = ml.check_accuracy_
    assert c["how"] == "held-out" and c["learned"] == c["subspace"] == 1.0 and ml.metric_choice_ == "learned"
    A, B = ml.transform(Xtr), ml.transform(Xte)
    D = (B ** 2).sum(1)[:, None] + (A ** 2).sum(1)[None, :] - 2.0 * B @ A.T
    E = (Xte ** 2).sum(1)[:, None] + (Xtr ** 2).sum(1)[None, :] - 2.0 * Xte @ Xtr.T
    assert np.mean(ytr[D.argmin(1)] == yte) > np.mean(ytr[E.argmin(1)] == yte) + 0.05    # measured: 1.000, 0.873


@pytest.mark.parametrize("n", [3, 5, 9])
@pytest.mark.parametrize("k", [1, 64])
def test_n_components_check_on_a_handful_of_rows(n, k):
    # folds of one or two rows (principal directions of at most rows - 1), k above the rows: no error, k rows
    g = np.random.default_rng(n + k)
    X, y = g.standard_normal((n, 300)), np.arange(n) % 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ml = MetricLearner(n_components=k, rng=0, T=2000).fit(X, y)
    assert ml.components_.shape == (k, 300) and np.isfinite(ml.components_).all()
    assert ml.check_accuracy_["how"] == "cross-fitted" and ml.check_accuracy_["n_rows"] == n
    assert ml.metric_choice_ in ("learned", "subspace", "default")


@pytest.mark.parametrize("n, how", [(400, "held-out"), (60, "cross-fitted")])
def test_n_components_check_on_sparse_input(n, how):
    import scipy.sparse as sp
    g = np.random.default_rng(n)
    y = g.integers(3, size=n)
    X = sp.random(n, 3000, density=0.01, random_state=n, format="csr")
    X = sp.hstack([sp.csr_matrix(3.0 * np.eye(3)[y]), X], format="csr")           # 3 informative columns first
    ml = MetricLearner(n_components=16, rng=0, T=20_000).fit(X, y)
    assert ml.check_accuracy_["how"] == how and set(ml.check_accuracy_) == {"learned", "subspace", "how", "n_rows"}
    assert ml.components_.shape == (16, 3003)
    Xd = X.toarray()
    np.testing.assert_allclose(ml.transform(X), ml.transform(Xd), rtol=1e-12, atol=1e-12)


def test_a_zero_metric_on_the_checked_subspace_is_warned_as_checked():
    # photo patches at a small budget: the metric fitted on 75% of the rows comes out zero. Its warning says the
    # check follows (not that transform maps every point to 0): the check then keeps the principal coordinates
    pytest.importorskip("PIL", reason="reading scikit-learn's sample photographs needs Pillow")
    from logt import DegenerateMetricWarning
    from logt.experiments.highdim_data import photo_patches
    X, y = photo_patches(1500, size=18, grid=3, gain=0.0, rng=0)
    with pytest.warns(DegenerateMetricWarning, match="The check compares it with plain distances") as w:
        ml = MetricLearner(n_components=64, rng=0, T=2000).fit(X, y)
    assert len(w) == 1 and w[0].filename == __file__ and "maps every point to 0" not in str(w[0].message)
    assert ml.metric_choice_ == "subspace" and ml.check_accuracy_["learned"] < ml.check_accuracy_["subspace"]
    np.testing.assert_array_equal(ml.components_, ml.subspace_)


def test_chance_hits_against_a_direct_count():
    g = np.random.default_rng(0)
    codes = g.integers(4, size=90)
    ref, query = g.random(90) < 0.7, np.flatnonzero(g.random(90) < 0.3)
    # the hit rate of a neighbour drawn uniformly from ref, averaged over the query rows
    direct = np.mean([np.mean(codes[ref] == codes[q]) for q in query])
    assert S.chance_hits(codes, ref, query) == pytest.approx(direct, rel=1e-12)
    assert S.near_chance(np.r_[np.ones(30), np.zeros(70)], 0.25)                # 0.30: within 2 SE (0.087)
    assert not S.near_chance(np.r_[np.ones(45), np.zeros(55)], 0.25)            # 0.45: above


def _units_problem(seed, units):
    """900 rows (600 to fit, 300 new), 400 features, 4 classes told apart by 5 of them; with ``units`` each
    feature is multiplied by ``10^U(-3, 3)`` (so the largest variances are noise features')."""
    from logt.experiments.highdim_data import mixed_units
    X, y = mixed_units(900, 400, 4, 5, decades=3.0 if units else 0.0, rng=seed)
    return X[:600], y[:600], X[600:], y[600:]


def test_features_in_unrelated_units_keep_the_default_candidate():
    # features in unrelated units: the top 16 principal directions are noise, the rank-16 metric and PCA to 16 both
    # score chance on the held-out rows (measured 0.24 / 0.28 and 0.20 / 0.24, a random neighbour 0.25; on new rows
    # 0.26), the default's directions truncated to rank 16 0.53 / 0.83 (new rows, 1-NN: 0.58 / 0.80)
    from sklearn.neighbors import KNeighborsClassifier
    for seed in (0, 2):
        X, y, Xt, yt = _units_problem(seed, True)
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)            # above chance: no near-chance warning
            ml = MetricLearner(n_components=16, rng=0).fit(X, y)
        c = ml.check_accuracy_
        assert ml.metric_choice_ == "default" and ml.components_.shape == (16, 400)
        assert c["default"] > max(c["learned"], c["subspace"]) + 0.2
        off = MetricLearner(n_components=16, rng=0, check=False).fit(X, y)        # the top principal directions
        new_rows = [KNeighborsClassifier(1).fit(m.transform(X), y).score(m.transform(Xt), yt) for m in (ml, off)]
        assert new_rows[0] > 0.45 and new_rows[1] < 0.35
        # its rows: a metric on the default's directions, rank at most 16 (W = L^T L, PSD)
        W = ml.get_mahalanobis_matrix()
        assert np.linalg.matrix_rank(W) <= 16 and np.linalg.eigvalsh(W).min() > -1e-10 * np.abs(W).max()


def test_n_components_near_chance_is_warned():
    # labels drawn independently of the features: no candidate is above chance on the checked rows (measured 0.25,
    # 0.22 and 0.30; a random neighbour 0.25, two standard errors 0.07), and the fit says so, naming each candidate's
    # accuracy and the remedies
    g = np.random.default_rng(3)
    X, y = g.standard_normal((600, 400)) * 10.0 ** g.uniform(-3, 3, 400), g.integers(4, size=600)
    with pytest.warns(UserWarning, match="no candidate is above chance by more than two standard errors") as rec:
        ml = MetricLearner(n_components=16, rng=0).fit(X, y)
    text = " ".join(str(w.message) for w in rec)
    m = ml.check_accuracy_["n_rows"]
    chance = float(re.search(r"a random neighbour (\d\.\d+)", text).group(1))
    assert f"two standard errors {2 * np.sqrt(chance * (1 - chance) / m):.3f}" in text      # binomial, m rows
    assert "components_[:k]" in text and "PCA to 16" in text and "truncated to rank 16" in text
    assert ml.check_accuracy_["how"] == "held-out" and {"learned", "subspace", "default"} <= set(ml.check_accuracy_)
    # classes told apart by 5 features, in equal units: found (0.70 / 0.93 held out), no warning
    X, y, _, _ = _units_problem(0, False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        MetricLearner(n_components=16, rng=0).fit(X, y)


def test_choose_rank_candidate_takes_the_default_directions_only_when_ahead_by_a_standard_error():
    ones, zeros = np.ones(40), np.zeros(40)
    half = np.r_[ones[:20], zeros[:20]]
    # the same hits, or two rows more and one fewer (0.025 ahead, one standard error 0.043): the choice stays
    assert S.choose_rank_candidate({"learned": half, "subspace": half, "default": half}) == "learned"
    one_more = np.r_[zeros[:1], ones[:21], zeros[:18]]
    assert S.choose_rank_candidate({"learned": half, "subspace": half, "default": one_more}) == "learned"
    # ahead of the learned metric by 6 rows of 40 (0.15, SE 0.057): taken
    six_more = np.r_[ones[:26], zeros[:14]]
    assert S.choose_rank_candidate({"learned": half, "subspace": zeros, "default": six_more}) == "default"
    # ahead of the learned metric but not of PCA, which is the choice: not taken
    assert S.choose_rank_candidate({"learned": zeros, "subspace": six_more, "default": six_more}) == "subspace"
    g = np.random.default_rng(0)
    for _ in range(200):           # against the rule written out, on random hits (shares of ties included)
        hits = {c: g.choice([0.0, 0.5, 1.0], size=30, p=g.dirichlet(np.ones(3))) for c in
                ("learned", "subspace", "default")}
        assert S.choose_rank_candidate(hits) == rank_reference(hits)
