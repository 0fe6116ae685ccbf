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
