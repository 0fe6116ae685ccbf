# cython: language_level=3
"""C-level protocol shared by logt's compiled oracles, domains and step loops.

A compiled step loop (``logt._kernels._steps``) calls these methods without the
GIL, so one SGD step never enters the interpreter. Other Cython code can
``cimport`` them:

    from logt._kernels._base cimport CompiledOracle, CompiledDomain

Points are C-contiguous float64 buffers of ``size`` doubles (a d x d matrix is
d*d doubles in C order). Neither method allocates or touches Python objects.
"""
from libc.math cimport exp
from numpy.random cimport bitgen_t

cdef class CompiledDomain:
    cdef readonly tuple shape          # shape of a point
    cdef readonly Py_ssize_t size      # number of doubles in a point
    cdef object _lock                  # serializes Python-level calls on one object (workspaces)

    # Project x (``size`` doubles) onto the domain in place.
    # Returns 0 on success, else a nonzero code (a LAPACK ``info``).
    cdef int project_inplace(self, double* x) noexcept nogil


cdef class CompiledOracle:
    cdef readonly tuple shape
    cdef readonly Py_ssize_t size
    cdef object _lock

    # out[:] = mean of B independent stochastic gradients at x, drawing from rng.
    # The caller holds the generator's lock. Returns 0 on success.
    cdef int mean_grad_into(self, const double* x, Py_ssize_t B,
                            bitgen_t* rng, double* out) noexcept nogil


cdef bitgen_t* bitgen_of(object generator) except NULL

# Return code of a kernel stopped by a signal handler that raised (Ctrl-C).
cdef enum:
    LOGT_INTERRUPTED = -77
    LOGT_DOMAIN_OVERFLOW = -78   # project_inplace: the result is not representable

# In a long nogil loop:  cdef double nxt = poll_start()  ...  every ~2^16
# iterations: if poll_signals(&nxt) != 0: return LOGT_INTERRUPTED.
# poll_signals reads a monotonic clock; at most every 50 ms, and only in
# Python's main thread, it takes the GIL and runs the signal handlers.
# After the nogil block: if rc == LOGT_INTERRUPTED: raise_pending().
cdef int poll_signals(double* next_poll) noexcept nogil
cdef double poll_start() noexcept nogil
cdef int raise_pending() except -1


# sigmoid(-z) = 1 / (1 + exp(z)) without overflow (the logistic losses' derivative).
cdef inline double sigmoid_neg(double z) noexcept nogil:
    cdef double e
    if z >= 0:
        e = exp(-z)
        return e / (1.0 + e)
    return 1.0 / (1.0 + exp(z))
