/* logt_sqdist: squared distances of one row to many candidates from their inner
 * products (plain C, no Python, no global state), the first pass of the
 * neighbour selection (logt/_kernels/_neighbors.pyx).
 *
 * dist_j = max((s + sqc_j) - 2 g_j, 0): the same expression, in the same
 * order, as the NumPy formula. Written with restrict pointers and an integer
 * flag for non-finite inputs so the compiler vectorizes the loop: a
 * floating-point sum of g_j * 0 would be one chain of dependent additions,
 * which the compiler may not reorder.
 */
#ifndef LOGT_SQDIST_H
#define LOGT_SQDIST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dist[0..m) = max((s + sqc[j]) - 2 g[j], 0) (0 where that is NaN); returns 1 when
 * some g[j] is infinite or NaN (dist is then meaningless), else 0. */
int logt_sqdist_row(const double *g, const double *sqc, double s, double *dist, ptrdiff_t m);

#ifdef __cplusplus
}
#endif

#endif
