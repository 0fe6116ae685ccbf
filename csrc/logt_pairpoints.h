/* logt_pairpoints: the per-pair O(d) steps of the metric oracle's point path
 * (plain C, no Python, no global state).
 *
 * The dense pair gradient sum_b c_b D_b D_b^T (D_b = x_i - x_j) equals
 * X^T L X for the weighted pair Laplacian L; with Z = X W precomputed, each
 * pair needs only q_b = D_b . (z_i - z_j) and the row updates
 * Y_i += c_b D_b, Y_j -= c_b D_b. These loops are written with fixed partial
 * sums (the result does not depend on the vector width) and restrict
 * pointers so the compiler vectorizes them.
 */
#ifndef LOGT_PAIRPOINTS_H
#define LOGT_PAIRPOINTS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* D[0..d) = xi - xj; returns D . (zi - zj), summed as four interleaved partial
 * sums ((s0 + s1) + (s2 + s3)), the same order on every machine. */
double logt_diff_dot(const double *xi, const double *xj, const double *zi,
                     const double *zj, double *D, ptrdiff_t d);

/* yi += c * D, yj -= c * D (yi and yj distinct rows of length d). */
void logt_row_update(double c, const double *D, double *yi, double *yj, ptrdiff_t d);

#ifdef __cplusplus
}
#endif

#endif
