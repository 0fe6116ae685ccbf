"""A learned metric that is zero (the objective's optimum is W = 0) is reported, never returned silently.

The reference is the optimality condition of a convex loss over the PSD cone: W = 0 is the minimizer
exactly when the loss's gradient at 0 is PSD (dense NumPy formulas), or the full-batch reference optimum.
"""
import warnings

import numpy as np
import pytest

from logt import DegenerateMetricWarning, MetricLearner, PairsMetricLearner
from logt.bench.references import triplet_grad_dense
from logt.metric_learning._base import ZERO_METRIC_RTOL, metric_is_zero
from logt.metric_learning.reference import objective, pair_distribution, solve
from logt.metric_learning.scaling import apply_scaling
from logt.oracles import MetricLearning, TripletMetricLearning

FAST = dict(T=20_000, n_eval_pairs=2000, n_threads=1)


def _lattice(n=40):
    """1-D points 0..n-1 with alternating labels: each point's nearest other-class points (1, 3, 5, ...)
    are nearer than its class-mates (2, 4, 6, ...), so no metric brings class-mates closer."""
    return np.arange(float(n))[:, None], np.arange(n) % 2


def _checkerboard(m=8):
    g = np.array([(i, j) for i in range(m) for j in range(m)], dtype=float)
    return g, (g.sum(1) % 2).astype(int)


def _blobs(seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], 30)
    X = rng.standard_normal((90, 4))
    X[:, 0] += 4.0 * y
    return X, y


def _fit(est, *data):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        est.fit(*data)
    return est, [x for x in w if issubclass(x.category, DegenerateMetricWarning)]


def _scaled(est, X):
    return np.ascontiguousarray(apply_scaling(X, est.center_, est.scale_))


@pytest.mark.parametrize("data", [_lattice, _checkerboard])
def test_triplet_loss_zero_optimum_is_reported(data):
    X, y = data()
    est, w = _fit(MetricLearner(loss="triplets", rng=0, check=False, **FAST), X, y)
    # reference: the full triplet gradient at 0 (dense formula over the oracle's list) is PSD, so W* = 0
    A = _scaled(est, X)
    o = TripletMetricLearning(A, y, 0.1)
    G0 = triplet_grad_dense(A, o.triplets, np.arange(o.n_triplets), np.zeros((A.shape[1],) * 2), o.unit, 0.1)
    assert np.linalg.eigvalsh(G0)[0] >= -1e-12 * np.abs(G0).max()
    assert len(w) == 1 and "metric is zero" in str(w[0].message) and "loss='pairs'" in str(w[0].message)
    assert w[0].filename == __file__                       # points at the caller's fit
    assert est.components_.shape == (1, X.shape[1]) and not est.components_.any()
    assert not est.transform(X).any() and not est.get_mahalanobis_matrix().any()


@pytest.mark.parametrize("data", [_lattice, _checkerboard])
def test_pair_loss_zero_optimum_is_reported(data):
    X, y = data()
    est, w = _fit(MetricLearner(rng=0, check=False, loss="pairs", **FAST), X, y)
    # reference: the full-batch optimum of the same objective (the oracle's neighbour pairs) is W = 0
    A = _scaled(est, X)
    s = est.threshold_scale_
    o = MetricLearning(A, y, 0.1, sampling="neighbors", n_neighbors=10, impostor_radius=1.5,
                       learn_threshold=True, threshold_scale=s)
    P, Y = pair_distribution(y, "neighbors", o.neighbors)
    W, b, Fstar, _ = solve(A, P, Y, 0.1, learn_threshold=True, tol=1e-12, threshold_scale=s)
    _, gW, _ = objective(A, P, Y, np.zeros_like(W), b, 0.1, learn_threshold=True, grad=True, threshold_scale=s)
    assert np.abs(W).max() <= 1e-9 and np.linalg.eigvalsh(gW)[0] >= 0.0
    assert len(w) == 1 and "loss='pairs'" not in str(w[0].message)
    assert not est.components_.any() and not est.transform(X).any()


def test_pairs_estimator_zero_optimum_is_reported():
    """Similar pairs far apart, dissimilar pairs close together: no metric helps."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((120, 3))
    u = rng.standard_normal((120, 3))
    far = np.arange(120) < 60
    pairs = np.stack([a, a + np.where(far[:, None], 3.0, 0.3) * u], axis=1)
    yp = np.where(far, 1, -1)
    est, w = _fit(PairsMetricLearner(rng=0, check=False, **FAST), pairs, yp)
    assert len(w) == 1 and "PairsMetricLearner" in str(w[0].message) and "maps every point to 0" in str(w[0].message)
    assert not est.components_.any()
    # the default (check=True) keeps plain Euclidean distances instead, and says so
    est, w = _fit(PairsMetricLearner(rng=0, **FAST), pairs, yp)
    assert len(w) == 1 and "keeps plain Euclidean distances" in str(w[0].message)
    assert est.metric_choice_ == "euclidean" and np.array_equal(est.components_, np.eye(3))


@pytest.mark.parametrize("loss", ["pairs", "triplets"])
def test_no_warning_when_a_metric_is_learned(loss):
    X, y = _blobs()
    est, w = _fit(MetricLearner(loss=loss, rng=0, **FAST), X, y)
    assert w == [] and est.components_.any()
    assert np.abs(est.transform(X)).max() > 0


def test_auto_reports_only_the_final_fit():
    """loss='auto' cross-validates both losses; the folds' zero metrics are scored, not reported."""
    X, y = _lattice()
    est, w = _fit(MetricLearner(loss="auto", rng=0, **FAST), X, y)
    assert est.loss_scores_ is not None and len(w) == 1


def test_metric_is_zero_reads_W_against_the_gradient_scale():
    """The test is scale-free: W of the size one step from 0 would give is not zero, whatever the
    data's scale, and roundoff of a zero optimum is."""
    X, y = _blobs(3)
    for factor in (1.0, 1e-6):
        A = X / np.linalg.norm(X, axis=1).max() * factor
        o = MetricLearning(A, y, 0.1, sampling="neighbors", learn_threshold=True, threshold_scale="auto")
        g0 = o.mean_grad(np.zeros(o.shape), 1024, np.random.default_rng(0))
        G0 = o.split_point(g0)[0]
        step = np.linalg.norm(G0) / 0.1
        d = G0.shape[0]
        assert not metric_is_zero(1e-4 * step * np.eye(d) / np.sqrt(d), o)
        assert metric_is_zero(0.5 * ZERO_METRIC_RTOL * step * np.eye(d) / d, o)
        assert metric_is_zero(np.zeros((d, d)), o) and metric_is_zero(-1e-20 * np.eye(d), o)


@pytest.mark.parametrize("data", [_lattice, _blobs])
def test_the_zero_comparison_reuses_the_runs_objective(monkeypatch, data):
    """The accelerated runs' zero test compares F(0) with F(x) on the evaluation sample; F(x) is the run's own
    ``result.fun`` (the same evaluation, not repeated): exactly ``oracle.value(x)``, so the verdict is the one
    a fresh evaluation gives."""
    from logt.metric_learning import _base
    seen = []
    inner = _base._zero_is_no_worse

    def spy(x, m, oracle, fx=None):
        verdict = inner(x, m, oracle, fx)
        seen.append((fx, float(oracle.value(x)), verdict, inner(x, m, oracle)))
        return verdict

    monkeypatch.setattr(_base, "_zero_is_no_worse", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MetricLearner(rng=0, n_threads=1, T=2_000).fit(*data())         # the check's quarter-budget fits: logt_acc
    assert seen
    for fx, fresh, verdict, recomputed in seen:
        assert fx is not None and fx == fresh and verdict == recomputed
