# cython: language_level=3
"""Base classes of the compiled protocol; see ``_base.pxd``.

The Python-visible methods validate every input (shape, dtype, byte order,
alignment, contiguity, finiteness) before entering the ``nogil`` C methods
that subclasses implement:

* any real dtype (bool, int, float of any width, either byte order) is
  converted to native float64; complex input is a TypeError (never silently
  truncated); other dtypes (strings, objects that are not numbers) are a
  TypeError;
* ``out`` must be a native-byte-order, aligned, C-contiguous, writeable
  float64 array (TypeError / ValueError naming ``out`` otherwise: logt never
  writes into a byte-swapped buffer).

Signals: long compiled loops call ``poll_signals()`` (C, no GIL needed) every
~50 ms of work; in the main thread it briefly takes the GIL and runs Python's
signal handlers. If a handler raises (Ctrl-C: KeyboardInterrupt), the
exception is parked in a thread-local slot and the kernel returns
``LOGT_INTERRUPTED``; the Python wrapper then re-raises it
(``raise_pending``).
"""
import threading

import numpy as np

from cpython.pycapsule cimport PyCapsule_GetPointer
from numpy.random cimport bitgen_t

cdef extern from *:
    """
    #include <pthread.h>
    #include <time.h>
    static pthread_t logt_main_thread;
    static void logt_record_main_thread(void) { logt_main_thread = pthread_self(); }
    static int logt_in_main_thread(void) {
        return pthread_equal(pthread_self(), logt_main_thread);
    }
    static double logt_monotonic(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    """
    void logt_record_main_thread() nogil
    int logt_in_main_thread() nogil
    double logt_monotonic() nogil

cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1

# Python runs signal handlers only in its main thread: remember which one it is
# (the thread that imports logt is almost always it; check against threading).
if threading.current_thread() is threading.main_thread():
    logt_record_main_thread()
    _main_recorded = True
else:
    _main_recorded = False

_pending = threading.local()

cdef double _POLL_SECONDS = 0.05


cdef int poll_signals(double* next_poll) noexcept nogil:
    """Run Python's signal handlers if ``*next_poll`` (monotonic seconds) has
    passed and this is the main thread. Returns 0, or LOGT_INTERRUPTED with
    the handler's exception parked for ``raise_pending``."""
    cdef double now = logt_monotonic()
    cdef int rc = 0
    if now < next_poll[0]:
        return 0
    next_poll[0] = now + _POLL_SECONDS
    if not logt_in_main_thread():
        return 0
    with gil:
        rc = _run_handlers()
    return rc


cdef int _run_handlers() noexcept:
    try:
        PyErr_CheckSignals()
    except BaseException as exc:
        _pending.exc = exc
        return LOGT_INTERRUPTED
    return 0


cdef double poll_start() noexcept nogil:
    """The ``next_poll`` value to start a loop with."""
    return logt_monotonic() + _POLL_SECONDS


cdef int raise_pending() except -1:
    """Raise the exception a signal handler raised inside a kernel
    (KeyboardInterrupt if none was recorded)."""
    exc = getattr(_pending, "exc", None)
    _pending.exc = None
    if exc is None:
        raise KeyboardInterrupt
    raise exc


cdef bitgen_t* bitgen_of(object generator) except NULL:
    """The ``bitgen_t`` behind a ``numpy.random.Generator`` (hold its lock while drawing)."""
    if not isinstance(generator, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator here, got {type(generator).__name__}")
    capsule = generator.bit_generator.capsule
    return <bitgen_t*>PyCapsule_GetPointer(capsule, "BitGenerator")


#: Default bound (bytes) on an allocation whose size comes from user input
#: (a projector's workspace, a domain's bounds); the environment variable
#: LOGT_MAX_WORKSPACE_BYTES overrides it (read at each construction).
MAX_WORKSPACE_BYTES_DEFAULT = 4 * 2**30


def max_workspace_bytes():
    """The allocation limit in bytes: ``LOGT_MAX_WORKSPACE_BYTES`` or 4 GiB."""
    import os

    v = os.environ.get("LOGT_MAX_WORKSPACE_BYTES")
    if not v:
        return MAX_WORKSPACE_BYTES_DEFAULT
    try:
        lim = int(float(v))
    except (ValueError, OverflowError):
        raise ValueError(f"LOGT_MAX_WORKSPACE_BYTES must be a number of bytes, got {v!r}") from None
    if lim < 1:
        raise ValueError(f"LOGT_MAX_WORKSPACE_BYTES must be >= 1, got {v!r}")
    return lim


def check_alloc(nbytes, str what):
    """Raise MemoryError naming ``what`` if ``nbytes`` exceeds the limit."""
    limit = max_workspace_bytes()
    if nbytes > limit:
        raise MemoryError(
            f"{what} needs {nbytes / 2**30:.3g} GiB, above the limit of {limit / 2**30:.3g} GiB "
            f"(set LOGT_MAX_WORKSPACE_BYTES to raise it)")


def _as_float_array(v, str name):
    """``v`` as a native-byte-order, aligned, C-contiguous float64 array.

    Accepts any real numeric input (bool, int, float; any byte order, order,
    strides). Complex input raises TypeError (its imaginary part would be
    dropped); so does anything that is not numeric.
    """
    if isinstance(v, np.ndarray):
        a = v
    else:
        try:
            a = np.asarray(v)
        except Exception as exc:
            raise TypeError(f"{name} must be a real numeric array: {exc}") from None
    kind = a.dtype.kind
    if kind == "c":
        raise TypeError(f"{name} must be real, got complex dtype {a.dtype} "
                        "(take .real explicitly if the imaginary part is zero)")
    if kind not in "biuf":
        if kind != "O":
            raise TypeError(f"{name} must be a real numeric array, got dtype {a.dtype}")
        if any(isinstance(t, complex) or np.iscomplexobj(t) for t in a.flat):
            raise TypeError(f"{name} must be real, got complex entries")
    if (kind == "f" and a.dtype.itemsize == 8 and a.dtype.isnative
            and a.flags.c_contiguous and a.flags.aligned and type(a) is np.ndarray):
        return a
    try:
        return np.require(np.asarray(a), dtype=np.float64, requirements=("C", "A"))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be convertible to a float64 array: {exc}") from None


def _as_point(v, tuple shape, str name):
    """Validate a point: real numeric, right shape, finite. Returns a native
    C-contiguous aligned float64 array (``v`` itself when it already is one)."""
    a = _as_float_array(v, name)
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or Inf")
    return a


POINT_PATHS = ("auto", "blocks", "points")


def _point_path_code(value):
    """The code (0 auto, 1 blocks, 2 points) of a ``point_path`` name of the triplet and softmax kernels."""
    if value not in POINT_PATHS:
        raise ValueError(f"point_path must be one of {sorted(POINT_PATHS)}, got {value!r}")
    return POINT_PATHS.index(value)


def _index_array(t, Py_ssize_t n, str arg, str what):
    """``t`` as a C-contiguous int32 array of indices in ``[0, n)``, non-empty and 1-D (the kernels'
    given-sample test entry points); ``arg`` names the argument, ``what`` the samples in messages."""
    t = np.ascontiguousarray(t, dtype=np.int32)
    if t.ndim != 1 or len(t) == 0:
        raise ValueError(f"{arg} must be a non-empty 1-D array of {what} indices")
    if t.min() < 0 or t.max() >= n:
        raise ValueError(f"{what} indices must be in [0, {n})")
    return t


def _check_out(out, tuple shape, str name="out"):
    if out is None:
        return np.empty(shape, dtype=np.float64)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(out).__name__}")
    if out.dtype.kind != "f" or out.dtype.itemsize != 8:
        raise TypeError(f"{name} must have dtype float64, got {out.dtype}")
    if not out.dtype.isnative:
        raise TypeError(f"{name} must be a native-byte-order float64 array, got dtype "
                        f"{out.dtype.str!r}; use out.astype(np.float64) and copy back")
    if out.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {out.shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"{name} must be C-contiguous and writeable")
    if not out.flags.aligned:
        raise ValueError(f"{name} must be an aligned array")
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
        if info == LOGT_DOMAIN_OVERFLOW:
            raise OverflowError(
                f"{type(self).__name__}.project: the projection is not representable in float64")
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
        if info == LOGT_INTERRUPTED:
            raise_pending()
        if info != 0:
            raise RuntimeError(f"{type(self).__name__}.mean_grad failed (code {info})")
        return out
