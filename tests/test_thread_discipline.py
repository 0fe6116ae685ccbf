"""Issue 12 items 8/9: the BLAS limit applies per call in any thread (bit-identical
results in worker threads), and BLAS settings are restored on every exit path."""
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import logt
from logt._threads import blas_active
from logt.domains import PSDCone, project_psd
from logt.oracles import PSDQuadratic


def blas_threads():
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def _inputs(d, k):
    rng = np.random.default_rng(d)
    out = []
    for _ in range(k):
        G = rng.standard_normal((d, d))
        out.append((G + G.T) / 2)
    return out


def _in_threads(fn, n):
    res, errs = [None] * n, []

    def run(i):
        try:
            res[i] = fn()
        except BaseException as exc:     # pragma: no cover - reported below
            errs.append(exc)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs, errs
    return res


@pytest.mark.parametrize("d", [150, 200])       # LAPACK paths (beyond jacobi_max)
def test_projection_bit_identical_in_worker_threads(d):
    As = _inputs(d, 3)
    with threadpool_limits(limits=2, user_api="blas"):
        ref = [project_psd(A) for A in As]
        got = _in_threads(lambda: [project_psd(A) for A in As], 3)
    for g in got:
        for r, x in zip(ref, g):
            assert np.array_equal(r, x)        # bit for bit, not allclose


def test_minimize_bit_identical_in_worker_threads():
    d = 60
    rng = np.random.default_rng(3)
    G = rng.standard_normal((d, d))
    C = (G + G.T) / 2

    def run():
        r = logt.minimize(PSDQuadratic(C), PSDCone(d), 300, method="epoch_gd", rng=5)
        return r.x

    with threadpool_limits(limits=2, user_api="blas"):
        ref = run()
        got = _in_threads(run, 2)
    for x in got:
        assert np.array_equal(x, ref)


def test_restored_after_error_inside_project_psd():
    A = np.eye(150)
    A[0, 1] = 1.0                             # not symmetric: ValueError
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with pytest.raises(ValueError, match="symmetric"):
            project_psd(A)
        assert blas_threads() == before
        B = np.eye(150)
        B[3, 3] = np.nan
        with pytest.raises(ValueError):
            project_psd(B)
        assert blas_threads() == before
    assert not blas_active()


def test_restored_after_exception_in_callback_and_domain():
    d = 150

    class Boom(Exception):
        pass

    def cb(state):
        raise Boom

    calls = []

    def bad_projection(v):
        calls.append(1)
        r = project_psd(v)                   # BLAS work, then the domain raises
        if len(calls) == 3:
            raise Boom
        return r

    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with pytest.raises(Boom):
            logt.minimize(PSDQuadratic(np.eye(d)), PSDCone(d), 200, rng=0, callback=cb)
        assert blas_threads() == before and not blas_active()
        with pytest.raises(Boom):
            logt.minimize(PSDQuadratic(np.eye(d)), logt.domains.CallableDomain(
                bad_projection, (d, d)), 200, rng=0)
        assert blas_threads() == before and not blas_active()
    assert len(calls) == 3


def test_restored_after_keyboard_interrupt_from_worker_exception():
    # an exception raised in the middle of a thread's projections (simulating an
    # interrupt between calls) leaves no thread holding the limit
    As = _inputs(160, 2)

    def work():
        project_psd(As[0])
        raise KeyboardInterrupt

    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        t_errs = []

        def run():
            try:
                work()
            except KeyboardInterrupt as exc:
                t_errs.append(exc)

        t = threading.Thread(target=run)
        t.start()
        t.join()
        assert t_errs
        assert not blas_active()
        assert blas_threads() == before
