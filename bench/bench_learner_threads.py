"""``MetricLearner().fit`` on many rows: its blocked searches in threads against one thread.

The default fit on many rows spends most of its time in two blocked searches: the neighbour tables of the
softmax loss (``logt.oracles.neighbors``) and the check's 1-NN hits (``subspace.nn1_hits``). Both run their row
blocks in every CPU's thread (``logt._threads.run_blocks``, one BLAS thread each); the contender is the same
fit with one thread (``logt._threads.n_cpus`` patched to 1: the blocks in turn, as before). Data: 10,000 rows of
784 features (an MNIST-sized slice: ``make_classification`` with 30 informative and 20 redundant directions,
10 classes of 2 clusters, rounded to nonnegative integers like pixels). The session runs one BLAS thread
(conftest.py). The fits are the same (checked: the learned transform, bit for bit). With
``--benchmark-disable``: 1,500 rows of 100 features (a smoke run).

Run:  python -m pytest bench/bench_learner_threads.py --benchmark-columns=min
"""
import numpy as np
import pytest

from logt import MetricLearner

_DATA = {}


def _data(n, d):
    if (n, d) not in _DATA:
        from sklearn.datasets import make_classification
        X, y = make_classification(n, d, n_informative=30, n_redundant=20, n_classes=10, n_clusters_per_class=2,
                                   random_state=0)
        _DATA[n, d] = (np.round((X - X.min()) * 20), y)
    return _DATA[n, d]


@pytest.mark.parametrize("threads", ["one thread", "every CPU"])
def test_learner_fit_threads(benchmark, threads, monkeypatch):
    pytest.importorskip("sklearn", reason="the data come from scikit-learn's make_classification ([test] extra)")
    from logt import _threads
    X, y = _data(*((1500, 100) if benchmark.disabled else (10_000, 784)))
    benchmark.group = f"MetricLearner().fit {X.shape[0]:,} x {X.shape[1]}, 10 classes: threads"
    ref = MetricLearner(rng=0).fit(X, y).transform(X[:50])
    if threads == "one thread":
        monkeypatch.setattr(_threads, "n_cpus", lambda: 1)
    est = benchmark.pedantic(lambda: MetricLearner(rng=0).fit(X, y), rounds=2)
    np.testing.assert_array_equal(est.transform(X[:50]), ref)
