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
