"""The PSD cone ``S^d_+`` as a logt domain, and ``project_psd``."""
import threading
import weakref

import numpy as np

from logt._kernels._psd import PSDProjector


class PSDCone(PSDProjector):
    """The cone of d x d positive semidefinite matrices, ``D = S^d_+``.

    ``PSDCone(d)``; points have ``shape == (d, d)``. ``project(v, out=None)``
    returns ``Pi_D(v) = V diag(max(l, 0)) V^T`` for ``v = V diag(l) V^T``, the
    Frobenius-nearest PSD matrix (an eigendecomposition: the O(d^3) step).

    ``v`` must be finite and symmetric up to ``max|v - v^T| <= 1e-10 * max|v|``
    (ValueError otherwise); it is symmetrized exactly, the result is exactly
    symmetric. ``out`` may be ``v`` (in place). ``v`` may have any real
    dtype, byte order, memory order or strides (converted to float64);
    complex ``v`` is a TypeError. ``out`` must be a native-byte-order,
    C-contiguous, aligned float64 array (TypeError naming ``out`` for a
    byte-swapped one). Entries of any finite magnitude work, subnormal
    ones included (the kernel scales by a power of two, exactly); a
    projection whose entries would exceed the float64 range raises
    OverflowError. The result never contains NaN or Inf.

    Memory: about ``24 d^2`` bytes of workspace (``nbytes``), checked
    against ``LOGT_MAX_WORKSPACE_BYTES`` (default 4 GiB) before allocating.
    Pickles and deep-copies (parameters and path prediction).

    Speed: d <= 10 uses a BLAS-free Jacobi solver; larger d uses LAPACK with
    one BLAS thread: after tridiagonalizing, one Sturm count of the negative
    eigenvalues decides whether to compute only the negative eigenpairs, only
    the positive ones, or all; a Cholesky test is tried first when the
    previous call on this object was PSD. Reuse one object for a sequence of
    similar matrices (and wrap loops in ``logt.single_threaded_blas()`` to pay
    the BLAS thread-limit setup once).

    Thread safety: distinct objects are independent; calls on one object from
    several threads are serialized by its lock.
    """


class _Holder:
    """One thread's cached projectors (d -> PSDProjector, insertion order)."""

    __slots__ = ("projectors", "__weakref__")

    def __init__(self):
        self.projectors = {}


class _Cache(threading.local):
    def __init__(self):
        self.holder = _Holder()
        with _registry_lock:
            _registry.add(self.holder)


# A per-thread cache of projectors, keyed by d. Why: a PSDProjector allocates
# and queries its LAPACK workspace once, and its adaptive path prediction pays
# off across calls. Thread-local, so no lock is contended and threads never
# share a workspace; the kernels themselves keep no global state.
# Bounded per thread: at most CACHE_ENTRIES projectors and CACHE_BYTES bytes of
# workspace (a projector owns ~24 d^2 bytes: 96 MB at d = 2000). A projector
# larger than CACHE_BYTES is used for its call and freed, never cached; the
# oldest entries are evicted first. clear_projector_cache() empties every
# thread's cache; a thread's cache is freed when the thread ends.
CACHE_ENTRIES = 8
CACHE_BYTES = 64 * 2**20
_registry_lock = threading.Lock()
_registry = weakref.WeakSet()
_cache = _Cache()


def _cached_projector(d):
    holder = _cache.holder
    projectors = holder.projectors
    proj = projectors.get(d)
    if proj is not None:
        return proj
    proj = PSDProjector(d)
    nb = proj.nbytes
    if nb > CACHE_BYTES:
        return proj
    # evict the oldest until the new one fits (list(): atomic snapshot, another
    # thread may clear this dict concurrently)
    while True:
        items = list(projectors.items())
        if len(items) < CACHE_ENTRIES and sum(p.nbytes for _, p in items) + nb <= CACHE_BYTES:
            break
        projectors.pop(items[0][0], None)
    projectors[d] = proj
    return proj


def clear_projector_cache():
    """Free the projectors that ``project_psd`` caches (in every thread).

    ``project_psd`` keeps, per thread, up to 8 projectors and 64 MiB of LAPACK
    workspace so repeated calls skip the set-up; call this to release that
    memory now (a projector in use by a running call is freed when it ends).
    Returns the number of bytes released from the caches.
    """
    with _registry_lock:
        holders = list(_registry)
    freed = 0
    for h in holders:
        items = list(h.projectors.values())
        h.projectors.clear()
        freed += sum(p.nbytes for p in items)
    return freed


def _cache_info():
    """(entries, bytes) cached by the calling thread (for tests)."""
    items = list(_cache.holder.projectors.values())
    return len(items), sum(p.nbytes for p in items)


def project_psd(A, out=None):
    """Frobenius projection of the symmetric matrix ``A`` (d x d) onto the PSD cone.

    Function form of ``PSDCone(d).project(A, out)``: returns
    ``V diag(max(l, 0)) V^T`` for ``A = V diag(l) V^T``. ``A`` must be real,
    square, finite and symmetric up to ``1e-10`` relative (see ``PSDCone``);
    any real dtype, byte order or memory layout is accepted. Uses a cached
    projector per (thread, d); see ``clear_projector_cache``.
    """
    shape = np.shape(A)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"A must be a square 2-D matrix, got shape {shape}")
    d = shape[0]
    if d < 1:
        raise ValueError("A must be at least 1 x 1")
    proj = _cached_projector(d)
    try:
        return proj.project(A, out)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        if msg.startswith("v "):
            raise type(exc)("A " + msg[2:]) from None
        raise
