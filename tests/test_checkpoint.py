"""Checkpoint and resume: bit-identical continuation, atomic files, clear errors."""
import os
import signal
import subprocess
import textwrap
import time

import numpy as np
import pytest

import logt
from logt import CheckpointError
from logt.domains import EuclideanBall, PSDCone, TraceBoundedPSD
from logt.oracles import FunctionOracle, PSDQuadratic
from _child import popen_python
from _oracles import rare_heavy


CASES = [
    ("logt", {}, 60_000),
    ("logt", {"eta": 0.4, "M": 3, "B1": 5}, 200_000),
    ("sgd", {}, 300_000),                     # crosses the 2**16-step chunks inside trace segments
    ("sgd", {"average": "uniform"}, 5000),
    ("epoch_gd", {}, 300_000),
]


class Boom(Exception):
    pass


def toy():
    return PSDQuadratic(np.zeros((4, 4))), PSDCone(4)


def assert_same_result(a, b):
    assert np.array_equal(a.x, b.x)
    assert (a.n_calls, a.n_projections, a.n_epochs) == (b.n_calls, b.n_projections, b.n_epochs)
    assert a.fun == b.fun
    for k in a.trace:
        assert np.array_equal(a.trace[k], b.trace[k]), k
    assert a.params == b.params


@pytest.mark.parametrize("method,opts,T", CASES)
def test_resume_after_a_crash_is_bit_identical(tmp_path, method, opts, T):
    oracle, domain = toy()
    full = logt.minimize(oracle, domain, T, method=method, options=opts, rng=7)
    n_rows = len(full.trace["n_calls"])
    stop_at = max(2, n_rows // 2)
    seen = []

    def crash(state):
        seen.append(state.n_calls)
        if len(seen) == stop_at:
            raise Boom

    path = tmp_path / "run.ckpt"
    with pytest.raises(Boom):
        logt.minimize(oracle, domain, T, method=method, options=opts, rng=7, callback=crash,
                      checkpoint=path, checkpoint_every=0)
    assert path.exists()
    resumed = logt.minimize(oracle, domain, T, method=method, options=opts, rng=7, resume=path)
    assert_same_result(full, resumed)
    # a fresh generator object with the same seed, or no rng at all, resumes too
    again = logt.minimize(oracle, domain, T, method=method, options=opts, rng=None, resume=path)
    assert_same_result(full, again)


def test_resume_with_python_oracle_and_ball(tmp_path):
    f = FunctionOracle(lambda w, rng: w - 1 + rng.standard_normal(w.shape), (3,), L=1.0, lam=1.0,
                       value=lambda w: 0.5 * float(((w - 1) ** 2).sum()))
    dom = EuclideanBall(3, 0.5)
    for method in ("logt", "sgd", "epoch_gd"):
        full = logt.minimize(f, dom, 3000, method=method, rng=2)
        path = tmp_path / f"{method}.ckpt"
        calls = []

        def crash(state):
            calls.append(1)
            if len(calls) == 3:
                raise Boom

        with pytest.raises(Boom):
            logt.minimize(f, dom, 3000, method=method, rng=2, callback=crash, checkpoint=path,
                          checkpoint_every=0)
        assert_same_result(full, logt.minimize(f, dom, 3000, method=method, rng=2, resume=path))


def test_final_checkpoint_resumes_to_the_same_result(tmp_path):
    oracle, domain = toy()
    path = tmp_path / "done.ckpt"
    a = logt.minimize(oracle, domain, 50_000, rng=1, checkpoint=path)      # default period: saved at the end
    assert path.exists()
    assert_same_result(a, logt.minimize(oracle, domain, 50_000, rng=1, resume=path))


def test_killed_subprocess_resumes_bit_identical(tmp_path):
    """SIGKILL a run mid-way (no cleanup of any kind), then resume from its last checkpoint."""
    path = tmp_path / "killed.ckpt"
    script = textwrap.dedent(f"""
        import sys, numpy as np, logt
        from logt.domains import PSDCone
        from logt.oracles import PSDQuadratic
        sys.stdout.write("started\\n"); sys.stdout.flush()
        logt.minimize(PSDQuadratic(np.zeros((6, 6))), PSDCone(6), 1_000_000, method="sgd", rng=11,
                      checkpoint={str(path)!r}, checkpoint_every=0)
    """)
    proc = popen_python(["-c", script], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"started"
        deadline = time.monotonic() + 120
        while not path.exists():
            assert time.monotonic() < deadline, "no checkpoint written within 120 s"
            assert proc.poll() is None, "the run ended before it was killed"
            time.sleep(0.05)
        time.sleep(0.3)                          # let it write a few more (atomically replaced)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    leftovers = [p for p in os.listdir(tmp_path) if p != "killed.ckpt"]
    assert all(p.startswith(".logt-ckpt-") for p in leftovers)    # at most a temporary file, never a torn target
    oracle, domain = PSDQuadratic(np.zeros((6, 6))), PSDCone(6)
    resumed = logt.minimize(oracle, domain, 1_000_000, method="sgd", rng=11, resume=path)
    full = logt.minimize(oracle, domain, 1_000_000, method="sgd", rng=11)
    assert_same_result(full, resumed)


@pytest.fixture
def saved(tmp_path):
    oracle, domain = toy()
    path = tmp_path / "x.ckpt"
    logt.minimize(oracle, domain, 20_000, method="logt", rng=3, checkpoint=path)
    return oracle, domain, path


@pytest.mark.parametrize("change,word", [
    ({"T": 30_000}, "T differs"),
    ({"rng": 4}, "rng"),
    ({"method": "sgd"}, "method differs"),
    ({"options": {"eta": 0.1, "M": 2, "B1": 3}}, "options differs"),
    ({"x0": np.eye(4)}, "x0_sha256 differs"),
    ({"lam": 0.5}, "lam differs"),
])
def test_mismatched_checkpoint_is_a_clear_error(saved, change, word):
    oracle, domain, path = saved
    kw = dict(T=20_000, rng=3, method="logt")
    kw.update(change)
    T = kw.pop("T")
    with pytest.raises(CheckpointError, match=word):
        logt.minimize(oracle, domain, T, resume=path, **kw)


def test_other_problem_is_a_clear_error(saved):
    _, _, path = saved
    with pytest.raises(CheckpointError, match="shape differs"):
        logt.minimize(PSDQuadratic(np.zeros((3, 3))), PSDCone(3), 20_000, method="logt", rng=3, resume=path)


def test_corrupt_or_missing_checkpoint_is_a_clear_error(saved, tmp_path):
    oracle, domain, path = saved
    data = path.read_bytes()
    bad = tmp_path / "truncated.ckpt"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        logt.minimize(oracle, domain, 20_000, rng=3, resume=bad)
    # flip one byte inside the stored iterate: the SHA-256 check catches what the zip CRC may not
    flipped = bytearray(data)
    i = len(flipped) // 3
    flipped[i] ^= 0xFF
    bad.write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError):
        logt.minimize(oracle, domain, 20_000, rng=3, resume=bad)
    bad.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError):
        logt.minimize(oracle, domain, 20_000, rng=3, resume=bad)
    with pytest.raises(CheckpointError, match="does not exist"):
        logt.minimize(oracle, domain, 20_000, rng=3, resume=tmp_path / "nope.ckpt")
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(CheckpointError, match="not a logt checkpoint"):
        logt.minimize(oracle, domain, 20_000, rng=3, resume=tmp_path / "other.npz")


@pytest.mark.parametrize("every", [-1, float("nan"), "10", True])
def test_bad_checkpoint_every(tmp_path, every):
    oracle, domain = toy()
    with pytest.raises(ValueError, match="checkpoint_every"):
        logt.minimize(oracle, domain, 20_000, rng=3, checkpoint=tmp_path / "c", checkpoint_every=every)


# ---- the other methods (logt_acc, minibatch_sgd, one_projection_sgd, frank_wolfe, sgd suffix) ----
OTHER_CASES = [
    ("logt_acc", {}, 60_000),
    ("logt_acc", {"N": 3, "growth": 2, "average": "last"}, 200_000),
    ("minibatch_sgd", {}, 300_000),
    ("minibatch_sgd", {"B": 1, "average": "suffix"}, 300_000),     # crosses 2**16-step chunks and the suffix start
    ("one_projection_sgd", {}, 300_000),
    ("one_projection_sgd", {"average": "suffix", "radius": 5.0}, 5_000),
    ("sgd", {"average": "suffix"}, 300_000),
    ("frank_wolfe", {}, 2_000_000),
]



def problem(method):
    A = np.diag([1.0, -0.5, 0.25, 0.0])
    return PSDQuadratic(A), (TraceBoundedPSD(4, 1.0) if method == "frank_wolfe" else PSDCone(4))




@pytest.mark.parametrize("method,opts,T", OTHER_CASES)
def test_other_methods_resume_bit_identical_from_several_points(tmp_path, method, opts, T):
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


@pytest.mark.parametrize("method,opts,T", [c for c in OTHER_CASES if c[0] in ("one_projection_sgd", "logt_acc")])
def test_other_methods_final_checkpoint_resumes_to_the_same_result(tmp_path, method, opts, T):
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


class CrashAfter:
    """Wraps an oracle: counts its ``mean_grad`` calls and raises ``Boom`` at the ``k``-th (never when None)."""

    def __init__(self, oracle, k=None):
        self.oracle, self.k, self.n = oracle, k, 0
        self.shape, self.lam, self.L = oracle.shape, oracle.lam, oracle.L
        self.value = oracle.value

    def mean_grad(self, w, B, rng, out=None):
        self.n += 1
        if self.n == self.k:
            raise Boom
        return self.oracle.mean_grad(w, B, rng, out=out)


@pytest.mark.filterwarnings("ignore::logt.ConvergenceWarning")
@pytest.mark.parametrize("where", ["burn-in", "averaging"])
def test_logt_acc_resumes_bit_identical_from_inside_its_tail(tmp_path, where):
    """A crash in the stages' tail (checkpoints at every step), in its momentum burn-in (its previous point and
    running sum restored) or in its averaging half (after the momentum test): the resumed run repeats only the
    rest of the tail and ends bit-identical, its test, check and counts included."""
    from logt.experiments.kappa import make_problem
    from logt.methods.logt_acc import TAIL_CHECK_BATCHES, TAIL_TEST_BATCHES
    oracle, dom = make_problem("psd", 1000)
    T = 60_000
    counter = CrashAfter(oracle)
    full = logt.minimize(counter, dom, T, method="logt_acc", rng=7)
    tail = full.params["tail"]
    n = tail["n"]
    assert n >= 8 and tail["beta"] > 0.0 and "test" in tail        # the burn-in has momentum and a test
    after = TAIL_CHECK_BATCHES + (n - n // 2)                         # calls after the test
    k = counter.n - after + 1 if where == "averaging" else counter.n - after - TAIL_TEST_BATCHES - 2
    path = tmp_path / "tail.ckpt"
    with pytest.raises(Boom):
        logt.minimize(CrashAfter(oracle, k), dom, T, method="logt_acc", rng=7, checkpoint=path,
                      checkpoint_every=0)
    again = CrashAfter(oracle)
    resumed = logt.minimize(again, dom, T, method="logt_acc", rng=7, resume=path)
    assert_same_result(full, resumed)
    assert again.n == counter.n - k + 1                              # from the crashed step on, nothing more


@pytest.mark.parametrize("method, seed", [("logt", 1), ("logt_acc", 0)])
def test_a_rescued_run_resumes_bit_identical(tmp_path, method, seed):
    """A run that a safeguard's own larger draw kept going (tests/test_run.py, the rare-sample problem) resumes
    from a checkpoint written after that draw to the same result, its ``rescue`` and ``success=False`` too."""
    with pytest.warns(logt.ConvergenceWarning):
        full = logt.minimize(rare_heavy()[1], EuclideanBall(3, 1e6), 200_000, method=method, rng=seed)
    assert full.params["rescue"] is not None
    n_rows = len(full.trace["n_calls"])
    seen = []

    def crash(state):
        seen.append(state.n_calls)
        if len(seen) == n_rows - 1:
            raise Boom

    path = tmp_path / "run.ckpt"
    with pytest.raises(Boom):
        logt.minimize(rare_heavy()[1], EuclideanBall(3, 1e6), 200_000, method=method, rng=seed, callback=crash,
                      checkpoint=path, checkpoint_every=0)
    with pytest.warns(logt.ConvergenceWarning):
        resumed = logt.minimize(rare_heavy()[1], EuclideanBall(3, 1e6), 200_000, method=method, rng=seed,
                                resume=path)
    assert_same_result(full, resumed)
    assert not resumed.success
