"""The learners comparison report runs (smoke test on wine, no peers) and formats its table."""
import pytest

pytest.importorskip("sklearn")

from logt.bench import learners  # noqa: E402


def test_wine_rows_and_table(monkeypatch):
    monkeypatch.setenv("LOGT_METRIC_LEARN_PYTHON", "/nonexistent/python")
    rows = learners.evaluate("wine", peers=True, log=lambda m: None)
    by = {r["method"]: r for r in rows}
    assert set(by) == {"Euclidean", "MetricLearner()", "MetricLearner(check=False)", "MetricLearner.paper()", "NCA",
                       "LMNN", "ITML", "MMC", "SCML"}
    for m in ("Euclidean", "MetricLearner()", "MetricLearner(check=False)", "MetricLearner.paper()", "NCA"):
        assert 0.8 <= by[m]["acc1"] <= 1.0 and 0.8 <= by[m]["acc5"] <= 1.0
    assert by["LMNN"]["acc1"] is None and "not found" in by["LMNN"]["note"]
    text = learners.format_section(rows)
    assert text.count("| wine |") == 9 and "NCA time / this" in text


def test_repeated_splits_table():
    res = learners.evaluate_splits("wine", n_splits=2, log=lambda m: None)
    by = {r["method"]: r for r in res}
    assert set(by) == {"Euclidean", "MetricLearner()", "MetricLearner(check=False)", "NCA"}
    for r in res:
        assert r["acc1"].shape == (2,) and ((0.8 <= r["acc1"]) & (r["acc1"] <= 1.0)).all()
    # split 0 is the single-split table's split: the same Euclidean accuracy
    single = {r["method"]: r for r in learners.evaluate("wine", peers=(), log=lambda m: None)}
    assert by["Euclidean"]["acc1"][0] == single["Euclidean"]["acc1"]
    assert by["MetricLearner()"]["acc1"][0] == single["MetricLearner()"]["acc1"]
    assert learners._our_learner("MetricLearner()", 3).get_params()["check"] is True
    assert learners._our_learner("MetricLearner(check=False)", 3).get_params()["check"] is False
    assert learners._our_learner("MetricLearner.paper()", 3).get_params()["sampling"] == "uniform"
    text = learners.format_splits({"wine": res})
    assert text.count("| wine |") == 4 and "1-NN mean (se)" in text


def test_repeated_splits_fit_nca_on_adults_subsample(monkeypatch):
    # on all of Adult NCA's n x n matrices need tens of GB (the splits mode was killed for memory): it gets the
    # single-split table's stratified subsample, drawn per split
    import numpy as np
    from sklearn.neighbors import NeighborhoodComponentsAnalysis
    g = np.random.default_rng(0)
    X, y = g.standard_normal((2600, 4)), np.arange(2600) % 2
    monkeypatch.setattr(learners, "load", lambda ds, d, split=0: (X[:2300], y[:2300], X[2300:], y[2300:], "dense"))
    seen = []
    fit = NeighborhoodComponentsAnalysis.fit

    def recording_fit(self, A, b):
        seen.append((A.shape[0], np.bincount(b).tolist(), A.copy()))
        self.max_iter = 2                  # what is fitted on is the point, not how well (a 2,000-row NCA is slow)
        return fit(self, A, b)
    monkeypatch.setattr(NeighborhoodComponentsAnalysis, "fit", recording_fit)
    learners.evaluate_splits("adult", n_splits=2, log=lambda m: None)
    assert [r[:2] for r in seen] == [(2000, [1000, 1000])] * 2 and not np.array_equal(seen[0][2], seen[1][2])
    seen.clear()
    learners.evaluate_splits("wine", n_splits=1, log=lambda m: None)        # small sets: every training row
    assert seen[0][0] == 2300


def test_highdim_rows_against_direct_knn():
    pytest.importorskip("sklearn", reason="the high-dimensional rows use scikit-learn")
    from sklearn.model_selection import train_test_split
    import numpy as np
    from sklearn.neighbors import KNeighborsClassifier, NeighborhoodComponentsAnalysis
    from logt.bench.learners_highdim import directions_text, evaluate_set, format_section
    from logt.experiments.highdim_data import shifted_digits
    X, y = shifted_digits(400, canvas=20, size=12, max_shift=2, rng=3)
    rows = evaluate_set("tiny", X, y, n_components=16, nca=True)
    assert [r["method"] for r in rows] == ["Euclidean", "PCA(16)", "MetricLearner()", "NCA(16)",
                                           "NCA(16), X / max|X|", "MetricLearner(n_components=16)"]
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    assert rows[0]["acc1"] == KNeighborsClassifier(1).fit(Xtr, ytr).score(Xte, yte)
    assert all(0.0 <= r["acc1"] <= 1.0 and 0.0 <= r["acc5"] <= 1.0 for r in rows)
    # the rescaled NCA: the same estimator on X / max|X_train|, its map applied to the rescaled test rows
    s = np.abs(Xtr).max()
    nca = NeighborhoodComponentsAnalysis(n_components=16, max_iter=50, random_state=0).fit(Xtr / s, ytr)
    Z, Zt = nca.transform(Xtr / s), nca.transform(Xte / s)
    assert rows[4]["acc1"] == KNeighborsClassifier(1).fit(Z, ytr).score(Zt, yte)
    assert rows[4]["n_iter"] == nca.n_iter_ and f"stopped after {nca.n_iter_}" in rows[4]["note"]
    # the default's note: its rank and projections and, for a kept learned metric, what its subspace spans
    from logt import MetricLearner
    est = MetricLearner(rng=0).fit(Xtr, ytr)
    assert rows[2]["note"].startswith(f"rank {est.n_components_}, {est.n_projections_} projections")
    if est.metric_choice_ == "learned":
        assert rows[2]["note"].endswith(f"on {est.subspace_.shape[0]} directions ({directions_text(est)})")
    # n_components: its rank and projections and, when its check kept them, the principal or the default's directions
    e16 = MetricLearner(n_components=16, rng=0).fit(Xtr, ytr)
    kept = {"subspace": ", the top 16 principal directions (the check's choice)",
            "default": f", the default's {e16.subspace_.shape[0]} directions' metric truncated to rank 16 (the check's "
                       "choice)"}.get(e16.metric_choice_, "")
    assert rows[5]["note"] == f"rank 16, {e16.n_projections_} projections{kept}"
    assert rows[5]["acc1"] == KNeighborsClassifier(1).fit(e16.transform(Xtr), ytr).score(e16.transform(Xte), yte)
    table = format_section(rows)
    assert table.count("| tiny |") == 6 and "| rescaled NCA time / this |" in table
    import re
    rows_md = [line for line in table.splitlines() if line.startswith("|")]
    assert {len(re.split(r"(?<!\\)\|", line)) - 2 for line in rows_md} == {8}     # "max|X|" escaped: 8 cells
    assert "| NCA(16), X / max\\|X\\| |" in table
    cells = next(line for line in table.splitlines() if "| MetricLearner() |" in line).split(" | ")
    ratio = rows[4]["seconds"] / rows[2]["seconds"]
    assert cells[6] == f"{ratio:.1f}x"


def test_highdim_split_means_average_the_single_split_rows():
    pytest.importorskip("sklearn", reason="the high-dimensional rows use scikit-learn")
    import numpy as np
    from logt.bench.learners_highdim import evaluate_set, split_means
    from logt.experiments.highdim_data import shifted_digits
    X, y = shifted_digits(300, canvas=20, size=12, max_shift=2, rng=4)
    table = split_means(["tiny"], n_splits=2, data={"tiny": (X, y)}, log=lambda m: None)
    runs = [evaluate_set("tiny", X, y, rng=s) for s in range(2)]
    lines = {line.split(" | ")[1].replace("\\|", "|"): line.split(" | ") for line in table.splitlines()[2:]}
    assert list(lines) == [r["method"] for r in runs[0]]
    for i, r in enumerate(runs[0]):
        cells = lines[r["method"]]
        assert float(cells[2]) == pytest.approx(np.mean([run[i]["acc1"] for run in runs]), abs=5e-4)
        assert float(cells[3]) == pytest.approx(np.mean([run[i]["acc5"] for run in runs]), abs=5e-4)
    assert lines["MetricLearner()"][5].endswith("x") and lines["MetricLearner()"][6].endswith("x |")
    assert lines["Euclidean"][4] == "-" and lines["Euclidean"][5] == "-"


class _Draws:
    """A stand-in Generator that returns queued draws (integers, uniform, random) in order."""

    def __init__(self, *values):
        self.values = list(values)

    def _next(self, *args, **kwargs):
        return self.values.pop(0)

    integers = uniform = random = _next


def test_random_problem_gives_enough_informative_directions_for_its_classes():
    pytest.importorskip("sklearn")
    import numpy as np
    from logt.bench.learners_highdim import random_problem
    # dense, n = 400, d = 200, 3 informative directions drawn for 7 classes (make_classification needs
    # 2 * 7 <= 2**n_informative: the generator raises it to 4), class_sep, light tails, data seed
    desc, X, y = random_problem(_Draws(0, 400, 200, 3, 7, 1.0, 0.9, 5))
    assert desc == "dense n=400 d=200" and X.shape == (400, 200) and np.unique(y).size == 7


def test_highdim_random_sweep_is_seeded_and_matches_direct_knn():
    pytest.importorskip("sklearn")
    import numpy as np
    from sklearn.model_selection import train_test_split
    from sklearn.neighbors import KNeighborsClassifier

    from logt import MetricLearner
    from logt.bench import learners_highdim as LH
    d1, X1, y1 = LH.random_problem(np.random.default_rng(3))
    d2, X2, y2 = LH.random_problem(np.random.default_rng(3))
    dense = X1.toarray() if hasattr(X1, "toarray") else X1
    assert d1 == d2 and np.array_equal(dense, X2.toarray() if hasattr(X2, "toarray") else X2)
    assert np.array_equal(y1, y2)
    rows = LH.random_sweep(1, seed=3, log=lambda m: None)
    assert len(rows) == 1 and rows[0]["problem"] == d1
    Xtr, Xte, ytr, yte = train_test_split(X1, y1, test_size=0.3, stratify=y1, random_state=0)
    est = MetricLearner(rng=0).fit(Xtr, ytr)
    direct = KNeighborsClassifier(1).fit(est.transform(Xtr), ytr).score(est.transform(Xte), yte)
    assert rows[0]["default"][0] == pytest.approx(direct)
    assert rows[0]["euclid"][0] == pytest.approx(KNeighborsClassifier(1).fit(Xtr, ytr).score(Xte, yte))


def test_moderate_problem_draws_each_kind_between_the_paths():
    pytest.importorskip("sklearn")
    import numpy as np
    from logt.bench.learners_highdim import moderate_problem
    # sequences (kind 2), data seed 9, n = 300, length 40, 3 classes, motif 6 letters, mutate, bias
    desc, X, y = moderate_problem(_Draws(2, 9, 300, 40, 3, 6, 0.3, 0.2))
    assert desc == "sequences n=300 length=40 C=3" and X.shape == (300, 160) and np.unique(y).size == 3
    assert np.all(X.reshape(300, 40, 4).sum(axis=2) == 1)
    # every kind lands between the full-rank path's 128 varying features and 512 (digits: 13-22 px canvases)
    for seed in range(12):
        desc, X, y = moderate_problem(np.random.default_rng(seed))
        active = int((np.asarray(X).std(axis=0) > 0).sum())
        assert 128 < X.shape[1] <= 512 and active > 64, (desc, X.shape, active)


def test_moderate_sweep_is_seeded_and_matches_direct_knn():
    pytest.importorskip("sklearn")
    import numpy as np
    from sklearn.model_selection import train_test_split
    from sklearn.neighbors import KNeighborsClassifier

    from logt import MetricLearner
    from logt.bench import learners_highdim as LH
    d1, X1, y1 = LH.moderate_problem(np.random.default_rng(2))
    d2, X2, y2 = LH.moderate_problem(np.random.default_rng(2))
    assert d1 == d2 == "spectra n=485 d=244" and np.array_equal(X1, X2) and np.array_equal(y1, y2)
    lines = []
    rows = LH.moderate_sweep(1, seed=2, log=lines.append)
    assert len(rows) == 1 and rows[0]["problem"] == d1 and "problems:" in lines[-1]
    Xtr, Xte, ytr, yte = train_test_split(X1, y1, test_size=0.3, stratify=y1, random_state=0)
    est = MetricLearner(rng=0).fit(Xtr, ytr)
    assert est.subspace_ is not None and rows[0]["choice"] == est.metric_choice_     # the wide path
    direct = KNeighborsClassifier(5).fit(est.transform(Xtr), ytr).score(est.transform(Xte), yte)
    assert rows[0]["default"][1] == pytest.approx(direct)
    assert rows[0]["euclid"][0] == pytest.approx(KNeighborsClassifier(1).fit(Xtr, ytr).score(Xte, yte))


def _drawn_twice(problem, i, seed):
    """``problem(i, rng)`` drawn twice from ``seed``: the draws are equal (returned)."""
    import numpy as np
    a, b = problem(i, np.random.default_rng(seed)), problem(i, np.random.default_rng(seed))
    assert a[0] == b[0] and all(np.array_equal(u, v) for u, v in zip(a[1:], b[1:]))
    return a


def test_tiny_sweep_is_seeded_cross_fits_and_matches_direct_knn():
    pytest.importorskip("sklearn")
    import numpy as np
    from sklearn.neighbors import KNeighborsClassifier

    from logt import MetricLearner
    from logt.bench import learners_highdim as LH
    a = _drawn_twice(LH.tiny_problem, 1, 5)
    assert a[0].startswith("dense")
    desc, Xtr, ytr, Xte, yte = a
    assert 30 <= Xtr.shape[0] < 80 and Xte.shape[0] == LH.TINY_TEST_ROWS
    lines = []
    rows = LH.tiny_sweep(1, seed=5, log=lines.append)
    assert len(rows) == 1 and rows[0]["problem"].startswith("noise") and "problems:" in lines[-1]
    g = np.random.default_rng(5)
    _, Xtr, ytr, Xte, yte = LH.tiny_problem(0, g)
    est = MetricLearner(rng=0).fit(Xtr, ytr)
    assert est.check_accuracy_["how"] == "cross-fitted" and rows[0]["choice"] == est.metric_choice_
    direct = KNeighborsClassifier(5).fit(est.transform(Xtr), ytr).score(est.transform(Xte), yte)
    assert rows[0]["default"][1] == pytest.approx(direct)


def test_lowdim_sweep_is_seeded_and_matches_direct_fits():
    pytest.importorskip("sklearn")
    import numpy as np
    from sklearn.neighbors import KNeighborsClassifier

    from logt import MetricLearner
    from logt.bench import learners_lowdim as LL
    a = _drawn_twice(LL.lowdim_problem, 3, 5)
    assert a[0] == "noise"
    kind, Xtr, ytr, Xte, yte = a
    assert Xtr.shape[0] >= max(Xtr.shape[1] + 2, 25) and Xte.shape[0] == LL.LOWDIM_TEST_ROWS
    kinds = [LL.lowdim_problem(i, np.random.default_rng(i))[0] for i in range(7)]
    assert kinds[:6] == list(LL.LOWDIM_KINDS[:6]) and kinds[6].startswith("real_")
    lines = []
    rows = LL.lowdim_sweep(2, seed=5, log=lines.append)
    assert [r["problem"].split()[0] for r in rows] == ["digits", "dense_scaled"]
    assert lines[-4].startswith("learned: 2 problems") and lines[-3].startswith("default: 2 problems")
    assert lines[-1] == (f"default fits with success=False: {sum(not r['success'] for r in rows)} of 2; "
                         f"re-run by T='auto': {sum(r['regrown'] for r in rows)}")
    g = np.random.default_rng(5)
    for i, r in enumerate(rows):
        _, Xtr, ytr, Xte, yte = LL.lowdim_problem(i, g)
        est = MetricLearner(rng=i).fit(Xtr, ytr)
        plain = MetricLearner(rng=i, check=False).fit(Xtr, ytr)
        assert r["choice"] == est.metric_choice_ and r["how"] == est.check_accuracy_["how"]
        for key, e in (("default", est), ("learned", plain)):
            direct = KNeighborsClassifier(5).fit(e.transform(Xtr), ytr).score(e.transform(Xte), yte)
            assert r[key][1] == pytest.approx(direct)
        assert r["default"] == (r["learned"] if r["choice"] == "learned" else r["euclid"])
        assert r["success"] is bool(est.result_.success) and r["regrown"] is ("regrown" in est.result_.params)


def test_imbalanced_problem_draws_one_large_class_and_rare_ones():
    import numpy as np

    from logt.bench import learners_lowdim as LL
    g = np.random.default_rng(4)
    for i in range(12):
        kind, Xtr, ytr, Xte, yte = LL.imbalanced_problem(i, g)
        C, rare = int(kind.split("C=")[1].split()[0]), float(kind.split("rare=")[1])
        assert kind.startswith("imbalanced") and 2 <= C <= 5 and rare in (0.005, 0.01, 0.02, 0.05)
        assert 300 <= Xtr.shape[0] < 5000 and Xtr.shape[1] in (2, 4, 8, 16, 32, 64)
        assert Xte.shape == (LL.IMBALANCED_TEST_ROWS, Xtr.shape[1])
        counts = np.bincount(np.r_[ytr, yte], minlength=C)
        assert counts.argmax() == C - 1                               # the large class is the last
        share = counts[:-1] / counts.sum()
        assert np.all(share < 4 * rare / (1 + (C - 1) * rare) + 0.01)  # each rare class near its probability
    a = _drawn_twice(LL.imbalanced_problem, 0, 4)
    assert a[0].startswith("imbalanced")


def test_single_run_budget_runs_auto_once_and_is_restored():
    """Inside ``single_run_budget`` a fit that falls short at T="auto" keeps its one run (success False, no
    ``regrown``); outside, the same fit is re-run; the cap is restored on exit."""
    import warnings

    import numpy as np

    from logt import MetricLearner
    from logt.bench import learners_lowdim as LL
    from logt.metric_learning import _base
    g = np.random.default_rng(1)
    y = (g.random(2000) < 0.01).astype(int)
    X = g.normal(size=(2000, 8))
    X[y == 1] += 3                          # a rare class far from the other: the first run falls short
    factor = _base.REGROW_MAX_FACTOR
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with LL.single_run_budget():
            once = MetricLearner(check=False, rng=0).fit(X[:1500], y[:1500])
        assert _base.REGROW_MAX_FACTOR == factor
        again = MetricLearner(check=False, rng=0).fit(X[:1500], y[:1500])
    assert once.result_.success is False and "regrown" not in once.result_.params
    assert again.result_.success is True and once.n_calls_ <= again.result_.params["regrown"]["T"] == (
        _base.auto_budget(0.1) // _base.SOFTMAX_BUDGET_DIVISOR)      # the same first budget
    assert again.result_.params["regrown"]["T_suffices"] == once.result_.params["convergence"]["T_suffices"]


def test_binary_problem_draws_two_valued_features_and_the_arm_is_restored():
    """Each kind's columns: one-hot blocks (one 1 per variable) / 0/1 features, numeric columns beside them in
    "mixed"; no constant training column; seeded. ``standardized_binary`` switches the scaling's rule off
    within its block only."""
    import numpy as np

    from logt.bench import learners_lowdim as LL
    from logt.metric_learning import scaling
    g = np.random.default_rng(2)
    for i in range(9):
        kind, Xtr, ytr, Xte, yte = LL.binary_problem(i, g)
        assert kind == LL.BINARY_KINDS[i % 3] and 150 <= Xtr.shape[0] < 3000
        assert Xte.shape == (LL.BINARY_TEST_ROWS, Xtr.shape[1]) and (Xtr.std(axis=0) > 0).all()
        two, _ = scaling.two_valued(Xtr)
        if kind == "mixed":
            assert two.any() and not two.all()
        else:
            assert two.all() and set(np.unique(Xtr)) <= {0.0, 1.0}
        if kind == "categorical":
            assert Xtr.sum(axis=1).min() >= 1          # every variable lit once (dropped constant levels aside)
    a = _drawn_twice(LL.binary_problem, 1, 3)
    assert a[0] == "mixed"
    X = a[1]
    with LL.standardized_binary():
        assert scaling.BALANCED_BINARY is False
        old = scaling.fit_scaling(X)
    assert scaling.BALANCED_BINARY is True
    np.testing.assert_array_equal(old[1], scaling.fit_scaling(X, "standardize")[1])


def _classes_and_clusters(kind):
    """``(C, clusters)`` from a clustered family's kind, ``"... C=<C>x<clusters>"``."""
    return tuple(int(v) for v in kind.split("C=")[1].split("x"))


def test_multicluster_problem_draws_classes_of_several_clusters_and_the_sweep_passes_its_loss():
    pytest.importorskip("sklearn")
    import numpy as np
    from sklearn.neighbors import KNeighborsClassifier

    from logt import MetricLearner
    from logt.bench import learners_lowdim as LL
    g = np.random.default_rng(21)
    for i in range(8):
        kind, Xtr, ytr, Xte, yte = LL.multicluster_problem(i, g)
        C, clusters = _classes_and_clusters(kind)
        assert kind.startswith("multicluster") and 4 <= C <= 20 and 1 <= clusters <= 3
        assert 5 <= Xtr.shape[1] < 60 and Xte.shape == (LL.MULTICLUSTER_TEST_ROWS, Xtr.shape[1])
        assert max(10 * C, 100) <= Xtr.shape[0] <= 4000 and np.unique(ytr).size == C
        if "_scaled" in kind:                                # per-feature scales over two decades
            assert Xtr.std(axis=0).max() / Xtr.std(axis=0).min() > 3
    a = _drawn_twice(LL.multicluster_problem, 0, 21)
    lines = []
    rows = LL.lowdim_sweep(1, seed=22, log=lines.append, problem=LL.multicluster_problem, loss="softmax")
    assert len(rows) == 1 and rows[0]["problem"].startswith("multicluster") and a[0].startswith("multicluster")
    _, Xtr, ytr, Xte, yte = LL.multicluster_problem(0, np.random.default_rng(22))
    est = MetricLearner(rng=0, loss="softmax").fit(Xtr, ytr)
    assert est.loss_ == "softmax" and rows[0]["choice"] == est.metric_choice_
    direct = KNeighborsClassifier(1).fit(est.transform(Xtr), ytr).score(est.transform(Xte), yte)
    assert rows[0]["default"][0] == pytest.approx(direct)


def test_noisy_problem_draws_few_classes_among_noise_features_and_the_sweep_passes_params():
    pytest.importorskip("sklearn")
    import numpy as np

    from logt.bench import learners_lowdim as LL
    g = np.random.default_rng(101)
    for i in range(8):
        kind, Xtr, ytr, Xte, yte = LL.noisy_problem(i, g)
        C, k = int(kind.split("C=")[1].split()[0]), int(kind.split("k=")[1])
        assert kind.startswith("noisy") and 2 <= C <= 7 and 4 <= k <= 9
        assert 10 <= Xtr.shape[1] < 60 and Xte.shape == (LL.NOISY_TEST_ROWS, Xtr.shape[1])
        assert 800 <= Xtr.shape[0] <= 6000 and np.unique(ytr).size == C
        assert Xtr.std(axis=0).max() / Xtr.std(axis=0).min() > 2        # features in unrelated units
    a = _drawn_twice(LL.noisy_problem, 0, 101)
    rows = LL.lowdim_sweep(1, seed=102, log=lambda m: None, problem=LL.noisy_problem, triplet_neighbors=2)
    assert len(rows) == 1 and rows[0]["problem"].startswith("noisy") and a[0].startswith("noisy")
    from logt import MetricLearner
    _, Xtr, ytr, Xte, yte = LL.noisy_problem(0, np.random.default_rng(102))
    est = MetricLearner(rng=0, triplet_neighbors=2).fit(Xtr, ytr)
    assert est.triplet_neighbors_.tolist() == [2] * len(np.unique(ytr)) and rows[0]["choice"] == est.metric_choice_


def test_manycluster_problem_draws_few_classes_of_many_small_clusters():
    pytest.importorskip("sklearn")
    import numpy as np

    from logt.bench import learners_lowdim as LL
    g = np.random.default_rng(7)
    for i in range(6):
        kind, Xtr, ytr, Xte, yte = LL.manycluster_problem(i, g)
        C, clusters = _classes_and_clusters(kind)
        assert kind.startswith("manycluster") and 2 <= C <= 4 and 6 <= clusters <= 29
        assert 1500 <= Xtr.shape[0] <= 12000 and Xte.shape == (LL.MANYCLUSTER_TEST_ROWS, Xtr.shape[1])
        assert np.unique(ytr).size == C and Xtr.shape[0] // (C * clusters) >= 12   # a cluster holds 12 targets
        assert 2 ** (Xtr.shape[1]) >= C * clusters
    a = _drawn_twice(LL.manycluster_problem, 0, 7)
    assert a[0].startswith("manycluster")


def test_fixed_rows_keep_the_other_draws_and_the_fixed_search_cap_is_restored():
    """``rows=N``: the same problem (kind, features, classes) with N training rows; ``fixed_search_cap``: inside,
    the softmax's candidate search draws from ``cap`` rows per class (a 2,300-row class is subsampled), outside the
    rule is back (the class searched whole)."""
    pytest.importorskip("sklearn")
    import numpy as np

    from logt.bench import learners_lowdim as LL
    from logt.oracles import neighbors
    from logt.oracles.softmax import candidate_lists
    for family in (LL.noisy_problem, LL.manycluster_problem):
        a = family(0, np.random.default_rng(3))
        b = family(0, np.random.default_rng(3), rows=2345)
        assert b[1].shape == (2345, a[1].shape[1]) and b[0] == a[0] and b[3].shape == a[3].shape
        assert np.unique(b[2]).size == np.unique(a[2]).size
    rule = neighbors.search_cap
    X = np.random.default_rng(4).standard_normal((2600, 3))
    y = (np.arange(2600) >= 2300).astype(int)
    with LL.fixed_search_cap(2000):
        capped = candidate_lists(X, y, 4, 2)
    assert neighbors.search_cap is rule
    whole = candidate_lists(X, y, 4, 2)
    big = np.flatnonzero(y == 0)
    hit = lambda lists: {int(j) for a in big for j in lists[2][lists[1][a]:lists[1][a] + lists[3][a]]}  # noqa: E731
    assert len(hit(capped)) <= 2000 < len(hit(whole))        # the targets drawn from a 2,000-row pool, or not


def test_largen_sweep_holds_rows_out_and_matches_direct_fits():
    pytest.importorskip("sklearn")
    import numpy as np
    from sklearn.neighbors import KNeighborsClassifier

    from logt import MetricLearner
    from logt.bench import learners_lowdim as LL
    assert _drawn_twice(LL.largen_problem, 4, 7)[0] == "onehot"
    g = np.random.default_rng(0)
    for i in range(12):
        kind, Xtr, ytr, Xte, yte = LL.largen_problem(i, g)
        assert kind == LL.LARGEN_KINDS[i % 6] and 2700 <= Xtr.shape[0] < 20000 and Xte.shape[0] == LL.LARGEN_TEST_ROWS
        assert Xtr.shape[1] < 128 and len(np.unique(ytr)) >= 2
    lines = []
    rows = LL.lowdim_sweep(1, seed=3, log=lines.append, problem=LL.largen_problem)     # 4,338 rows, 10 features
    assert rows[0]["how"] == "held-out" and lines[-3].startswith("default: 1 problems")
    _, Xtr, ytr, Xte, yte = LL.largen_problem(0, np.random.default_rng(3))
    est = MetricLearner(rng=0).fit(Xtr, ytr)
    assert rows[0]["choice"] == est.metric_choice_
    direct = KNeighborsClassifier(5).fit(est.transform(Xtr), ytr).score(est.transform(Xte), yte)
    assert rows[0]["default"][1] == pytest.approx(direct)


def test_pairs_sweep_is_seeded_and_matches_direct_fits():
    pytest.importorskip("sklearn")
    import numpy as np

    from logt import PairsMetricLearner
    from logt.bench import learners_pairs as LP
    a = _drawn_twice(LP.pairs_problem, 2, 4)
    assert a[0].startswith("dense_std")
    desc, Ptr, ytr, Pte, yte = a
    assert Ptr.shape[1] == 2 and len(ytr) <= LP.PAIRS and set(np.unique(ytr)) <= {-1, 1}
    i, j = np.nonzero((Ptr[:, None, 0, :] == Pte[None, :, 0, :]).all(-1))
    assert i.size == 0                                  # test pairs are of other points
    _, Ptr2, ytr2, Pte2, _ = LP.pairs_problem(2, np.random.default_rng(4), same_points=True)
    assert np.array_equal(Ptr2, Ptr) and np.array_equal(ytr2, ytr)     # the same training pairs (the same fits)
    seen = {p.tobytes() for p in Ptr.reshape(-1, Ptr.shape[2])}
    assert all(p.tobytes() in seen for p in Pte2.reshape(-1, Pte2.shape[2]))   # --same-points: seen points only
    lines = []
    rows = LP.pairs_sweep(2, seed=4, log=lines.append)
    summary = lines[-1].splitlines()
    assert len(rows) == 2 and summary[0].startswith("default: 2 problems") and summary[2].startswith("AUC")
    assert summary[-1].startswith("the default kept plain distances on")
    g = np.random.default_rng(4)
    for k, r in enumerate(rows):
        _, Ptr, ytr, Pte, yte = LP.pairs_problem(k, g)
        est = PairsMetricLearner(rng=k).fit(Ptr, ytr)
        plain = PairsMetricLearner(rng=k, check=False).fit(Ptr, ytr)
        assert r["how"] == est.calibration_["how"] and r["auc"] == pytest.approx(est.score(Pte, yte))
        assert r["metric"] == est.metric_choice_ and r["auc_plain"] == pytest.approx(plain.score(Pte, yte))
        assert r["default"] == pytest.approx(np.mean(est.predict(Pte) == yte))
        assert r["plain"] == pytest.approx(np.mean(plain.predict(Pte) == yte))
        d = np.linalg.norm(Ptr[:, 0] - Ptr[:, 1], axis=1)
        best = max(np.mean(np.where(d <= t, 1, -1) == ytr) for t in np.r_[-1.0, d])
        dt = np.linalg.norm(Pte[:, 0] - Pte[:, 1], axis=1)
        accs = {float(np.mean(np.where(dt <= t, 1, -1) == yte))
                for t in np.r_[-1.0, d] if np.mean(np.where(d <= t, 1, -1) == ytr) == best}
        assert r["euclid"] in accs                       # the Euclidean threshold maximizes training accuracy


def _drawn_twice_alike(problem, seed):
    """``problem(numpy.random.default_rng(seed))``, after checking that a second draw from the same seed is the
    same problem (its description and every array)."""
    import numpy as np
    a, b = problem(np.random.default_rng(seed)), problem(np.random.default_rng(seed))
    assert a[0] == b[0] and all(np.array_equal(u, v) for u, v in zip(a[1:], b[1:]))
    return a


def test_identity_sweep_is_seeded_and_matches_direct_knn():
    pytest.importorskip("sklearn")
    import numpy as np
    from sklearn.neighbors import KNeighborsClassifier

    from logt import MetricLearner
    from logt.bench import learners_highdim as LH
    a = _drawn_twice_alike(LH.identity_problem, 2)
    desc, Xtr, ytr, Xte, yte = a
    C = np.unique(ytr).size
    assert np.array_equal(np.bincount(yte), np.full(C, LH.IDENTITY_TEST_ROWS)) and desc.startswith(f"{C} classes")
    lines = []
    rows = LH.identity_sweep(1, seed=2, log=lines.append)
    assert len(rows) == 1 and rows[0]["problem"] == desc and lines[-1].startswith("rank64: 1 problems")
    est = MetricLearner(n_components=min(64, len(ytr) - 1), rng=0).fit(Xtr, ytr)
    direct = KNeighborsClassifier(1).fit(est.transform(Xtr), ytr).score(est.transform(Xte), yte)
    assert rows[0]["rank64"][0] == pytest.approx(direct)


def test_few_rows_identity_sweep_is_cross_fitted_and_matches_direct_knn():
    pytest.importorskip("sklearn")
    import warnings

    import numpy as np
    from sklearn.neighbors import KNeighborsClassifier

    from logt import MetricLearner
    from logt.bench import learners_highdim as LH
    a = _drawn_twice_alike(LH.few_rows_identity_problem, 11)
    desc, Xtr, ytr, Xte, yte = a
    sizes = np.bincount(ytr)
    C = sizes.size
    assert 8 <= C < 60 and sizes.min() == sizes.max() and 2 <= sizes[0] <= 4 and 300 <= Xtr.shape[1] < 3000
    assert desc == f"{C} classes x {sizes[0]} d={Xtr.shape[1]}"
    assert np.array_equal(np.bincount(yte), np.full(C, LH.IDENTITY_TEST_ROWS))
    lines = []
    rows = LH.identity_sweep(1, seed=11, log=lines.append, few_rows=True)
    assert len(rows) == 1 and rows[0]["problem"] == desc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MetricLearner(rng=0).fit(Xtr, ytr)
    assert est.check_accuracy_["how"] == "cross-fitted"              # too few rows a class to hold any out
    assert rows[0]["choice"] == est.metric_choice_
    direct = KNeighborsClassifier(1).fit(est.transform(Xtr), ytr).score(est.transform(Xte), yte)
    assert rows[0]["default"][0] == pytest.approx(direct)
    assert rows[0]["euclid"][0] == pytest.approx(KNeighborsClassifier(1).fit(Xtr, ytr).score(Xte, yte))


def test_directions_text_names_what_the_subspace_spans():
    from types import SimpleNamespace

    from logt.bench.learners_highdim import directions_text
    said = {None: "principal and class means", "principal, class means": "principal and class means",
            "principal, class means, standardized class means": "principal, class means and standardized class means",
            "principal": "principal only", "principal, in the data's units": "principal only, in the data's units"}
    for directions, text in said.items():
        check = None if directions is None else {"how": "held-out", "directions": directions}
        assert directions_text(SimpleNamespace(check_accuracy_=check)) == text
    assert directions_text(SimpleNamespace(check_accuracy_={"how": "cross-fitted"})) == "principal and class means"


def test_imbalanced_identity_problem_weights_to_the_training_proportions():
    pytest.importorskip("sklearn")
    import numpy as np
    from sklearn.neighbors import KNeighborsClassifier

    from logt.bench import learners_highdim as LH
    a = _drawn_twice_alike(LH.imbalanced_identity_problem, 3)
    desc, Xtr, ytr, Xte, yte, w = a
    sizes = np.bincount(ytr)
    C = sizes.size
    assert sizes.min() >= 3 and sizes.max() <= 120 and sizes.min() < sizes.max() and desc.startswith(f"{C} classes")
    assert np.array_equal(np.bincount(yte), np.full(C, LH.IDENTITY_TEST_ROWS))
    # weighted, each class's share of the test rows is its share of the training rows
    np.testing.assert_allclose(np.bincount(yte, weights=w) / w.sum(), sizes / sizes.sum(), rtol=1e-12)
    assert w.mean() == pytest.approx(1.0)
    lines = []
    rows = LH.identity_sweep(1, seed=3, log=lines.append, imbalanced=True)
    assert rows[0]["problem"] == desc and "weighted to the training proportions:" in lines
    assert lines[-1].startswith("rank64_weighted: 1 problems")
    # the weighted 1-NN accuracy is the training-proportion mixture of the per-class accuracies
    hits = KNeighborsClassifier(1).fit(Xtr, ytr).predict(Xte) == yte
    per_class = np.array([hits[yte == c].mean() for c in range(C)])
    assert rows[0]["euclid_weighted"][0] == pytest.approx(float(per_class @ sizes / sizes.sum()))
    assert rows[0]["euclid"][0] == pytest.approx(float(hits.mean()))


@pytest.mark.parametrize("kind", ["shapes", "patches"])
def test_image_problem_is_seeded(kind):
    pytest.importorskip("sklearn")
    if kind == "patches":
        pytest.importorskip("PIL", reason="reading scikit-learn's sample photographs needs Pillow")
    import numpy as np
    from logt.bench.learners_highdim import image_problem
    d1, X1, y1 = image_problem(kind, np.random.default_rng(5))
    d2, X2, y2 = image_problem(kind, np.random.default_rng(5))
    assert d1 == d2 and d1.startswith(kind) and np.array_equal(X1, X2) and np.array_equal(y1, y2)
    assert 1200 <= X1.shape[0] < 3600 and X1.shape[1] >= 196 and X1.min() >= 0 and X1.max() <= 255
    with pytest.raises(ValueError, match="kind"):
        image_problem("faces", np.random.default_rng(5))


def test_image_sweep_counts_against_each_rival(monkeypatch):
    import numpy as np
    from logt.bench import learners_highdim as LH
    # Euclidean, default, NCA, rescaled NCA, n_components
    acc = iter([((0.5, 0.5), (0.6, 0.4), (0.55, 0.5), (0.3, 0.3), (0.4, 0.6)),
                ((0.5, 0.5), (0.6, 0.6), (0.50, 0.6), (0.9, 0.5), (0.7, 0.7))])

    def fake(name, X, y):
        methods = ("Euclidean", "MetricLearner()", "NCA(64)", "NCA(64), X / max|X|", "MetricLearner(n_components=64)")
        return [dict(dataset=name, method=m, acc1=a[0], acc5=a[1], seconds=None, note="")
                for m, a in zip(methods, next(acc))]
    monkeypatch.setattr(LH, "evaluate_set", fake)
    monkeypatch.setattr(LH, "image_problem", lambda kind, g: ("p", np.zeros((4, 3)), np.zeros(4)))
    lines = []
    LH.image_sweep("shapes", 2, log=lines.append)
    assert lines[-6:] == [
        "MetricLearner() at least Euclidean (1-NN and 5-NN): 1 of 2, worst -0.100",
        "MetricLearner() at least NCA(64) (1-NN and 5-NN): 1 of 2, worst -0.100",
        "MetricLearner() at least NCA(64), X / max|X| (1-NN and 5-NN): 1 of 2, worst -0.300",
        "MetricLearner(n_components=64) at least Euclidean (1-NN and 5-NN): 1 of 2, worst -0.100",
        "MetricLearner(n_components=64) at least NCA(64) (1-NN and 5-NN): 1 of 2, worst -0.150",
        "MetricLearner(n_components=64) at least NCA(64), X / max|X| (1-NN and 5-NN): 1 of 2, worst -0.200"]
