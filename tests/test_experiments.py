"""Smoke tests of the experiments (toy: Fig. 1, metric: Fig. 2) on tiny settings."""
import json
import os

import numpy as np
import pytest

from logt.experiments import metric, toy
from logt.experiments.report import write_records

try:
    from ._data import require_data_dir
except ImportError:
    from _data import require_data_dir


def test_toy_run_summarize_tables(tmp_path):
    recs = toy.run(T_max=2000, T_min=1000, per_decade=2, repeats=2, n_jobs=1, progress=False)
    assert len(recs) == 3 * 2 * 2
    for r in recs:
        assert r["n_calls"] <= r["T"] and np.isfinite(r["fun"]) and r["excess"] >= 0
        if r["method"] == "sgd":
            assert r["n_projections"] == r["n_calls"] == r["T"]
        if r["method"] == "logt":
            assert r["n_projections"] < r["n_calls"]
    summary = toy.summarize(recs)
    assert {(s["method"], s["T"]) for s in summary} == {(m, T) for m in toy.METHODS for T in (1000, 2000)}
    for s in summary:
        v = [r["excess_times_T"] for r in recs if r["method"] == s["method"] and r["T"] == s["T"]]
        assert s["mean_excess_times_T"] == pytest.approx(np.mean(v))
    text = toy.tables(summary)
    assert "logT (logt)" in text and "EP_GD" in text and "SGD" in text
    paths = write_records(summary, str(tmp_path), "toy")
    assert json.load(open(paths[-1])) == json.loads(json.dumps(summary))


def _check_metric_records(recs, methods, T):
    for m in methods:
        for rep in {r["repeat"] for r in recs}:
            tr = [r for r in recs if r["method"] == m and r["repeat"] == rep]
            assert tr, (m, rep)
            P = [r["n_projections"] for r in tr]
            assert P == sorted(set(P)), "projections grow along a trace"
            assert tr[-1]["n_calls"] <= T
            if m == "sgd":
                assert P[-1] == T
            if m == "logt_practical":
                assert all(p % 16 == 0 for p in P)      # 2*M projections per epoch, M = 8


def test_metric_synthetic(tmp_path):
    T = 3000
    recs = metric.run(dataset="synthetic", T=T, repeats=2, n_jobs=1, n_eval_pairs=2000, progress=False)
    _check_metric_records(recs, metric.METHODS, T)
    oracle = metric._oracle("synthetic", None, 0.1, 0, 2000, None, None)
    F0 = oracle.value(np.zeros(oracle.shape))
    summary = metric.summarize(recs)
    for m in metric.METHODS:
        rows = [s for s in summary if s["method"] == m]
        assert rows[-1]["mean_fun"] < F0 - 0.05, m
        last = [max((r for r in recs if r["method"] == m and r["repeat"] == rep),
                    key=lambda r: r["point"])["fun"] for rep in range(2)]          # each repeat's final point
        assert rows[-1]["repeats"] == 2
        assert rows[-1]["mean_fun"] == pytest.approx(np.mean(last))
        assert rows[-1]["std_fun"] == pytest.approx(np.std(last, ddof=1))
    text = metric.tables(summary, max_rows=5)
    for m in metric.METHODS:
        assert metric.LABELS[m] in text
    assert text.count("\n|") <= 4 * (5 + 2)
    v = metric.verdict(summary)
    assert v.startswith("equal accuracy") and "logT (auto)" in v
    # same seed, same numbers
    again = metric.run(dataset="synthetic", T=T, repeats=2, n_jobs=1, n_eval_pairs=2000,
                       methods=("logt_auto",), progress=False)
    assert [r["fun"] for r in again] == [r["fun"] for r in recs if r["method"] == "logt_auto"]
    if _has_matplotlib():
        paths = metric.plot(summary, str(tmp_path), "synthetic")
        assert paths and os.path.getsize(paths[0]) > 1000


def test_metric_synthetic_optional_rows():
    """Fig. 2's optional rows run through the same pipeline; counts match the methods' closed forms."""
    from logt.methods.logt_acc import counts as acc_counts, theory_N
    T = 3000
    extra = ("logt_acc", "minibatch_sgd", "one_projection_sgd", "sgd_suffix")
    recs = metric.run(dataset="synthetic", T=T, repeats=2, n_jobs=1, n_eval_pairs=2000, methods=("sgd",) + extra,
                      progress=False)
    _check_metric_records(recs, extra, T)
    oracle = metric._oracle("synthetic", None, 0.1, 0, 2000, None, None)
    F0 = oracle.value(np.zeros(oracle.shape))
    final = {m: [r for r in recs if r["method"] == m and r["repeat"] == 0][-1] for m in extra}
    N, N_last = theory_N(oracle.L, oracle.lam), theory_N(oracle.L, oracle.lam, 2.0)
    assert final["logt_acc"]["n_projections"] == acc_counts(T, N, N_last, 1)[2]
    assert final["minibatch_sgd"]["n_projections"] == T // 55          # B = ceil(sqrt(3000)) = 55
    assert final["one_projection_sgd"]["n_projections"] == 1
    assert final["sgd_suffix"]["n_projections"] == T
    summary = metric.summarize(recs)
    for m in extra:
        assert [s for s in summary if s["method"] == m][-1]["mean_fun"] < F0 - 0.05, m
        assert metric.LABELS[m] in metric.tables(summary)
    assert "logT-acc" in metric.verdict(summary)
    # adding rows does not change another row's streams
    base = [r["fun"] for r in recs if r["method"] == "sgd"]
    assert base == [r["fun"] for r in metric.run(dataset="synthetic", T=T, repeats=2, n_jobs=1, n_eval_pairs=2000,
                                                 methods=("sgd",), progress=False)]


def _has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_metric_verdict_logic():
    # SGD reaches 0.5 + 1e-4 only at its 900th projection; the ratio is 900/32, not its budget 1000/32
    s = [{"method": "sgd", "n_projections": 100, "mean_fun": 0.7, "std_fun": 0.0},
         {"method": "sgd", "n_projections": 900, "mean_fun": 0.50005, "std_fun": 0.0},
         {"method": "sgd", "n_projections": 1000, "mean_fun": 0.5, "std_fun": 0.001},
         {"method": "epoch_gd", "n_projections": 1020, "mean_fun": 0.52, "std_fun": 0.0},
         {"method": "logt_practical", "n_projections": 16, "mean_fun": 0.6, "std_fun": 0.0},
         {"method": "logt_practical", "n_projections": 32, "mean_fun": 0.50003, "std_fun": 0.0},
         {"method": "logt_theorem1", "n_projections": 804, "mean_fun": 0.51, "std_fun": 0.0}]
    v = metric.verdict(s)
    assert "best final 0.50000 + 0.0001" in v
    assert "logT (practical) needs 32 projections, " in v
    assert "never does in 1,020" in v
    assert "28x fewer than SGD (900)" in v          # 900 / 32 = 28.1
    assert "logT (Theorem 1) does not reach it (ends at F = 0.51000)" in v
    assert metric.verdict(s[4:]) == "no baseline run: nothing to compare"


def test_metric_mushrooms_subset():
    d = require_data_dir("mushrooms.gz")
    T = 2000
    methods = ("logt_practical", "sgd")
    recs = metric.run(dataset="mushrooms", data_dir=str(d), T=T, repeats=1, methods=methods, n_jobs=1,
                      n_eval_pairs=2000, max_train=400, progress=False)
    _check_metric_records(recs, methods, T)
    Xtr, ytr, Xte, yte = metric.load_problem("mushrooms", str(d), 0, 400)
    assert Xtr.shape == (400, 112) and Xte.shape == (2708, 112)
    summary = metric.summarize(recs)
    assert {s["method"] for s in summary} == set(methods)


def test_metric_bad_arguments():
    with pytest.raises(ValueError, match="unknown method"):
        metric.run(dataset="synthetic", methods=("adam",), progress=False)
    with pytest.raises(ValueError, match="dataset"):
        metric.load_problem("iris")


def test_learner_defaults_sweep_runs_on_development_sets():
    pytest.importorskip("sklearn")
    from logt.experiments.learner_defaults import SWEEPS, dev_datasets, sweep
    names = [n for n, _, _ in dev_datasets(quick=True)]
    assert not set(names) & {"wine", "breast_cancer", "digits", "mushrooms", "adult"}    # never the targets
    res = sweep([("T=2e4", {"T": 20_000})], splits=1, quick=True, log=lambda m: None)
    (label, g1, g5, w1, w5, sec), = res
    assert label == "T=2e4" and -1 <= w1 <= g1 <= 1 and -1 <= w5 <= g5 <= 1 and sec > 0
    assert {"budget", "lam-k", "threshold-scale"} <= set(SWEEPS)
    logs = []
    (label, g1, g5, w1, w5, sec), = sweep([("T=2e4", {"T": 20_000})], splits=1, quick=True, log=logs.append,
                                          family=True)
    assert len(logs) == 8 and logs[0].startswith("done classification")    # the random family's problems
    assert -1 <= w1 <= g1 <= 1 and -1 <= w5 <= g5 <= 1


def test_metric_summarize_averages_repeats_with_different_schedules():
    """Repeats whose epochs differ (logT-auto sizes them from estimates): every row averages all repeats,
    each at its last point with at most P projections; the last row is every repeat's final point."""
    def rec(rep, point, P, f):
        return {"dataset": "x", "method": "logt_auto", "T": 100, "repeat": rep, "point": point,
                "n_projections": P, "n_calls": 10 * P, "fun": f, "seconds": 1.0}
    recs = [rec(0, 0, 7, 3.0), rec(0, 1, 14, 2.0), rec(0, 2, 21, 1.0),
            rec(1, 0, 5, 4.0), rec(1, 1, 12, 2.5)]
    rows = metric.summarize(recs)
    assert [r["n_projections"] for r in rows] == [7, 12, 14, 21]
    assert [r["repeats"] for r in rows] == [2, 2, 2, 2]
    assert [r["mean_fun"] for r in rows] == pytest.approx([3.5, 2.75, 2.25, 1.75])
    assert rows[-1]["std_fun"] == pytest.approx(np.std([1.0, 2.5], ddof=1))
    assert metric.reach(rows, "logt_auto", 2.5) == 14


def test_learner_defaults_outlier_rows_runs():
    pytest.importorskip("sklearn")
    from logt.experiments.learner_defaults import outlier_rows
    import logt.metric_learning.scaling as scaling
    factor = scaling.OUTLIER_FACTOR
    res = outlier_rows(seeds=(100,), factors=(1e4,), log=lambda m: None)
    assert [r[0] for r in res] == [1, 1e4]
    assert res[0][1] == res[0][2] and res[0][3] == [0]          # no outlier: the rule changes nothing
    assert res[1][3] == [1] and res[1][2][0] > res[1][1][0]     # the 1e4 row is clipped, and that helps
    assert scaling.OUTLIER_FACTOR == factor                     # the constant is restored


def test_learner_defaults_generated_problems_run():
    pytest.importorskip("sklearn")
    from logt.experiments.learner_defaults import generated, generated_problems
    a = list(generated_problems(0))
    b = list(generated_problems(0))
    assert len(a) == 10 and all(np.array_equal(x[1], y[1]) and np.array_equal(x[2], y[2]) for x, y in zip(a, b))
    assert {x[1].dtype for x in a} == {np.dtype(np.float64), np.dtype(np.float32)}
    rows = generated(seeds=(0,), log=lambda m: None)
    assert [r[0] for r in rows] == [x[0] for x in a]
    for name, e, ml, learned, nca, clipped, retries in rows:
        assert all(0.0 <= v <= 1.0 for v in e + ml + learned + nca) and retries == 0
        assert ml in (learned, e) or name.startswith("200 features")      # the check keeps one of the two
        assert clipped == (1 if name.startswith("one outlier") else 0)


def test_learner_defaults_loss_choice_runs():
    pytest.importorskip("sklearn")
    from logt.experiments.learner_defaults import loss_choice
    res = loss_choice(margins=(0.0, 1.0), quick=True, log=lambda m: None)
    kinds = {r[0] for r in res}
    assert kinds == {"development", "generated"} and len(res) == 3 + 10
    for kind, name, mean, chosen, n in res:
        assert set(mean) == {"pairs", "triplets", "auto (margin 0 se)", "auto (margin 1 se)"}
        assert all(0.0 <= a <= 1.0 for v in mean.values() for a in v)
        assert chosen[1.0] <= chosen[0.0] <= n                   # a larger margin chooses triplets less often
        if chosen[0.0] == 0:
            assert mean["auto (margin 0 se)"] == mean["pairs"]


def test_learner_defaults_loss_family_runs():
    pytest.importorskip("sklearn")
    from logt.experiments.learner_defaults import loo_1nn, loss_family, loss_family_table, random_problem
    rows = loss_family(n_problems=20, splits=1, log=lambda m: None)
    assert [r[0] for r in rows] == list(range(20))
    for i, desc, s, a0, e, acc, auto, zero in rows:
        assert 0.0 <= a0 <= 1.0 and auto in ("pairs", "triplets") and set(acc) == set(zero) == {"pairs", "triplets"}
        assert all(0.0 <= a <= 1.0 for v in (e, *acc.values()) for a in v)
    # problem 19's triplet optimum is the zero metric (DegenerateMetricWarning is recorded); none of the pair fits
    assert rows[19][7]["triplets"] and not any(r[7]["pairs"] for r in rows)
    assert rows[19][6] == "pairs"                               # auto does not choose the zero metric
    table = loss_family_table(rows)
    assert table[-1].startswith("| all | 20 |")
    # the family is seeded, and loo_1nn agrees with a brute force
    d1, X1, y1 = random_problem(3)
    d2, X2, y2 = random_problem(3)
    assert d1 == d2 and np.array_equal(X1, X2) and np.array_equal(y1, y2)
    X, y = X1[:50], y1[:50]
    brute = np.mean([y[min((j for j in range(50) if j != k), key=lambda j: np.sum((X[j] - X[k]) ** 2))] == y[k]
                     for k in range(50)])
    assert loo_1nn(X, y) == pytest.approx(brute)
