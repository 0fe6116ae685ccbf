"""The metric learners' non-convergence (MahalanobisLearner._fitted): one logt.ConvergenceWarning, issued at the
caller of fit, with the run's cause and remedy and, when the default's check kept plain distances, what it kept."""
import warnings

import numpy as np
import pytest

import logt
from logt.domains import EuclideanBall
from logt.metric_learning import MetricLearner, PairsMetricLearner
from logt.metric_learning.optimizer import run_minimize
from logt.oracles import DiagonalQuadratic


def _labelled(n=400, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.logspace(-1, 1, d)
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


def _pairs(X, y, n_pairs, seed=1):
    idx = np.random.default_rng(seed).integers(X.shape[0], size=(n_pairs, 2))
    return X[idx], np.where(y[idx[:, 0]] == y[idx[:, 1]], 1, -1)


def _fit_recording(est, *data):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(*data)
    return [w for w in caught if issubclass(w.category, logt.ConvergenceWarning)]


def _cause_and_remedy(result):
    """The cause and remedy of ``result.message``: 'did not converge: <cause>. Remedy: <remedy>. (used ...)'."""
    body = result.message.split("did not converge: ", 1)[1]
    cause, rest = body.split(". Remedy: ", 1)
    return cause, rest.rsplit(". (used ", 1)[0]


def _assert_one_warning(caught, est):
    assert len(caught) == 1, [str(w.message) for w in caught]
    w = caught[0]
    assert w.filename == __file__                      # at the caller of fit, not inside logt
    msg = str(w.message)
    assert msg.startswith(f"{type(est).__name__}: learning the metric did not converge")
    assert est.result_.success is False
    cause, remedy = _cause_and_remedy(est.result_)
    assert cause in msg and remedy in msg
    assert f"method {est.result_.method!r}" in msg
    return msg


@pytest.mark.parametrize("check", [True, False])
def test_metric_learner_warns_once_at_the_caller(check):
    X, y = _labelled()
    est = MetricLearner(T=300, lam=1e-3, check=check, rng=0)
    msg = _assert_one_warning(_fit_recording(est, X, y), est)
    assert ("check kept" in msg) == (est.metric_choice_ != "learned")


@pytest.mark.parametrize("check", [True, False])
def test_pairs_metric_learner_warns_once_at_the_caller(check):
    X, y = _labelled()
    est = PairsMetricLearner(T=300, lam=1e-3, check=check, rng=0)
    msg = _assert_one_warning(_fit_recording(est, *_pairs(X, y, 2000)), est)
    assert ("check kept" in msg) == (est.metric_choice_ != "learned")


def test_the_warning_says_when_the_check_kept_plain_distances():
    # wide noise pairs: the check drops the (unconverged) learned metric for plain distances
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 1500))
    y = rng.integers(2, size=300)
    est = PairsMetricLearner(T=300, lam=1e-3, rng=0)
    msg = _assert_one_warning(_fit_recording(est, *_pairs(X, y, 1500)), est)
    assert est.metric_choice_ in ("euclidean", "subspace")
    assert f"metric_choice_={est.metric_choice_!r}" in msg and "does not use this run" in msg


def test_the_warning_of_a_kept_default_candidate_is_about_the_model():
    # n_components on features in unrelated units: the check keeps the default's directions, whose metric is then
    # learned on every row; that run (result_, on its m coordinates) is the model's, so no "check kept" remark
    from logt.experiments.highdim_data import mixed_units
    X, y = mixed_units(600, 400, 4, 5, rng=0)
    est = MetricLearner(n_components=16, T=300, lam=1e-3, rng=0)
    msg = _assert_one_warning(_fit_recording(est, X, y), est)
    assert est.metric_choice_ == "default" and "check kept" not in msg
    assert est.result_.x.shape == (est.subspace_.shape[0],) * 2 and est.subspace_.shape[0] != 16


def test_the_warning_of_a_kept_default_at_rank_k_is_about_the_model():
    # PairsMetricLearner's n_components on features in unrelated units: the check keeps the default's metric at
    # rank k, learned again on every pair; that run (result_, on the default's subspace) is the model's
    from logt.experiments.highdim_data import mixed_units
    g = np.random.default_rng(0)
    X, y = mixed_units(600, 400, 4, 5, rng=g)
    i, j = g.integers(0, 600, (2, 3000))
    same = g.random(3000) < 0.5
    j[same] = [g.choice(np.flatnonzero(y == y[t])) for t in i[same]]
    est = PairsMetricLearner(n_components=2, T=300, lam=1e-3, rng=0)
    msg = _assert_one_warning(_fit_recording(est, np.stack([X[i], X[j]], axis=1), np.where(y[i] == y[j], 1, -1)), est)
    assert est.metric_choice_ == "default" and "check kept" not in msg
    m = est.subspace_.shape[0]          # the run's point: the metric on m coordinates and the threshold's
    assert m > 2 and est.result_.x.shape == (m + 1, m + 1)


def test_a_converged_fit_does_not_warn():
    X, y = _labelled(seed=3)
    est = MetricLearner(rng=0)
    assert _fit_recording(est, X, y) == []
    assert est.result_.success is True


def test_minimize_and_run_minimize_warn_at_their_caller_and_solve_the_same_bits():
    # curvatures 0.01 to 100 on T = 10,000: too small a budget (README's example)
    oracle = DiagonalQuadratic(np.logspace(-2, 2, 5), np.full(5, 100.0), noise=1.0)
    ball = EuclideanBall(5, 100.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = logt.minimize(oracle, ball, T=10**4, rng=0)
        quiet = run_minimize(oracle, ball, 10**4, "auto", "auto", None, 0, warn=False)
        loud = run_minimize(oracle, ball, 10**4, "auto", "auto", None, 0)
    conv = [w for w in caught if issubclass(w.category, logt.ConvergenceWarning)]
    assert res.success is False and quiet.success is False
    assert [w.filename for w in conv] == [__file__, __file__]        # minimize's and run_minimize's (warn=True)
    assert str(conv[0].message) == f"logt.minimize (method {res.method!r}): {res.message}" == str(conv[1].message)
    for r in (quiet, loud):
        np.testing.assert_array_equal(r.x, res.x)
        assert r.message == res.message
