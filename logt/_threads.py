"""BLAS thread control.

numpy and scipy each bundle their own OpenBLAS, each with a pool of one thread
per core. logt's LAPACK calls go to scipy's copy; when both pools are awake on
a small machine they compete, and a d=123 eigendecomposition was measured 3x to
40x slower than with one thread. logt's problem sizes (d up to a few hundred)
do not gain from threaded BLAS, so logt runs its BLAS/LAPACK work with ONE
thread in every BLAS library (via threadpoolctl) for the duration of:

* a whole ``logt.minimize`` run (one limit set up per run, not per step),
* a single ``project_psd`` / ``PSDCone.project`` call that reaches LAPACK
  (small matrices take a BLAS-free path and pay nothing).

``single_threaded_blas()`` is public so a user's own loop of projections can
pay the (~10 us) setup once. It nests and is thread-safe: the limit is set
when the outermost block is entered and the previous settings are restored
when the last block exits.

Set the environment variable ``LOGT_BLAS_THREADS=keep`` to leave BLAS thread
counts alone entirely.
"""
import contextlib
import os
import threading

_lock = threading.Lock()
_depth = 0
_limiter = None
_controller = None


def _enabled():
    return os.environ.get("LOGT_BLAS_THREADS", "1") != "keep"


def _get_controller():
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller


@contextlib.contextmanager
def single_threaded_blas():
    """Run the block with every BLAS library limited to one thread."""
    global _depth, _limiter
    if not _enabled():
        yield
        return
    with _lock:
        if _depth == 0:
            _limiter = _get_controller().limit(limits=1, user_api="blas")
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _limiter is not None:
                _limiter.restore_original_limits()
                _limiter = None


def blas_active():
    """True when a ``single_threaded_blas`` block is active (cheap check for hot wrappers)."""
    return _depth > 0


def blas_info():
    """List of dicts describing the loaded BLAS libraries and their thread counts."""
    return _get_controller().info()
