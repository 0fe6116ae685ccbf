# cython: language_level=3
"""The trace-bounded PSD set ``{W PSD : tr W <= tau}``: projection, LMO, constraint function.

* ``TraceBoundedPSD(d, tau)`` -- a ``CompiledDomain``. Projection: for the
  symmetric ``A = V diag(l) V^T``, ``Pi(A) = V diag(l') V^T`` with ``l'`` the
  Euclidean projection of ``l`` onto ``{l >= 0, sum l <= tau}`` (the capped
  simplex): ``l' = max(l, 0)`` if that sums to at most ``tau``, else
  ``l' = max(l - theta, 0)`` with ``theta > 0`` such that ``sum l' = tau``
  (the Frobenius norm is unitarily invariant and the set is spectral, so the
  matrix problem reduces to the eigenvalues). Eigenpairs by LAPACK ``dsyevd``
  on a copy scaled by a power of two (exact) so that ``max |a_ij|`` is in
  ``[0.5, 1)``; rebuilt with ``dsyrk`` from the columns with ``l' > 0``.
* ``TraceBoundedPSD.lmo(G)`` / ``TracePSDLinearOracle`` -- the linear
  minimization oracle ``argmin_{S in D} <G, S> = tau v v^T`` for the unit
  eigenvector ``v`` of the smallest eigenvalue of ``G`` when that eigenvalue
  is negative, else ``0`` (the extreme points of ``D`` are ``0`` and
  ``tau v v^T``, ``||v|| = 1``). One eigenpair by ``dsyevr`` with
  ``il = iu = 1`` (bisection and inverse iteration after ``dsytrd``).
* ``PSDConstraint`` -- the constraint function of the PSD cone,
  ``c(W) = -lambda_min(W)`` (subgradient ``-v v^T``, ``rho = 1``), or of
  ``TraceBoundedPSD``, ``c(W) = max(-lambda_min(W), (tr W - tau)/sqrt(d))``
  (subgradient of the active piece; ``rho = sqrt((1 - 1/sqrt(d))/2)``, the
  smallest norm of a convex combination of ``-v v^T`` and ``I/sqrt(d)``, 1 for
  ``d = 1``), for SGD with one projection.

Matrices are d x d, C order; the C-level methods read only the upper triangle
(the Fortran lower triangle of the column-major view). Every object owns its
LAPACK workspace (queried at construction); calls on one object from Python are
serialized by its lock, compiled loops hold the lock for the whole loop.
"""
import numpy as np

from libc.math cimport fabs, frexp, ldexp, sqrt, isfinite
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset
from scipy.linalg.cython_blas cimport dsyrk
from scipy.linalg.cython_lapack cimport dsyevd, dsyevr

from logt._kernels._base cimport CompiledDomain
from logt._kernels._free cimport ConstraintFunction, LinearOracle
from logt._kernels._psd cimport _mirror_upper

SYM_TOL = 1e-10


def _check_d(d):
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise TypeError(f"d must be an int, got {type(d).__name__}")
    if d < 1 or d > 20000:
        raise ValueError(f"d must be in [1, 20000], got {d}")
    return int(d)


def _check_tau(tau):
    if isinstance(tau, bool):
        raise TypeError("tau must be a real number, got bool")
    try:
        t = float(tau)
    except (TypeError, ValueError):
        raise TypeError(f"tau must be a real number, got {type(tau).__name__}") from None
    if not (np.isfinite(t) and t > 0):
        raise ValueError(f"tau must be finite and > 0, got {tau!r}")
    return t


def _check_symmetric(a, name):
    amax = float(np.max(np.abs(a))) if a.size else 0.0
    asym = float(np.max(np.abs(a - a.T))) if a.size else 0.0
    if asym > SYM_TOL * amax:
        raise ValueError(f"{name} must be symmetric: max|{name} - {name}.T| = {asym:.3g} exceeds "
                         f"{SYM_TOL:g} * max|{name}| = {SYM_TOL * amax:.3g}")


cdef double _scale_exponent(const double* x, int n, int* e) noexcept nogil:
    """max |x_ij| over the upper triangle (0 if all zero); ``e`` with max in [2^(e-1), 2^e)."""
    cdef Py_ssize_t i, j
    cdef double amax = 0.0, t
    for i in range(n):
        for j in range(i, n):
            t = fabs(x[i * n + j])
            if t > amax:
                amax = t
    e[0] = 0
    if amax > 0.0:
        frexp(amax, e)
    return amax


cdef class _MinEig:
    """Workspace for the smallest eigenpair of a symmetric d x d matrix (``dsyevr``, ``il = iu = 1``).

    ``dsyevr`` may return MORE than the requested eigenpair when eigenvalues are
    tied at the boundary of the index range (``dstebz`` keeps a cluster
    together), so ``w`` holds ``n`` values and ``z`` ``n x n`` vectors; the
    smallest pair is the first (``dsyevr`` sorts them ascending).
    """
    cdef int n
    cdef double* a           # n*n scaled copy (destroyed by dsyevr)
    cdef double* w           # n eigenvalues (the first m are set)
    cdef double* z           # n*n eigenvectors, column-major; column 0 is the smallest pair's
    cdef double* work
    cdef int* iwork
    cdef int* isuppz         # 2n
    cdef int lwork, liwork

    def __cinit__(self, int n):
        self.n = n
        self.a = <double*>malloc(<size_t>n * n * sizeof(double))
        self.w = <double*>malloc(<size_t>n * sizeof(double))
        self.z = <double*>malloc(<size_t>n * n * sizeof(double))
        self.isuppz = <int*>malloc(2 * <size_t>n * sizeof(int))
        self.work = NULL
        self.iwork = NULL
        if self.a == NULL or self.w == NULL or self.z == NULL or self.isuppz == NULL:
            raise MemoryError()
        cdef double wq = 0.0, vl = 0.0, vu = 0.0, abstol = 0.0
        cdef int iq = 0, lq = -1, liq = -1, info = 0, il = 1, iu = 1, m = 0
        memset(self.a, 0, <size_t>n * n * sizeof(double))
        dsyevr(b"V", b"I", b"L", &n, self.a, &n, &vl, &vu, &il, &iu, &abstol, &m, self.w,
               self.z, &n, self.isuppz, &wq, &lq, &iq, &liq, &info)
        if info != 0:
            raise np.linalg.LinAlgError(f"dsyevr workspace query failed (info={info})")
        self.lwork = max(<int>wq, 26 * n, 1)
        self.liwork = max(iq, 10 * n, 1)
        self.work = <double*>malloc(<size_t>self.lwork * sizeof(double))
        self.iwork = <int*>malloc(<size_t>self.liwork * sizeof(int))
        if self.work == NULL or self.iwork == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.a)
        free(self.w)
        free(self.z)
        free(self.isuppz)
        free(self.work)
        free(self.iwork)

    cdef int run(self, const double* x, double* lam) noexcept nogil:
        """lam[0] = smallest eigenvalue of x (upper triangle read); its unit eigenvector in z[:n].
        An all-zero x gives lam = 0 and z = e_1. Returns 0 or the LAPACK info."""
        cdef int n = self.n, e = 0, il = 1, iu = 1, m = 0, info = 0
        cdef Py_ssize_t i, j
        cdef double amax, s, vl = 0.0, vu = 0.0, abstol = 0.0
        amax = _scale_exponent(x, n, &e)
        if amax == 0.0:
            lam[0] = 0.0
            memset(self.z, 0, n * sizeof(double))
            self.z[0] = 1.0
            return 0
        s = ldexp(1.0, -e)
        for i in range(n):
            for j in range(i, n):
                self.a[i * n + j] = x[i * n + j] * s
        dsyevr(b"V", b"I", b"L", &n, self.a, &n, &vl, &vu, &il, &iu, &abstol, &m, self.w,
               self.z, &n, self.isuppz, self.work, &self.lwork, self.iwork, &self.liwork, &info)
        if info != 0:
            return info
        if m < 1:
            return -1000
        lam[0] = ldexp(self.w[0], e)
        return 0


cdef class TraceBoundedPSD(CompiledDomain):
    """PSD matrices with bounded trace, ``D = {W in S^d_+ : tr W <= tau}`` (compact, convex).

    ``TraceBoundedPSD(d, tau)``; points have shape ``(d, d)``.

    ``project(v, out=None)``: ``V diag(l') V^T`` for ``v = V diag(l) V^T``, ``l'``
    the projection of ``l`` onto ``{l >= 0, sum l <= tau}`` (see the module
    docstring); ``v`` must be finite and symmetric up to ``1e-10`` relative.
    ``lmo(G, out=None)``: ``argmin_{S in D} <G, S>`` (``tau v v^T`` or 0).
    ``constraint_function`` (property): the ``PSDConstraint`` of this set.
    """
    cdef readonly int d
    cdef readonly double tau
    cdef double* buf          # d*d: scaled copy, then eigenvectors (column-major)
    cdef double* w            # d eigenvalues
    cdef double* work
    cdef int* iwork
    cdef int lwork, liwork
    cdef object _linear_oracle

    def __cinit__(self, *args, **kwargs):
        self.buf = NULL
        self.w = NULL
        self.work = NULL
        self.iwork = NULL

    def __init__(self, d, tau=1.0):
        cdef int n = _check_d(d)
        self.tau = _check_tau(tau)
        if self.buf != NULL:
            raise RuntimeError("TraceBoundedPSD.__init__ called twice")
        self.d = n
        self.shape = (n, n)
        self.size = <Py_ssize_t>n * n
        self.buf = <double*>malloc(<size_t>n * n * sizeof(double))
        self.w = <double*>malloc(<size_t>n * sizeof(double))
        if self.buf == NULL or self.w == NULL:
            raise MemoryError()
        cdef double wq = 0.0
        cdef int iq = 0, lq = -1, liq = -1, info = 0
        dsyevd(b"V", b"L", &n, self.buf, &n, self.w, &wq, &lq, &iq, &liq, &info)
        if info != 0:
            raise np.linalg.LinAlgError(f"dsyevd workspace query failed (info={info})")
        self.lwork = max(<int>wq, 1 + 6 * n + 2 * n * n)
        self.liwork = max(iq, 3 + 5 * n)
        self.work = <double*>malloc(<size_t>self.lwork * sizeof(double))
        self.iwork = <int*>malloc(<size_t>self.liwork * sizeof(int))
        if self.work == NULL or self.iwork == NULL:
            raise MemoryError()
        self._linear_oracle = TracePSDLinearOracle(n, self.tau)

    def __dealloc__(self):
        free(self.buf)
        free(self.w)
        free(self.work)
        free(self.iwork)

    def __repr__(self):
        return f"TraceBoundedPSD(d={self.d}, tau={self.tau!r})"

    def __reduce__(self):
        return (TraceBoundedPSD, (self.d, self.tau))

    def _validate(self, a):
        _check_symmetric(a, "v")

    @property
    def linear_oracle(self):
        """The compiled LMO object of this set (``TracePSDLinearOracle``)."""
        return self._linear_oracle

    def lmo(self, G, out=None):
        """``argmin_{S in D} <G, S>``: ``tau v v^T`` (``v`` the unit eigenvector of the smallest
        eigenvalue of the symmetric ``G``) if that eigenvalue is < 0, else the zero matrix."""
        return self._linear_oracle.lmo(G, out)

    @property
    def constraint_function(self):
        """``PSDConstraint(d, tau)``: ``c(W) = max(-lambda_min(W), (tr W - tau)/sqrt(d))``."""
        return PSDConstraint(self.d, self.tau)

    cdef int project_inplace(self, double* x) noexcept nogil:
        cdef int n = self.d, e = 0, info = 0, first, cols, k, rho
        cdef Py_ssize_t i, j, nn = <Py_ssize_t>n * n
        cdef double amax, s, unscale, tau_s, total = 0.0, csum = 0.0, theta = 0.0, t, zero = 0.0
        amax = _scale_exponent(x, n, &e)
        if amax == 0.0:
            memset(x, 0, nn * sizeof(double))          # 0 is in D
            return 0
        s = ldexp(1.0, -e)
        unscale = ldexp(1.0, e)
        tau_s = self.tau * s
        for i in range(n):
            for j in range(i, n):
                self.buf[i * n + j] = x[i * n + j] * s
        dsyevd(b"V", b"L", &n, self.buf, &n, self.w, self.work, &self.lwork, self.iwork,
               &self.liwork, &info)
        if info != 0:
            return info
        # eigenvalues ascending: project them onto {l >= 0, sum l <= tau_s}
        for k in range(n):
            if self.w[k] > 0.0:
                total += self.w[k]
        if total > tau_s:
            # largest rho with u_rho - (sum_{i<=rho} u_i - tau_s)/rho > 0, u descending
            rho = 0
            for k in range(n):
                t = self.w[n - 1 - k]
                csum += t
                if t - (csum - tau_s) / (k + 1) > 0.0:
                    rho = k + 1
                    theta = (csum - tau_s) / (k + 1)
            for k in range(n):
                self.w[k] = self.w[k] - theta
        first = n
        for k in range(n):
            if self.w[k] > 0.0:
                first = k
                break
        cols = n - first
        if cols == 0:
            memset(x, 0, nn * sizeof(double))
            return 0
        for k in range(first, n):
            t = sqrt(self.w[k])
            for i in range(n):
                self.buf[<Py_ssize_t>k * n + i] *= t
        # x (C upper == Fortran lower) = 2^e * U U^T, U = the scaled columns
        dsyrk(b"L", b"N", &n, &cols, &unscale, self.buf + <Py_ssize_t>first * n, &n, &zero, x, &n)
        _mirror_upper(x, n)
        return 0


cdef class TracePSDLinearOracle(LinearOracle):
    """LMO of ``{W PSD : tr W <= tau}`` (see ``TraceBoundedPSD.lmo``); compiled, own workspace."""
    cdef readonly int d
    cdef readonly double tau
    cdef _MinEig eig

    def __init__(self, d, tau):
        cdef int n = _check_d(d)
        self.tau = _check_tau(tau)
        self.d = n
        self.shape = (n, n)
        self.size = <Py_ssize_t>n * n
        self.eig = _MinEig(n)

    def __repr__(self):
        return f"TracePSDLinearOracle(d={self.d}, tau={self.tau!r})"

    def _validate(self, a, name):
        _check_symmetric(a, name)

    cdef int lmo_into(self, const double* g, double* s) noexcept nogil:
        cdef int n = self.d, info
        cdef Py_ssize_t i, j
        cdef double lam = 0.0
        cdef double* z = self.eig.z
        info = self.eig.run(g, &lam)
        if info != 0:
            return info
        if not lam < 0.0:
            memset(s, 0, <size_t>n * n * sizeof(double))
            return 0
        for i in range(n):
            for j in range(n):
                s[i * n + j] = self.tau * z[i] * z[j]
        return 0


cdef class PSDConstraint(ConstraintFunction):
    """Constraint function of the PSD cone (``tau=None``): ``c(W) = -lambda_min(W)``, or of
    ``TraceBoundedPSD(d, tau)``: ``c(W) = max(-lambda_min(W), (tr W - tau)/sqrt(d))``.

    Subgradient where ``c > 0``: ``-v v^T`` (``v`` the unit eigenvector of
    ``lambda_min``) or ``I/sqrt(d)``, whichever piece is the max (ties: the
    eigenvalue piece). ``rho``: 1 for the cone (and ``d = 1``), else
    ``sqrt((1 - 1/sqrt(d))/2)``.
    """
    cdef readonly int d
    cdef double tau_c          # tau, or a negative value for the cone
    cdef _MinEig eig

    def __init__(self, d, tau=None):
        cdef int n = _check_d(d)
        self.d = n
        self.shape = (n, n)
        self.size = <Py_ssize_t>n * n
        self.tau_c = -1.0 if tau is None else _check_tau(tau)
        self.rho = 1.0 if (tau is None or n == 1) else sqrt((1.0 - 1.0 / sqrt(n)) / 2.0)
        self.eig = _MinEig(n)

    @property
    def tau(self):
        return None if self.tau_c < 0 else self.tau_c

    def __repr__(self):
        return f"PSDConstraint(d={self.d}, tau={self.tau!r})"

    def _validate(self, a, name):
        _check_symmetric(a, name)

    cdef int value_grad(self, const double* x, double* val, double* grad) noexcept nogil:
        cdef int n = self.d, info
        cdef Py_ssize_t i, j
        cdef double lam = 0.0, tr = 0.0, ctr, sq
        cdef double* z = self.eig.z
        info = self.eig.run(x, &lam)
        if info != 0:
            return info
        val[0] = -lam
        if self.tau_c >= 0.0:
            for i in range(n):
                tr += x[i * n + i]
            sq = sqrt(<double>n)
            ctr = (tr - self.tau_c) / sq
            if ctr > -lam:
                val[0] = ctr
                if ctr > 0.0:
                    memset(grad, 0, <size_t>n * n * sizeof(double))
                    for i in range(n):
                        grad[i * n + i] = 1.0 / sq
                return 0
        if val[0] > 0.0:
            for i in range(n):
                for j in range(n):
                    grad[i * n + j] = -z[i] * z[j]
        return 0
