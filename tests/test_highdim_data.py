"""The high-dimensional development data (logt.experiments.highdim_data)."""
import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("sklearn", reason="the generators use scikit-learn's digits and make_classification")
from logt.experiments import highdim_data as H   # noqa: E402


def test_shifted_digits_raw_pixels():
    X, y = H.shifted_digits(300, canvas=28, size=18, max_shift=4, rng=0)
    assert X.shape == (300, 784) and y.shape == (300,)
    assert X.min() >= 0 and X.max() <= 255 and np.array_equal(X, np.round(X))
    img = X.reshape(-1, 28, 28)
    border = (28 - 18) // 2 - 4                                       # never reached by a shifted digit
    assert np.all(img[:, :border, :] == 0) and np.all(img[:, :, -border:] == 0)
    assert set(np.unique(y)) <= set(range(10)) and len(np.unique(y)) == 10
    X2, y2 = H.shifted_digits(300, canvas=28, size=18, max_shift=4, rng=0)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    assert not np.array_equal(X, H.shifted_digits(300, rng=1)[0])
    with pytest.raises(ValueError, match="does not fit"):
        H.shifted_digits(10, canvas=20, size=18, max_shift=4)


def test_dense_classification_has_constant_and_scaled_columns():
    X, y = H.dense_classification(200, 600, n_informative=5, n_classes=3, rng=0)
    assert X.shape == (200, 600) and np.isfinite(X).all()
    assert np.sum(X.std(0) == 0) == 60
    sd = X.std(0)[X.std(0) > 0]
    assert sd.max() / sd.min() > 100                                  # scales over decades
    assert np.array_equal(X, H.dense_classification(200, 600, n_informative=5, n_classes=3, rng=0)[0])


def test_mixed_units_puts_the_largest_variances_on_noise_features():
    X, y = H.mixed_units(900, 400, 4, 5, rng=3)
    assert X.shape == (900, 400) and y.dtype == np.int64 and np.array_equal(np.bincount(y), [225] * 4)
    # the informative features: those whose class means differ (F statistic far above the noise features')
    means = np.array([X[y == c].mean(0) for c in range(4)])
    within = np.mean([X[y == c].var(0) for c in range(4)], axis=0)
    F = means.var(0) / within
    informative = np.argsort(F)[-5:]
    assert F[informative].min() > 20 * np.median(F)
    sd = X.std(0)
    assert sd.max() / sd.min() > 1e4                                  # units over decades
    assert len(set(np.argsort(sd)[-20:]) & set(informative)) <= 1     # the top variances: noise features
    # equal units: the same draws but the last, so the same informative features and noise
    Xe, _ = H.mixed_units(900, 400, 4, 5, decades=0.0, rng=3)
    np.testing.assert_allclose(X / Xe, np.broadcast_to(X[0] / Xe[0], X.shape), rtol=1e-12)
    assert np.array_equal(X, H.mixed_units(900, 400, 4, 5, rng=3)[0])


def test_sparse_classification_is_sparse_counts():
    X, y = H.sparse_classification(300, 3000, n_classes=3, rng=0)
    assert sp.isspmatrix_csr(X) and X.shape == (300, 3000)
    assert X.nnz < 0.05 * 300 * 3000 and np.all(X.data >= 1) and np.array_equal(X.data, np.round(X.data))
    assert np.bincount(y).min() > 50


def test_sets_are_reproducible_and_distinct():
    a = H.development_sets(rng=0)
    assert set(a) == {"digits28", "digits28_noisy", "dense2000", "dense800_heavy", "bow5000"}
    b = H.heldout_sets()
    c = H.heldout2_sets()
    assert not set(a) & set(b) and not set(c) & (set(a) | set(b)) and len(c) == 5
    Xa = a["digits28"][0]
    assert np.array_equal(Xa, H.development_sets(rng=0)["digits28"][0])


def test_identities_nuisance_rules_plain_distances():
    X, y = H.identities(12, 6, 500, n_nuisance=4, n_identity=10, nuisance=4.0, separation=1.5, noise=0.5, rng=3)
    assert X.shape == (72, 500) and np.array_equal(y, np.repeat(np.arange(12), 6))
    X2, y2 = H.identities(12, 6, 500, n_nuisance=4, n_identity=10, nuisance=4.0, separation=1.5, noise=0.5, rng=3)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    assert not np.array_equal(X, H.identities(12, 6, 500, rng=4)[0][:, :500])
    # the class means span the identity directions; the rest is the shared nuisance plus noise
    means = np.array([X[y == c].mean(0) for c in range(12)])
    assert np.linalg.matrix_rank(means - means.mean(0), tol=1e-6 * np.abs(means).max()) == 11
    within = X - means[y]
    s = np.linalg.svd(within, compute_uv=False)
    assert s[3] > 3 * s[4]                               # four nuisance directions dominate the within-class spread
    P, _ = H.identities(5, 4, 300, pixels=True, rng=0)
    assert P.min() == 0 and P.max() == 255 and np.array_equal(P, np.round(P))


def test_shapes_raw_pixels_and_the_label_is_the_shape():
    X, y = H.shapes(400, canvas=24, n_classes=8, rotation=0.0, noise=0.0, blur=0.0, gradient=0.0, rng=0)
    assert X.shape == (400, 576) and y.shape == (400,)
    assert X.min() >= 0 and X.max() <= 255 and np.array_equal(X, np.round(X))
    assert set(np.unique(y)) == set(range(8))
    area = {k: np.mean((X[y == c] > 0).sum(1)) for c, k in enumerate(H.SHAPE_KINDS)}
    assert area["disk"] > 1.5 * area["ring"] and area["square"] > 1.5 * area["frame"]     # filled vs outline
    assert np.all((X > 0).sum(1) > 0)                             # every image shows its shape
    X2, y2 = H.shapes(400, canvas=24, n_classes=8, rotation=0.0, noise=0.0, blur=0.0, gradient=0.0, rng=0)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    assert not np.array_equal(X, H.shapes(400, canvas=24, rng=1)[0])
    # the brightness ramp (up or down, random direction) lights much of the background, which carries no class
    X0, y0 = H.shapes(200, canvas=24, noise=0.0, blur=0.0, gradient=0.0, rng=2)
    Xr, yr = H.shapes(200, canvas=24, noise=0.0, blur=0.0, gradient=1.0, rng=2)     # the same shapes, ramp on
    assert np.array_equal(y0, yr) and not np.array_equal(Xr, X0)
    assert np.mean(Xr > 0) > 2 * np.mean(X0 > 0)
    for bad in (dict(canvas=8), dict(n_classes=1), dict(n_classes=9)):
        with pytest.raises(ValueError):
            H.shapes(10, **bad)


def test_photo_patches_are_cut_from_their_region():
    pytest.importorskip("PIL", reason="reading scikit-learn's sample photographs needs Pillow")
    from sklearn.datasets import load_sample_images
    X, y = H.photo_patches(300, size=6, grid=2, gain=0.0, rng=0)
    assert X.shape == (300, 36) and set(np.unique(y)) == set(range(8))
    assert X.min() >= 0 and X.max() <= 255 and np.array_equal(X, np.round(X))
    photos = [np.round(im.astype(np.float64).mean(axis=2)) for im in load_sample_images().images]
    for r in range(5):                             # brute force: the patch is a window of its region only
        c = y[r]
        im = photos[c // 4]
        h, w = im.shape
        a, b = (c % 4) // 2, c % 2
        region = im[a * h // 2:(a + 1) * h // 2, b * w // 2:(b + 1) * w // 2]
        win = np.lib.stride_tricks.sliding_window_view(region, (6, 6)).reshape(-1, 36)
        assert np.any(np.all(win == X[r], axis=1))
    assert np.array_equal(X, H.photo_patches(300, size=6, grid=2, gain=0.0, rng=0)[0])
    with pytest.raises(ValueError, match="size"):
        H.photo_patches(10, size=200, grid=3)
    # a natural image's steep spectrum: the 64th principal direction holds a tiny share of the 1st's variance
    Xp, _ = H.photo_patches(1500, size=18, grid=2, rng=1)
    var = np.linalg.svd(Xp - Xp.mean(0), compute_uv=False) ** 2
    assert var[63] / var[0] < 1e-3


def test_images_sets_are_new_names():
    pytest.importorskip("PIL", reason="reading scikit-learn's sample photographs needs Pillow")
    sets = H.images_sets()
    assert set(sets) == {"shapes28", "shapes32_ramp", "patches20", "patches24"}
    seen = set(H.development_sets()) | set(H.heldout_sets()) | set(H.heldout2_sets())
    assert not seen & set(sets)
    assert all(X.shape[0] == y.shape[0] and X.shape[1] >= 400 for X, y in sets.values())


def test_spectra_classes_are_learnable_but_not_by_euclidean_distances():
    from scipy.stats import f_oneway
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.neighbors import KNeighborsClassifier
    X, y = H.spectra(2400, 400, n_classes=4, peak=0.1, noise=0.5, rng=7)
    assert X.shape == (2400, 400) and X.dtype == np.float64 and y.dtype == np.int64
    assert np.array_equal(np.bincount(y), [600] * 4)                 # labels cycle, then shuffled
    assert not np.array_equal(y[:8], np.arange(8) % 4)
    Xtr, ytr, Xte, yte = X[:1600], y[:1600], X[1600:], y[1600:]
    # the nuisance (baseline, scatter, bands) rules the distances: 1-NN near chance (0.25) ...
    assert KNeighborsClassifier(1).fit(Xtr, ytr).score(Xte, yte) < 0.4
    # ... while a linear model sees the class peaks
    assert LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto").fit(Xtr, ytr).score(Xte, yte) > 0.9
    # the top principal direction is nuisance: its coordinate's class means do not differ
    Xc = X - X.mean(0)
    top = Xc @ np.linalg.svd(Xc, full_matrices=False)[2][0]
    assert f_oneway(*(top[y == c] for c in range(4))).pvalue > 1e-3
    # smooth but for the white noise: without it the curves' second differences are tiny
    X0, _ = H.spectra(50, 400, n_classes=4, peak=0.1, noise=0.0, rng=7)
    Xn, _ = H.spectra(50, 400, n_classes=4, peak=0.1, noise=5.0, rng=7)
    assert np.abs(np.diff(X0, 2, axis=1)).mean() < 0.02 * np.abs(np.diff(Xn, 2, axis=1)).mean()


def test_spectra_is_seeded_and_checks_its_arguments():
    a = H.spectra(30, 50, rng=3)
    assert all(np.array_equal(u, v) for u, v in zip(a, H.spectra(30, 50, rng=3)))
    assert not np.array_equal(a[0], H.spectra(30, 50, rng=4)[0])
    g = np.random.default_rng(3)
    first, second = H.spectra(30, 50, rng=g)[0], H.spectra(30, 50, rng=g)[0]   # a Generator is advanced
    assert not np.array_equal(first, second)
    for bad in (dict(n_features=1), dict(n_classes=1), dict(n_class_peaks=0), dict(peak=0.0), dict(noise=-1.0)):
        with pytest.raises(ValueError, match="spectra needs"):
            H.spectra(10, **{**dict(n_features=20), **bad})


def test_expression_has_exactly_its_informative_genes():
    from scipy.stats import f_oneway
    X, y = H.expression(900, 2000, n_classes=3, n_informative=12, shift=1.5, batch=0.0, rng=11)
    assert X.shape == (900, 2000) and np.array_equal(np.bincount(y), [300] * 3)
    X0, y0 = H.expression(900, 2000, n_classes=3, n_informative=12, shift=0.0, batch=0.0, rng=11)
    assert np.array_equal(y, y0)                                     # shift scales the offsets, same draws
    informative = np.flatnonzero(np.any(X != X0, axis=0))
    assert informative.size == 12                                    # the class offsets touch 12 genes only
    offsets = (X - X0)[:, informative]
    assert all(np.ptp(offsets[y == c], axis=0).max() < 1e-9 for c in range(3))    # one offset per class
    p = f_oneway(*(X[y == c] for c in range(3))).pvalue
    assert set(np.flatnonzero(p < 1e-8)) <= set(informative) and np.sum(p < 1e-8) >= 9
    assert np.all(f_oneway(*(X0[y == c] for c in range(3))).pvalue > 1e-6)      # shift 0: no class signal
    # genes co-expressed within modules: many gene pairs correlated far beyond sampling noise (1 / 30)
    C = np.corrcoef(X[:, :200], rowvar=False)[np.triu_indices(200, 1)]
    assert np.mean(np.abs(C) > 0.2) > 0.05
    # a batch effect shifts each gene's mean in one half-batch: the between-batch F of some genes explodes
    Xb, _ = H.expression(900, 2000, n_classes=3, n_informative=12, shift=1.5, batch=1.0, rng=11)
    assert np.median(np.abs(np.diff(Xb - X, axis=0)).max(1)) > 0          # batch rows moved


def test_expression_counts_are_skewed_integers_of_the_log_values():
    L, y = H.expression(200, 500, rng=5)
    C, yc = H.expression(200, 500, counts=True, rng=5)
    assert np.array_equal(y, yc) and (C >= 0).all() and np.array_equal(C, np.floor(C))
    assert C.max() / np.median(C[C > 0]) > 1000                        # counts spanning decades
    # each row: counts = floor(2^log2 value * library size), one size in [0.5, 2] per row
    big = 2.0 ** L > 256                                              # floor's error below 1 / 256 there
    ratio = np.where(big, C / 2.0 ** L, np.nan)
    lo, hi = np.nanmin(ratio, axis=1), np.nanmax(ratio, axis=1)
    assert np.all(lo >= 0.5 - 1 / 256) and np.all(hi <= 2.0) and np.all(hi - lo < 1 / 256)
    with pytest.raises(ValueError, match="expression needs"):
        H.expression(10, 50, n_informative=60)
    with pytest.raises(ValueError, match="expression needs"):
        H.expression(10, 50, n_classes=1)


def test_multimodal_classes_differ_by_their_clusters_not_their_means():
    from scipy.stats import f_oneway
    from sklearn.neighbors import KNeighborsClassifier
    X, y = H.multimodal(1800, 400, n_classes=3, n_clusters=3, n_informative=4, sep=4.0, noise=1.0, rng=7)
    assert X.shape == (1800, 400) and np.array_equal(np.bincount(y), [600] * 3)
    # the informative coordinates: the spread of 9 cluster centres on top of unit noise
    informative = np.flatnonzero(X.var(axis=0) > 3.0)
    assert informative.size == 4
    # no class mean differs (the centres are centred per class): no coordinate separates the classes on average
    # beyond what the clusters' sampling leaves
    means = np.array([X[y == c][:, informative].mean(0) for c in range(3)])
    assert np.abs(means).max() < 1.0 < X[:, informative].std(0).min()
    # the clusters do: 1-NN on the informative coordinates against 1-NN on all of them
    tr = np.arange(1800) < 1200
    nn = lambda cols: KNeighborsClassifier(1).fit(X[tr][:, cols], y[tr]).score(X[~tr][:, cols], y[~tr])  # noqa: E731
    assert nn(informative) > 0.9 and nn(np.arange(400)) < nn(informative) - 0.2
    assert np.all(f_oneway(*(X[y == c][:, np.setdiff1d(np.arange(400), informative)] for c in range(3))).pvalue
                  > 1e-6)                                                   # the noise carries no class
    a = H.multimodal(50, 30, rng=3)
    assert all(np.array_equal(u, v) for u, v in zip(a, H.multimodal(50, 30, rng=3)))
    g = np.random.default_rng(3)
    assert not np.array_equal(H.multimodal(50, 30, rng=g)[0], H.multimodal(50, 30, rng=g)[0])
    for bad in (dict(n_classes=1), dict(n_clusters=1), dict(n_informative=30), dict(n_informative=0),
                dict(sep=-1.0), dict(noise=-1.0)):
        with pytest.raises(ValueError, match="multimodal needs"):
            H.multimodal(50, 30, **bad)


def test_sequences_are_one_hot_letters_whose_classes_carry_their_motif():
    X, y = H.sequences(3000, length=40, n_classes=3, motif_length=6, mutate=0.0, n_biased=0, bias=0.0, rng=11)
    assert X.shape == (3000, 160) and set(np.unique(X)) == {0.0, 1.0} and np.array_equal(np.bincount(y), [1000] * 3)
    letters = X.reshape(3000, 40, 4)
    assert np.all(letters.sum(axis=2) == 1)                           # one letter per position
    seq = letters.argmax(axis=2)
    first = 40 // 2 - 6 // 2
    for c in (1, 2):
        # unmutated: every row of class c holds one 6-letter word at start first - 1, first or first + 1, the same
        # word for the class; the background rows hold it at the centre no more often than chance allows
        rows = seq[y == c]
        words = {tuple(r[s:s + 6]) for r in rows for s in (first - 1, first, first + 1)}
        motif = max(words, key=lambda w: sum(any(tuple(r[s:s + 6]) == w for s in (first - 1, first, first + 1))
                                             for r in rows))
        assert all(any(tuple(r[s:s + 6]) == motif for s in (first - 1, first, first + 1)) for r in rows)
        background = seq[y == 0]
        assert sum(any(tuple(r[s:s + 6]) == motif for s in (first - 1, first, first + 1))
                   for r in background) < 20
    # mutations: every draw is made whatever mutate is, so one seed at mutate 0 and 0.5 differs only in the
    # motif letters replaced: half of them, a replacement equal to the motif's letter 1 time in 4
    def class1(mutate):
        X, y = H.sequences(4000, length=30, n_classes=2, motif_length=8, mutate=mutate, n_biased=0, rng=5)
        return X.reshape(4000, 30, 4).argmax(axis=2)[y == 1]
    plain, half = class1(0.0), class1(0.5)
    assert abs((plain != half).sum() / (plain.shape[0] * 8) - 0.375) < 0.01
    assert np.array_equal(plain[:, :10], half[:, :10]) and np.array_equal(plain[:, 20:], half[:, 20:])
    # at mutate=1 the letter at the centre (inside the motif at any jitter) is uniform over the 4
    assert np.abs(np.bincount(class1(1.0)[:, 15], minlength=4) / plain.shape[0] - 0.25).max() < 0.04
    # biased positions: with bias 1 every row of a class holds its preferred letter there, written over the motif
    # too; with the motif's letters all drawn afresh, those are the class's only constant positions
    X, y = H.sequences(600, length=12, n_classes=2, motif_length=8, mutate=1.0, n_biased=5, bias=1.0, rng=2)
    s = X.reshape(600, 12, 4).argmax(axis=2)
    assert sum(np.unique(s[y == 1][:, p]).size == 1 for p in range(12)) == 5
    assert sum(np.unique(s[y == 0][:, p]).size == 1 for p in range(12)) == 0
    # the longest motif fits at either jitter: every row still one letter a position
    for motif_length in (1, 7, 8):
        X, _ = H.sequences(60, length=motif_length + 2, n_classes=3, motif_length=motif_length, mutate=0.0,
                           n_biased=2, bias=0.5, rng=1)
        assert np.all(X.reshape(60, motif_length + 2, 4).sum(axis=2) == 1)
    # seeded; a Generator is advanced; arguments checked
    a = H.sequences(50, 20, rng=3)
    assert all(np.array_equal(u, v) for u, v in zip(a, H.sequences(50, 20, rng=3)))
    g = np.random.default_rng(3)
    assert not np.array_equal(H.sequences(50, 20, rng=g)[0], H.sequences(50, 20, rng=g)[0])
    for bad in (dict(n_classes=1), dict(motif_length=19), dict(motif_length=0), dict(n_biased=21),
                dict(mutate=1.5), dict(bias=-0.1)):
        with pytest.raises(ValueError, match="sequences needs"):
            H.sequences(50, 20, **bad)


def test_sequences_classes_are_learnable_from_the_motif_positions():
    from sklearn.neighbors import KNeighborsClassifier
    X, y = H.sequences(2400, length=60, n_classes=3, motif_length=8, mutate=0.3, n_biased=6, bias=0.3, rng=4)
    tr = np.arange(2400) < 1600
    centre = np.arange(4 * (30 - 4 - 1), 4 * (30 + 4 + 1))        # the motif's positions, jitter included
    nn = lambda cols: KNeighborsClassifier(5).fit(X[tr][:, cols], y[tr]).score(X[~tr][:, cols], y[~tr])  # noqa: E731
    # the classes live at the centre: k-NN there beats k-NN on every position, which the background's noise rules
    assert nn(centre) > nn(np.arange(240)) + 0.05 and nn(centre) > 0.7


def test_with_outlier_rows_scales_entries_of_a_few_rows_only():
    X = np.random.default_rng(0).standard_normal((400, 50))
    Y, rows = H.with_outlier_rows(X, frac=0.025, scale=1e5, entries=0.1, rng=2)
    assert rows.size == 10 and np.all(np.diff(rows) > 0) and Y is not X
    changed = Y != X
    assert np.array_equal(np.flatnonzero(changed.any(axis=1)), rows)
    assert np.all(changed[rows].sum(axis=1) == 5)                             # 10% of 50 entries
    np.testing.assert_allclose(Y[changed], 1e5 * X[changed], rtol=1e-15)
    assert np.array_equal(X, np.random.default_rng(0).standard_normal((400, 50)))    # the input untouched
    again, rows2 = H.with_outlier_rows(X, frac=0.025, scale=1e5, entries=0.1, rng=2)
    assert np.array_equal(again, Y) and np.array_equal(rows2, rows)
    assert H.with_outlier_rows(X, frac=0.001, rng=2)[1].size == 1                # at least one row
    for bad in (dict(frac=0.0), dict(frac=1.0), dict(entries=0.0), dict(entries=1.5)):
        with pytest.raises(ValueError, match="with_outlier_rows needs"):
            H.with_outlier_rows(X, **bad)


def test_with_outlier_rows_on_sparse_rows_scales_stored_entries_only():
    X, _ = H.sparse_classification(300, 500, 3, doc_length=20, rng=0)
    Y, rows = H.with_outlier_rows(X, frac=0.05, scale=1e3, entries=0.5, rng=2)
    assert sp.isspmatrix_csr(Y) and rows.size == 15
    assert np.array_equal(Y.indices, X.indices) and np.array_equal(Y.indptr, X.indptr)     # the pattern kept
    changed = Y.toarray() != X.toarray()
    assert np.array_equal(np.flatnonzero(changed.any(axis=1)), rows)
    nnz = np.diff(X.indptr)[rows]
    assert np.array_equal(changed[rows].sum(axis=1), np.maximum(1, (0.5 * nnz).astype(int)))
    np.testing.assert_allclose(Y.toarray()[changed], 1e3 * X.toarray()[changed], rtol=1e-15)
    again, rows2 = H.with_outlier_rows(X, frac=0.05, scale=1e3, entries=0.5, rng=2)
    assert (again != Y).nnz == 0 and np.array_equal(rows2, rows)
