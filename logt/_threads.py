"""BLAS thread control: one BLAS thread for logt's LAPACK work, in any thread.

numpy and scipy each bundle their own OpenBLAS, each with a pool of one thread
per core. logt's LAPACK calls go to scipy's copy; when both pools are awake on
a small machine they compete, and a d=123 eigendecomposition was measured 3x to
40x slower than with one thread. logt's problem sizes (d up to a few hundred)
do not gain from threaded BLAS, so logt runs its BLAS/LAPACK work with ONE
thread in every BLAS library:

* every PSD projection that reaches LAPACK sets the limit itself, in C,
  around its LAPACK calls (``logt._kernels._blasctl``): it holds for each call
  wherever it runs (main thread, worker threads, compiled step loops) and is
  restored on every exit path, KeyboardInterrupt included;
* ``single_threaded_blas()`` (used by ``logt.minimize`` for a whole run, and
  public for a user's own loops) sets the same limit for a block.

Why not threadpoolctl's ``limit()`` alone: for OpenBLAS built with pthreads
(numpy's and scipy's wheels) the thread count is one process-wide variable, and
threadpoolctl >= 3.8 obeys only the first Python thread that sets it (the
"controlling thread") and silently ignores the others while it lives. So
limits set in worker threads did nothing: the same seed gave different bits
there (up to 9e-15 at d=150) and 8 threads ran 4x slower. logt therefore
uses threadpoolctl only to FIND the libraries, and calls each OpenBLAS's own
``openblas_set_num_threads`` / ``openblas_get_num_threads`` directly, with a
process-wide nesting count: the first block in saves the counts and sets 1,
the last block out restores them. Other BLAS libraries (MKL, BLIS, FlexiBLAS,
OpenBLAS built with OpenMP) are limited the same way through threadpoolctl's
per-library setters.

Because OpenBLAS's count is process-wide, while any logt block or projection
is active, BLAS calls made by other threads also run on one thread; the user's
own count is restored when the last block ends. Set the environment variable
``LOGT_BLAS_THREADS=keep`` to leave BLAS thread counts alone entirely (read at
the first projection and again at every ``single_threaded_blas()`` call).
"""
import contextlib
import contextvars
import ctypes
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from logt._kernels import _blasctl

_config_lock = threading.Lock()
_configured = False
_controller = None
_fallback = None        # _PyLimiter for libraries not handled in C, or None


def _enabled():
    return os.environ.get("LOGT_BLAS_THREADS", "1") != "keep"


def _get_controller():
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller


def _address(fn):
    return ctypes.cast(fn, ctypes.c_void_p).value


def _openblas_pthreads_entry(lc):
    """(get, set) C addresses of an OpenBLAS (pthreads) library, or None."""
    if getattr(lc, "internal_api", None) != "openblas":
        return None
    if getattr(lc, "threading_layer", None) != "pthreads":
        return None
    dynlib = getattr(lc, "dynlib", None)
    if dynlib is None:
        return None
    for prefix in ("", "scipy_"):
        for suffix in ("", "64_", "_64"):
            try:
                g = getattr(dynlib, f"{prefix}openblas_get_num_threads{suffix}")
                s = getattr(dynlib, f"{prefix}openblas_set_num_threads{suffix}")
            except AttributeError:
                continue
            g.restype = ctypes.c_int
            g.argtypes = []
            s.restype = None
            s.argtypes = [ctypes.c_int]
            return _address(g), _address(s), g
    return None


class _PyLimiter:
    """Process-wide nesting limit for libraries set through threadpoolctl."""

    def __init__(self, libs):
        self.libs = libs
        self.lock = threading.Lock()
        self.depth = 0
        self.saved = []

    def enter(self):
        with self.lock:
            if self.depth == 0:
                self.saved = []
                for lc in self.libs:
                    n = lc.get_num_threads()
                    if n is not None and n != 1:
                        lc.set_num_threads(1)
                        self.saved.append((lc, n))
            self.depth += 1

    def exit(self):
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                saved, self.saved = self.saved, []
                for lc, n in saved:
                    lc.set_num_threads(n)


def _configure():
    """Find the BLAS libraries once; hand OpenBLAS (pthreads) to the C limiter."""
    global _configured, _fallback
    with _config_lock:
        if _configured:
            return
        entries, getters, others = [], [], []
        try:
            libs = _get_controller().select(user_api="blas").lib_controllers
        except Exception as exc:   # threadpoolctl failed to inspect the process
            warnings.warn(f"logt could not inspect the BLAS libraries ({exc}); "
                          "BLAS thread counts are left alone", RuntimeWarning, stacklevel=3)
            libs = []
        for lc in libs:
            e = _openblas_pthreads_entry(lc)
            if e is None:
                others.append(lc)
            else:
                entries.append(e[:2])
                getters.append((lc, e[2]))
        _blasctl.configure(entries)
        _fallback = _PyLimiter(others) if others else None
        _blasctl.set_enabled(_enabled())
        if _enabled() and getters:
            # check once that the setter works (it is process-wide)
            with _blasctl.Limit():
                bad = [lc.filepath for lc, g in getters if g() != 1]
            if bad:
                warnings.warn(f"logt could not limit {bad} to one BLAS thread; "
                              "set OPENBLAS_NUM_THREADS=1 before starting Python",
                              RuntimeWarning, stacklevel=3)
        _configured = True


def _ensure_configured():
    """Configure on first use; returns the Python-level limiter (or None)."""
    if not _configured:
        _configure()
    return _fallback


def single_threaded_blas():
    """Context manager: every BLAS library limited to one thread in the block.

    Nests and works from any thread (the limit is process-wide: set when the
    first block in the process is entered, the previous counts restored when
    the last one exits, also on KeyboardInterrupt). ``logt.minimize`` wraps a
    whole run in it; wrap your own loop of projections to pay the (small)
    setup once. With ``LOGT_BLAS_THREADS=keep`` it does nothing.
    """
    _ensure_configured()
    on = _enabled()
    if on != _blasctl.enabled():
        _blasctl.set_enabled(on)
    return _blasctl.Limit(_fallback if on else None)


def blas_active():
    """True when a one-thread block or projection is active anywhere in the process."""
    return _blasctl.depth() > 0


def blas_info():
    """List of dicts describing the loaded BLAS libraries and their thread counts."""
    return _get_controller().info()


PARALLEL_MIN_ENTRIES = 2**22    # below this many entries (distances) a blocked search runs inline, BLAS as set (~10 ms)
PARALLEL_MAX_ENTRIES = 2**24    # entries of all the blocks in flight at once (128 MiB of float64) beyond one block


def n_cpus():
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


MAX_THREADS = 64
_SEARCH_THREADS = contextvars.ContextVar("logt_search_threads", default=None)


def check_n_threads(n_threads):
    """``n_threads`` as an int in ``[1, MAX_THREADS]``, or None; a ValueError otherwise (the estimators' and the
    oracles' ``n_threads``, and the blocked searches')."""
    if n_threads is None:
        return None
    if isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)) \
            or not 1 <= n_threads <= MAX_THREADS:
        raise ValueError(f"n_threads must be an int in [1, {MAX_THREADS}] or None, got {n_threads!r}")
    return int(n_threads)


@contextlib.contextmanager
def search_threads(n_threads):
    """Context manager: the blocked searches run in the block (by this thread; a context variable, so other
    threads and tasks are not affected) use ``n_threads`` threads; None leaves the default, one per CPU
    (:func:`n_cpus`). The estimators wrap their ``fit`` in it with their ``n_threads``."""
    token = _SEARCH_THREADS.set(check_n_threads(n_threads))
    try:
        yield
    finally:
        _SEARCH_THREADS.reset(token)


def block_workers(n_threads, n_blocks, entries, block_entries):
    """Threads for a blocked computation of ``entries`` entries in ``n_blocks`` independent blocks of at most
    ``block_entries`` each: ``n_threads`` (None: the enclosing :func:`search_threads`' count, else
    :func:`n_cpus`), at most one per block and as many as keep ``PARALLEL_MAX_ENTRIES`` entries in flight (one
    whatever its size); 0 below ``PARALLEL_MIN_ENTRIES`` (both read at each call): too small to share (starting
    threads costs more than it saves), :func:`run_blocks` then runs it inline with BLAS as it is set.
    ``n_threads`` is checked by :func:`check_n_threads`."""
    n_threads = check_n_threads(n_threads) or _SEARCH_THREADS.get() or n_cpus()
    if entries < PARALLEL_MIN_ENTRIES:
        return 0
    return int(max(1, min(n_threads, n_blocks, PARALLEL_MAX_ENTRIES // max(1, block_entries))))


def run_blocks(fn, tasks, workers):
    """``fn(tasks)`` on this thread (``workers`` 0 or 1), or ``fn`` on an iterator over ``tasks[w::workers]`` in
    each of ``workers`` threads. With ``workers >= 1`` inside :func:`single_threaded_blas` (one BLAS thread each:
    the cores go to the blocks, not to two pools of BLAS threads; and one worker computes the same products as
    several: a BLAS that splits a product over its threads may round it differently); ``workers == 0`` (a search
    too small to share, :func:`block_workers`) leaves BLAS as it is. ``fn`` must write disjoint outputs per task,
    so the result does not depend on ``workers >= 1``. The first exception of a thread (or a KeyboardInterrupt
    here) is raised here, after the other threads have stopped at the end of their current task (their
    iterators run dry)."""
    if workers == 0:
        fn(tasks)
        return
    if workers == 1:
        with single_threaded_blas():
            fn(tasks)
        return
    stop = threading.Event()

    def feed(share):
        for task in share:
            if stop.is_set():
                return
            yield task

    with single_threaded_blas(), ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(fn, feed(tasks[w::workers])) for w in range(workers)]
        try:
            for f in futures:
                f.result()
        except BaseException:
            stop.set()
            raise
