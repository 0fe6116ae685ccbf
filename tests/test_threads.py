"""BLAS thread control: one thread inside logt's work, the user's settings restored after."""
import threading

import numpy as np
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
