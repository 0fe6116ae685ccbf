/* logt_sturm: eigenvalues of a symmetric tridiagonal matrix in an interval,
 * by Sturm-count bisection, several shifts at a time (plain C, no Python, no
 * global state).
 *
 * LAPACK's dstebz bisects one interval at a time; each Sturm step has a
 * division, so it is bound by division latency. Here up to LOGT_STURM_LANES
 * eigenvalues are bisected in lockstep so their independent divisions
 * overlap. Accuracy and output layout follow dstebz (RANGE='V', ORDER='B',
 * ABSTOL <= 0), so the result can go straight to LAPACK's dstein.
 */
#ifndef LOGT_STURM_H
#define LOGT_STURM_H

#ifdef __cplusplus
extern "C" {
#endif

#define LOGT_STURM_LANES 8

/* Eigenvalues of the n x n symmetric tridiagonal T (diagonal d[0..n-1],
 * off-diagonal e[0..n-2]) in the half-open interval (vl, vu].
 *
 * w      : out, up to n eigenvalues, ordered by block, ascending in a block.
 * iblock : out, iblock[k] = 1-based block of w[k] (as dstebz/dstein use).
 * isplit : out, isplit[b] = 1-based last row of block b (nsplit blocks).
 * nsplit : out.
 * work   : n doubles of scratch.
 * Returns the number m of eigenvalues found (>= 0), or -1 on bad arguments.
 * Each eigenvalue is bracketed to max(ulp*||T||, 2*ulp*|lambda|), as dstebz.
 */
int logt_tridiag_eig_interval(int n, const double *d, const double *e,
                              double vl, double vu, double *w, int *iblock,
                              int *isplit, int *nsplit, double *work);

/* Number of eigenvalues <= x of the tridiagonal T (one Sturm sequence,
 * O(n), with LAPACK's pivot safeguard). Eigenvalues within ~ulp*||T|| of x
 * may be counted on either side. */
int logt_tridiag_count(int n, const double *d, const double *e, double x);

#ifdef __cplusplus
}
#endif

#endif /* LOGT_STURM_H */
