"""Glitched training rows (logt.metric_learning.outliers): the robust norms, the gap rule, the label rule, the
repair, and MetricLearner's use of them, against NumPy/SciPy formulas and the generator's own record of the
glitched rows."""
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import logt.metric_learning.outliers as O
from logt import GlitchedRowsWarning, MetricLearner
from logt.experiments import highdim_data as H


def _departure(col, med):
    """The median |x - med| over the entries of ``col`` that differ from ``med`` (0 when none does)."""
    dev = [abs(v - med) for v in col if v != med]
    return float(np.median(dev)) if dev else 0.0


def _reference_norms(X):
    """The rule written out, column by column: median, 10-90th percentile spread and typical departure from every
    ceil(n / 1024)-th row, the scale the larger of the two; where no sampled entry departs, the departure over all
    rows, 1 for a constant feature."""
    n, d = X.shape
    S = X[::math.ceil(n / O.ROBUST_SAMPLE_ROWS)]
    med = np.quantile(S, 0.5, axis=0)
    spread = np.quantile(S, 0.9, axis=0) - np.quantile(S, 0.1, axis=0)
    scale = np.empty(d)
    for j in range(d):
        scale[j] = max(spread[j], _departure(S[:, j], med[j])) or _departure(X[:, j], med[j]) or 1.0
    return np.linalg.norm((X - med) / scale, axis=1)


def _reference_gap_rows(norms):
    """The gap rule by brute force: for k from the most rows above to the fewest, the first jump > GAP_FACTOR."""
    n = norms.size
    s = sorted(norms.tolist())
    for k in range(int(np.floor(O.GAP_MAX_SHARE * n)), max(math.ceil(O.GAP_MIN_SHARE * n), O.GAP_MIN_ROWS) - 1, -1):
        lo, hi = s[n - k - 1], s[n - k]
        if lo > 0 and hi > O.GAP_FACTOR * lo:
            return norms > lo
    return np.zeros(n, dtype=bool)


@pytest.mark.parametrize("n, d", [(300, 7), (2500, 40), (60, 500)])
def test_robust_norms_match_the_rule_written_out(n, d, monkeypatch):
    rng = np.random.default_rng(n + d)
    X = rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-3, 3, d)
    X[:, 0] = 4.0                                            # constant: adds 0
    X[:, 1] = 0.0
    X[rng.choice(n, 3, replace=False), 1] = 5.0             # mostly zero: spread 0, the departure (5) instead
    X[:, 2] = (rng.random(n) < 0.12).astype(float)          # 0/1 near 10%: an interpolated spread below 1
    X[:, 3] = np.where(rng.random(n) < 0.05, rng.integers(1, 4, n), 0.0)   # a rare count: the sample's departure
    X[: n // 20] *= 1e4                                      # glitched rows hardly move the statistics
    monkeypatch.setattr(O, "_BLOCK_ENTRIES", 3 * d + 1)     # several blocks
    got = O.robust_row_norms(X)
    np.testing.assert_allclose(got, _reference_norms(X), rtol=1e-12)
    # scale and shift free
    np.testing.assert_allclose(O.robust_row_norms(X * 1e-5 + 3.0), got, rtol=1e-6)


def test_clean_binary_rows_with_rare_features_are_not_glitched(monkeypatch):
    """Seven 0/1 features, three of them lit in 0.6-1% of the rows (none tied to the class): a lit entry counts 1
    (its departure), so no row stands out. With the standard deviation as the scale of a flat feature (the
    rule before DEPARTURE_FLOOR) a rare feature's lit entry counted 10-13 against at most 2 for the rest, and
    those rows (~2.4%) were "repaired": their rare features set to 0."""
    g = np.random.default_rng(11)
    n = 900
    p = np.array([0.006, 0.008, 0.01, 0.5, 0.5, 0.5, 0.5])
    X = (g.random((n, p.size)) < p).astype(float)
    y = g.integers(0, 3, n)
    norms = O.robust_row_norms(X)
    assert norms.max() <= math.sqrt(p.size) + 1e-12            # each feature at most 1
    Xr, rows = O.glitched_rows(X, y)
    assert not rows.any() and Xr is X
    monkeypatch.setattr(O, "DEPARTURE_FLOOR", False)
    Xold, old = O.glitched_rows(X, y)
    lit = X[:, :3].any(axis=1)
    assert np.array_equal(old, lit) and not Xold[:, :3].any()


def test_gap_rule_matches_brute_force():
    rng = np.random.default_rng(0)
    for trial in range(400):
        n = int(rng.integers(10, 400))
        norms = rng.lognormal(0, float(rng.uniform(0.1, 1.5)), n)
        k = int(rng.integers(0, n // 6 + 1))
        norms[rng.choice(n, k, replace=False)] *= float(rng.choice([2.0, 3.9, 4.1, 50.0, 1e4]))
        if trial % 7 == 0:
            norms[: n // 3] = 0.0                            # zeros below: no gap above 0
        np.testing.assert_array_equal(O.gap_rows(norms), _reference_gap_rows(norms))


@pytest.mark.parametrize("share, flagged", [(0.005, False), (0.02, True), (0.09, True), (0.2, True), (0.3, False)])
def test_gap_rule_bounds(share, flagged):
    """Rows far above the others are flagged from 1% (and 5 rows) to 25% of the rows; fewer are the scaling's,
    more are a part of the data."""
    rng = np.random.default_rng(1)
    norms = rng.uniform(1.0, 2.0, 1000)
    far = rng.choice(1000, int(share * 1000), replace=False)
    norms[far] *= 100.0
    got = O.gap_rows(norms)
    assert got.any() == flagged
    if flagged:
        assert np.array_equal(np.flatnonzero(got), np.sort(far))
    assert not O.gap_rows(np.r_[np.ones(45), 100.0 * np.ones(4)]).any()     # below 50 rows: never


def _glitched(kind, frac, scale, entries, seed):
    if kind == "dense":
        X, y = H.dense_classification(900, 300, n_informative=8, n_classes=3, class_sep=2.0, rng=seed)
    elif kind == "digits":
        X, y = H.shifted_digits(900, canvas=24, size=16, max_shift=3, rng=seed)
    else:
        X, y = H.multimodal(900, 600, 3, n_clusters=2, n_informative=3, sep=4.0, noise=0.7, rng=seed)
    Xg, rows = H.with_outlier_rows(X, frac, scale, entries, rng=seed + 1)
    return X, Xg, y, rows


@pytest.mark.parametrize("kind", ["dense", "digits", "multimodal"])
@pytest.mark.parametrize("frac, scale, entries", [(0.03, 1e3, 0.05), (0.08, 1e5, 1.0)])
def test_glitched_rows_found_exactly(kind, frac, scale, entries):
    """The generator's record of its glitched rows is what the rule finds; scale free; labels drawn
    independently of the glitch do not stop the repair."""
    X, Xg, y, rows = _glitched(kind, frac, scale, entries, seed=3)
    Xr, found = O.glitched_rows(Xg, np.unique(y, return_inverse=True)[1])
    assert np.array_equal(np.flatnonzero(found), rows)
    assert np.array_equal(O.glitched_rows(Xg * 1e-7 - 2.0)[1], found)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                       # no overflow, underflow or invalid value on the way
        for unit in (1e300, 1e-300):
            Xu, found_u = O.glitched_rows(Xg * unit)
            assert np.array_equal(found_u, found)
            np.testing.assert_allclose(Xu / unit, Xr, rtol=1e-12, atol=1e-300)
    # the repair (the rule written out row by row), every other row untouched (bit for bit)
    np.testing.assert_allclose(Xr[found], _reference_repair(Xg, found)[found], rtol=1e-12, atol=0)
    np.testing.assert_array_equal(Xr[~found], Xg[~found])
    keep = Xg[~found]
    assert np.all((Xr >= keep.min(0)) & (Xr <= keep.max(0)))
    assert Xg[found].max() > keep.max()                      # the test has power: something was repaired
    # partial glitches keep most of the row; rows scaled whole come back along their direction
    err = np.linalg.norm(Xr[found] - X[found], axis=1) / np.linalg.norm(X[found], axis=1)
    assert np.median(err) < (0.5 if entries < 1 else 1.0), np.median(err)


def _reference_repair(X, rows):
    keep = X[~rows]
    lo, hi, med = keep.min(0), keep.max(0), np.median(keep, 0)
    target = np.median(np.linalg.norm(keep, axis=1))
    Xr = X.copy()
    for i in np.flatnonzero(rows):
        x = X[i].copy()
        bad = (x < lo) | (x > hi)
        if bad.sum() <= O.WHOLE_ROW_SHARE * max(1, np.sum(x != med)):
            x[bad] = med[bad]
        else:
            x = np.clip(x * (target / np.linalg.norm(x)), lo, hi)
        Xr[i] = x
    return Xr


@pytest.mark.parametrize("seed", range(4))
def test_clean_data_left_alone(seed):
    """Heavy tails are not glitches: no row flagged on Cauchy, Student-t, log-normal and Pareto rows, sinh-tailed
    dense data and the generators' raw pixels, spectra and expression counts (X itself returned)."""
    g = np.random.default_rng(seed)
    n, d = int(g.integers(60, 2500)), int(g.integers(2, 400))
    sets = [g.standard_cauchy((n, d)), g.standard_t(1.5, (n, d)),
            g.standard_normal((n, d)) * np.exp(g.normal(0, 1.5, (n, 1))),
            g.standard_normal((n, d)) * (1 + g.pareto(1.0, (n, 1))),
            H.dense_classification(800, 400, heavy_tailed=True, rng=seed)[0],
            H.shifted_digits(600, noise=0.15, rng=seed)[0],
            H.spectra(500, 400, rng=seed)[0], H.expression(300, 1500, counts=True, rng=seed)[0]]
    for X in sets:
        Xr, rows = O.glitched_rows(X)
        assert Xr is X and not rows.any()


def test_rows_of_one_class_are_signal():
    """A rare class whose rows are all 100x larger is flagged by the gap rule but left alone with the labels
    (binomial tail against the exact sum); glitches spread over the classes are repaired."""
    g = np.random.default_rng(5)
    n = 1000
    y = np.where(np.arange(n) < 50, 3, g.integers(0, 3, n))
    X = g.standard_normal((n, 20))
    X[y == 3] *= 100.0
    assert np.array_equal(O.gap_rows(O.robust_row_norms(X)), y == 3)
    assert O.one_class_rows(y, y == 3)
    assert not O.glitched_rows(X, y)[1].any() and O.glitched_rows(X)[1].sum() == 50

    def tail(k, kc, p):
        return sum(math.comb(k, j) * p ** j * (1 - p) ** (k - j) for j in range(kc, k + 1))

    spread = np.zeros(n, dtype=bool)
    spread[g.choice(n, 50, replace=False)] = True
    codes = g.integers(0, 4, n)
    counts = np.bincount(codes)
    worst = min(tail(50, int(np.sum(codes[spread] == c)), counts[c] / n) for c in range(4))
    assert O.one_class_rows(codes, spread) == (worst < O.LABEL_ALPHA / 4)
    assert not O.one_class_rows(codes, spread)


def _one_nn(est, Xtr, ytr, Xte, yte):
    from sklearn.neighbors import KNeighborsClassifier
    return KNeighborsClassifier(1).fit(est.transform(Xtr), ytr).score(est.transform(Xte), yte)


@pytest.mark.parametrize("kind", ["digits", "multimodal"])
def test_metric_learner_repairs_glitched_rows(kind, monkeypatch):
    """The default warns, counts the repaired rows, and on the clean test rows comes within 0.05 of the same fit on
    the data without glitches; without the repair (monkeypatched off) it is more than 0.05 below (power)."""
    acc, clean, off = _repaired_clean_off(*_glitched(kind, 0.06, 1e4, 0.05, seed=11), "training rows", monkeypatch)
    assert acc >= clean - 0.05 and acc >= off + 0.05, (acc, clean, off)


def _repaired_clean_off(X, Xg, y, rows, match, monkeypatch, n=600):
    """1-NN on the clean rows after the first ``n`` of the default fitted on the first ``n`` glitched rows (which
    must warn, matching ``match``, and count them), on the same rows without glitches, and with the rule off."""
    test = np.setdiff1d(np.arange(n, X.shape[0]), rows)
    with pytest.warns(GlitchedRowsWarning, match=match):
        est = MetricLearner(rng=0).fit(Xg[:n], y[:n])
    assert est.n_repaired_ == np.sum(rows < n)
    acc = _one_nn(est, Xg[:n], y[:n], Xg[test], y[test])
    clean = _one_nn(MetricLearner(rng=0).fit(X[:n], y[:n]), X[:n], y[:n], X[test], y[test])
    monkeypatch.setattr(O, "glitched_rows", lambda X, codes=None: (X, np.zeros(X.shape[0], dtype=bool)))
    off = _one_nn(MetricLearner(rng=0).fit(Xg[:n], y[:n]), Xg[:n], y[:n], Xg[test], y[test])
    return acc, clean, off


@pytest.mark.parametrize("data", ["digits", "heavy"])
def test_metric_learner_clean_fit_untouched(data, monkeypatch):
    """On clean data (heavy tails included) the fit is the one without the rule, bit for bit, and says nothing."""
    if data == "digits":
        X, y = H.shifted_digits(600, canvas=24, size=16, max_shift=3, noise=0.15, rng=2)
    else:
        X, y = H.dense_classification(500, 200, n_informative=6, n_classes=3, class_sep=2.0, heavy_tailed=True, rng=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GlitchedRowsWarning)
        est = MetricLearner(rng=0).fit(X, y)
    assert est.n_repaired_ == 0 and est.metric_choice_ in ("learned", "subspace")     # fitted, not the identity
    monkeypatch.setattr(O, "glitched_rows", lambda X, codes=None: (X, np.zeros(X.shape[0], dtype=bool)))
    ref = MetricLearner(rng=0).fit(X, y)
    np.testing.assert_array_equal(est.components_, ref.components_)
    assert est.metric_choice_ == ref.metric_choice_


def test_metric_learner_leaves_user_scaled_rows(monkeypatch):
    """scaling=None (the rows are the user's) is not repaired; the same data as CSR are, like the dense rows."""
    X, Xg, y, rows = _glitched("dense", 0.05, 1e4, 0.05, seed=4)
    Xu = Xg / (1.0001 * np.linalg.norm(Xg, axis=1).max())
    fast = dict(rng=0, T=20_000, check=False)
    assert MetricLearner(scaling=None, **fast).fit(Xu, y).n_repaired_ == 0
    assert MetricLearner(scaling=None, **fast).fit(sp.csr_matrix(Xu), y).n_repaired_ == 0
    with pytest.warns(GlitchedRowsWarning, match="documents of very different lengths"):
        assert MetricLearner(**fast).fit(sp.csr_matrix(Xg), y).n_repaired_ == rows.size
    with pytest.warns(GlitchedRowsWarning):
        assert MetricLearner(**fast).fit(Xg, y).n_repaired_ == rows.size


# ---- sparse rows

def _reference_sparse_scales(D):
    """The features' median absolute nonzero values of the dense ``D``, column by column (the median of all
    the nonzeros for a column with fewer than SPARSE_POOL_MIN, 1 with none at all)."""
    nz = np.abs(D[D != 0])
    pooled = np.median(nz) if nz.size else 1.0
    return np.array([np.median(np.abs(c[c != 0])) if np.count_nonzero(c) >= O.SPARSE_POOL_MIN else pooled
                     for c in D.T])


def _reference_sparse_magnitudes(X):
    D = X.toarray()
    s = _reference_sparse_scales(D)
    out = np.zeros(D.shape[0])
    for i, x in enumerate(D):
        nz = x != 0
        if nz.any():
            out[i] = np.sqrt(np.mean((x[nz] / s[nz]) ** 2))
    return out


def _reference_sparse_repair(X, rows):
    """The sparse repair written out on dense rows, entry by entry."""
    D = X.toarray()
    keep = D[~rows]
    s = _reference_sparse_scales(keep)
    lo, hi = keep.min(0), keep.max(0)
    none = ~(keep != 0).any(0)                          # a feature none of the other rows has: their whole range
    lo[none] = min(0.0, keep.min())
    hi[none] = max(0.0, keep.max())
    for i in np.flatnonzero(rows):
        x = D[i]
        nz = x != 0
        bad = nz & ((x < lo) | (x > hi))
        if bad.sum() <= O.WHOLE_ROW_SHARE * max(nz.sum(), 1):
            x[bad] = np.sign(x[bad]) * s[bad]
        else:
            f = np.median(np.abs(x[nz]) / s[nz])
            x[nz] = np.clip(x[nz] / max(f, 1.0), lo[nz], hi[nz])
    return D


@pytest.mark.parametrize("n, d", [(300, 40), (1200, 900), (80, 3000)])
def test_sparse_magnitudes_match_the_rule_written_out(n, d):
    """Duplicates summed, explicit zeros and empty rows ignored, signed entries, features with fewer than
    SPARSE_POOL_MIN nonzeros on the pooled median; scale free."""
    g = np.random.default_rng(n + d)
    k = 6 * n
    r, c = g.integers(n, size=k), (g.pareto(1.0, k) * 3).astype(int) % d        # some features rare
    v = g.lognormal(0, 1, k) * g.choice([-1.0, 1.0], k) * 10.0 ** g.uniform(-2, 2, d)[c]
    v[:20] = 0.0                                                             # explicit zeros
    X = sp.csr_matrix((v, (r, c)), shape=(n, d))                               # duplicates not summed yet
    X.indptr, X.indices, X.data = X.indptr.copy(), X.indices.copy(), X.data.copy()
    X[n - 1] = 0.0                                                           # an empty row
    got = O.sparse_row_magnitudes(X)
    np.testing.assert_allclose(got, _reference_sparse_magnitudes(X), rtol=1e-12)
    assert got[n - 1] == 0.0
    np.testing.assert_allclose(O.sparse_row_magnitudes(X * 1e-5), got, rtol=1e-12)


def _sparse_glitched(post, frac, scale, entries, seed):
    X, y = H.sparse_classification(900, 2500, 4, doc_length=50, topic_share=0.2, rng=seed)
    if post == "tfidf":
        X = sp.csr_matrix(X.multiply(np.log(900 / (1 + np.bincount(X.indices, minlength=2500))) + 1))
    elif post == "log1p":
        X = X.copy()
        X.data = np.log1p(X.data)
    Xg, rows = H.with_outlier_rows(X, frac, scale, entries, rng=seed + 1)
    return X, Xg, y, rows


@pytest.mark.parametrize("post", ["counts", "tfidf", "log1p"])
@pytest.mark.parametrize("frac, scale, entries", [(0.03, 1e3, 0.2), (0.2, 1e2, 0.3), (0.08, 1e5, 1.0)])
def test_sparse_glitched_rows_found_exactly(post, frac, scale, entries):
    """Bag-of-words rows: the generator's glitched rows are what the rule finds, with labels and at extreme units;
    the repair is the rule written out, every other row untouched and the sparsity pattern kept."""
    X, Xg, y, rows = _sparse_glitched(post, frac, scale, entries, seed=7)
    Xr, found = O.glitched_rows(Xg, y)
    assert sp.isspmatrix_csr(Xr) and Xr is not Xg
    assert np.array_equal(np.flatnonzero(found), rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for unit in (1e300, 1e-300):
            Xu, found_u = O.glitched_rows(Xg * unit)
            assert np.array_equal(found_u, found)
            np.testing.assert_allclose((Xu / unit).toarray(), Xr.toarray(), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(Xr.toarray(), _reference_sparse_repair(Xg, found), rtol=1e-12, atol=0)
    assert (Xr[~found] != Xg[~found]).nnz == 0
    assert np.array_equal((Xr != 0).toarray(), (Xg != 0).toarray())                # the words kept
    keep = Xg[~found].toarray()
    D = Xr.toarray()
    assert np.all((D >= keep.min(0)) & (D <= np.maximum(keep.max(0), keep.max())))
    assert Xg[found].max() > keep.max()                                            # something was repaired
    # partial glitches keep most of the row; rows scaled whole come back to the scale of the clean row
    C = X.toarray()[found]
    err = np.linalg.norm(D[found] - C, axis=1) / np.linalg.norm(C, axis=1)
    assert np.median(err) < (0.5 if entries < 1 else 1.0), np.median(err)


def test_clean_sparse_data_left_alone():
    """Counts, tf-idf, log counts, binary rows, documents of very different lengths (log-normal length factors),
    Pareto-inflated counts and one-hot blocks beside log-normal numeric columns: no row flagged, X itself returned."""
    g = np.random.default_rng(3)
    sets = []
    for seed in range(3):
        X, y = H.sparse_classification(int(g.integers(200, 1500)), int(g.integers(500, 5000)), 4,
                                       doc_length=int(g.integers(5, 200)), rng=seed)
        n, d = X.shape
        tfidf = sp.csr_matrix(X.multiply(np.log(n / (1 + np.bincount(X.indices, minlength=d))) + 1))
        logc, binary, pareto = X.copy(), X.copy(), X.copy()
        logc.data = np.log1p(logc.data)
        binary.data[:] = 1.0
        pareto.data = np.floor(pareto.data * (1 + g.pareto(1.2, pareto.data.size)))
        lengths = sp.csr_matrix(sp.diags(np.round(3 * np.exp(g.normal(0, 1.5, n))) + 1) @ X)
        onehot = sp.csr_matrix((np.ones(n), (np.arange(n), g.integers(0, 30, n))), shape=(n, 30))
        numeric = sp.csr_matrix(np.exp(g.normal(5, 1.0, (n, 3))) * (g.random((n, 3)) < 0.7))
        sets += [X, tfidf, logc, binary, pareto, lengths, sp.hstack([onehot, numeric]).tocsr()]
    for X in sets:
        Xr, rows = O.glitched_rows(X)
        assert Xr is X and not rows.any()


def test_sparse_rows_of_one_class_are_signal():
    """A rare class whose rows are all 100x larger is flagged by the gap rule but left alone with the labels."""
    X, y = H.sparse_classification(1000, 2000, 3, rng=5)
    y = np.where(np.arange(1000) < 40, 3, y)
    X = sp.csr_matrix(sp.diags(np.where(y == 3, 100.0, 1.0)) @ X)
    assert np.array_equal(O.gap_rows(O.sparse_row_magnitudes(X)), y == 3)
    Xr, rows = O.glitched_rows(X, y)
    assert Xr is X and not rows.any()
    assert O.glitched_rows(X)[1].sum() == 40


@pytest.mark.parametrize("entries", [0.5, 1.0])
def test_metric_learner_repairs_sparse_glitched_rows(entries, monkeypatch):
    """Bag-of-words with 6% of the rows glitched (half of their counts, or all of them, x 1e4): the default
    warns, counts them, and on the clean test rows comes within 0.02 of the fit without glitches; with the rule
    off it is more than 0.05 below (power)."""
    acc, clean, off = _repaired_clean_off(*_sparse_glitched("counts", 0.06, 1e4, entries, seed=3),
                                          "typical nonzero values", monkeypatch)
    assert acc >= clean - 0.02 and acc >= off + 0.05, (acc, clean, off)


def _pairs(X, y, m, seed):
    g = np.random.default_rng(seed)
    i, j = g.integers(len(y), size=m), g.integers(len(y), size=m)
    keep = i != j
    i, j = i[keep], j[keep]
    return np.stack([X[i], X[j]], axis=1), np.where(y[i] == y[j], 1, -1), i, j


def test_pair_label_rule_against_the_exact_test():
    """Pairs touched by flagged points whose labels differ from the others' are signal: the rule is the two-sided
    Fisher test, checked against the hypergeometric sum written out."""
    g = np.random.default_rng(7)

    def fisher_two_sided(t_sim, t_dis, o_sim, o_dis):
        row, col, n = t_sim + t_dis, t_sim + o_sim, t_sim + t_dis + o_sim + o_dis

        def pmf(x):
            return math.comb(col, x) * math.comb(n - col, row - x) / math.comb(n, row)
        p0 = pmf(t_sim)
        return sum(pmf(x) for x in range(max(0, row + col - n), min(row, col) + 1) if pmf(x) <= p0 * (1 + 1e-7))

    for trial in range(60):
        n = int(g.integers(50, 400))
        y = np.where(g.random(n) < g.uniform(0.2, 0.6), 1, -1)
        touched = g.random(n) < 0.1
        if trial % 3 == 0:
            y[touched] = 1                                   # far points all similar to each other: signal
        t = [int(np.sum(touched & (y > 0))), int(np.sum(touched & (y < 0))),
             int(np.sum(~touched & (y > 0))), int(np.sum(~touched & (y < 0)))]
        assert O.pair_label_rows(y, touched) == (fisher_two_sided(*t) < O.LABEL_ALPHA)


def test_glitched_pair_points_found_exactly():
    """The pairs' points that are glitched rows are the ones flagged and repaired (with the statistics of every
    other pair point); clean points untouched; clean pairs returned as they are."""
    X, Xg, y, rows = _glitched("dense", 0.05, 1e4, 0.05, seed=6)
    P, yp, i, j = _pairs(Xg, y, 3000, seed=1)
    a, b = np.ascontiguousarray(P[:, 0]), np.ascontiguousarray(P[:, 1])
    ar, br, ra, rb = O.glitched_pair_points(a, b, yp)
    bad = np.zeros(len(y), dtype=bool)
    bad[rows] = True
    assert np.array_equal(ra, bad[i]) and np.array_equal(rb, bad[j]) and ra.any()
    np.testing.assert_array_equal(ar[~ra], a[~ra])
    np.testing.assert_array_equal(br[~rb], b[~rb])
    ref = _reference_repair(np.vstack([a, b]), np.r_[ra, rb])
    np.testing.assert_allclose(np.vstack([ar, br]), ref, rtol=1e-12, atol=0)
    Pc, ypc, _, _ = _pairs(X, y, 3000, seed=1)
    a0, b0 = np.ascontiguousarray(Pc[:, 0]), np.ascontiguousarray(Pc[:, 1])
    ac, bc, rac, rbc = O.glitched_pair_points(a0, b0, ypc)
    assert ac is a0 and bc is b0 and not (rac.any() or rbc.any())


def test_pairs_learner_repairs_glitched_points(monkeypatch):
    """PairsMetricLearner warns, counts the repaired pair points, and on pairs of clean test rows its ROC AUC comes
    within 0.03 of the fit on the pairs without glitches; without the repair it is more than 0.03 below (power)."""
    from sklearn.metrics import roc_auc_score

    from logt import PairsMetricLearner
    X, Xg, y, rows = _glitched("dense", 0.06, 1e4, 0.05, seed=8)
    n = 600
    P, yp, i, j = _pairs(Xg[:n], y[:n], 2000, seed=2)
    Pc, _, _, _ = _pairs(X[:n], y[:n], 2000, seed=2)
    test = np.setdiff1d(np.arange(n, X.shape[0]), rows)
    Pt, ypt, _, _ = _pairs(X[test], y[test], 2000, seed=3)

    def auc(est):
        return roc_auc_score(ypt, -est.pair_distance(Pt))

    with pytest.warns(GlitchedRowsWarning, match="pair points"):
        est = PairsMetricLearner(rng=0).fit(P, yp)
    bad = np.isin(np.arange(n), rows)
    assert est.n_repaired_ == int(bad[i].sum() + bad[j].sum())
    clean = auc(PairsMetricLearner(rng=0).fit(Pc, yp))
    monkeypatch.setattr(O, "glitched_pair_points",
                        lambda a, b, y: (a, b, np.zeros(len(a), dtype=bool), np.zeros(len(a), dtype=bool)))
    off = auc(PairsMetricLearner(rng=0).fit(P, yp))
    assert auc(est) >= clean - 0.03 and auc(est) >= off + 0.03, (auc(est), clean, off)
