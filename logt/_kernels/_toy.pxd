# cython: language_level=3
"""The paper's toy oracle as a compiled oracle; see ``_toy.pyx``.

Other Cython code (step loops) can ``cimport`` it:

    from logt._kernels._toy cimport PSDQuadratic
"""
from numpy.random cimport bitgen_t

from logt._kernels._base cimport CompiledOracle

# Exact int64-accumulated sums of B samples of m uniform 32-bit noise entries
# (the stream layout of PSDQuadratic's noise); shared with other oracles.
cdef int uniform_noise_sums(bitgen_t* rng, Py_ssize_t m, Py_ssize_t B, double* tot) noexcept nogil


cdef class PSDQuadratic(CompiledOracle):
    cdef double[::1] _a          # A, d*d doubles in C order (private copy)
    cdef readonly Py_ssize_t d   # side of the d x d matrices
    cdef readonly Py_ssize_t m   # d*(d+1)/2 upper-triangle entries (incl. diagonal) drawn per sample
    cdef readonly double noise   # half-width of the uniform noise on each entry of Z
