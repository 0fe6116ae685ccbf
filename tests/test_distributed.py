"""logt.distributed on a loopback ``distributed.LocalCluster`` (2 worker processes, 1 thread each).

One module-scoped cluster, started and closed here with timeouts; every wait
has a timeout (the oracles' own ``timeout``, ``wait_for_workers``). Skipped
with a reason when the ``logt[dask]`` extra is not installed.
"""
import functools
import logging
import math
import os
import pickle
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

distributed = pytest.importorskip(
    "distributed", reason="the logt[dask] extra (dask[distributed]) is not installed")
import cloudpickle  # noqa: E402  (installed with distributed)
import dask  # noqa: E402

import logt  # noqa: E402
from logt.distributed import DaskOracle, DistributedOracleError, ShardedMetricLearning  # noqa: E402
from logt.distributed import _metric as M  # noqa: E402
from logt.distributed._oracle import (MAX_CHUNKS, MIN_CHUNK, call_key, chunk_sizes,  # noqa: E402
                                     default_n_chunks, reduce_chunks)
from logt.domains import PSDCone  # noqa: E402
from logt.oracles import MetricLearning, PSDQuadratic  # noqa: E402
from _child import run_python

# the helper oracles below are defined here: ship them to the workers by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])

TIMEOUT = 30.0          # seconds: every oracle call and cluster wait in this file is bounded


@pytest.fixture(scope="module")
def cluster():
    """(LocalCluster, Client): 2 worker processes x 1 thread on 127.0.0.1, no dashboard.

    ``allowed-failures = 0``: a task whose worker dies fails at once (KilledWorker)
    instead of being retried; the retry test raises it for its own duration.
    """
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      host="127.0.0.1", dashboard_address=None,
                                      silence_logs=logging.CRITICAL)
    client = distributed.Client(lc, timeout=TIMEOUT)
    try:
        client.wait_for_workers(2, timeout=TIMEOUT)
        yield lc, client
    finally:
        client.close(timeout=TIMEOUT)
        lc.close(timeout=TIMEOUT)
    assert client.status == "closed"
    assert lc.status.name == "closed"


@pytest.fixture
def client(cluster):
    lc, c = cluster
    c.wait_for_workers(2, timeout=TIMEOUT)        # a previous test may have killed one
    return c


def workers_of(client):
    return sorted(client.scheduler_info()["workers"])


# ----------------------------------------------------------------- small problems

def toy(d=5):
    return PSDQuadratic(np.zeros((d, d)), 1.0)


def small_metric_data(n=40, d=5, seed=3):
    """Dense rows with norm <= 1 and two classes."""
    r = np.random.default_rng(seed)
    X = r.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None] * 1.01
    y = (X[:, 0] + 0.3 * r.standard_normal(n) > 0).astype(int)
    return X, y


def exact_metric_grad(X, y, W, lam):
    """NumPy reference: mean over ALL ordered pairs i != j of g_hat(W), and the per-entry
    variance of one pair's gradient (for z-scores of a B-pair mean)."""
    n = len(X)
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    D = X[i] - X[j]
    yy = np.where(y[i] == y[j], 1.0, -1.0)
    q = np.einsum("ba,ac,bc->b", D, W, D)
    z = yy * (1.0 - q)
    c = yy / (1.0 + np.exp(z))                     # y * sigmoid(-z)
    G = np.einsum("b,ba,bc->bac", c, D, D)
    mean = G.mean(axis=0) + lam * W
    var = G.var(axis=0)
    return mean, var


# helper oracles: they run on the workers (pickled by value)

class Failing:
    """Toy oracle whose mean_grad raises for batches of at least ``at`` samples."""

    def __init__(self, at):
        self.inner, self.at = toy(), at
        self.shape, self.L, self.lam = self.inner.shape, 1.0, 1.0

    def mean_grad(self, w, B, rng, out=None):
        if B >= self.at:
            raise ValueError(f"injected failure at B={B}")
        return self.inner.mean_grad(w, B, rng, out=out)

    def value(self, w):
        return self.inner.value(w)


class ExitOnce:
    """Toy oracle whose FIRST chunk of at least ``at`` samples, cluster-wide, kills its
    worker process (``os._exit``); a marker file makes it happen once."""

    def __init__(self, at, marker):
        self.inner, self.at, self.marker = toy(), at, marker
        self.shape = self.inner.shape

    def mean_grad(self, w, B, rng, out=None):
        if B >= self.at:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                os._exit(17)
        return self.inner.mean_grad(w, B, rng, out=out)


class Sleepy:
    """Toy oracle that sleeps ``seconds`` for batches of at least ``at`` samples."""

    def __init__(self, at, seconds):
        self.inner, self.at, self.seconds = toy(), at, seconds
        self.shape = self.inner.shape

    def mean_grad(self, w, B, rng, out=None):
        if B >= self.at:
            time.sleep(self.seconds)
        return self.inner.mean_grad(w, B, rng, out=out)


def reproduce(make, w, B, seed, n_chunks):
    """The distributed call's result rebuilt on the driver from the documented contract,
    written out here independently of logt.distributed's helpers: key = two uint64 words
    from the driver's rng; C = min(n_chunks, B) chunks, the first B % C one larger;
    chunk c draws from PCG64(SeedSequence(key, spawn_key=(c,))); out = sum_c (B_c/B) mean_c
    in chunk order."""
    key = [int(v) for v in np.random.default_rng(seed).integers(0, 2**64, size=2, dtype=np.uint64)]
    o = make()
    C = min(n_chunks, B)
    sizes = [B // C + (c < B % C) for c in range(C)]
    out = np.zeros(o.shape)
    for c, s in enumerate(sizes):
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(key, spawn_key=(c,))))
        out += (s / B) * o.mean_grad(w, s, rng)
    return out


# ----------------------------------------------------------------- no cluster needed

def test_import_logt_does_not_import_dask():
    code = ("import sys, logt, logt.bench, logt.oracles; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')]; "
            "assert not bad, bad; print('ok')")
    r = run_python(["-c", code])
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_chunk_sizes_and_reduction():
    assert chunk_sizes(10, 3) == [4, 3, 3]
    assert chunk_sizes(2, 5) == [1, 1]
    assert sum(chunk_sizes(10**7 + 3, 7)) == 10**7 + 3
    means = [np.full((2, 2), v) for v in (1.0, 2.0, 4.0)]
    out = reduce_chunks(means, [1, 1, 2], 4, np.empty((2, 2)))
    np.testing.assert_allclose(out, 2.75)


def _chi2_ordered(i, j, n):
    counts = np.bincount(i * n + j, minlength=n * n).reshape(n, n)
    assert counts.trace() == 0, "a pair (i, i) was drawn"
    obs = counts[~np.eye(n, dtype=bool)]
    return stats.chisquare(obs).pvalue


def test_sharded_sampler_is_uniform_over_ordered_pairs():
    """The block-pair scheme (the same functions the workers run) gives B independent
    uniform ordered pairs i != j: chi-square over the n(n-1) = 42 cells, 2000 expected each."""
    n, S, B = 7, 3, 84_000                       # shard sizes 2, 2, 3
    key = call_key(np.random.default_rng(11))
    i, j = M.sample_sharded_pairs(n, S, B, key)
    assert len(i) == B
    p = _chi2_ordered(i, j, n)
    assert p > 1e-3, p


def test_chi2_detects_biased_shard_samplers():
    """The test above can fail: the naive samplers a sharded design invites are rejected."""
    n, S, B = 7, 3, 84_000
    bounds = np.array(M.shard_bounds(n, S))
    sizes = np.diff(bounds)
    r = np.random.default_rng(5)
    # (a) pairs only inside shards (each worker samples its own shard)
    s = r.choice(S, size=B, p=sizes * (sizes - 1) / np.sum(sizes * (sizes - 1)))
    i = bounds[s] + r.integers(0, sizes[s])
    j = r.integers(0, sizes[s] - 1)
    j = bounds[s] + j + (j >= i - bounds[s])
    assert _chi2_ordered(i, j, n) < 1e-6
    # (b) block pairs chosen with equal probability instead of by their sizes
    pairs, weights = M.block_pairs(list(sizes))

    def by_weights(w):
        ii, jj = [], []
        for (s_, t_), m in zip(pairs, r.multinomial(B, np.asarray(w, float) / np.sum(w))):
            ra, rb = M.draw_block_pairs(r, sizes[s_], sizes[t_], bounds[s_], bounds[t_], m, s_ == t_)
            ii.append(ra)
            jj.append(rb)
        return np.concatenate(ii), np.concatenate(jj)

    assert _chi2_ordered(*by_weights(np.ones(len(pairs))), n) < 1e-6
    # (c) a diagonal block counted as n_s**2 pairs (self-pairs included in the weight)
    assert _chi2_ordered(*by_weights([sizes[s_] * sizes[t_] for s_, t_ in pairs]), n) < 1e-6
    # and the right weights pass (the same code path as the oracle)
    assert _chi2_ordered(*by_weights(weights), n) > 1e-3


def test_placement_holds_2n_over_sqrt_P_rows_and_balances_load():
    """P = q**2 workers, S = q shards: one block pair per worker (<= 2 shards, i.e. at most
    2n/sqrt(P) rows), loads within 5% of the mean; other P stay within 15%."""
    n = 32561
    for P in (4, 9, 16, 2, 3, 8, 32):
        S = M.default_n_shards(n, P)
        b = M.shard_bounds(n, S)
        pairs, weights = M.block_pairs([b[k + 1] - b[k] for k in range(S)])
        plan = M.place_block_pairs(pairs, weights, [f"w{k:02d}" for k in range(P)])
        assert set(plan) == set(pairs)
        loads = {a: sum(w for pr, w in zip(pairs, weights) if plan[pr] == a) for a in set(plan.values())}
        rows = {a: sum(b[u + 1] - b[u] for u in {u for pr in pairs if plan[pr] == a for u in pr})
                for a in loads}
        mean = sum(weights) / P
        if math.isqrt(P) ** 2 == P:
            assert S == math.isqrt(P)
            assert max(loads.values()) <= 1.05 * mean and len(loads) == P
            assert max(rows.values()) <= 2 * n / math.sqrt(P) + 2
        else:
            assert max(loads.values()) <= 1.15 * mean, (P, S)


# ----------------------------------------------------------------- the contract, on the cluster

def test_toy_matches_the_documented_reproduction_bitwise(client):
    make = functools.partial(toy)
    w = np.eye(5) * 0.3
    with DaskOracle(client, make, n_chunks=3, local_below=1, timeout=TIMEOUT) as o:
        g = o.mean_grad(w, 10_007, np.random.default_rng(42))     # uneven chunks 3336/3336/3335
        assert o.n_round_trips == 1 and o.n_tasks == 3 and o.n_local_calls == 0
        assert o.last_call["bytes_sent"] == w.nbytes and o.bytes_received == 3 * w.nbytes
    assert np.array_equal(g, reproduce(make, w, 10_007, 42, 3))


def test_metric_matches_reproduction_and_is_identical_on_one_or_two_workers(client):
    X, y = small_metric_data()
    make = functools.partial(MetricLearning, sp.csr_matrix(X), y, 0.1, n_eval_pairs=10, n_threads=1)
    W = np.diag(np.linspace(0.1, 0.5, 5))
    ws = workers_of(client)
    results = []
    for workers in ([ws[0]], None):
        with DaskOracle(client, make, n_chunks=4, local_below=1, workers=workers,
                        timeout=TIMEOUT) as o:
            with distributed.get_task_stream(client) as ts:
                results.append(o.mean_grad(W, 40_000, np.random.default_rng(7)))
            used = {r["worker"] for r in ts.data if str(r["key"]).startswith("logt-chunk")}
            assert used <= set(workers or ws)
    assert used == set(ws), "the 2-worker run should use both workers"
    assert np.array_equal(results[0], results[1])
    assert np.array_equal(results[0], reproduce(make, W, 40_000, 7, 4))


def test_default_chunks_depend_on_B_only_so_a_seed_fixes_the_bits_on_any_cluster(client):
    """n_chunks=None: B // MIN_CHUNK chunks, at least 2, at most MAX_CHUNKS, whatever the workers;
    the same bits on one worker and on two, equal to the documented reproduction."""
    assert [default_n_chunks(B) for B in (1, 2, MIN_CHUNK - 1, 3 * MIN_CHUNK, 5 * MIN_CHUNK + 3, 10**9)] == \
        [1, 2, 2, 3, 5, MAX_CHUNKS]
    w = np.eye(5) * 0.3
    B = 5 * MIN_CHUNK + 3
    ws = workers_of(client)
    out = []
    for workers in ([ws[0]], None):
        with DaskOracle(client, toy, local_below=1, workers=workers, timeout=TIMEOUT) as o:
            out.append(o.mean_grad(w, B, np.random.default_rng(11)))
            assert o.n_tasks == 5
    assert np.array_equal(out[0], out[1])
    assert np.array_equal(out[0], reproduce(toy, w, B, 11, 5))
    X, y = small_metric_data()
    sharded = []
    for workers in ([ws[0]], None):
        with ShardedMetricLearning(client, X, y, 0.1, local_below=1, workers=workers, timeout=TIMEOUT,
                                   n_eval_pairs=10) as so:
            assert so.n_shards == M.DEFAULT_N_SHARDS
            sharded.append(so.mean_grad(np.eye(5) * 0.2, 50_000, np.random.default_rng(4)))
    assert np.array_equal(sharded[0], sharded[1])


def test_seed_changes_bits_and_chunk_count_changes_bits(client):
    w = np.eye(5) * 0.3
    with DaskOracle(client, toy, n_chunks=2, local_below=1, timeout=TIMEOUT) as o2, \
            DaskOracle(client, toy, n_chunks=3, local_below=1, timeout=TIMEOUT) as o3:
        a = o2.mean_grad(w, 20_000, np.random.default_rng(1))
        b = o2.mean_grad(w, 20_000, np.random.default_rng(1))
        c = o2.mean_grad(w, 20_000, np.random.default_rng(2))
        d = o3.mean_grad(w, 20_000, np.random.default_rng(1))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not np.array_equal(a, d)
    # the driver's rng advances by the same two words whatever the chunk count
    r2, r3 = np.random.default_rng(9), np.random.default_rng(9)
    call_key(r2), call_key(r3)
    assert r2.random() == r3.random()


def test_distributed_mean_agrees_with_exact_gradient(client):
    """Dense NumPy reference over all n(n-1) pairs: every entry of the B-pair mean is
    within 5.5 standard errors (Bonferroni over 25 entries: false alarm ~1e-6)."""
    X, y = small_metric_data(n=30, d=5)
    W = np.diag(np.linspace(0.2, 1.0, 5)) + 0.05
    W = (W + W.T) / 2
    exact, var = exact_metric_grad(X, y, W, 0.1)
    B = 200_000
    se = np.sqrt(var / B) + 1e-300
    make = functools.partial(MetricLearning, X, y, 0.1, n_eval_pairs=10, n_threads=1)
    with DaskOracle(client, make, n_chunks=3, local_below=1, timeout=TIMEOUT) as o:
        g = o.mean_grad(W, B, np.random.default_rng(0))
    with ShardedMetricLearning(client, X, y, 0.1, n_shards=3, local_below=1, timeout=TIMEOUT,
                               n_eval_pairs=10) as so:
        h = so.mean_grad(W, B, np.random.default_rng(0))
    for est in (g, h):
        z = np.abs(est - exact) / se
        assert z.max() < 5.5, z.max()
    # and the toy against its closed form: mean W - A, each entry sd sqrt(1/(3B))
    w = np.eye(5) * 0.7
    with DaskOracle(client, toy, n_chunks=2, local_below=1, timeout=TIMEOUT) as o:
        g = o.mean_grad(w, B, np.random.default_rng(3))
    assert np.abs(g - w).max() / np.sqrt(1 / (3 * B)) < 5.5


def test_sharded_pairs_counted_exactly_through_the_cluster(client):
    """One-hot rows x_i = e_i: at W = 0 the mean gradient's entry (a, b) is
    -(y-dependent constant) * (#pairs {a, b}) / B, so the counts of every unordered
    pair can be read back: they equal the pairs of the documented sampler for the
    call's key, sum to B, and pass a chi-square test of uniformity. B is large enough
    that the cross-shard block pairs (4/30 of B each) span two draw blocks of 2**18."""
    n, S, B = 6, 3, 2_400_000
    assert B * 4 / 30 > M.PAIR_BLOCK
    X = sp.identity(n, format="csr")
    y = np.array([0, 0, 0, 1, 1, 1])
    W = np.zeros((n, n))
    ws = workers_of(client)
    out = []
    for workers in ([ws[0]], None):
        with ShardedMetricLearning(client, X, y, 0.1, n_shards=S, local_below=1, workers=workers,
                                   timeout=TIMEOUT, n_eval_pairs=10) as so:
            out.append(so.mean_grad(W, B, np.random.default_rng(21)))
            assert set(so.placement().values()) <= set(workers or ws)
            if workers is None:
                assert len(set(so.placement().values())) == 2
    assert np.array_equal(out[0], out[1])          # same bits on 1 or 2 workers
    G = out[0]
    same = y[:, None] == y[None, :]
    c = np.where(same, 1.0 / (1.0 + np.e), -1.0 / (1.0 + np.exp(-1.0)))   # y * sigmoid(-y)
    iu = np.triu_indices(n, 1)
    counts = -G[iu] * B / c[iu]
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-3)
    counts = np.round(counts).astype(int)
    assert counts.sum() == B
    i, j = M.sample_sharded_pairs(n, S, B, call_key(np.random.default_rng(21)))
    ref = np.zeros((n, n), dtype=int)
    np.add.at(ref, (np.minimum(i, j), np.maximum(i, j)), 1)
    assert np.array_equal(counts, ref[iu])
    assert stats.chisquare(counts).pvalue > 1e-3


# ----------------------------------------------------------------- minimize, unchanged

def test_minimize_logt_through_dask(client):
    """Counts are exact, round trips = 2*M*(epochs with B >= local_below), same seed ->
    same bits, and F agrees with in-process runs."""
    T = 200_000
    with DaskOracle(client, toy, n_chunks=2, local_below=1280, timeout=TIMEOUT) as o:
        r1 = logt.minimize(o, PSDCone(5), T, rng=4)
        trips = o.n_round_trips
        r2 = logt.minimize(o, PSDCone(5), T, rng=4)
    ref = logt.minimize(toy(), PSDCone(5), T, rng=4)
    assert (r1.n_calls, r1.n_projections, r1.n_epochs) == (ref.n_calls, ref.n_projections, ref.n_epochs)
    Mp, B1, k = ref.params["M"], ref.params["B1"], ref.n_epochs
    assert trips == 2 * Mp * sum(B1 * 2**(e - 1) >= 1280 for e in range(1, k + 1)) > 0
    assert np.array_equal(r1.x, r2.x)
    F_in = [logt.minimize(toy(), PSDCone(5), T, rng=s).fun for s in range(5)]
    assert 0.2 * min(F_in) < r1.fun < 5 * max(F_in), (r1.fun, F_in)


@pytest.mark.parametrize("method", ["sgd", "epoch_gd"])
def test_baselines_run_locally_through_the_python_loop(client, method):
    """B = 1 per step: every call stays in-process (below any threshold >= 2), through
    the drivers' Python fallback loop; the result equals the compiled loop's."""
    with DaskOracle(client, toy, n_chunks=2, timeout=TIMEOUT) as o:
        r = logt.minimize(o, PSDCone(5), 300, method=method, rng=1)
        assert o.n_round_trips == 0 and o.n_local_calls == r.n_calls
    ref = logt.minimize(toy(), PSDCone(5), 300, method=method, rng=1)
    np.testing.assert_allclose(r.x, ref.x, rtol=1e-12, atol=1e-15)
    assert r.n_calls == ref.n_calls and r.n_projections == ref.n_projections


# ----------------------------------------------------------------- failures

def test_worker_exception_names_call_and_step(client):
    # toy Theorem 1: M = 10, B1 = 5; chunks of >= 1000 first at B = 2560 (epoch 10):
    # call 2*10*9 + 1 = 181, the first of its epoch (step 1, g at w)
    with DaskOracle(client, functools.partial(Failing, 1000), n_chunks=2, local_below=1000,
                    timeout=TIMEOUT) as o:
        t0 = time.monotonic()
        with pytest.raises(DistributedOracleError) as ei:
            logt.minimize(o, PSDCone(5), 10**6, options={"params": "theorem1"}, rng=0)
        assert time.monotonic() - t0 < TIMEOUT
    msg = str(ei.value)
    assert "call #181" in msg and "B=2560" in msg and "step 1 (g at w)" in msg, msg
    assert "injected failure" in msg and "ValueError" in msg, msg
    assert "method 'logt', epoch 10, step 1" in msg and "batch B=2560" in msg, msg   # the driver's context
    assert (ei.value.call, ei.value.B, ei.value.run_index) == (181, 2560, 1)


def test_make_oracle_failure_is_reported_at_construction(client):
    def bad():
        raise OSError("no data here")
    with pytest.raises(DistributedOracleError, match="OSError: no data here"):
        DaskOracle(client, bad, local_oracle=toy(), n_chunks=2, timeout=TIMEOUT)
    # and the failed plugin is not left behind for workers that join later
    plugins = client.run(lambda dask_worker: [p for p in dask_worker.plugins if p.startswith("logt-")])
    assert not any(plugins.values()), plugins


def test_worker_death_is_a_clear_error(client, tmp_path):
    make = functools.partial(ExitOnce, 1000, str(tmp_path / "died"))
    with DaskOracle(client, make, n_chunks=2, local_below=1, local_oracle=toy(), timeout=TIMEOUT) as o:
        t0 = time.monotonic()
        with pytest.raises(DistributedOracleError, match="KilledWorker") as ei:
            o.mean_grad(np.eye(5), 4000, np.random.default_rng(0))
        assert time.monotonic() - t0 < TIMEOUT
    assert "call #1 (B=4000" in str(ei.value)
    assert (tmp_path / "died").exists()


def test_worker_death_with_dask_retry_gives_the_same_bits(cluster, client, tmp_path):
    """With allowed-failures >= 1 Dask re-runs the lost chunk; its stream depends only on
    (seed, call, chunk), so the result is the undisturbed one, bit for bit."""
    lc, _ = cluster
    make = functools.partial(ExitOnce, 1000, str(tmp_path / "died"))
    lc.scheduler.allowed_failures = 1
    try:
        with DaskOracle(client, make, n_chunks=2, local_below=1, local_oracle=toy(),
                        timeout=TIMEOUT) as o:
            try:
                g = o.mean_grad(np.eye(5), 4000, np.random.default_rng(5))
            except DistributedOracleError as exc:
                # on a loaded machine the scheduler may drop the re-run chunk ("already forgotten"):
                # then the failure must be the documented clear error, and the same call on the
                # recovered cluster must still give the undisturbed bits
                assert "call #1" in str(exc) and "chunk" in str(exc), exc
                g = o.mean_grad(np.eye(5), 4000, np.random.default_rng(5))
    finally:
        lc.scheduler.allowed_failures = 0
    assert (tmp_path / "died").exists()
    assert np.array_equal(g, reproduce(toy, np.eye(5), 4000, 5, 2))


def test_timeout_is_a_clear_error_not_a_hang(client):
    with DaskOracle(client, functools.partial(Sleepy, 1000, 3.0), n_chunks=2, local_below=1,
                    local_oracle=toy(), timeout=0.5) as o:
        t0 = time.monotonic()
        with pytest.raises(DistributedOracleError, match="did not finish within timeout=0.5 s"):
            o.mean_grad(np.eye(5), 4000, np.random.default_rng(0))
        assert time.monotonic() - t0 < 2.5


# ----------------------------------------------------------------- the object

def test_validation_and_attributes(client):
    with pytest.raises(TypeError, match="client"):
        DaskOracle("tcp://x", toy)
    with pytest.raises(TypeError, match="make_oracle"):
        DaskOracle(client, toy())
    for kw, exc, pat in [({"n_chunks": 0}, ValueError, "n_chunks"),
                         ({"local_below": -1}, ValueError, "local_below"),
                         ({"timeout": 0}, ValueError, "timeout"),
                         ({"timeout": float("inf")}, ValueError, "timeout"),
                         ({"workers": []}, TypeError, "workers")]:
        with pytest.raises(exc, match=pat):
            DaskOracle(client, toy, **kw)
    local = toy()
    with DaskOracle(client, toy, local_oracle=local, local_below=100, timeout=TIMEOUT) as o:
        assert o.n_chunks is None                   # default: the chunk rule of B, not the cluster
        assert o.shape == (5, 5) and (o.L, o.lam, o.G, o.f_star) == (local.L, local.lam, local.G,
                                                                      local.f_star)
        assert o.value(np.eye(5)) == local.value(np.eye(5))
        assert not hasattr(o, "nonexistent")
        rng = np.random.default_rng(0)
        with pytest.raises(TypeError, match="B"):
            o.mean_grad(np.eye(5), 2.0, rng)
        with pytest.raises(ValueError, match="B"):
            o.mean_grad(np.eye(5), 0, rng)
        with pytest.raises(TypeError, match="rng"):
            o.mean_grad(np.eye(5), 10, 0)
        with pytest.raises(ValueError, match="shape"):
            o.mean_grad(np.eye(4), 1000, rng)
        with pytest.raises(ValueError, match="NaN"):
            o.mean_grad(np.full((5, 5), np.nan), 1000, rng)
        with pytest.raises(TypeError, match="float64"):
            o.mean_grad(np.eye(5), 1000, rng, out=np.empty((5, 5), np.float32))
        with pytest.raises(TypeError, match="pickle"):
            pickle.dumps(o)
        # the local path draws from the driver's rng directly: the local oracle's own bits
        a = o.mean_grad(np.eye(5), 10, np.random.default_rng(3))
        assert np.array_equal(a, local.mean_grad(np.eye(5), 10, np.random.default_rng(3)))
        assert o.n_local_calls == 1 and o.n_round_trips == 0
        name = o._plugin_name
        assert all(name in v for v in client.run(lambda dask_worker: list(dask_worker.plugins)).values())
    assert not any(name in v for v in client.run(lambda dask_worker: list(dask_worker.plugins)).values())
    with pytest.raises(RuntimeError, match="closed"):
        o.mean_grad(np.eye(5), 10, rng)
    o.close()                                       # idempotent
    with pytest.raises(ValueError, match="n_shards"):
        X, y = small_metric_data(n=4)
        ShardedMetricLearning(client, X, y, n_shards=5)
