/* logt_jacobi: a small cyclic Jacobi eigensolver and a BLAS-free PSD projection
 * for tiny symmetric matrices (plain C, no Python, no global state).
 *
 * Matrices are n x n, row-major (C order), dense.
 */
#ifndef LOGT_JACOBI_H
#define LOGT_JACOBI_H

#ifdef __cplusplus
extern "C" {
#endif

/* Default sweep limit: cyclic Jacobi converges quadratically; 6-10 sweeps are
 * typical in double precision, so 60 is only a guard. */
#define LOGT_JACOBI_MAX_SWEEPS 60

/* Error code returned when the sweep limit is reached without convergence. */
#define LOGT_JACOBI_NOCONV (-1001)

/* Largest n is 2 * LOGT_JACOBI_MAX_PAIRS (the solver keeps one round of
 * rotations on the stack); larger n returns LOGT_JACOBI_TOOBIG. */
#define LOGT_JACOBI_MAX_PAIRS 256
#define LOGT_JACOBI_TOOBIG (-1002)

/* The projection of a finite matrix is not representable (an entry exceeds
 * DBL_MAX; possible only when max|a_ij| is within a factor ~n of DBL_MAX). */
#define LOGT_JACOBI_OVERFLOW (-1003)

/* A non-finite value appeared in the result of a finite input (never
 * expected; reported instead of returning NaN). */
#define LOGT_JACOBI_NONFINITE (-1004)

/* Power-of-two exponents e (max|a_ij| = f * 2^e, f in [0.5, 1)) with
 * |e| <= LOGT_SAFE_EXP are scaled by multiplying with 2^-e and 2^e, which are
 * normal numbers, and no result can overflow (|result| <= n * 2^e). Outside
 * this range (subnormal or near-DBL_MAX entries) the matrix is rescaled in
 * place entry by entry with ldexp and scaled back at the end, with an
 * overflow check. */
#define LOGT_SAFE_EXP 1000

/* Eigendecomposition A = V diag(w) V^T of the symmetric n x n matrix in `a`.
 *
 * a : n*n doubles; only the upper triangle (j >= i, a[i*n+j]) is read; the whole
 *     array is overwritten (on exit its diagonal holds w).
 * w : n doubles, the eigenvalues (unsorted).
 * v : n*n doubles, eigenvectors as COLUMNS: v[i*n+k] is entry i of vector k.
 * max_sweeps : sweep limit (use LOGT_JACOBI_MAX_SWEEPS).
 *
 * Returns the number of sweeps used (>= 0) on convergence, or
 * LOGT_JACOBI_NOCONV when the limit was hit (w, v then hold the last iterate),
 * or LOGT_JACOBI_TOOBIG if n > 2 * LOGT_JACOBI_MAX_PAIRS.
 * Entries should be of moderate size (e.g. scaled so max |a_ij| is ~1): the
 * caller handles scaling (logt_psd_project_small does).
 */
int logt_jacobi_eigh(int n, double *a, double *w, double *v, int max_sweeps);

/* In-place Frobenius projection of the symmetric n x n matrix x onto the PSD
 * cone: x <- V diag(max(w, 0)) V^T. Reads only the upper triangle of x and
 * writes a exactly symmetric result. The matrix is scaled by a power of two
 * (exact) so entries of any finite magnitude work, subnormal ones included.
 * On error x holds no meaningful values.
 *
 * work : 2*n*n + n doubles of scratch.
 * Returns 0, LOGT_JACOBI_NOCONV, LOGT_JACOBI_TOOBIG, LOGT_JACOBI_OVERFLOW
 * (the projection is not representable) or LOGT_JACOBI_NONFINITE.
 */
int logt_psd_project_small(int n, double *x, double *work);

#ifdef __cplusplus
}
#endif

#endif /* LOGT_JACOBI_H */
