"""T="auto"'s re-run (logt.metric_learning._base.regrow_budget): a fit whose run fell short of what its own analysis
needs is run once more at REGROW_MARGIN x the budget its verdict names, within REGROW_MAX_FACTOR x the auto budget
and REGROW_WORK (a work model); an int T is never re-run."""
import math
import types
import warnings

import numpy as np
import pytest

import logt
from logt.metric_learning import MetricLearner, PairsMetricLearner
from logt.metric_learning import _base


def _rare_far_class(seed=1):
    """1,500 rows of 8 features, 13 of them a class shifted by 3 in every feature: at W = 0 the rare class's
    distances make L/lam ~ 2e3, more than the 20,000 anchors of T="auto" let the stages contract."""
    g = np.random.default_rng(seed)
    y = (g.random(2000) < 0.01).astype(int)
    X = g.normal(size=(2000, 8))
    X[y == 1] += 3
    return X[:1500], y[:1500]


def _fit(est, *data):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(*data)
    return est, [w for w in caught if issubclass(w.category, logt.ConvergenceWarning)]


def _auto_T(loss="softmax", lam=0.1):
    T = _base.auto_budget(lam)
    return T // _base.SOFTMAX_BUDGET_DIVISOR if loss == "softmax" else T


@pytest.mark.parametrize("check", [False, True])
def test_auto_re_runs_at_the_budget_its_first_run_asks_for(check):
    X, y = _rare_far_class()
    T = _auto_T()
    # the first run, alone: an int T is never re-run, and says what it needs
    first, caught = _fit(MetricLearner(T=T, check=check, rng=0), X, y)
    verdict = first.result_.params["convergence"]
    assert first.result_.success is False and len(caught) == 1 and "regrown" not in first.result_.params
    need = int(verdict["T_suffices"])
    assert need > T
    # T="auto": the same first run, then once more at 1.5x what it asked for, which converges
    est, caught = _fit(MetricLearner(check=check, rng=0), X, y)
    again = est.result_.params["regrown"]
    assert again == {"T": T, "T_suffices": need, "rerun_T": math.ceil(_base.REGROW_MARGIN * need),
                     "cause": verdict["cause"]}
    assert est.result_.success is True and caught == []
    assert T < est.n_calls_ <= again["rerun_T"]
    # on this problem the re-run ends at a lower F of the same objective (the same evaluation anchors) than the
    # first run; not a rule: both are within ~1e-4 of the optimum on such problems (docs)
    assert est.result_.fun <= first.result_.fun
    # and reproducible bit for bit
    twin, _ = _fit(MetricLearner(check=check, rng=0), X, y)
    np.testing.assert_array_equal(twin.components_, est.components_)


def test_a_converged_auto_fit_runs_once():
    g = np.random.default_rng(0)
    X = g.normal(size=(600, 5))
    y = (X[:, 0] > 0).astype(int)
    est, caught = _fit(MetricLearner(check=False, rng=0), X, y)
    assert est.result_.success is True and caught == [] and "regrown" not in est.result_.params
    assert est.n_calls_ <= _auto_T()


def test_a_re_run_that_still_falls_short_says_it_ran_twice(monkeypatch):
    X, y = _rare_far_class()
    T = _auto_T()
    need = int(_fit(MetricLearner(T=T, check=False, rng=0), X, y)[0].result_.params["convergence"]["T_suffices"])
    monkeypatch.setattr(_base, "REGROW_MARGIN", (T + 1) / need)       # the re-run at T + 1: short again
    est, caught = _fit(MetricLearner(check=False, rng=0), X, y)
    assert est.result_.params["regrown"]["rerun_T"] == T + 1
    assert est.result_.success is False and len(caught) == 1
    msg = str(caught[0].message)
    assert f"T='auto' ran it twice: at T = {T:,}, then at {T + 1:,}" in msg
    assert est.result_.params["convergence"]["cause"] in msg


def test_a_re_run_beyond_the_caps_is_not_made_and_the_warning_says_so(monkeypatch):
    X, y = _rare_far_class()
    monkeypatch.setattr(_base, "REGROW_MAX_FACTOR", 1)
    est, caught = _fit(MetricLearner(check=False, rng=0), X, y)
    assert est.result_.success is False and "regrown" not in est.result_.params and len(caught) == 1
    assert "T='auto' re-runs a fit at the budget it needs only up to 1x its own budget and a work cap" in str(
        caught[0].message)
    assert est.n_calls_ <= _auto_T()


def test_an_int_budget_warning_does_not_speak_of_auto():
    X, y = _rare_far_class()
    _, caught = _fit(MetricLearner(T=_auto_T(), check=False, rng=0), X, y)
    assert len(caught) == 1 and "T='auto'" not in str(caught[0].message)


def test_pairs_learner_takes_the_same_path(monkeypatch):
    # the pair loss fell short on none of 80 imbalanced and generic problems (docs), so the shared path is forced:
    # a regrow budget of 2 T makes PairsMetricLearner(T="auto") run twice, the second run being the model's
    X, y = _rare_far_class()
    g = np.random.default_rng(3)
    i, j = g.integers(0, X.shape[0], (2, 4000))
    pairs, sim = np.stack([X[i], X[j]], axis=1), np.where(y[i] == y[j], 1, -1)
    T = _auto_T("pairs")
    monkeypatch.setattr(_base, "regrow_budget", lambda res, T, oracle: 2 * T)
    est, _ = _fit(PairsMetricLearner(check=False, rng=0), pairs, sim)
    assert est.result_.params["regrown"]["rerun_T"] == 2 * T and T < est.n_calls_ <= 2 * T
    fixed, _ = _fit(PairsMetricLearner(T=T, check=False, rng=0), pairs, sim)          # an int T: once
    assert "regrown" not in fixed.result_.params and fixed.n_calls_ <= T


# ---- regrow_budget / regrow_work against hand computations -------------------------------------------------------
def _result(success=False, need=30_000, n_calls=20_000, n_projections=400):
    conv = {"ok": success} if need is None else {"ok": success, "T_suffices": need, "cause": "c"}
    return types.SimpleNamespace(success=success, params={"convergence": conv}, n_calls=n_calls,
                                 n_projections=n_projections)


def _softmax_like(d, n_anchors=100, per_anchor=32):
    return types.SimpleNamespace(shape=(d, d), anchors=np.zeros(n_anchors, np.int32),
                                 candidates=np.zeros(n_anchors * per_anchor, np.int32))


def test_regrow_budget_is_the_margin_times_the_need():
    assert _base.regrow_budget(_result(), 20_000, _softmax_like(8)) == math.ceil(_base.REGROW_MARGIN * 30_000)


@pytest.mark.parametrize("res", [_result(success=True), _result(need=None), _result(need=0)])
def test_regrow_budget_none_without_a_named_need(res):
    assert _base.regrow_budget(res, 20_000, _softmax_like(8)) is None


def test_regrow_budget_none_when_the_margin_is_within_the_budget():
    assert _base.regrow_budget(_result(need=12_000), 20_000, _softmax_like(8)) is None      # 18,000 <= 20,000


def test_regrow_budget_factor_cap():
    T = 20_000
    at_cap = int(_base.REGROW_MAX_FACTOR * T / _base.REGROW_MARGIN)          # 1.5 x need <= 32 T
    assert _base.regrow_budget(_result(need=at_cap), T, _softmax_like(2)) == math.ceil(_base.REGROW_MARGIN * at_cap)
    assert _base.regrow_budget(_result(need=at_cap + 2), T, _softmax_like(2)) is None


def test_regrow_work_formula_and_cap():
    res = _result(need=30_000, n_calls=20_000, n_projections=400)
    d, w, T2 = 64, 32, 45_000
    proj = (T2 / 20_000) * 400 * (_base.EIGH_COST * d ** 3 + _base.EIGH_OVERHEAD)
    expect = T2 * w * (d * d + _base.CALL_OVERHEAD) + proj
    assert _base.regrow_work(res, T2, _softmax_like(d, per_anchor=w)) == pytest.approx(expect, rel=1e-12)
    # pairs (no candidate lists): one difference per sample
    pairs = types.SimpleNamespace(shape=(d, d))
    assert _base.regrow_work(res, T2, pairs) == pytest.approx(T2 * (d * d + _base.CALL_OVERHEAD) + proj, rel=1e-12)
    # the same need on a wide oracle: over REGROW_WORK, not re-run
    wide = _softmax_like(512)
    assert _base.regrow_work(res, T2, wide) > _base.REGROW_WORK
    assert _base.regrow_budget(res, 20_000, wide) is None


def test_regrow_work_bounds_a_small_lam_budget():
    # lam = 1e-6: T="auto" is 2e7 anchors; a need of 6e7 (x1.5 = 9e7 <= 32 T and AUTO_T_MAX) on 2 features is
    # ~70 s of sampling here (12 ns per candidate): the overhead term keeps it out
    T = _base.auto_budget(1e-6) // _base.SOFTMAX_BUDGET_DIVISOR
    res = _result(need=60_000_000, n_calls=T, n_projections=T // 50)
    assert _base.regrow_work(res, 90_000_000, _softmax_like(2)) > _base.REGROW_WORK
    assert _base.regrow_budget(res, T, _softmax_like(2)) is None
    # while a need of 4e4 at the default lam on 2 features is re-run
    assert _base.regrow_budget(_result(need=40_000), 20_000, _softmax_like(2)) == 60_000
