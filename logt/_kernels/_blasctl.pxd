# cython: language_level=3
"""Process-wide one-thread BLAS limit in C; see ``_blasctl.pyx``.

    from logt._kernels._blasctl cimport blas_enter, blas_exit
    tok = blas_enter()      # nogil; 0 when the limit is off/unconfigured
    ...LAPACK...
    blas_exit(tok)
"""

cdef int blas_enter() noexcept nogil
cdef void blas_exit(int token) noexcept nogil
