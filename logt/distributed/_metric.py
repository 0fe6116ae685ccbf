"""The metric-learning pair oracle with its training rows SHARDED over Dask workers.

How pairs stay uniform over all ``n (n - 1)`` ordered pairs of distinct rows
---------------------------------------------------------------------------
The rows are split into ``S`` contiguous shards of sizes ``n_0, ..., n_{S-1}``.
The ordered pairs split into ``S**2`` *block pairs* ``(s, t)`` (``i`` in shard
``s``, ``j`` in shard ``t``); block pair ``(s, t)`` holds ``n_s n_t`` ordered
pairs of distinct rows when ``s != t`` and ``n_s (n_s - 1)`` when ``s == t``.
One call with batch ``B``:

1. the driver draws the counts ``m ~ Multinomial(B, p)``, ``p_st`` = (pairs in
   the block pair) / ``(n (n - 1))``; they add up to ``B`` exactly;
2. the task of block pair ``(s, t)`` draws its ``m_st`` pairs independently:
   ``i`` uniform in shard ``s``; ``j`` uniform in shard ``t`` (``s != t``) or
   uniform among the other rows of shard ``s`` (``s == t``).

A pair ``(i, j)`` with ``i`` in shard ``s`` and ``j`` in shard ``t != s`` is drawn
with probability ``n_s n_t / (n (n - 1)) * 1 / (n_s n_t) = 1 / (n (n - 1))``, and
one inside shard ``s`` with ``n_s (n_s - 1) / (n (n - 1)) * 1 / (n_s (n_s - 1))``,
the same. A multinomial split followed by uniform draws inside each cell is the
same as ``B`` independent uniform draws, so each pair of the batch is uniform
over all ordered pairs of distinct rows, independently. Sampling only within
shards (the naive sharding), weighting block pairs equally, or counting
``n_s**2`` pairs in a diagonal block would not be; ``tests/test_distributed.py``
checks the scheme and rejects those three with a chi-square test.

Data placement
--------------
Each block pair is pinned to one worker (:func:`place_block_pairs`: each worker
in turn takes block pairs up to its share of the expected pairs, preferring
those whose shards it already holds). Each worker receives the shards of its
block pairs ONCE (``Client.run``, straight into a worker plugin), keeps them and
stacks them into one compiled pair kernel. With ``P = q**2`` workers and ``S = q``
shards each worker holds one block pair, i.e. at most ``2 n / sqrt(P)`` rows, and
the loads are equal; :func:`default_n_shards` gives that ``S`` for ``P`` workers. The
default ``S`` is a constant (``DEFAULT_N_SHARDS = 4``) so that a seed fixes the bits on any
cluster.
If a pinned worker leaves the cluster, the call raises
:class:`DistributedOracleError` within a second or two and the next call
re-plans (and re-sends the shards each worker lacks).
"""
import math
import threading

import numpy as np
import scipy.sparse as sp
from distributed.diagnostics.plugin import WorkerPlugin

from logt._kernels._pairs import PairGradientCore, PairSampler
from logt.distributed._oracle import (
    DEFAULT_LOCAL_BELOW, DEFAULT_TIMEOUT, DaskOracle, DistributedOracleError, _check_int, _plugin,
    chunk_rng)
from logt.oracles.metric import MetricLearning

__all__ = ["ShardedMetricLearning", "DEFAULT_N_SHARDS", "shard_bounds", "block_pairs", "block_pair_counts",
           "place_block_pairs", "default_n_shards", "iter_block_pairs", "draw_block_pairs",
           "sample_sharded_pairs"]


# ----------------------------------------------------------------- the sampling scheme (pure)

def shard_bounds(n, n_shards):
    """Row offsets ``[a_0 = 0, a_1, ..., a_S = n]`` of ``S`` contiguous shards (sizes differ by <= 1)."""
    n, S = int(n), int(n_shards)
    return [s * n // S for s in range(S + 1)]


def block_pairs(sizes):
    """The ``S**2`` ordered block pairs ``(s, t)`` in the fixed order (row-major) and their
    numbers of ordered pairs of distinct rows (``n_s n_t``, or ``n_s (n_s - 1)`` when ``s == t``)."""
    S = len(sizes)
    pairs = [(s, t) for s in range(S) for t in range(S)]
    weights = [sizes[s] * (sizes[s] - 1) if s == t else sizes[s] * sizes[t] for s, t in pairs]
    return pairs, weights


def block_pair_counts(weights, B, rng):
    """``m ~ Multinomial(B, weights / sum(weights))``: pairs per block pair (sums to ``B`` exactly)."""
    total = sum(weights)
    return rng.multinomial(int(B), np.array([w / total for w in weights], dtype=np.float64))


def place_block_pairs(pairs, weights, workers, held=None, slack=0.05):
    """Pin block pairs to workers: ``{(s, t): worker}``.

    Each worker in turn (sorted order) takes block pairs, largest first among those
    needing the fewest shards it does not hold yet, until it has its share of the
    expected pairs (the rest's total / the workers left, ``slack`` over at most);
    leftovers go to the least loaded. ``held``: ``{worker: shards it holds}``.
    Deterministic: depends only on the arguments.
    """
    workers = sorted(workers)
    held = held or {}
    need = {a: set(held.get(a, ())) for a in workers}
    load = {a: 0 for a in workers}
    remaining = set(range(len(pairs)))
    plan = {}

    def take(a, p):
        remaining.discard(p)
        plan[pairs[p]] = a
        load[a] += weights[p]
        need[a] |= set(pairs[p])

    for k, a in enumerate(workers):
        target = sum(weights[p] for p in remaining) / (len(workers) - k)
        while remaining and load[a] < target:
            fits = [p for p in remaining if load[a] + weights[p] <= target * (1 + slack)]
            if not fits:
                break
            take(a, min(fits, key=lambda p: (len(set(pairs[p]) - need[a]), -weights[p], p)))
    for p in sorted(remaining, key=lambda p: (-weights[p], p)):
        take(min(workers, key=lambda a: (load[a], len(set(pairs[p]) - need[a]), a)), p)
    return plan


def default_n_shards(n, n_workers):
    """``q = ceil(sqrt(P))`` shards, or ``2 q`` when ``q`` gives a load imbalance above 15%
    (``P`` not a square), at most ``n``."""
    q = max(1, math.isqrt(max(1, n_workers - 1)) + 1) if n_workers > 1 else 1
    for S in (q, 2 * q):
        S = min(S, n)
        b = shard_bounds(n, S)
        pairs, weights = block_pairs([b[s + 1] - b[s] for s in range(S)])
        plan = place_block_pairs(pairs, weights, range(n_workers))
        loads = [sum(w for p_, w in zip(pairs, weights) if plan[p_] == a) for a in range(n_workers)]
        if max(loads) <= 1.15 * sum(weights) / n_workers:
            return S
    return min(2 * q, n)


# the default shard count: independent of the cluster (see ShardedMetricLearning's n_shards)
DEFAULT_N_SHARDS = 4

PAIR_BLOCK = 1 << 18      # pairs drawn and reduced at a time inside a block-pair task


def iter_block_pairs(rng, n_s, n_t, off_s, off_t, m, same):
    """The ``m`` pairs of block pair ``(s, t)``, as row indices, in blocks of at most ``PAIR_BLOCK``.

    ``i`` uniform over the ``n_s`` rows of shard ``s`` (rows ``off_s ...``); ``j``
    uniform over the ``n_t`` rows of shard ``t`` (rows ``off_t ...``), or, when
    ``same`` (``s == t``), uniform among the other ``n_s - 1`` rows of shard ``s``.
    Yields ``(rows, cols)`` int32 arrays; the stream order is fixed (block by block,
    ``i`` then ``j``), so the draws depend only on ``rng`` and ``m``.
    """
    done = 0
    while done < m:
        k = min(PAIR_BLOCK, m - done)
        i = rng.integers(0, n_s, size=k, dtype=np.int32)
        if same:
            j = rng.integers(0, n_s - 1, size=k, dtype=np.int32)
            j += j >= i
            j += np.int32(off_s)
        else:
            j = rng.integers(0, n_t, size=k, dtype=np.int32)
            j += np.int32(off_t)
        i += np.int32(off_s)
        yield i, j
        done += k


def draw_block_pairs(rng, n_s, n_t, off_s, off_t, m, same):
    """All pairs of one block pair at once (see :func:`iter_block_pairs`): ``(rows, cols)``."""
    blocks = list(iter_block_pairs(rng, n_s, n_t, off_s, off_t, m, same))
    if not blocks:
        return np.empty(0, np.int32), np.empty(0, np.int32)
    return np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])


def _stream_counts(key):
    return chunk_rng(key, 0)


def _stream_block(key, p):
    return chunk_rng(key, 1, p)


def sample_sharded_pairs(n, n_shards, B, key):
    """The ``B`` ordered pairs (global row indices) one sharded call with entropy ``key`` uses.

    Exactly what :class:`ShardedMetricLearning` computes, block by block (same
    functions, same streams), but on one machine: for tests and for the
    statement of uniformity. Returns ``(i, j)`` int32 arrays in block-pair order.
    """
    bounds = shard_bounds(n, n_shards)
    sizes = [bounds[s + 1] - bounds[s] for s in range(n_shards)]
    pairs, weights = block_pairs(sizes)
    m = block_pair_counts(weights, B, _stream_counts(key))
    out_i, out_j = [], []
    for p, ((s, t), mp) in enumerate(zip(pairs, m)):
        if mp:
            r, c = draw_block_pairs(_stream_block(key, p), sizes[s], sizes[t], bounds[s], bounds[t],
                                    int(mp), s == t)
            out_i.append(r)
            out_j.append(c)
    return np.concatenate(out_i), np.concatenate(out_j)


# ----------------------------------------------------------------- worker side

class _ShardPlugin(WorkerPlugin):
    """Holds this worker's shards (stacked) and one compiled pair kernel over them."""

    idempotent = False

    def __init__(self, lam, n_threads):
        self.lam, self.n_threads = float(lam), int(n_threads)

    def setup(self, worker):
        self._lock = threading.Lock()
        self.X = None            # stacked shards (CSR or dense)
        self.labels = None       # int32 label codes (global coding)
        self.offsets = {}        # shard -> first row in self.X
        self._core = None

    def teardown(self, worker):
        self.X = self.labels = self._core = None
        self.offsets = {}

    def add(self, shards):
        """Store shards ``{s: (X_s, labels_s)}`` not held yet; returns the shards held."""
        with self._lock:
            new = [s for s in sorted(shards) if s not in self.offsets]
            if new:
                parts = ([] if self.X is None else [self.X]) + [shards[s][0] for s in new]
                labs = ([] if self.labels is None else [self.labels]) + [shards[s][1] for s in new]
                start = 0 if self.X is None else self.X.shape[0]
                for s in new:
                    self.offsets[s] = start
                    start += shards[s][0].shape[0]
                if sp.issparse(parts[0]):
                    X = sp.vstack(parts, format="csr")
                    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int64)),
                                      shape=X.shape)
                    X.indptr = X.indptr.astype(np.int64)
                    X.indices = X.indices.astype(np.int32)
                else:
                    X = np.ascontiguousarray(np.vstack(parts), dtype=np.float64)
                self.X, self.labels = X, np.ascontiguousarray(np.concatenate(labs), dtype=np.int32)
                self._core = None
            return sorted(self.offsets)

    def core(self):
        """The pair kernel over the held shards and their offsets (built once per shard set)."""
        with self._lock:
            if self._core is None:
                if self.X is None:
                    raise RuntimeError("this worker holds no shards")
                core = PairGradientCore()
                none_i = np.empty(0, dtype=np.int32)
                # pairs are given per block (with their labels): the sampler is a placeholder
                sampler = PairSampler.from_pairs([0], [0], [1.0], self.X.shape[0])
                core._setup(self.X, sampler, self.X, none_i, none_i, np.empty(0),
                            self.lam, self.n_threads)
                self._core = core
            return self._core, dict(self.offsets)


def _store_shards(name, shards, dask_worker=None):
    return dask_worker.plugins[name].add(shards)


def _held_shards(name, dask_worker=None):
    plugin = dask_worker.plugins.get(name)
    return sorted(plugin.offsets) if plugin is not None else []


def _block_task(name, w, p, s, t, n_s, n_t, m, key):
    """Worker side of block pair ``p = (s, t)``: the mean gradient of its ``m`` pairs."""
    plugin = _plugin(name)
    core, off = plugin.core()
    labels = plugin.labels
    for u in (s, t):
        if u not in off:
            raise RuntimeError(f"this worker does not hold shard {u} (holds {sorted(off)}); "
                               "was it restarted? the next call re-sends the shards")
    out = np.zeros(w.shape, dtype=np.float64)
    part = np.empty(w.shape, dtype=np.float64)
    for rows, cols in iter_block_pairs(_stream_block(key, p), n_s, n_t, off[s], off[t], m, s == t):
        core._mean_grad_pairs(w, rows, cols, out=part, y=np.where(labels[rows] == labels[cols], 1.0, -1.0))
        out += (len(rows) / m) * part        # blocks in stream order: a fixed reduction
    return out


# ----------------------------------------------------------------- the oracle

class ShardedMetricLearning(DaskOracle):
    """:class:`~logt.oracles.MetricLearning` whose pair batches run on Dask workers holding data shards.

    Parameters
    ----------
    client : ``distributed.Client``.
    X, y, lam, X_eval, y_eval, n_eval_pairs, eval_rng, n_threads :
        as for :class:`~logt.oracles.MetricLearning` (``n_threads``: the driver's
        in-process kernel, used for small batches). ``value`` (``F`` on the fixed
        evaluation pairs) runs on the driver.
    n_shards : int >= 1, optional
        Number of row shards ``S`` (default ``DEFAULT_N_SHARDS = 4``, at most ``n``:
        16 block pairs, placed with equal loads on 1, 2, 4, 8 or 16 workers; it does
        not depend on the cluster, so one seed gives the same bits on any cluster).
        One call is at most ``S**2`` block-pair tasks; the bits of a run depend on
        ``S`` and the seed, not on the number of workers or the placement. On a
        larger cluster, :func:`default_n_shards` ``(n, P)`` gives the ``S`` that
        balances ``P`` workers and holds at most about ``2 n / sqrt(P)`` rows on each
        (other bits than the default).
    worker_threads : int >= 1
        Threads of the pair kernel inside each task (default 1; use 1 with one
        single-threaded worker per core).
    local_below, workers, timeout : as for :class:`DaskOracle`.

    See the module docstring for the sampling scheme (uniform over all ordered
    pairs of distinct rows) and the data placement (each worker receives the
    shards of its block pairs once).
    """

    def __init__(self, client, X, y, lam=0.1, *, n_shards=None, X_eval=None, y_eval=None,
                 n_eval_pairs=10_000, eval_rng=0, n_threads=None, worker_threads=1,
                 local_below=DEFAULT_LOCAL_BELOW, workers=None, timeout=DEFAULT_TIMEOUT):
        from distributed import Client
        if not isinstance(client, Client):
            raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")
        self._init_common(client, local_below, workers, timeout)
        local = MetricLearning(X, y, lam, X_eval=X_eval, y_eval=y_eval, n_eval_pairs=n_eval_pairs,
                               eval_rng=eval_rng, n_threads=n_threads)
        self._local = local
        self._set_shape(local)
        n = local.n_samples
        if n_shards is None:
            n_shards = min(DEFAULT_N_SHARDS, n)
        S = _check_int(n_shards, "n_shards", 1)
        if S > n:
            raise ValueError(f"n_shards={S} exceeds the number of rows n={n}")
        self.n_shards = S
        self.worker_threads = _check_int(worker_threads, "worker_threads", 1)
        self._bounds = shard_bounds(n, S)
        self.shard_sizes = [self._bounds[s + 1] - self._bounds[s] for s in range(S)]
        self._pairs, self._weights = block_pairs(self.shard_sizes)
        codes = np.unique(np.asarray(y), return_inverse=True)[1].astype(np.int32).ravel()
        self._Xv, self._codes = local.X, codes        # validated by MetricLearning
        self.n_chunks = len(self._pairs)              # tasks per call (at most)
        self.bytes_setup = 0
        self._plan = None                             # block pair -> worker address
        self._plugin_name = f"logt-shards-{self.token}"
        self._register(_ShardPlugin(local.lam, self.worker_threads))
        self._make_plan()                             # send the shards now, not in the first call

    # -------------------------------------------------------------- placement

    def _shard(self, s):
        a, b = self._bounds[s], self._bounds[s + 1]
        return self._Xv[a:b], self._codes[a:b]

    def _shard_nbytes(self, s):
        X, lab = self._shard(s)
        nb = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if sp.issparse(X) else X.nbytes
        return nb + lab.nbytes

    def placement(self):
        """``{(s, t): worker address}`` of the current plan (computed on first use)."""
        if self._plan is None:
            self._make_plan()
        return dict(self._plan)

    def _make_plan(self):
        """Pin the block pairs to the current workers (:func:`place_block_pairs`, starting from
        the shards each worker reports holding, so a restarted worker is refilled), then send
        each worker the shards it lacks, once."""
        workers = sorted(self._worker_threads())
        if not workers:
            raise DistributedOracleError("the cluster has no workers to hold the shards")
        held = self._client.run(_held_shards, self._plugin_name, workers=workers)
        plan = place_block_pairs(self._pairs, self._weights, workers, held)
        for a in workers:
            need = {u for pair, w in plan.items() if w == a for u in pair}
            missing = sorted(need - set(held.get(a, ())))
            if missing:
                shards = {u: self._shard(u) for u in missing}
                self._client.run(_store_shards, self._plugin_name, shards, workers=[a])
                self.bytes_setup += sum(self._shard_nbytes(u) for u in missing)
        self._plan = plan

    # -------------------------------------------------------------- the fan-out

    def _submit(self, a, B, key):
        if self._plan is None:
            self._make_plan()
        m = block_pair_counts(self._weights, B, _stream_counts(key))
        wf = self._hold_w(a)
        sizes, futures = [], []
        for p, ((s, t), mp) in enumerate(zip(self._pairs, m)):
            if mp == 0:
                continue
            futures.append(self._client.submit(
                _block_task, self._plugin_name, wf, p, s, t, self.shard_sizes[s], self.shard_sizes[t],
                int(mp), key, key=f"logt-block-{self.token}-{self.n_calls}-{p}", pure=False,
                workers=[self._plan[(s, t)]], allow_other_workers=False))
            sizes.append(int(mp))
        return sizes, futures

    def _watchdog(self, ctx, n):
        alive = set(self._worker_threads())
        gone = sorted({a for a in self._plan.values() if a not in alive}) if self._plan else []
        if gone:
            raise DistributedOracleError(
                f"{self._describe(ctx, n)} failed: worker(s) {gone} holding shards of this call "
                "left the cluster (died or retired); the next call re-plans and re-sends the shards",
                **ctx)

    def _on_failure(self):
        self._plan = None        # re-plan (and re-send missing shards) on the next call

    def __repr__(self):
        return (f"ShardedMetricLearning(n={self._local.n_samples}, d={self._local.n_features}, "
                f"lam={self._local.lam}, n_shards={self.n_shards}, local_below={self.local_below}, "
                f"round_trips={self.n_round_trips}{', closed' if self._closed else ''})")
