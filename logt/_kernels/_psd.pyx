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
(1e-150, 1e150, ...) neither overflow nor underflow. When 2^-e or 2^e is not a
normal number (max |a_ij| below ~1e-301, subnormal entries, or above ~1e301)
the matrix itself is rescaled entry by entry (``ldexp``), projected, and scaled
back with an overflow check: ``diag(1e308, -1e308) -> diag(1e308, 0)``,
``diag(1e-310, -1e-310) -> diag(1e-310, 0)``; a projection whose entries
exceed the float64 range (possible only within a factor ~d of 1.8e308) raises
OverflowError instead of returning inf.

BLAS threads: every LAPACK path runs between ``blas_enter()`` and
``blas_exit()`` (``_blasctl``): one BLAS thread per call, in whatever thread
the call runs, restored on every exit path.

Memory: a projector owns about ``24 d^2`` bytes of workspace (``nbytes``);
construction checks the total against ``LOGT_MAX_WORKSPACE_BYTES`` (default
4 GiB) before allocating.
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport fabs, fmax, frexp, ldexp, sqrt, isfinite, isinf
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from scipy.linalg.cython_lapack cimport dormtr, dpotrf, dstedc, dstein, dsytrd
from scipy.linalg.cython_blas cimport dsyrk

from logt._kernels._base cimport CompiledDomain
from logt._kernels._blasctl cimport blas_enter, blas_exit
from logt._kernels._base import _as_float_array, _check_out, max_workspace_bytes
from logt import _threads

cnp.import_array()

cdef extern from "logt_jacobi.h" nogil:
    int LOGT_JACOBI_NOCONV
    int LOGT_JACOBI_TOOBIG
    int LOGT_JACOBI_OVERFLOW
    int LOGT_JACOBI_NONFINITE
    int LOGT_JACOBI_MAX_PAIRS
    int LOGT_SAFE_EXP
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
    ERR_OVERFLOW = 10     # the projection is not representable in float64
    ERR_NONFINITE = 11    # a non-finite value appeared (never expected)

_PATH_CODES = {"auto": PATH_AUTO, "jacobi": PATH_JACOBI, "neg": PATH_NEG,
               "pos": PATH_POS, "full": PATH_FULL, "chol": PATH_CHOL}
_PATH_NAMES = {v: k for k, v in _PATH_CODES.items()}
_PATH_NAMES.update({PATH_ZERO: "zero"})

#: Largest d that takes the Jacobi path by default (measured crossover vs LAPACK,
#: 1 BLAS thread; see bench/bench_projection.py).
JACOBI_MAX_DEFAULT = 10

#: Largest allowed ``jacobi_max`` (the C Jacobi solver keeps one round of
#: rotations on the stack: n <= 512).
JACOBI_MAX_LIMIT = 2 * LOGT_JACOBI_MAX_PAIRS

#: Largest d: LAPACK's int workspace sizes (~d^2) must fit in 32 bits.
D_MAX = 20000

def _rebuild_projector(cls, d, jacobi_max, few_frac, pred):
    """Unpickle helper: a new projector with the same parameters and prediction."""
    obj = cls(d, jacobi_max=jacobi_max, few_frac=few_frac)
    (<PSDProjector>obj).pred_neg = pred[0]
    (<PSDProjector>obj).pred_pos = pred[1]
    return obj


# The Python-level limiter for BLAS libraries not handled in C (None: all are
# OpenBLAS/pthreads, limited inside project_path); set on the first LAPACK call.
cdef bint _blas_ready = False
cdef object _blas_fallback = None

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
        if d > D_MAX:
            raise ValueError(f"d must be <= {D_MAX}, got {d}")
        if self.mem != NULL:
            raise RuntimeError("PSDProjector.__init__ called twice")
        if jacobi_max is None:
            jm = JACOBI_MAX_DEFAULT
        else:
            if isinstance(jacobi_max, bool) or not isinstance(jacobi_max, (int, np.integer)):
                raise TypeError(f"jacobi_max must be an int, got {type(jacobi_max).__name__}")
            jm = int(jacobi_max)
            if not 0 <= jm <= JACOBI_MAX_LIMIT:
                raise ValueError(
                    f"jacobi_max must be in [0, {JACOBI_MAX_LIMIT}] (the Jacobi solver's "
                    f"largest size), got {jacobi_max}")
        if few_frac is None:
            ff = FEW_FRAC_DEFAULT
        else:
            try:
                ff = float(few_frac)
            except (TypeError, ValueError):
                raise TypeError(f"few_frac must be a float, got {type(few_frac).__name__}") from None
        if not (0.0 <= ff <= 1.0):
            raise ValueError(f"few_frac must be in [0, 1], got {few_frac}")
        cdef int n = d
        self.d = n
        self.shape = (n, n)
        self.size = <Py_ssize_t>n * n
        self.jacobi_max = jm
        self.few_frac = ff
        self.err_routine = ERR_NONE

        # Workspace queries (lwork = -1) first: LAPACK reads no array in a
        # query, so a one-element dummy stands in for each.
        cdef double dq[1]
        cdef double wq = 0.0
        cdef int iq = 0, info = 0, lq = -1, liq = -1
        cdef int tl = 1
        dq[0] = 0.0
        dsytrd(b"L", &n, dq, &n, dq, dq, dq, &wq, &lq, &info)
        if info != 0:
            raise np.linalg.LinAlgError(f"dsytrd workspace query failed (info={info})")
        tl = max(tl, <int>wq)
        lq = -1
        dormtr(b"L", b"L", b"N", &n, &n, dq, &n, dq, dq, &n, &wq, &lq, &info)
        if info != 0:
            raise np.linalg.LinAlgError(f"dormtr workspace query failed (info={info})")
        tl = max(tl, <int>wq, n)
        # dstedc (COMPZ='I'): the documented minimum, or the query if larger
        lq = -1
        liq = -1
        dstedc(b"I", &n, dq, dq, dq, &n, &wq, &lq, &iq, &liq, &info)
        if info != 0:
            raise np.linalg.LinAlgError(f"dstedc workspace query failed (info={info})")
        cdef int el = max(<int>wq, 1 + 4 * n + n * n if n > 1 else 1)
        cdef int eil = max(iq, 3 + 5 * n)
        cdef size_t nn = <size_t>n * <size_t>n
        nbytes = ((2 * nn + <size_t>n) + 9 * <size_t>n + <size_t>tl + <size_t>el) * sizeof(double) \
            + (4 * <size_t>n + <size_t>eil) * sizeof(int)
        limit = max_workspace_bytes()
        if nbytes > limit:
            raise MemoryError(
                f"PSDCone(d={d}) needs {nbytes / 2**30:.2f} GiB of workspace, above the limit of "
                f"{limit / 2**30:.2f} GiB (set LOGT_MAX_WORKSPACE_BYTES to raise it)")
        self.nbytes = nbytes

        self.mem = <double*>malloc((2 * nn + <size_t>n) * sizeof(double))
        self.tmem = <double*>malloc(9 * <size_t>n * sizeof(double))
        self.imem = <int*>malloc(4 * <size_t>n * sizeof(int))
        if self.mem == NULL or self.tmem == NULL or self.imem == NULL:
            raise MemoryError(f"PSDCone(d={d}): cannot allocate {nbytes / 2**20:.1f} MiB of workspace")
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
        self.tlwork = tl
        self.twork = <double*>malloc(<size_t>tl * sizeof(double))
        self.elwork = el
        self.eliwork = eil
        self.ework = <double*>malloc(<size_t>self.elwork * sizeof(double))
        self.eiwork = <int*>malloc(<size_t>self.eliwork * sizeof(int))
        if self.twork == NULL or self.ework == NULL or self.eiwork == NULL:
            raise MemoryError(f"PSDCone(d={d}): cannot allocate {nbytes / 2**20:.1f} MiB of workspace")

    def __dealloc__(self):
        free(self.mem)
        free(self.tmem)
        free(self.twork)
        free(self.imem)
        free(self.ework)
        free(self.eiwork)

    def __repr__(self):
        return f"{type(self).__name__}({self.d})"

    def __reduce__(self):
        # parameters and the adaptive prediction; workspaces are rebuilt
        return (_rebuild_projector, (type(self), self.d, self.jacobi_max, self.few_frac,
                                     (self.pred_neg, self.pred_pos)))

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        cdef PSDProjector o = <PSDProjector>other
        return self.d == o.d and self.jacobi_max == o.jacobi_max and self.few_frac == o.few_frac

    def __hash__(self):
        return hash((type(self).__name__, self.d, self.jacobi_max, self.few_frac))

    # ------------------------------------------------------------------ C level

    cdef int project_inplace(self, double* x) noexcept nogil:
        return self.project_path(x, PATH_AUTO)

    cdef int project_path(self, double* x, int path) noexcept nogil:
        cdef int n = self.d
        cdef Py_ssize_t nn = <Py_ssize_t>n * n
        cdef Py_ssize_t i, j
        cdef int e = 0, info = 0, tok
        cdef double amax = 0.0, t

        self.err_routine = ERR_NONE
        if path == PATH_JACOBI or (path == PATH_AUTO and n <= self.jacobi_max):
            self.last_path = PATH_JACOBI
            info = logt_psd_project_small(n, x, self.mem)
            if info == LOGT_JACOBI_OVERFLOW:
                self.err_routine = ERR_OVERFLOW
            elif info == LOGT_JACOBI_NONFINITE:
                self.err_routine = ERR_NONFINITE
            elif info != 0:
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
        if not isfinite(amax):
            self.err_routine = ERR_NONFINITE
            return -1
        frexp(amax, &e)
        if -LOGT_SAFE_EXP <= e <= LOGT_SAFE_EXP:
            tok = blas_enter()
            info = self._project_lapack(x, path, e)
            blas_exit(tok)
            return info
        # Subnormal or near-overflow entries: 2^-e or 2^e is not a normal
        # number; rescale the matrix itself (exact, ldexp), project at
        # max |a_ij| in [0.5, 1), scale back and check for overflow.
        for i in range(n):
            for j in range(i, n):
                x[i * n + j] = ldexp(x[i * n + j], -e)
        tok = blas_enter()
        info = self._project_lapack(x, path, 0)
        blas_exit(tok)
        if info != 0:
            return info
        for i in range(nn):
            x[i] = ldexp(x[i], e)
            if isinf(x[i]):
                self.err_routine = ERR_OVERFLOW
                return -1
        return 0

    cdef int _project_lapack(self, double* x, int path, int e) noexcept nogil:
        """The LAPACK paths for an input with max |a_ij| in [2^(e-1), 2^e)."""
        cdef int n = self.d
        cdef Py_ssize_t nn = <Py_ssize_t>n * n
        cdef Py_ssize_t i, j
        cdef int m = 0, info = 0, cols, k, kneg, kpos
        cdef double t, scale, unscale
        cdef double one = 1.0, zero = 0.0
        cdef double* zc
        cdef double* wc
        cdef bint neg_rebuild

        # Exact power-of-two scaling: max |a_ij| in [0.5, 1), so |l| <= n.
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
        for i in range(n):
            if not isfinite(x[i * n + i]):
                # a NaN anywhere in U reaches a diagonal entry of U U^T
                self.err_routine = ERR_NONFINITE
                return -1
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
        global _blas_ready, _blas_fallback
        cdef int n = self.d
        cdef cnp.ndarray a
        cdef cnp.ndarray o
        if (type(v) is np.ndarray and cnp.PyArray_TYPE(<cnp.ndarray>v) == cnp.NPY_DOUBLE
                and cnp.PyArray_NDIM(<cnp.ndarray>v) == 2
                and cnp.PyArray_DIM(<cnp.ndarray>v, 0) == n
                and cnp.PyArray_DIM(<cnp.ndarray>v, 1) == n
                and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>v)
                and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>v)
                and cnp.PyArray_ISALIGNED(<cnp.ndarray>v)):
            a = <cnp.ndarray>v
        else:
            # any real dtype, byte order, memory layout; complex is a TypeError
            arr = _as_float_array(v, "v")
            if arr.shape != self.shape:
                raise ValueError(f"v must have shape {self.shape}, got {arr.shape}")
            a = arr
        if out is None:
            o = cnp.PyArray_EMPTY(2, cnp.PyArray_DIMS(a), cnp.NPY_DOUBLE, 0)
        elif (type(out) is np.ndarray and cnp.PyArray_TYPE(<cnp.ndarray>out) == cnp.NPY_DOUBLE
                and cnp.PyArray_NDIM(<cnp.ndarray>out) == 2
                and cnp.PyArray_DIM(<cnp.ndarray>out, 0) == n
                and cnp.PyArray_DIM(<cnp.ndarray>out, 1) == n
                and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>out)
                and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>out)
                and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>out)
                and cnp.PyArray_ISALIGNED(<cnp.ndarray>out)):
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
        cdef int err = ERR_NONE
        cdef double small_work[2 * _STACK_N * _STACK_N + _STACK_N]
        if n <= _STACK_N and (path == PATH_JACOBI or (path == PATH_AUTO and n <= self.jacobi_max)):
            # Tiny matrices: ~1 us of work on a stack workspace; no shared
            # state is touched (last_path is informational), so neither the
            # lock nor a GIL release (which would cost more than it frees).
            info = logt_psd_project_small(n, dst, small_work)
            self.last_path = PATH_JACOBI
            if info != 0:
                if info == LOGT_JACOBI_OVERFLOW:
                    err = ERR_OVERFLOW
                elif info == LOGT_JACOBI_NONFINITE:
                    err = ERR_NONFINITE
                else:
                    err = ERR_JACOBI
                self._raise(info, err)
            return o
        if path == PATH_JACOBI or (path == PATH_AUTO and n <= self.jacobi_max):
            with self._lock:
                with nogil:
                    info = self.project_path(dst, path)
                    err = self.err_routine
        else:
            if not _blas_ready:
                _blas_fallback = _threads._ensure_configured()
                _blas_ready = True
            if _blas_fallback is None:
                # OpenBLAS (pthreads): project_path sets the limit itself, in C
                with self._lock:
                    with nogil:
                        info = self.project_path(dst, path)
                        err = self.err_routine
            else:
                with _threads.single_threaded_blas():
                    with self._lock:
                        with nogil:
                            info = self.project_path(dst, path)
                            err = self.err_routine
        if info != 0:
            self._raise(info, err)
        return o

    cdef _raise(self, int info, int err):
        if err == ERR_OVERFLOW:
            raise OverflowError(
                f"the PSD projection of this {self.d} x {self.d} matrix has entries beyond the "
                f"float64 range (|x| > 1.8e308); scale the input down")
        if err == ERR_NONFINITE:
            raise FloatingPointError(
                f"the PSD projection produced a non-finite value (d={self.d}); please report this")
        if err == ERR_JACOBI:
            if info == LOGT_JACOBI_TOOBIG:
                msg = (f"Jacobi eigensolver supports d <= {JACOBI_MAX_LIMIT}, got d={self.d} "
                       f"(lower jacobi_max)")
            else:
                msg = (f"Jacobi eigensolver did not converge within its sweep limit "
                       f"(d={self.d})")
        elif err == ERR_BISECT:
            msg = f"tridiagonal bisection rejected its arguments (d={self.d})"
        else:
            name = {ERR_DPOTRF: "dpotrf", ERR_DSYEVD: "dsyevd", ERR_DSYTRD: "dsytrd",
                    ERR_DSTEIN: "dstein", ERR_DORMTR: "dormtr",
                    ERR_DSTEDC: "dstedc"}.get(err, "?")
            if info < 0:
                msg = f"LAPACK {name} rejected argument {-info} (info={info}, d={self.d})"
            else:
                msg = f"LAPACK {name} failed to converge (info={info}, d={self.d})"
        raise np.linalg.LinAlgError(msg + "; the PSD projection failed")
