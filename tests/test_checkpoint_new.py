"""Checkpoint/resume of the methods of issue 9: bit-identical continuation after a crash."""
import numpy as np
import pytest

import logt
from logt.domains import PSDCone, TraceBoundedPSD
from logt.oracles import PSDQuadratic

CASES = [
    ("logt_acc", {}, 60_000),
    ("logt_acc", {"N": 3, "growth": 2, "average": "last"}, 200_000),
    ("minibatch_sgd", {}, 300_000),
    ("minibatch_sgd", {"B": 1, "average": "suffix"}, 300_000),     # crosses 2**16-step chunks and the suffix start
    ("one_projection_sgd", {}, 300_000),
    ("one_projection_sgd", {"average": "suffix", "radius": 5.0}, 5_000),
    ("sgd", {"average": "suffix"}, 300_000),
    ("frank_wolfe", {}, 2_000_000),
]


class Boom(Exception):
    pass


def problem(method):
    A = np.diag([1.0, -0.5, 0.25, 0.0])
    return PSDQuadratic(A), (TraceBoundedPSD(4, 1.0) if method == "frank_wolfe" else PSDCone(4))


def assert_same_result(a, b):
    assert np.array_equal(a.x, b.x)
    assert (a.n_calls, a.n_projections, a.n_epochs) == (b.n_calls, b.n_projections, b.n_epochs)
    assert a.fun == b.fun
    for k in a.trace:
        assert np.array_equal(a.trace[k], b.trace[k]), k
    assert a.params == b.params


@pytest.mark.parametrize("method,opts,T", CASES)
def test_resume_after_a_crash_is_bit_identical(tmp_path, method, opts, T):
    oracle, domain = problem(method)
    full = logt.minimize(oracle, domain, T, method=method, options=opts, rng=7)
    n_rows = len(full.trace["n_calls"])
    for stop_at in sorted({2, max(2, n_rows // 2), n_rows}):
        seen = []

        def crash(state):
            seen.append(state.n_calls)
            if len(seen) == stop_at:
                raise Boom

        path = tmp_path / f"run{stop_at}.ckpt"
        with pytest.raises(Boom):
            logt.minimize(oracle, domain, T, method=method, options=opts, rng=7, callback=crash,
                          checkpoint=path, checkpoint_every=0)
        assert path.exists()
        resumed = logt.minimize(oracle, domain, T, method=method, options=opts, rng=7, resume=path)
        assert_same_result(full, resumed)


@pytest.mark.parametrize("method,opts,T", [c for c in CASES if c[0] in ("one_projection_sgd", "logt_acc")])
def test_final_checkpoint_resumes_to_the_same_result(tmp_path, method, opts, T):
    oracle, domain = problem(method)
    path = tmp_path / "done.ckpt"
    a = logt.minimize(oracle, domain, T, method=method, options=opts, rng=1, checkpoint=path)
    b = logt.minimize(oracle, domain, T, method=method, options=opts, rng=1, resume=path)
    assert_same_result(a, b)
    assert b.n_projections == a.n_projections       # the one projection is not repeated on resume


def test_resume_with_trace_counts_and_a_trace_mismatch(tmp_path):
    oracle, domain = problem("sgd")
    kw = dict(method="sgd", options={"average": "suffix"}, rng=7)
    full = logt.minimize(oracle, domain, 300_000, trace="counts", **kw)
    seen = []

    def crash(state):
        seen.append(1)
        if len(seen) == 3:
            raise Boom

    path = tmp_path / "run.ckpt"
    with pytest.raises(Boom):
        logt.minimize(oracle, domain, 300_000, trace="counts", callback=crash, checkpoint=path,
                      checkpoint_every=0, **kw)
    with pytest.raises(logt.CheckpointError, match="trace"):
        logt.minimize(oracle, domain, 300_000, resume=path, **kw)          # trace="fun" now
    resumed = logt.minimize(oracle, domain, 300_000, trace="counts", resume=path, **kw)
    assert_same_result(full, resumed)
    assert set(resumed.trace) == {"n_calls", "n_projections"}
