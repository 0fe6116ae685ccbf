"""BLAS thread control: one thread inside logt's work, the user's settings restored after."""
import threading
import time

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import logt
from logt import single_threaded_blas
from logt._threads import blas_active
from logt.domains import PSDCone
from logt.oracles import PSDQuadratic


def blas_threads():
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_limits_inside_and_restores_after():
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with single_threaded_blas():
            assert set(blas_threads()) == {1}
            with single_threaded_blas():          # nests
                assert set(blas_threads()) == {1}
            assert set(blas_threads()) == {1}     # inner exit keeps the limit
        assert blas_threads() == before


def test_concurrent_blocks_restore_once():
    # Only the nesting is asserted here: OpenBLAS (0.3.30) does not apply
    # openblas_set_num_threads calls made from worker threads uniformly once the
    # main thread has set a count itself, so counts read across threads are not
    # meaningful (see docs/guide/reliability.md, Threads).
    barrier = threading.Barrier(4)
    seen = []

    def work():
        with single_threaded_blas():
            barrier.wait()
            seen.append(blas_active())
            barrier.wait()

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert seen == [True] * 4
    assert not blas_active()
    # the main thread's own blocks still limit and restore afterwards
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with single_threaded_blas():
            assert set(blas_threads()) == {1}
        assert blas_threads() == before


def test_minimize_runs_single_threaded_and_restores():
    seen = []
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        logt.minimize(PSDQuadratic(np.zeros((5, 5))), PSDCone(5), 1000, rng=0,
                      callback=lambda s: seen.append(set(blas_threads())))
        assert blas_threads() == before
    assert seen and all(s == {1} for s in seen)


def test_keep_setting_leaves_threads_alone(monkeypatch):
    monkeypatch.setenv("LOGT_BLAS_THREADS", "keep")
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with single_threaded_blas():
            assert blas_threads() == before


def test_block_workers_rule():
    """Threads of a blocked search: n_threads (None: the CPUs), at most one per block and as many as keep
    PARALLEL_MAX_ENTRIES entries in flight, 0 (inline) below PARALLEL_MIN_ENTRIES; bad n_threads a ValueError."""
    from logt import _threads as T
    big, lo = T.PARALLEL_MAX_ENTRIES, T.PARALLEL_MIN_ENTRIES
    assert T.block_workers(4, 10, lo, 1) == 4
    assert T.block_workers(4, 3, lo, 1) == 3                     # one per block
    assert T.block_workers(4, 10, lo - 1, 1) == 0                # too small to share: inline
    assert T.block_workers(4, 10, 10 * big, big // 2) == 2       # memory: two blocks of half the cap
    assert T.block_workers(4, 10, 10 * big, 2 * big) == 1        # one block always runs
    assert T.block_workers(None, 1000, lo, 1) == min(T.n_cpus(), 1000) >= 1
    for bad in (0, -2, 2.0, True, "3"):
        with pytest.raises(ValueError, match="n_threads"):
            T.block_workers(bad, 10, lo, 1)


def test_run_blocks_runs_every_task_once_and_raises_what_a_thread_raised():
    from logt import _threads as T
    for workers in (0, 1, 2, 3):
        seen = []
        lock = threading.Lock()

        def fn(tasks):
            with lock:
                seen.extend(tasks)
                blas.append(blas_active())
        blas = []
        T.run_blocks(fn, list(range(10)), workers)
        assert sorted(seen) == list(range(10))
        assert all(blas) == (workers >= 1)           # one BLAS thread per worker; inline: BLAS as it was set

    done = []

    def bad(tasks):                     # worker 0 fails on its first task; worker 1 stops after its current one
        for t in tasks:
            if t == 0:
                raise RuntimeError("block 0")
            time.sleep(0.05)
            done.append(t)
    with pytest.raises(RuntimeError, match="block 0"):
        T.run_blocks(bad, list(range(40)), 2)
    assert len(done) < 20                                         # not all 20 of worker 1's tasks
    assert not blas_active()                                      # the one-thread block was left


@pytest.mark.parametrize("learner", ["MetricLearner", "PairsMetricLearner"])
def test_estimator_n_threads_governs_the_blocked_searches(learner, monkeypatch):
    """n_threads=1: every blocked search of the fit on one thread; n_threads=3: on three where there are blocks
    enough; the same fit either way, and the setting ends with the fit (a context variable)."""
    from logt import MetricLearner, PairsMetricLearner
    from logt import _threads as T
    monkeypatch.setattr(T, "PARALLEL_MIN_ENTRIES", 0)                 # small data take the threaded path
    seen = []
    real = T.run_blocks

    def spy(fn, tasks, workers):
        seen.append(workers)
        return real(fn, tasks, workers)
    monkeypatch.setattr(T, "run_blocks", spy)
    g = np.random.default_rng(0)
    y = g.integers(0, 3, 600)
    X = g.standard_normal((600, 6)) + y[:, None] * np.array([1.5, 0, 0, 0, 0, 0])
    if learner == "MetricLearner":
        fit = lambda n: MetricLearner(rng=0, T=20_000, n_threads=n).fit(X, y)       # noqa: E731
    else:
        i, j = g.integers(0, 600, (2, 1500))
        P, yp = np.stack([X[i], X[j]], axis=1), np.where(y[i] == y[j], 1, -1)
        fit = lambda n: PairsMetricLearner(rng=0, T=20_000, n_threads=n).fit(P, yp)  # noqa: E731
    one = fit(1)
    assert set(seen) <= {1} and (seen or learner == "PairsMetricLearner")    # the pairs' fit has no such search
    seen.clear()
    three = fit(3)
    if learner == "MetricLearner":          # the softmax tables and the check's 1-NN (the pairs' fit has neither)
        assert 3 in seen
    np.testing.assert_array_equal(one.components_, three.components_)
    assert T._SEARCH_THREADS.get() is None
    for bad in (0, 65, 2.5, True):
        with pytest.raises(ValueError, match="n_threads"):
            fit(bad)
