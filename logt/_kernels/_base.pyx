# cython: language_level=3
"""Base classes of the compiled protocol; see ``_base.pxd``.

The Python-visible methods validate every input (shape, dtype, contiguity,
finiteness) before entering the ``nogil`` C methods that subclasses implement.
"""
import threading

import numpy as np

from cpython.pycapsule cimport PyCapsule_GetPointer
from numpy.random cimport bitgen_t


cdef bitgen_t* bitgen_of(object generator) except NULL:
    """The ``bitgen_t`` behind a ``numpy.random.Generator`` (hold its lock while drawing)."""
    if not isinstance(generator, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator here, got {type(generator).__name__}")
    capsule = generator.bit_generator.capsule
    return <bitgen_t*>PyCapsule_GetPointer(capsule, "BitGenerator")


def _as_point(v, tuple shape, str name):
    """Validate a point: float64-convertible, right shape, finite. Returns a C-contiguous float64 array."""
    a = np.asarray(v, dtype=np.float64)
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or Inf")
    return np.ascontiguousarray(a)


def _check_out(out, tuple shape, str name="out"):
    if out is None:
        return np.empty(shape, dtype=np.float64)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(out).__name__}")
    if out.dtype != np.float64:
        raise TypeError(f"{name} must have dtype float64, got {out.dtype}")
    if out.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {out.shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"{name} must be C-contiguous and writeable")
    return out


cdef class CompiledDomain:
    """Base of compiled domains. Subclasses implement ``project_inplace``."""

    def __cinit__(self, *args, **kwargs):
        self._lock = threading.Lock()

    cdef int project_inplace(self, double* x) noexcept nogil:
        return -1

    def _validate(self, a):
        """Extra checks on a validated point (subclasses: symmetry, ...)."""
        return None

    def project(self, v, out=None):
        """Euclidean projection of ``v`` (shape ``self.shape``) onto the domain.

        Writes into ``out`` if given (may be ``v`` itself when ``v`` is a
        C-contiguous float64 array) and returns it.
        """
        a = _as_point(v, self.shape, "v")
        self._validate(a)
        out = _check_out(out, self.shape)
        if out is not a:
            np.copyto(out, a)
        cdef double[::1] buf = out.reshape(-1)
        cdef int info
        with self._lock:
            with nogil:
                info = self.project_inplace(&buf[0])
        if info != 0:
            raise np.linalg.LinAlgError(
                f"{type(self).__name__}.project failed (LAPACK info={info})")
        return out


cdef class CompiledOracle:
    """Base of compiled oracles. Subclasses implement ``mean_grad_into``."""

    def __cinit__(self, *args, **kwargs):
        self._lock = threading.Lock()

    cdef int mean_grad_into(self, const double* x, Py_ssize_t B,
                            bitgen_t* rng, double* out) noexcept nogil:
        return -1

    def mean_grad(self, x, B, rng, out=None):
        """Mean of ``B`` independent stochastic gradients at ``x``, in one call.

        x : array of shape ``self.shape``; B : int >= 1;
        rng : ``numpy.random.Generator`` (its bit generator is drawn from in C);
        out : optional float64 C-contiguous array of shape ``self.shape``.
        """
        if isinstance(B, bool) or not isinstance(B, (int, np.integer)):
            raise TypeError(f"B must be an int, got {type(B).__name__}")
        if B < 1:
            raise ValueError(f"B must be >= 1, got {B}")
        a = _as_point(x, self.shape, "x")
        out = _check_out(out, self.shape)
        if np.shares_memory(a, out):
            a = a.copy()
        cdef double[::1] xb = a.reshape(-1)
        cdef double[::1] ob = out.reshape(-1)
        cdef bitgen_t* bg = bitgen_of(rng)
        cdef Py_ssize_t nb = B
        cdef int info
        with self._lock, rng.bit_generator.lock:
            with nogil:
                info = self.mean_grad_into(&xb[0], nb, bg, &ob[0])
        if info != 0:
            raise RuntimeError(f"{type(self).__name__}.mean_grad failed (code {info})")
        return out
