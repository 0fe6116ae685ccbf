/* See logt_pairpoints.h. */
#include "logt_pairpoints.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
/* an AVX2 clone next to the baseline one, chosen at load time (glibc ifunc);
 * both evaluate the same expression tree, so the bits agree */
#define LOGT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LOGT_CLONES
#endif

LOGT_CLONES
double logt_diff_dot(const double *restrict xi, const double *restrict xj,
                     const double *restrict zi, const double *restrict zj,
                     double *restrict D, ptrdiff_t d)
{
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    ptrdiff_t a = 0, k;
    for (; a + 4 <= d; a += 4) {
        for (k = 0; k < 4; k++) {
            double t = xi[a + k] - xj[a + k];
            double u = zi[a + k] - zj[a + k];
            D[a + k] = t;
            s[k] += t * u;
        }
    }
    for (; a < d; a++) {
        double t = xi[a] - xj[a];
        D[a] = t;
        s[0] += t * (zi[a] - zj[a]);
    }
    return (s[0] + s[1]) + (s[2] + s[3]);
}

LOGT_CLONES
void logt_row_update(double c, const double *restrict D, double *restrict yi,
                     double *restrict yj, ptrdiff_t d)
{
    ptrdiff_t a;
    for (a = 0; a < d; a++) {
        double t = c * D[a];
        yi[a] += t;
        yj[a] -= t;
    }
}
