"""BLAS thread control: one thread inside logt's work, the user's settings restored after."""
import threading

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

import logt
from logt import single_threaded_blas
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
    # (no outer threadpool_limits here: OpenBLAS 0.3.3x reports a limit set by a worker
    # thread differently once the main thread has set one itself)
    before = blas_threads()
    barrier = threading.Barrier(4)
    seen = []

    def work():
        with single_threaded_blas():
            barrier.wait()
            seen.append(set(blas_threads()))
            barrier.wait()

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert seen == [{1}] * 4
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
