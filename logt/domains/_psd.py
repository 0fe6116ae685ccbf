"""The PSD cone ``S^d_+`` as a logt domain, and ``project_psd``."""
import threading

import numpy as np

from logt._kernels._psd import PSDProjector


class PSDCone(PSDProjector):
    """The cone of d x d positive semidefinite matrices, ``D = S^d_+``.

    ``PSDCone(d)``; points have ``shape == (d, d)``. ``project(v, out=None)``
    returns ``Pi_D(v) = V diag(max(l, 0)) V^T`` for ``v = V diag(l) V^T``, the
    Frobenius-nearest PSD matrix (an eigendecomposition: the O(d^3) step).

    ``v`` must be finite and symmetric up to ``max|v - v^T| <= 1e-10 * max|v|``
    (ValueError otherwise); it is symmetrized exactly, the result is exactly
    symmetric. ``out`` may be ``v`` (in place). Entries of any finite
    magnitude work (the kernel scales by a power of two).

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


class _Cache(threading.local):
    def __init__(self):
        self.projectors = {}


# A per-thread cache of projectors, keyed by d (at most _CACHE_SIZE entries).
# Why: a PSDProjector allocates and queries its LAPACK workspace once, and
# its adaptive path prediction pays off across calls. Thread-local, so no
# lock is contended and threads never share a workspace; the kernels
# themselves keep no global state.
_cache = _Cache()
_CACHE_SIZE = 8


def project_psd(A, out=None):
    """Frobenius projection of the symmetric matrix ``A`` (d x d) onto the PSD cone.

    Function form of ``PSDCone(d).project(A, out)``: returns
    ``V diag(max(l, 0)) V^T`` for ``A = V diag(l) V^T``. ``A`` must be square,
    finite and symmetric up to ``1e-10`` relative (see ``PSDCone``).
    """
    shape = np.shape(A)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"A must be a square 2-D matrix, got shape {shape}")
    d = shape[0]
    if d < 1:
        raise ValueError("A must be at least 1 x 1")
    projectors = _cache.projectors
    proj = projectors.get(d)
    if proj is None:
        if len(projectors) >= _CACHE_SIZE:
            projectors.pop(next(iter(projectors)))
        proj = projectors[d] = PSDProjector(d)
    try:
        return proj.project(A, out)
    except ValueError as exc:
        msg = str(exc)
        raise ValueError(msg.replace("v ", "A ", 1) if msg.startswith("v ") else msg) from None
