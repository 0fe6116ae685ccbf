"""MetricLearning reliability: size limits before any allocation, dtype-aware norm tolerance, clear
label errors, pickling / deep copies, and Ctrl-C inside a long pair-gradient call (issue 12)."""
import copy
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import scipy.sparse as sp

from logt._kernels._pairs import MAX_EVAL_PAIRS, MAX_FEATURES, _workspace_plan
from logt.datasets import normalize_rows
from logt.oracles import MetricLearning
from _child import popen_python



def _data(n=40, d=6, seed=0):
    rng = np.random.default_rng(seed)
    return normalize_rows(rng.standard_normal((n, d))), rng.integers(0, 2, n)


def test_huge_feature_count_is_a_clear_error_not_a_crash():
    # a LIBSVM file with a feature index >= 2**31 gives a CSR matrix this wide
    X = sp.csr_matrix((np.array([0.5, 0.5, 0.5]), np.array([0, 2**31 + 4, 7], dtype=np.int64),
                       np.array([0, 1, 2, 3])), shape=(3, 2**31 + 5))
    with pytest.raises(ValueError, match="MAX_FEATURES"):
        MetricLearning(X, [0, 1, 1], 0.1)
    with pytest.raises(ValueError, match="at most MAX_FEATURES = 8192"):
        MetricLearning(np.zeros((2, 60_000)), [0, 1], 0.1)
    for d in (2**31, 2**40, MAX_FEATURES + 1):
        with pytest.raises(ValueError, match="MAX_FEATURES"):
            _workspace_plan(d, True, 10, True)


def test_workspace_plan_is_bounded_for_every_allowed_size():
    for d in (1, 2, 123, 1000, MAX_FEATURES):
        for sparse in (False, True):
            for nnz in (1, 28, min(d, 4096)):
                p = _workspace_plan(d, True, nnz, sparse)
                assert p["max_chunks"] >= 1 and p["sb"] >= 64 and p["blk"] >= 16
                # the d x d buffers plus at most 64 MiB of chunk accumulators and small buffers
                assert p["bytes"] <= 8 * d * d + 64 * 2**20 + 64 * 2**20


def test_eval_pair_limit():
    X, y = _data()
    for bad in (10**9, 1e9, MAX_EVAL_PAIRS + 1, 0, -3, 2.5, True):
        with pytest.raises(ValueError, match="n_eval_pairs"):
            MetricLearning(X, y, 0.1, n_eval_pairs=bad)
    o = MetricLearning(X, y, 0.1, n_eval_pairs=1e3)           # an integral float is accepted
    assert o.n_eval_pairs == 1000


def test_float32_unit_norm_rows_are_accepted():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 50)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)              # float32 arithmetic: norms 1 +- ~1e-7
    norms = np.linalg.norm(X.astype(np.float64), axis=1)
    assert norms.max() > 1 + 1e-12                             # the old tolerance rejected this
    y = rng.integers(0, 2, 200)
    o = MetricLearning(X, y, 0.1)
    assert o.n_features == 50
    o = MetricLearning(sp.csr_matrix(X), y, 0.1)
    assert o.is_sparse
    # beyond rounding it is still an error, in float32 as in float64
    with pytest.raises(ValueError, match="norm 1.00"):
        MetricLearning(X * np.float32(1.001), y, 0.1)
    with pytest.raises(ValueError, match="norm"):
        MetricLearning(X.astype(np.float64) * (1 + 1e-9), y, 0.1)


def test_mixed_type_labels_are_a_clear_error():
    X, _ = _data(n=6)
    y = np.array([1, "a", 1, "a", 2, "b"], dtype=object)
    with pytest.raises(TypeError, match="y mixes label types"):
        MetricLearning(X, y, 0.1)
    # one type of labels, stored as objects: fine
    o = MetricLearning(X, np.array(["a", "b", "a", "b", "a", "c"], dtype=object), 0.1)
    assert list(o.classes) == ["a", "b", "c"]


@pytest.mark.parametrize("kind", ["sparse", "dense"])
@pytest.mark.parametrize("mode", ["uniform", "neighbors", "pairs"])
def test_pickle_and_deepcopy_round_trip(kind, mode):
    X, y = _data()
    Xk = sp.csr_matrix(X) if kind == "sparse" else X
    if mode == "pairs":
        rng = np.random.default_rng(0)
        o = MetricLearning.from_pairs(Xk, rng.integers(0, 40, 30), rng.integers(0, 40, 30),
                                      np.r_[np.ones(10), -np.ones(20)].astype(int), 0.1, n_threads=1)
    else:
        o = MetricLearning(Xk, y, 0.1, sampling=mode, learn_threshold=(mode == "neighbors"), n_threads=1,
                           eval_rng=4)
    ld = o.shape[0]
    Z = np.random.default_rng(1).standard_normal((ld, ld))
    Z = Z + Z.T
    for c in (pickle.loads(pickle.dumps(o)), copy.deepcopy(o), copy.copy(o)):
        assert type(c) is type(o) and c is not o
        assert c.shape == o.shape and c.lam == o.lam and c.L == o.L and c.sampling == o.sampling
        assert np.array_equal(c.eval_pairs[0], o.eval_pairs[0])
        assert c.value(Z) == o.value(Z)
        a = o.mean_grad(Z, 3000, np.random.default_rng(5))
        b = c.mean_grad(Z, 3000, np.random.default_rng(5))
        assert np.array_equal(a, b)


_INTERRUPT_CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np, scipy.sparse as sp
    from logt.oracles import MetricLearning
    kind = sys.argv[1]
    rng = np.random.default_rng(0)
    n, d = 3000, 100
    if kind == "sparse":
        cols = np.stack([rng.choice(d, 14, replace=False) for _ in range(n)])
        X = sp.csr_matrix((np.full(n * 14, 14 ** -0.5), cols.ravel(), np.arange(0, n * 14 + 1, 14)), shape=(n, d))
    else:
        X = rng.standard_normal((n, d)); X /= np.linalg.norm(X, axis=1, keepdims=True)
    o = MetricLearning(X, rng.integers(0, 2, n), 0.1, n_threads=1, sampling="balanced")
    W = np.zeros((d, d))
    print("ready", flush=True)
    try:
        o.mean_grad(W, 2_000_000_000, np.random.default_rng(1))     # minutes of work
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.time(), flush=True)
""")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("kind", ["sparse", "dense"])
def test_ctrl_c_stops_a_huge_batch(kind):
    """SIGINT during mean_grad with a huge B raises KeyboardInterrupt promptly (generous bound: 3 s)."""
    from _sigint import default_sigint
    p = popen_python(["-c", _INTERRUPT_CHILD, kind], stdout=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(1.0)                        # well inside the kernel
        sent = time.time()
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    words = out.split()
    assert words[0] == "interrupted", out
    latency = float(words[1]) - sent
    print(f"{kind}: interrupt latency {latency * 1e3:.1f} ms")
    assert latency < 3.0
