# cython: language_level=3
"""Projection onto the cone of positive semidefinite matrices (compiled kernel).

For a symmetric ``A = V diag(l) V^T`` (d x d) the Frobenius projection onto the
PSD cone ``S^d_+`` is ``Pi(A) = V diag(max(l, 0)) V^T``: drop the negative
eigenvalues. This is the paper's ``Pi_D`` for ``D = S^d_+`` and the O(d^3) step
the method saves.

Paths (chosen per call; the result never depends on the choice beyond rounding):

* ``jacobi``  d <= ``jacobi_max``: cyclic Jacobi in plain C (``csrc/logt_jacobi.c``),
  no BLAS, no LAPACK set-up cost.
* ``neg``     only the eigenpairs in ``(-bound, 0]``: LAPACK ``dsytrd``
  (tridiagonalize), multi-shift Sturm bisection in C (``csrc/logt_sturm.c``;
  the same brackets as ``dstebz`` but several eigenvalues per pass, which hides
  the division latency that dominates ``dstebz``/``dsyevr``'s partial range),
  ``dstein`` (inverse iteration) and ``dormtr`` (back-transform) for just those
  vectors; then ``Pi(A) = A + U U^T`` with ``U = V_neg sqrt(-l_neg)`` (``dsyrk``).
  Cheap when few eigenvalues are negative.
* ``pos``     the same for the eigenpairs in ``(0, bound]``; ``Pi(A) = U U^T``
  with ``U = V_pos sqrt(l_pos)``. Cheap when few are positive.
* ``full``    the whole spectrum by ``dsyevd``'s method (divide and conquer,
  measured faster than ``dsyevr``'s MRRR here): ``dsytrd`` + ``dstedc``, but
  ``dormtr`` back-transforms only the vectors of the smaller of the two
  rebuilds (negative or positive part). Bisection + inverse iteration for many eigenpairs is ~2-3x
  slower than the full spectrum, so ``full`` is used when both counts are large.
  (Also the fallback if ``dstein`` reports a non-converged vector.)
* ``chol``    ``dpotrf`` on a copy; success proves ``A`` positive definite and ``A``
  is returned unchanged; failure falls through to the counted choice below.

The adaptive choice (``project``): if the previous call on this object found
the input PSD, try ``chol`` first (an optimizer projects sequences of similar
matrices). Otherwise, or if that fails, tridiagonalize (``dsytrd``, needed by
every LAPACK path) and count the eigenvalues <= 0 with one O(d) Sturm
sequence: few negative -> ``neg``; few positive -> ``pos``; else ``full``
(continuing from the same tridiagonal). So the path is chosen from the actual
spectrum, and a wrong history costs at most one failed Cholesky (~d^3/3).

Scaling: the matrix is scaled by a power of two (exact) so that max |a_ij| is
in [0.5, 1) before any eigensolver runs, so entries of any finite magnitude
(1e-150, 1e150, ...) neither overflow nor underflow.
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport fabs, fmax, frexp, ldexp, sqrt, isfinite
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from scipy.linalg.cython_lapack cimport dormtr, dpotrf, dstedc, dstein, dsyevd, dsytrd
from scipy.linalg.cython_blas cimport dsyrk

from logt._kernels._base cimport CompiledDomain
from logt._kernels._base import _check_out
from logt._threads import blas_active, single_threaded_blas

cnp.import_array()

cdef extern from "logt_jacobi.h" nogil:
    int LOGT_JACOBI_NOCONV
    int logt_psd_project_small(int n, double *x, double *work)

cdef extern from "logt_sturm.h" nogil:
    int logt_tridiag_eig_interval(int n, const double *d, const double *e,
                                  double vl, double vu, double *w, int *iblock,
                                  int *isplit, int *nsplit, double *work)
    int logt_tridiag_count(int n, const double *d, const double *e, double x)

# Path codes (also the values of PSDProjector.last_path).
cdef enum:
    PATH_AUTO = 0
    PATH_JACOBI = 1
    PATH_NEG = 2
    PATH_POS = 3
    PATH_FULL = 4
    PATH_CHOL = 5
    PATH_ZERO = 6   # all-zero input: nothing to do

cdef enum:
    _STACK_N = 16   # Python-level Jacobi calls with d <= this use a stack workspace

cdef enum:
    ERR_NONE = 0
    ERR_DSYEVR = 1
    ERR_DPOTRF = 2
    ERR_JACOBI = 3
    ERR_DSYEVD = 4
    ERR_DSYTRD = 5
    ERR_BISECT = 6
    ERR_DSTEIN = 7
    ERR_DORMTR = 8
    ERR_DSTEDC = 9

_PATH_CODES = {"auto": PATH_AUTO, "jacobi": PATH_JACOBI, "neg": PATH_NEG,
               "pos": PATH_POS, "full": PATH_FULL, "chol": PATH_CHOL}
_PATH_NAMES = {v: k for k, v in _PATH_CODES.items()}
_PATH_NAMES.update({PATH_ZERO: "zero"})

#: Largest d that takes the Jacobi path by default (measured crossover vs LAPACK,
#: 1 BLAS thread; see bench/bench_projection.py).
JACOBI_MAX_DEFAULT = 10

#: "Few" eigenvalues means at most this fraction of d (measured crossover of
#: the partial (bisection + inverse iteration) path vs the full dsyevd spectrum).
FEW_FRAC_DEFAULT = 0.25

#: Relative symmetry tolerance of the Python-level wrappers:
#: ``max |A - A^T| <= SYM_TOL * max |A|`` is required.
cdef double _SYM_TOL = 1e-10
SYM_TOL = _SYM_TOL


cdef int _check_sym_copy(const double* src, double* dst, Py_ssize_t n,
                         double tol, double* asym_out, double* amax_out) noexcept nogil:
    """Check src finite and symmetric; then dst = (src + src^T)/2 (dst may be src).

    Returns 0, 1 (non-finite entry) or 2 (not symmetric within tol); dst is
    written only on success.
    """
    cdef Py_ssize_t i, j
    cdef double u, l, amax = 0.0, asym = 0.0, t
    for i in range(n):
        for j in range(i, n):
            u = src[i * n + j]
            l = src[j * n + i]
            if not (isfinite(u) and isfinite(l)):
                return 1
            t = fabs(u)
            if t > amax:
                amax = t
            t = fabs(l)
            if t > amax:
                amax = t
            t = fabs(u - l)
            if t > asym:
                asym = t
    asym_out[0] = asym
    amax_out[0] = amax
    if asym > tol * amax:
        return 2
    for i in range(n):
        for j in range(i, n):
            u = src[i * n + j]
            l = src[j * n + i]
            if u != l:
                u = 0.5 * u + 0.5 * l
            dst[i * n + j] = u
            dst[j * n + i] = u
    return 0


cdef class PSDProjector(CompiledDomain):
    """Frobenius projection onto the PSD cone of d x d symmetric matrices.

    ``PSDProjector(d)`` owns its LAPACK workspaces (queried once at
    construction) and its adaptive path prediction; distinct objects are
    independent, and Python-level calls on one object are serialized by its
    lock. ``shape == (d, d)``, ``size == d*d``.

    ``project(v, out=None)`` validates ``v`` (shape ``(d, d)``, float64-
    convertible, finite, symmetric: ``max|v - v^T| <= 1e-10 * max|v|``),
    symmetrizes it exactly (``(v + v^T)/2``; the projection of a matrix onto
    the symmetric PSD cone is that of its symmetric part) and returns
    ``Pi(v) = V diag(max(l, 0)) V^T`` in ``out`` (which may be ``v``).

    The C-level ``project_inplace(x)`` (for compiled step loops) reads only
    the upper triangle of ``x`` and writes an exactly symmetric result.
    """

    def __cinit__(self, *args, **kwargs):
        self.mem = NULL
        self.tmem = NULL
        self.twork = NULL
        self.imem = NULL
        self.ework = NULL
        self.eiwork = NULL
        self.last_path = -1
        self.pred_neg = -1
        self.pred_pos = -1

    def __init__(self, d, *, jacobi_max=None, few_frac=None):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"d must be an int, got {type(d).__name__}")
        if d < 1:
            raise ValueError(f"d must be >= 1, got {d}")
        if d > 20000:
            raise ValueError(f"d must be <= 20000, got {d}")
        if self.mem != NULL:
            raise RuntimeError("PSDProjector.__init__ called twice")
        cdef int n = d
        self.d = n
        self.shape = (n, n)
        self.size = <Py_ssize_t>n * n
        self.jacobi_max = JACOBI_MAX_DEFAULT if jacobi_max is None else int(jacobi_max)
        self.few_frac = FEW_FRAC_DEFAULT if few_frac is None else float(few_frac)
        if not (0.0 <= self.few_frac <= 1.0):
            raise ValueError(f"few_frac must be in [0, 1], got {few_frac}")
        self.err_routine = ERR_NONE

        cdef size_t nn = <size_t>n * <size_t>n
        self.mem = <double*>malloc((2 * nn + <size_t>n) * sizeof(double))
        self.tmem = <double*>malloc(9 * <size_t>n * sizeof(double))
        self.imem = <int*>malloc(4 * <size_t>n * sizeof(int))
        if self.mem == NULL or self.tmem == NULL or self.imem == NULL:
            raise MemoryError()
        self.buf = self.mem
        self.z = self.mem + nn
        self.w = self.z + nn
        self.td = self.tmem
        self.te = self.tmem + n
        self.tau = self.tmem + 2 * n
        self.swork = self.tmem + 3 * n      # 5n (dstein) / n (bisection)
        self.iblock = self.imem
        self.isplit = self.imem + n
        self.siwork = self.imem + 2 * n
        self.ifail = self.imem + 3 * n

        # Workspace queries (lwork = -1): dsytrd, dormtr (n columns), dsyevd.
        cdef double wq = 0.0
        cdef int iq = 0, info = 0, lq = -1, liq = -1
        cdef int tl = 1
        dsytrd(b"L", &n, self.buf, &n, self.td, self.te, self.tau, &wq, &lq, &info)
        if info != 0:
            raise np.linalg.LinAlgError(f"dsytrd workspace query failed (info={info})")
        tl = max(tl, <int>wq)
        lq = -1
        dormtr(b"L", b"L", b"N", &n, &n, self.buf, &n, self.tau, self.z, &n, &wq, &lq, &info)
        if info != 0:
            raise np.linalg.LinAlgError(f"dormtr workspace query failed (info={info})")
        tl = max(tl, <int>wq, n)
        self.tlwork = tl
        self.twork = <double*>malloc(<size_t>tl * sizeof(double))
        if self.twork == NULL:
            raise MemoryError()
        lq = -1
        liq = -1
        dsyevd(b"V", b"L", &n, self.buf, &n, self.w, &wq, &lq, &iq, &liq, &info)
        if info != 0:
            raise np.linalg.LinAlgError(f"dsyevd workspace query failed (info={info})")
        self.elwork = max(<int>wq, 1 + 6 * n + 2 * n * n)
        self.eliwork = max(iq, 3 + 5 * n)
        self.ework = <double*>malloc(<size_t>self.elwork * sizeof(double))
        self.eiwork = <int*>malloc(<size_t>self.eliwork * sizeof(int))
        if self.ework == NULL or self.eiwork == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.mem)
        free(self.tmem)
        free(self.twork)
        free(self.imem)
        free(self.ework)
        free(self.eiwork)

    def __repr__(self):
        return f"{type(self).__name__}({self.d})"

    # ------------------------------------------------------------------ C level

    cdef int project_inplace(self, double* x) noexcept nogil:
        return self.project_path(x, PATH_AUTO)

    cdef int project_path(self, double* x, int path) noexcept nogil:
        cdef int n = self.d
        cdef Py_ssize_t nn = <Py_ssize_t>n * n
        cdef Py_ssize_t i, j
        cdef int e = 0, m = 0, info = 0, cols, k, kneg, kpos
        cdef double amax = 0.0, t, scale, unscale
        cdef double one = 1.0, zero = 0.0
        cdef double* zc
        cdef double* wc
        cdef bint neg_rebuild

        self.err_routine = ERR_NONE
        if path == PATH_JACOBI or (path == PATH_AUTO and n <= self.jacobi_max):
            self.last_path = PATH_JACOBI
            info = logt_psd_project_small(n, x, self.mem)
            if info != 0:
                self.err_routine = ERR_JACOBI
            return info

        for i in range(n):
            for j in range(i, n):
                t = fabs(x[i * n + j])
                if t > amax:
                    amax = t
        if amax == 0.0:
            memset(x, 0, nn * sizeof(double))
            self.last_path = PATH_ZERO
            return 0
        # Exact power-of-two scaling: max |a_ij| in [0.5, 1), so |l| <= n.
        frexp(amax, &e)
        scale = ldexp(1.0, -e)
        unscale = ldexp(1.0, e)
        for i in range(n):
            for j in range(i, n):
                self.buf[i * n + j] = x[i * n + j] * scale

        if path == PATH_AUTO and self.pred_neg == 0:
            path = PATH_CHOL    # the last input was PSD: try the cheap test first

        if path == PATH_CHOL:
            # Fortran 'L' of the column-major view == the C upper triangle.
            dpotrf(b"L", &n, self.buf, &n, &info)
            if info == 0:
                _mirror_upper(x, n)
                self.pred_neg = 0
                self.last_path = PATH_CHOL
                return 0
            if info < 0:
                self.err_routine = ERR_DPOTRF
                return info
            for i in range(n):   # not positive definite: restore the copy
                for j in range(i, n):
                    self.buf[i * n + j] = x[i * n + j] * scale
            path = PATH_AUTO
            info = 0

        # Tridiagonalize (Fortran 'L' of the column-major view == the C upper
        # triangle), then count the eigenvalues <= 0 with one O(n) Sturm
        # sequence: the path is chosen from this count, not guessed.
        dsytrd(b"L", &n, self.buf, &n, self.td, self.te, self.tau, self.twork,
               &self.tlwork, &info)
        if info != 0:
            self.err_routine = ERR_DSYTRD
            return info
        if path == PATH_AUTO:
            k = logt_tridiag_count(n, self.td, self.te, 0.0)
            if k <= self.few_frac * n:
                path = PATH_NEG
            elif n - k <= self.few_frac * n:
                path = PATH_POS
            else:
                path = PATH_FULL

        if path == PATH_NEG or path == PATH_POS:
            info = self._partial(n, path == PATH_NEG, &m)
            if info > 0 and self.err_routine == ERR_DSTEIN:
                # an eigenvector did not converge: use the full solver on the
                # same tridiagonal (dstein leaves td, te intact)
                self.err_routine = ERR_NONE
                path = PATH_FULL
                info = 0
            elif info != 0:
                return info
        self.last_path = path
        if path == PATH_FULL:
            # dsyevd's steps, but back-transforming only the vectors used:
            # all eigenpairs of T (divide and conquer), and dormtr below on
            # the smaller of the two sets of columns.
            dstedc(b"I", &n, self.td, self.te, self.z, &n, self.ework, &self.elwork,
                   self.eiwork, &self.eliwork, &info)
            if info != 0:
                self.err_routine = ERR_DSTEDC
                return info
            memcpy(self.w, self.td, n * sizeof(double))   # ascending
            m = n

        kneg = 0
        kpos = 0
        for k in range(m):
            if self.w[k] < 0.0:
                kneg += 1
            elif self.w[k] > 0.0:
                kpos += 1

        # Choose the rebuild: eigenpairs (wc[k], column k of zc), k < cols.
        if path == PATH_NEG:
            # all m found eigenvalues are in (-bound, 0]
            self.pred_neg = kneg
            self.pred_pos = n - m
            if m == n:
                memset(x, 0, nn * sizeof(double))
                return 0
            neg_rebuild = True
            zc = self.z
            wc = self.w
            cols = m
        elif path == PATH_POS:
            # all m found eigenvalues are in (0, bound]
            self.pred_pos = kpos
            self.pred_neg = n - m
            if m == n:
                _mirror_upper(x, n)
                return 0
            neg_rebuild = False
            zc = self.z
            wc = self.w
            cols = m
        else:
            self.pred_neg = kneg
            self.pred_pos = kpos
            if kpos == 0:
                memset(x, 0, nn * sizeof(double))
                return 0
            if kneg == 0:
                _mirror_upper(x, n)
                return 0
            neg_rebuild = kneg <= kpos
            if neg_rebuild:
                zc = self.z
                wc = self.w
                cols = kneg
            else:
                zc = self.z + <Py_ssize_t>(n - kpos) * n
                wc = self.w + (n - kpos)
                cols = kpos
            # eigenvectors of A = Q (eigenvectors of T), for these columns only
            dormtr(b"L", b"L", b"N", &n, &cols, self.buf, &n, self.tau, zc, &n,
                   self.twork, &self.tlwork, &info)
            if info != 0:
                self.err_routine = ERR_DORMTR
                return info

        if neg_rebuild:
            # Pi(A) = A - sum_{l<0} l v v^T = A + U U^T, U = V_neg sqrt(-l).
            if cols > 0:
                for k in range(cols):
                    t = sqrt(fmax(-wc[k], 0.0))
                    for i in range(n):
                        zc[<Py_ssize_t>k * n + i] *= t
                # x (unscaled A) += 2^e * U U^T on the C upper triangle.
                dsyrk(b"L", b"N", &n, &cols, &unscale, zc, &n, &one, x, &n)
        else:
            # Pi(A) = U U^T, U = V_pos sqrt(l_pos).
            if cols > 0:
                for k in range(cols):
                    t = sqrt(fmax(wc[k], 0.0))
                    for i in range(n):
                        zc[<Py_ssize_t>k * n + i] *= t
                dsyrk(b"L", b"N", &n, &cols, &unscale, zc, &n, &zero, x, &n)
            else:
                memset(x, 0, nn * sizeof(double))
        _mirror_upper(x, n)
        return 0

    cdef int _partial(self, int n, bint negative, int* m_out) noexcept nogil:
        """Eigenpairs of the scaled matrix (tridiagonalized by dsytrd into buf,
        td, te, tau) with eigenvalue in (-(n+1), 0] (negative) or (0, n+1]:
        values in w[:m], vectors in the columns of z (n x m, column-major).
        Returns 0 or an error code (err_routine says which routine)."""
        cdef int info = 0, m = 0, nsplit = 0
        cdef double vl, vu
        if negative:
            vl = -(n + 1.0)
            vu = 0.0
        else:
            vl = 0.0
            vu = n + 1.0
        m_out[0] = 0
        m = logt_tridiag_eig_interval(n, self.td, self.te, vl, vu, self.w, self.iblock,
                                      self.isplit, &nsplit, self.swork)
        if m < 0:
            self.err_routine = ERR_BISECT
            return -1
        m_out[0] = m
        if m == 0 or m == n:
            return 0   # nothing to build / the caller needs no vectors
        dstein(&n, self.td, self.te, &m, self.w, self.iblock, self.isplit, self.z, &n,
               self.swork, self.siwork, self.ifail, &info)
        if info != 0:
            self.err_routine = ERR_DSTEIN
            return info
        dormtr(b"L", b"L", b"N", &n, &m, self.buf, &n, self.tau, self.z, &n,
               self.twork, &self.tlwork, &info)
        if info != 0:
            self.err_routine = ERR_DORMTR
            return info
        return 0

    # ------------------------------------------------------------- Python level

    property _last_path:
        """Name of the path taken by the last projection (for tests/benchmarks)."""
        def __get__(self):
            return _PATH_NAMES.get(self.last_path)

    property _prediction:
        """(negative count, positive count) predicted for the next call (-1: unknown)."""
        def __get__(self):
            return (self.pred_neg, self.pred_pos)

    def _reset_prediction(self):
        """Forget the adaptive prediction (the next LAPACK-path call uses ``full``)."""
        with self._lock:
            self.pred_neg = -1
            self.pred_pos = -1

    def project(self, v, out=None):
        """Projection ``Pi(v)`` of the symmetric ``v`` (shape ``(d, d)``) onto the PSD cone.

        v   : array-like, shape ``(d, d)``, finite, symmetric up to a relative
              tolerance ``max|v - v^T| <= 1e-10 * max|v|`` (it is symmetrized
              exactly before projecting).
        out : optional C-contiguous writeable float64 array of shape ``(d, d)``;
              may be ``v`` itself (in-place).

        Returns ``out`` (a new array when ``out`` is None): symmetric PSD.
        Raises ValueError (shape / non-finite / non-symmetric), TypeError
        (bad ``out``), ``numpy.linalg.LinAlgError`` if LAPACK fails.
        """
        return self._run(v, out, PATH_AUTO)

    def _project_with(self, v, method, out=None):
        """Like ``project`` but forcing a path: 'auto', 'jacobi', 'neg', 'pos',
        'full' or 'chol' (private: for tests and benchmarks)."""
        try:
            code = _PATH_CODES[method]
        except (KeyError, TypeError):
            raise ValueError(f"method must be one of {sorted(_PATH_CODES)}, got {method!r}") from None
        return self._run(v, out, code)

    cdef object _run(self, v, out, int path):
        cdef int n = self.d
        cdef cnp.ndarray a
        cdef cnp.ndarray o
        if (type(v) is np.ndarray and cnp.PyArray_TYPE(<cnp.ndarray>v) == cnp.NPY_DOUBLE
                and cnp.PyArray_NDIM(<cnp.ndarray>v) == 2
                and cnp.PyArray_DIM(<cnp.ndarray>v, 0) == n
                and cnp.PyArray_DIM(<cnp.ndarray>v, 1) == n
                and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>v)):
            a = <cnp.ndarray>v
        else:
            try:
                arr = np.asarray(v, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"v must be convertible to a float64 array: {exc}") from None
            if arr.shape != self.shape:
                raise ValueError(f"v must have shape {self.shape}, got {arr.shape}")
            a = np.ascontiguousarray(arr)
        if out is None:
            o = cnp.PyArray_EMPTY(2, cnp.PyArray_DIMS(a), cnp.NPY_DOUBLE, 0)
        elif (type(out) is np.ndarray and cnp.PyArray_TYPE(<cnp.ndarray>out) == cnp.NPY_DOUBLE
                and cnp.PyArray_NDIM(<cnp.ndarray>out) == 2
                and cnp.PyArray_DIM(<cnp.ndarray>out, 0) == n
                and cnp.PyArray_DIM(<cnp.ndarray>out, 1) == n
                and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>out)
                and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>out)):
            o = <cnp.ndarray>out
        else:
            o = _check_out(out, self.shape)   # raises with a clear message
        cdef double* src = <double*>cnp.PyArray_DATA(a)
        cdef double* dst = <double*>cnp.PyArray_DATA(o)
        cdef Py_ssize_t nn = <Py_ssize_t>n * n
        if dst != src and dst < src + nn and src < dst + nn:
            a = a.copy()   # partial overlap: work from a copy
            src = <double*>cnp.PyArray_DATA(a)
        cdef double asym = 0.0, amax = 0.0
        cdef int status
        with nogil:
            status = _check_sym_copy(src, dst, n, _SYM_TOL, &asym, &amax)
        if status == 1:
            raise ValueError("v contains NaN or Inf")
        if status == 2:
            raise ValueError(
                f"v must be symmetric: max|v - v.T| = {asym:.3g} exceeds "
                f"{_SYM_TOL:g} * max|v| = {_SYM_TOL * amax:.3g}")
        cdef int info
        cdef double small_work[2 * _STACK_N * _STACK_N + _STACK_N]
        if n <= _STACK_N and (path == PATH_JACOBI or (path == PATH_AUTO and n <= self.jacobi_max)):
            # Tiny matrices: ~1 us of work on a stack workspace; no shared
            # state is touched (last_path is informational), so neither the
            # lock nor a GIL release (which would cost more than it frees).
            info = logt_psd_project_small(n, dst, small_work)
            self.last_path = PATH_JACOBI
            if info != 0:
                raise np.linalg.LinAlgError(
                    f"Jacobi eigensolver failed (status {info}, d={n}); "
                    f"the PSD projection failed")
            return o
        if path == PATH_JACOBI or (path == PATH_AUTO and n <= self.jacobi_max) or blas_active():
            with self._lock:
                with nogil:
                    info = self.project_path(dst, path)
        else:
            with single_threaded_blas():
                with self._lock:
                    with nogil:
                        info = self.project_path(dst, path)
        if info != 0:
            self._raise(info)
        return o

    cdef _raise(self, int info):
        if self.err_routine == ERR_JACOBI:
            msg = (f"Jacobi eigensolver did not converge within its sweep limit "
                   f"(d={self.d})")
        elif self.err_routine == ERR_BISECT:
            msg = f"tridiagonal bisection rejected its arguments (d={self.d})"
        else:
            name = {ERR_DPOTRF: "dpotrf", ERR_DSYEVD: "dsyevd", ERR_DSYTRD: "dsytrd",
                    ERR_DSTEIN: "dstein", ERR_DORMTR: "dormtr",
                    ERR_DSTEDC: "dstedc"}.get(self.err_routine, "?")
            if info < 0:
                msg = f"LAPACK {name} rejected argument {-info} (info={info}, d={self.d})"
            else:
                msg = f"LAPACK {name} failed to converge (info={info}, d={self.d})"
        raise np.linalg.LinAlgError(msg + "; the PSD projection failed")
