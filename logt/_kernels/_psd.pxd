# cython: language_level=3
"""PSD-cone projection kernel; see ``_psd.pyx``.

Other Cython code can ``cimport`` the projector and call its ``nogil`` C
methods directly (a compiled step loop uses ``project_inplace``):

    from logt._kernels._psd cimport PSDProjector
"""
from logt._kernels._base cimport CompiledDomain

cdef class PSDProjector(CompiledDomain):
    cdef readonly int d                 # matrices are d x d
    cdef readonly int jacobi_max        # d <= jacobi_max: BLAS-free Jacobi path
    cdef double* mem                    # one block of 2*d*d + d doubles:
    cdef double* buf                    #   d*d  LAPACK input copy / Jacobi matrix
    cdef double* z                      #   d*d  eigenvectors (column-major, Fortran)
    cdef double* w                      #   d    eigenvalues
    cdef double* tmem                   # 9*d: tridiagonal d, e, tau, scratch (5d)
    cdef double* td
    cdef double* te
    cdef double* tau
    cdef double* swork
    cdef double* twork                  # dsytrd / dormtr workspace (tlwork doubles)
    cdef int tlwork
    cdef int* imem                      # 4*d ints: iblock, isplit, dstein iwork, ifail
    cdef int* iblock
    cdef int* isplit
    cdef int* siwork
    cdef int* ifail
    cdef double* ework                  # dsyevd workspace (elwork doubles)
    cdef int* eiwork                    # dsyevd workspace (eliwork ints)
    cdef int elwork
    cdef int eliwork
    cdef int pred_neg                   # negative-eigenvalue count of the last call (-1: unknown)
    cdef int pred_pos                   # positive-eigenvalue count of the last call (-1: unknown)
    cdef double few_frac                # "few" means count <= few_frac * d
    cdef int last_path                  # path taken by the last call (PATH_* in _psd.pyx)
    cdef int err_routine                # routine that failed (ERR_* in _psd.pyx)
    cdef readonly Py_ssize_t nbytes     # bytes of workspace owned by this object

    # Project x (d*d doubles, C order; only the upper triangle is read) in
    # place using `path` (0 = adaptive). Writes an exactly symmetric result.
    # Returns 0 or a nonzero LAPACK/Jacobi status (see err_routine).
    # Sets the one-thread BLAS limit (_blasctl) around its LAPACK calls.
    cdef int project_path(self, double* x, int path) noexcept nogil
    cdef int _project_lapack(self, double* x, int path, int e) noexcept nogil
    cdef int _partial(self, int n, bint negative, int* m_out) noexcept nogil

    cdef object _run(self, v, out, int path)
    cdef _raise(self, int info, int err)


cdef inline void _mirror_upper(double* x, Py_ssize_t n) noexcept nogil:
    """Copy the upper triangle (C order) of the n x n matrix x onto its lower triangle."""
    cdef Py_ssize_t i, j
    for i in range(n):
        for j in range(i + 1, n):
            x[j * n + i] = x[i * n + j]
