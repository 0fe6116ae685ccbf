# cython: language_level=3
"""C-level protocol of the projection-free primitives; see ``_free.pyx``.

Compiled step loops (``logt._kernels._steps``) call these without the GIL:

    from logt._kernels._free cimport LinearOracle, ConstraintFunction

Points and gradients are C-contiguous float64 buffers of ``size`` doubles.
"""

cdef class LinearOracle:
    cdef readonly tuple shape
    cdef readonly Py_ssize_t size
    cdef object _lock                   # serializes calls on one object (workspaces)

    # s[:] = argmin_{s in D} <g, s> (a linear minimization oracle over the domain D).
    # Returns 0 on success, else a nonzero code (a LAPACK ``info``).
    cdef int lmo_into(self, const double* g, double* s) noexcept nogil


cdef class ConstraintFunction:
    cdef readonly tuple shape
    cdef readonly Py_ssize_t size
    cdef readonly double rho            # lower bound of ||grad c|| where c = 0 (Mahdavi et al.'s rho)
    cdef object _lock

    # val[0] = c(x) for the domain D = {x : c(x) <= 0}; when c(x) > 0, grad[:] = a
    # subgradient of c at x (grad is not written otherwise). Returns 0 or a nonzero code.
    cdef int value_grad(self, const double* x, double* val, double* grad) noexcept nogil
