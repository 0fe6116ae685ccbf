"""``DaskOracle``: an oracle whose mini-batch averages run on Dask workers.

One distributed call ``mean_grad(w, B, rng, out)``
--------------------------------------------------
1. ``key``: two 64-bit words drawn from the driver's ``rng`` (the only draw from
   it, whatever the chunk count).
2. ``w`` is sent ONCE per call: scattered with broadcast (the driver sends it to
   the scheduler once, which copies it to each worker of the call); one future
   shared by all chunk tasks.
3. ``B`` is split into ``C`` chunks of sizes ``B // C`` or ``B // C + 1`` (the
   first ``B % C`` chunks are one larger): ``C = min(n_chunks, B)`` for a given
   ``n_chunks``, else ``C = default_n_chunks(B)``: ``B // MIN_CHUNK`` (``2**16``
   samples a chunk), at least 2 and at most ``MAX_CHUNKS = 64`` chunks. Chunk ``c`` runs
   the worker's own oracle, ``oracle.mean_grad(w, B_c, rng_c)``, with
   ``rng_c = Generator(PCG64(SeedSequence(key, spawn_key=(c,))))``.
4. The driver waits once for all chunks (one synchronization round) and reduces
   ``out = sum_c (B_c / B) * mean_c`` in chunk order 0, 1, ..., C - 1.

So a run is bit-identical for a given seed and chunk rule whatever the number
of workers, the scheduling order, or a chunk re-run by Dask after a worker died
(a chunk's bits depend only on ``key``, ``c`` and ``B_c``). The default rule
depends on ``B`` alone, never on the cluster, so one seed gives the same bits on
1, 2 or 32 workers. Changing ``n_chunks`` changes the chunk sizes and streams,
hence the bits (same distribution, same driver-rng consumption).

Small batches (``B < local_below``) run in-process on the driver's local copy of
the oracle, drawing from the driver's ``rng`` directly (deterministic per seed;
different bits from the distributed path, same distribution).
"""
import math
import threading
import time
import uuid

import numpy as np
from distributed import Client, as_completed, get_worker
from distributed.diagnostics.plugin import WorkerPlugin

from logt._kernels._base import _as_point, _check_out

__all__ = ["DaskOracle", "DistributedOracleError", "DEFAULT_LOCAL_BELOW", "MIN_CHUNK", "MAX_CHUNKS",
           "default_n_chunks"]

# Calls with B below this run in-process. A distributed call costs a fixed L (~12 ms
# measured on a loopback cluster) plus B c / P (c: seconds per sample on one core,
# P: cores of the cluster); in-process costs B c / p. So the cluster wins from
# B* = L / (c (1/p - 1/P)): for the Adult pair oracle (c ~ 0.31 us) that is ~2**17
# against one local thread on the 2-worker loopback cluster (measured) and ~8e4 against
# two local threads on a large cluster. A cheap oracle (the 5 x 5 toy, c ~ 14 ns per
# sample) needs ~2**23. See docs/guide/scaling-out.md; pass local_below per oracle.
DEFAULT_LOCAL_BELOW = 2**17
DEFAULT_TIMEOUT = 600.0

# The default chunk rule (n_chunks=None) follows the batch, never the cluster, so a seed fixes the
# bits on any cluster: B // MIN_CHUNK chunks, at least 2, at most MAX_CHUNKS. A chunk of 2**16
# samples is ~20 ms of work for the Adult pair oracle, against ~4-5 ms of per-task cost measured on
# the 2-worker loopback cluster (scheduling plus one (d, d) result); 64 chunks keep up to 64 worker
# threads busy on the large late batches. Measured cost and the rule: docs/guide/scaling-out.md.
MIN_CHUNK = 2**16
MAX_CHUNKS = 64

_DELEGATED = ("value", "L", "lam", "G", "f_star", "minimizer", "R", "grad_bound",
              "n_samples", "n_features", "classes", "noise", "A")


class DistributedOracleError(RuntimeError):
    """A distributed ``mean_grad`` call failed: a worker raised, died, or the call timed out.

    Attributes: ``call`` (1-based index of the ``mean_grad`` call on this oracle),
    ``B``, ``run_index`` (the call's position in the current run of calls with the
    same ``B``), ``chunk`` (the failing chunk, or None for a timeout).
    """

    def __init__(self, message, *, call=None, B=None, run_index=None, chunk=None):
        super().__init__(message)
        self.call, self.B, self.run_index, self.chunk = call, B, run_index, chunk

    def with_context(self, where):
        """The same error with the driver's position (``logt._run.Run`` calls this)."""
        return type(self)(f"at {where}: {self}", call=self.call, B=self.B, run_index=self.run_index,
                          chunk=self.chunk)


# ----------------------------------------------------------------- randomness

def call_key(rng):
    """The per-call entropy: two 64-bit words from the driver's generator ``rng``."""
    return [int(v) for v in rng.integers(0, 2**64, size=2, dtype=np.uint64)]


def chunk_rng(key, *spawn_key):
    """``Generator(PCG64(SeedSequence(key, spawn_key=spawn_key)))``: the stream of one chunk."""
    ss = np.random.SeedSequence(entropy=key, spawn_key=tuple(int(s) for s in spawn_key))
    return np.random.Generator(np.random.PCG64(ss))


def default_n_chunks(B):
    """Chunks of a distributed call with batch ``B >= 1`` under the default rule:
    ``min(B, clip(B // MIN_CHUNK, 2, MAX_CHUNKS))``, independent of the cluster."""
    return min(int(B), max(2, min(MAX_CHUNKS, int(B) // MIN_CHUNK)))


def chunk_sizes(B, n_chunks):
    """Sizes of the ``min(n_chunks, B)`` chunks of a batch of ``B`` (the first ``B % C`` get one more)."""
    C = min(int(n_chunks), int(B))
    q, r = divmod(int(B), C)
    return [q + (c < r) for c in range(C)]


def reduce_chunks(means, sizes, B, out):
    """``out = sum_c (sizes[c] / B) * means[c]``, summed in chunk order (the fixed order)."""
    out.fill(0.0)
    for m, s in zip(means, sizes):
        out += (s / B) * m
    return out


# ----------------------------------------------------------------- worker side

class _OraclePlugin(WorkerPlugin):
    """Holds ``make_oracle`` on a worker and a pool of oracles built from it.

    Sent once per worker (and to any worker that joins or restarts later). Each
    concurrently running chunk task takes its own oracle from the pool, so a
    worker builds at most one oracle per thread, once.
    """

    idempotent = False

    def __init__(self, make_oracle):
        self.make_oracle = make_oracle

    def setup(self, worker):
        self._lock = threading.Lock()
        self._free = [self._build()]      # eager: a failing make_oracle shows at registration

    def teardown(self, worker):
        self._free = []

    def _build(self):
        o = self.make_oracle()
        if not callable(getattr(o, "mean_grad", None)):
            raise TypeError(f"make_oracle() returned {type(o).__name__}, which has no mean_grad")
        return o

    def acquire(self):
        with self._lock:
            if self._free:
                return self._free.pop()
        return self._build()

    def release(self, oracle):
        with self._lock:
            self._free.append(oracle)


def _plugin(name):
    try:
        return get_worker().plugins[name]
    except KeyError:
        raise RuntimeError(f"worker has no logt plugin {name!r} (was the oracle closed?)") from None


def _chunk_task(name, w, size, key, c):
    """Worker side of chunk ``c``: the mean of ``size`` gradients at ``w`` from stream ``(key, c)``."""
    plugin = _plugin(name)
    oracle = plugin.acquire()
    try:
        out = np.empty(w.shape, dtype=np.float64)
        return oracle.mean_grad(w, size, chunk_rng(key, c), out=out)
    finally:
        plugin.release(oracle)


# ----------------------------------------------------------------- helpers

def _check_int(x, name, low):
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(x).__name__}")
    if x < low:
        raise ValueError(f"{name} must be >= {low}, got {x}")
    return int(x)


def _check_timeout(timeout):
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.integer, np.floating)):
        raise TypeError(f"timeout must be a number of seconds, got {type(timeout).__name__}")
    timeout = float(timeout)
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"timeout must be finite and > 0 seconds, got {timeout}")
    return timeout


def _ordinal(n):
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


# ----------------------------------------------------------------- the oracle

class DaskOracle:
    """An oracle whose ``mean_grad`` averages on Dask workers (the paper's mini-batches, scaled out).

    Parameters
    ----------
    client : ``distributed.Client`` connected to the cluster.
    make_oracle : zero-argument callable returning the oracle to run on a worker
        (e.g. ``functools.partial(MetricLearning, X, y, 0.1, n_threads=1)``). It is
        pickled (cloudpickle) once and sent to every worker in a worker plugin;
        each worker builds its oracle once (one per worker thread) and keeps it
        until :meth:`close`. Workers must be able to import ``logt``. To ship
        less, let ``make_oracle`` load its data from storage the workers see.
    n_chunks : int >= 1, optional
        Chunks per distributed call (``min(n_chunks, B)`` are used). Default
        (None): :func:`default_n_chunks`, ``B // MIN_CHUNK`` chunks (``2**16``
        samples each), at least 2 and at most ``MAX_CHUNKS = 64``: it depends on
        ``B`` only, so one seed gives the same bits on any cluster. The bits depend on the chunk
        count (never on the number of workers); on a cluster of more than 64
        worker threads pass a larger ``n_chunks`` to use them all.
    local_below : int >= 0
        Calls with ``B < local_below`` run in-process (no network). Default
        ``DEFAULT_LOCAL_BELOW`` (2**17: the measured crossover for the Adult pair
        oracle, see docs/guide/scaling-out.md; about ``L / (c (1/p - 1/P))`` for a round cost ``L``,
        ``c`` seconds per sample, ``p`` local and ``P`` cluster cores). 0 or 1:
        always distributed. Fixed per oracle, never timed at run time: which path
        a call takes must not depend on timings, or runs would not be reproducible.
    local_oracle : optional
        The driver's copy, used for small batches, ``value`` and the attributes
        ``shape``, ``L``, ``lam``, ``G``, ... (default: ``make_oracle()``, built
        once on the driver).
    workers : list of worker addresses, optional
        Run only on these workers (default: any worker of the cluster).
    timeout : float, seconds
        A distributed call that has not finished after ``timeout`` seconds raises
        :class:`DistributedOracleError` (default 600). There is no unbounded wait.

    Counters (read them for reports): ``n_calls`` (all ``mean_grad`` calls),
    ``n_local_calls``, ``n_round_trips`` (distributed calls: each is ONE
    synchronization round, the driver waits once for all its chunks),
    ``n_tasks``, ``bytes_sent`` (array payload the driver sends: ``w`` once per
    distributed call), ``bytes_received`` (the chunk means it gathers: ``C``
    arrays of ``shape`` per call), ``seconds_distributed``; ``last_call`` (a dict).
    Protocol overhead (task specs of ~0.2 kB per chunk, message framing) is
    not counted.

    Failures: a chunk whose oracle raises, a worker that dies (after Dask's own
    retries: ``distributed.scheduler.allowed-failures``, default 3; a re-run
    chunk gives the same bits), or a call slower than ``timeout`` raises
    :class:`DistributedOracleError` naming the call index, ``B`` and the chunk.
    The batch is never silently smaller: every chunk must return.

    With ``logt.minimize``: any method works unchanged. ``method="logt"`` sends
    its large mini-batches out (``2*M`` calls per epoch; only epochs with
    ``B >= local_below`` cost rounds). ``"sgd"`` and ``"epoch_gd"`` call
    ``mean_grad(w, 1, rng)`` once per step; a DaskOracle is not a compiled oracle,
    so they run their Python fallback loop and every call stays in-process (no
    rounds; the bits equal the in-process oracle's, slower than the compiled loop).

    Use it as a context manager or call :meth:`close` to remove the plugin and
    the oracles from the workers. Not thread-safe: one call at a time.
    """

    def __init__(self, client, make_oracle, *, n_chunks=None, local_below=DEFAULT_LOCAL_BELOW,
                 local_oracle=None, workers=None, timeout=DEFAULT_TIMEOUT):
        if not isinstance(client, Client):
            raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")
        if not callable(make_oracle):
            raise TypeError(f"make_oracle must be a zero-argument callable, got {type(make_oracle).__name__}")
        self._init_common(client, local_below, workers, timeout)
        self._local = make_oracle() if local_oracle is None else local_oracle
        self._set_shape(self._local)
        self.n_chunks = None if n_chunks is None else _check_int(n_chunks, "n_chunks", 1)
        self._plugin_name = f"logt-oracle-{self.token}"
        self._register(_OraclePlugin(make_oracle))

    # -------------------------------------------------------------- setup

    def _init_common(self, client, local_below, workers, timeout):
        self._client = client
        self.local_below = _check_int(local_below, "local_below", 0)
        self.timeout = _check_timeout(timeout)
        if workers is not None:
            if isinstance(workers, str):
                workers = [workers]
            workers = list(workers)
            if not workers or not all(isinstance(a, str) for a in workers):
                raise TypeError("workers must be a non-empty list of worker addresses (str)")
        self.workers = workers
        self.token = uuid.uuid4().hex[:16]
        self._plugin_name = None
        self._closed = False
        self.n_calls = self.n_local_calls = self.n_round_trips = self.n_tasks = 0
        self.bytes_sent = self.bytes_received = 0
        self.seconds_distributed = 0.0
        self.last_call = None
        self._run_B, self._run_index = None, 0
        self._previous = self._w_future = None

    def _set_shape(self, local):
        shape = getattr(local, "shape", None)
        if shape is None or not callable(getattr(local, "mean_grad", None)):
            raise TypeError(f"the local oracle ({type(local).__name__}) must have shape and mean_grad")
        self.shape = tuple(int(n) for n in shape)

    def _worker_threads(self):
        info = self._client.scheduler_info()["workers"]
        return {a: int(v.get("nthreads", 1)) for a, v in info.items()
                if self.workers is None or a in self.workers}

    def _register(self, plugin):
        """Install the worker plugin on every worker (and future ones); a failing setup
        (e.g. ``make_oracle`` raising on a worker) removes it again and raises."""
        try:
            self._client.register_plugin(plugin, name=self._plugin_name)
        except Exception as exc:
            try:
                self._client.unregister_worker_plugin(self._plugin_name)
            except Exception:     # not registered anywhere: nothing to undo
                pass
            self._closed = True
            raise DistributedOracleError(
                f"setting up the oracle on the workers failed: {type(exc).__name__}: {exc}") from exc

    # -------------------------------------------------------------- protocol

    def __getattr__(self, name):
        # only reached when normal lookup fails: the local oracle's optional attributes
        if name in _DELEGATED and "_local" in self.__dict__:
            return getattr(self.__dict__["_local"], name)
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    @property
    def local_oracle(self):
        """The driver's copy of the oracle (small batches, ``value``, attributes)."""
        return self._local

    def mean_grad(self, w, B, rng, out=None):
        """Mean of ``B`` stochastic gradients at ``w`` (shape ``self.shape``), in one call.

        ``B < local_below``: in-process, drawing from ``rng``. Otherwise on the
        cluster: one synchronization round, chunk streams derived from ``rng``
        (see the module docstring). ``rng`` must be a ``numpy.random.Generator``.
        """
        B = _check_int(B, "B", 1)
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator here, got {type(rng).__name__}")
        if self._closed:
            raise RuntimeError("this DaskOracle is closed")
        self.n_calls += 1
        if B == self._run_B:
            self._run_index += 1
        else:
            self._run_B, self._run_index = B, 1
        if B < self.local_below:
            self.n_local_calls += 1
            return self._local.mean_grad(w, B, rng, out=out)
        a = _as_point(w, self.shape, "w")
        out = _check_out(out, self.shape)
        key = call_key(rng)
        t0 = time.perf_counter()
        ctx = {"call": self.n_calls, "B": B, "run_index": self._run_index}
        sizes, futures = self._submit(a, B, key)
        means = self._collect(futures, sizes, ctx)
        self._previous = futures      # released when the next call submits (see _hold_w)
        reduce_chunks(means, sizes, B, out)
        dt = time.perf_counter() - t0
        received = sum(m.nbytes for m in means)
        self.n_round_trips += 1
        self.n_tasks += len(sizes)
        self.bytes_sent += a.nbytes
        self.bytes_received += received
        self.seconds_distributed += dt
        self.last_call = {"B": B, "chunks": len(sizes), "seconds": dt,
                          "bytes_sent": a.nbytes, "bytes_received": received}
        return out

    # -------------------------------------------------------------- the fan-out

    def _submit_kwargs(self):
        if self.workers is None:
            return {}
        return {"workers": self.workers, "allow_other_workers": False}

    def _hold_w(self, a):
        """``w`` on the workers, once per call: one future shared by all chunk tasks.

        Broadcast (every worker of the call gets a replica), so the scheduler sees
        ``w`` everywhere and places the chunks by load, not by where ``w`` lives.

        Then the previous call's futures are released, right before this call's
        tasks are submitted: the client batches its messages to the scheduler
        (one send per 10 ms at most), so releasing them at the end of the previous
        call would open a batching window that delays this submission.
        """
        wf = self._client.scatter(a, workers=self.workers, broadcast=True, hash=False,
                                  timeout=self.timeout)
        self._previous = None
        self._w_future = wf      # kept (like the chunk futures) until the next call's submission
        return wf

    def _submit(self, a, B, key):
        """Submit the chunk tasks; returns ``(sizes, futures)`` in the fixed chunk order."""
        sizes = chunk_sizes(B, default_n_chunks(B) if self.n_chunks is None else self.n_chunks)
        wf = self._hold_w(a)
        kw = self._submit_kwargs()
        futures = [self._client.submit(_chunk_task, self._plugin_name, wf, s, key, c,
                                       key=f"logt-chunk-{self.token}-{self.n_calls}-{c}",
                                       pure=False, **kw)
                   for c, s in enumerate(sizes)]
        return sizes, futures

    def _describe(self, ctx, n_chunks):
        B, r = ctx["B"], ctx["run_index"]
        step = (r + 1) // 2
        return (f"DaskOracle.mean_grad call #{ctx['call']} (B={B}, {n_chunks} chunks; the "
                f"{_ordinal(r)} consecutive call with this B -- under method='logt' that is "
                f"step {step} ({'g at w' if r % 2 else 'f at z'}) of the epoch with batch size {B})")

    def _collect(self, futures, sizes, ctx):
        """Wait (at most ``timeout`` s) for every chunk; the means in chunk order.

        Never blocks for long: results are fetched in the background as chunks
        finish (``as_completed``) and this loop polls them, so the timeout and
        :meth:`_watchdog` (checked every second) always get their turn.
        """
        n = len(futures)
        index = {f.key: c for c, f in enumerate(futures)}
        means = [None] * n
        done = 0
        t0 = time.monotonic()
        next_check = t0 + 1.0
        try:
            ac = as_completed(futures, with_results=True, raise_errors=False, loop=self._client.loop)
            while done < n:
                batch = ac.next_batch(block=False) if ac.has_ready() else []
                if not batch:
                    now = time.monotonic()
                    if now - t0 > self.timeout:
                        missing = [c for c, m in enumerate(means) if m is None]
                        raise DistributedOracleError(
                            f"{self._describe(ctx, n)} did not finish within timeout={self.timeout:g} s "
                            f"(chunks {missing} missing); no partial batch is used", **ctx)
                    if now >= next_check:
                        self._watchdog(ctx, n)
                        next_check = now + 1.0
                    # sleep at most 2% of the time waited so far (>= 0.2 ms, <= 5 ms)
                    time.sleep(min(0.005, max(2e-4, (now - t0) / 50)))
                    continue
                for f, res in batch:
                    c = index[f.key]
                    if f.status != "finished":
                        exc = res[1] if isinstance(res, tuple) and len(res) == 3 else res
                        raise DistributedOracleError(
                            f"{self._describe(ctx, n)} failed: chunk {c} (size {sizes[c]}) "
                            f"raised {type(exc).__name__}: {exc}", chunk=c, **ctx) from (
                                exc if isinstance(exc, BaseException) else None)
                    means[c] = self._check_mean(res, c, ctx, n)
                    done += 1
        except BaseException:
            self._cancel(futures)
            self._on_failure()
            raise
        return means

    def _watchdog(self, ctx, n):
        """Called every second while a call waits; raise to abort it (subclasses)."""

    def _on_failure(self):
        """Called after a failed call, before the error propagates (subclasses)."""

    def _check_mean(self, m, c, ctx, n):
        if not isinstance(m, np.ndarray) or m.shape != self.shape or m.dtype != np.float64:
            raise DistributedOracleError(
                f"{self._describe(ctx, n)} failed: chunk {c} returned "
                f"{type(m).__name__} {getattr(m, 'shape', '')} {getattr(m, 'dtype', '')}, "
                f"expected a float64 array of shape {self.shape}", chunk=c, **ctx)
        return m

    def _cancel(self, futures):
        try:
            self._client.cancel(futures, force=True)
        except Exception:      # the cluster may be gone; nothing else to release
            pass

    # -------------------------------------------------------------- lifetime

    def close(self):
        """Remove the worker plugin (and the workers' oracles). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._previous = self._w_future = None
        if self._plugin_name is not None and self._client.status == "running":
            try:
                self._client.unregister_worker_plugin(self._plugin_name)
            except Exception:     # already gone (cluster shut down, plugin missing)
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __reduce__(self):
        raise TypeError("a DaskOracle holds a live client and cannot be pickled; "
                        "pickle its make_oracle instead")

    def __repr__(self):
        return (f"{type(self).__name__}(shape={self.shape}, n_chunks={self.n_chunks}, "
                f"local_below={self.local_below}, round_trips={self.n_round_trips}"
                f"{', closed' if self._closed else ''})")
