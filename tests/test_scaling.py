"""The internal scaling's rule for two-valued features (``scaling="auto"`` on dense input): half the range,
against references computed here with NumPy (``np.unique`` counts, standard deviations by hand)."""
import numpy as np
import pytest
import scipy.sparse as sp

from logt.metric_learning import scaling as S
from logt.metric_learning.scaling import apply_scaling, fit_scaling, two_valued


def _mixed_columns(n=600, seed=0):
    """(n, 6): a rare 0/1 column (1%), a balanced one coded {-3, 7}, a bool-like {0, 1} at 20%, a
    three-valued, a continuous and a constant column."""
    g = np.random.default_rng(seed)
    rare = np.zeros(n)
    rare[g.choice(n, n // 100, replace=False)] = 1.0
    return np.column_stack([rare, np.where(g.random(n) < 0.5, -3.0, 7.0), (g.random(n) < 0.2).astype(float),
                            g.integers(0, 3, n).astype(float), g.normal(5.0, 2.0, n), np.full(n, 4.0)])


@pytest.mark.parametrize("block", [S.TWO_VALUED_BLOCK, 7, 1])
def test_two_valued_matches_unique_counts_in_any_block_size(monkeypatch, block):
    monkeypatch.setattr(S, "TWO_VALUED_BLOCK", block)
    g = np.random.default_rng(3)
    X = np.column_stack([_mixed_columns(200), g.integers(0, 2, (200, 5)) * g.normal(size=5)])
    X[150:, 3] = 1.0                                 # a three-valued column whose third value sits in later rows
    two, half = two_valued(X)
    ref = np.array([np.unique(c).size == 2 for c in X.T])
    assert ref.any() and not ref.all()
    np.testing.assert_array_equal(two, ref)
    np.testing.assert_allclose(half, (X.max(0) - X.min(0)) / 2, rtol=1e-15)
    assert two_valued(np.zeros((0, 3)))[0].shape == (3,)


def test_auto_divides_two_valued_features_by_half_their_range_and_the_rest_by_their_sd():
    X = _mixed_columns()
    c, s = fit_scaling(X)                    # "auto" on dense input
    cs, ss = fit_scaling(X, "standardize")
    np.testing.assert_array_equal(c, X.mean(0))
    np.testing.assert_array_equal(cs, X.mean(0))
    sd = X.std(0)
    per_feature = np.array([0.5, 5.0, 0.5, sd[3], sd[4], 1.0])     # up to the one common factor
    np.testing.assert_allclose(s / s[4], per_feature / sd[4], rtol=1e-12)
    np.testing.assert_allclose(ss / ss[4], np.r_[sd[:5], 1.0] / sd[4], rtol=1e-12)
    # every training row in the unit ball, as before
    assert np.linalg.norm(apply_scaling(X, c, s), axis=1).max() <= 1.0


def test_a_rare_category_is_not_stretched_into_outlier_rows():
    """Standardized, the rows of a 0.2% category lie ~22 sd out and are taken for outliers; at half the
    range they are ordinary rows, and the category's step is the balanced column's."""
    g = np.random.default_rng(0)
    n = 2000
    X = (g.random((n, 6)) < 0.5).astype(float)
    X[:, 0] = 0.0
    X[:4, 0] = 1.0
    _, s_std, out_std = fit_scaling(X, "standardize", return_outliers=True)
    c, s, out = fit_scaling(X, return_outliers=True)
    assert out_std[:4].all() and not out.any()
    Z = apply_scaling(X, c, s)
    step = np.ptp(Z, axis=0)
    np.testing.assert_allclose(step, step[1], rtol=1e-12)            # every 0/1 column the same step


def test_the_coding_of_a_two_valued_feature_changes_nothing():
    X = _mixed_columns(seed=1)
    Y = X.copy()
    Y[:, 0] = 10.0 * X[:, 0] - 3.0          # {0, 1} -> {-3, 7}
    Y[:, 2] = 1.0 - X[:, 2]                 # flipped
    Zx = apply_scaling(X, *fit_scaling(X))
    Zy = apply_scaling(Y, *fit_scaling(Y))
    D = lambda Z: np.linalg.norm(Z[:50, None] - Z[None, :50], axis=2)      # noqa: E731
    np.testing.assert_allclose(D(Zy), D(Zx), rtol=1e-12, atol=1e-14)


def test_sparse_input_explicit_standardize_and_the_old_rule_are_unchanged(monkeypatch):
    X = _mixed_columns(seed=2)
    Xp = np.abs(X)
    np.testing.assert_array_equal(fit_scaling(sp.csr_matrix(Xp))[1], fit_scaling(sp.csr_matrix(Xp), "max_norm")[1])
    monkeypatch.setattr(S, "BALANCED_BINARY", False)
    old = fit_scaling(X)
    monkeypatch.setattr(S, "BALANCED_BINARY", True)
    for a, b in zip(old, fit_scaling(X, "standardize")):
        np.testing.assert_array_equal(a, b)


def test_data_without_two_valued_features_keep_the_standardization_bit_for_bit():
    g = np.random.default_rng(5)
    X = np.column_stack([g.normal(size=(300, 4)) * [1, 10, 1e-3, 5], g.integers(0, 5, 300)])
    for a, b in zip(fit_scaling(X, return_outliers=True), fit_scaling(X, "standardize", return_outliers=True)):
        np.testing.assert_array_equal(a, b)


def test_extreme_magnitudes_keep_the_rule():
    """Data near 1e200 are fitted after an exact power-of-two division: the same rule, the scale times it
    (the constant column, which no distance sees, aside)."""
    X = _mixed_columns(seed=4)
    c, s = fit_scaling(X)
    cb, sb = fit_scaling(X * 2.0 ** 700)
    np.testing.assert_allclose(sb[:5] / 2.0 ** 700, s[:5], rtol=1e-12)
    np.testing.assert_allclose(cb / 2.0 ** 700, c, rtol=1e-12)


@pytest.mark.parametrize("learner", ["MetricLearner", "PairsMetricLearner"])
def test_learners_scale_one_hot_columns_by_half_their_range(learner):
    import logt
    g = np.random.default_rng(6)
    n = 400
    lev = np.minimum(g.geometric(0.5, n) - 1, 4)          # level frequencies 1/2, 1/4, ..., the last ~6%
    X = np.column_stack([np.eye(5)[lev], g.normal(size=n)])
    y = (lev + (X[:, 5] > 0)) % 2
    if learner == "MetricLearner":
        est = logt.MetricLearner(check=False, rng=0, T=2000).fit(X, y)
    else:
        i, j = g.integers(n, size=600), g.integers(n, size=600)
        est = logt.PairsMetricLearner(check=False, rng=0, T=2000).fit(np.stack([X[i], X[j]], axis=1),
                                                                       np.where(y[i] == y[j], 1, -1))
        X = np.concatenate([X[i], X[j]])
    ratio = est.scale_[:5] / est.scale_[5]
    np.testing.assert_allclose(ratio, 0.5 / X[:, 5].std(), rtol=1e-12)
