"""The spectra, expression, multimodal and outlier-rows sweeps (logt.bench.learners_families)."""
import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the sweeps compare with scikit-learn's k-NN, PCA and NCA")
from sklearn.metrics import roc_auc_score                 # noqa: E402
from sklearn.neighbors import KNeighborsClassifier      # noqa: E402

from logt.bench import learners_families as LF           # noqa: E402
from logt.experiments import highdim_data as H           # noqa: E402


@pytest.mark.parametrize("kind", LF.FAMILIES)
def test_family_problem_is_seeded_with_test_rows_of_the_same_distribution(kind):
    a = LF.family_problem(kind, np.random.default_rng(8), n_test=300)
    b = LF.family_problem(kind, np.random.default_rng(8), n_test=300)
    assert a[0] == b[0] and all(np.array_equal(u, v) for u, v in zip(a[1:], b[1:]))
    desc, Xtr, ytr, Xte, yte = a
    assert Xte.shape == (300, Xtr.shape[1]) and yte.shape == (300,) and len(ytr) == Xtr.shape[0]
    assert f"n={len(ytr)} d={Xtr.shape[1]}" in desc and set(np.unique(yte)) == set(np.unique(ytr))
    lo, hi = {"spectra": ((200, 2000), (300, 2500)), "expression": ((60, 500), (1000, 12000)),
              "multimodal": ((200, 2000), (500, 3000)), "outliers": ((200, 2000), (300, 2000))}[kind]
    assert lo[0] <= len(ytr) < lo[1] and hi[0] <= Xtr.shape[1] < hi[1]
    with pytest.raises(ValueError, match="kind must be one of"):
        LF.family_problem("faces", np.random.default_rng(8))


def _small(kind):
    """A small problem of the family, test rows drawn from the same generator call."""
    if kind == "spectra":
        X, y = H.spectra(360, 120, n_classes=3, peak=0.1, noise=0.5, rng=2)
        return "spectra n=160 d=120 classes=3", X[:160], y[:160], X[160:], y[160:]
    if kind == "multimodal":
        X, y = H.multimodal(300, 120, n_classes=2, n_clusters=2, n_informative=3, sep=3.0, rng=2)
        return "multimodal n=150 d=120 classes=2 clusters=2", X[:150], y[:150], X[150:], y[150:]
    if kind == "outliers":
        X, y = H.dense_classification(300, 100, n_informative=5, n_classes=2, rng=2)
        X, _ = H.with_outlier_rows(X, 0.02, 1e4, rng=2)
        return "outliers 2.0% n=150 d=100 classes=2", X[:150], y[:150], X[150:], y[150:]
    X, y = H.expression(330, 150, n_classes=2, n_informative=10, shift=1.5, counts=True, rng=2)
    return "expression counts n=130 d=150 classes=2", X[:130], y[:130], X[130:], y[130:]


def _knn(Ztr, ytr, Zte, yte):
    return [KNeighborsClassifier(k, algorithm="brute").fit(Ztr, ytr).score(Zte, yte) for k in (1, 5)]


@pytest.mark.parametrize("kind", LF.FAMILIES)
def test_family_sweep_rows_match_direct_knn(monkeypatch, kind):
    from logt import MetricLearner
    monkeypatch.setattr(LF, "family_problem", lambda k, g, n_test=None: _small(kind))
    lines = []
    (r,) = LF.family_sweep(kind, 1, nca=False, log=lines.append)
    _, Xtr, ytr, Xte, yte = _small(kind)
    assert r["euclid"] == pytest.approx(_knn(Xtr, ytr, Xte, yte))
    est = MetricLearner(rng=0).fit(Xtr, ytr)
    assert r["choice"] == est.metric_choice_
    assert r["default"] == pytest.approx(_knn(est.transform(Xtr), ytr, est.transform(Xte), yte))
    for k in (8, 64):
        assert len(r[f"rank{k}"]) == 2 and len(r[f"pca{k}"]) == 2 and isinstance(r[f"warned{k}"], bool)
    assert "nca64" not in r
    assert r["chance"] == pytest.approx(sum(np.mean(ytr == c) * np.mean(yte == c) for c in np.unique(ytr)))
    assert any(line.startswith("rank8 warned on") or line.startswith("rank8 did not warn on") for line in lines)
    if kind == "expression":                                  # counts: the log1p rows too
        L, Lte = np.log1p(Xtr), np.log1p(Xte)
        assert r["euclid_log1p"] == pytest.approx(_knn(L, ytr, Lte, yte))
        assert any(line.startswith("count problems (1)") for line in lines)
    else:
        assert "euclid_log1p" not in r
    assert any(line.startswith("default: 1 problems") for line in lines)
    assert any(line.startswith("rank64 against PCA: 1 problems") for line in lines)


def test_pairs_family_sweep_scores_euclidean_as_an_independent_auc(monkeypatch):
    monkeypatch.setattr(LF, "family_problem", lambda k, g, n_test=None: _small("spectra"))
    monkeypatch.setattr("logt.bench.learners_pairs.PAIRS", 400)
    lines = []
    (r,) = LF.pairs_family_sweep("spectra", 1, log=lines.append)
    _, Xtr, ytr, Xte, yte = _small("spectra")
    g = np.random.default_rng(0)                              # the sweep's pairs: default_rng(i), i = 0
    i, j = g.integers(len(ytr), size=400), g.integers(len(ytr), size=400)
    i, j = i[i != j], j[i != j]
    i2, j2 = g.integers(len(yte), size=400), g.integers(len(yte), size=400)
    i2, j2 = i2[i2 != j2], j2[i2 != j2]
    same = yte[i2] == yte[j2]
    assert r["auc_euclid"] == pytest.approx(roc_auc_score(same, -np.linalg.norm(Xte[i2] - Xte[j2], axis=1)))
    assert r["majority"] == pytest.approx(max(same.mean(), 1 - same.mean()))
    assert 0 <= r["auc"] <= 1 and r["metric"] in ("learned", "euclidean", "subspace", "default")
    assert any("problems: accuracy below Euclidean" in line for line in lines)
