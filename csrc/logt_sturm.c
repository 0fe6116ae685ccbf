/* Multi-shift Sturm bisection for tridiagonal eigenvalues; see logt_sturm.h. */
#include <float.h>
#include <math.h>

#include "logt_sturm.h"

#define LANES LOGT_STURM_LANES /* must be 8: see sturm_counts */

/* Number of eigenvalues <= x[l] of the block rows [b0, b1) for lanes
 * l < NL, with LAPACK's (dlaebz) pivot safeguard. e2[i] = e[i]^2 (0 at
 * splits). One copy per lane count so the lane loop has a fixed length. */
#define DEFINE_STURM_COUNTS(NL)                                               \
    static void sturm_counts_##NL(int b0, int b1, const double *d,            \
                                  const double *e2, double pivmin,            \
                                  const double *x, int *cnt)                  \
    {                                                                         \
        double q[NL];                                                         \
        int c[NL];                                                            \
        int i, l;                                                             \
        for (l = 0; l < NL; l++) {                                            \
            q[l] = d[b0] - x[l];                                              \
            if (fabs(q[l]) < pivmin) {                                        \
                q[l] = -pivmin;                                               \
            }                                                                 \
            c[l] = q[l] <= 0.0;                                               \
        }                                                                     \
        for (i = b0 + 1; i < b1; i++) {                                       \
            double di = d[i], ei = e2[i - 1];                                 \
            for (l = 0; l < NL; l++) {                                        \
                double t = di - ei / q[l] - x[l];                             \
                t = fabs(t) < pivmin ? -pivmin : t;                           \
                q[l] = t;                                                     \
                c[l] += t <= 0.0;                                             \
            }                                                                 \
        }                                                                     \
        for (l = 0; l < NL; l++) {                                            \
            cnt[l] = c[l];                                                    \
        }                                                                     \
    }

DEFINE_STURM_COUNTS(1)
DEFINE_STURM_COUNTS(2)
DEFINE_STURM_COUNTS(4)
DEFINE_STURM_COUNTS(8)

/* Counts for the first nl lanes (nl <= LANES); lanes beyond are unused. */
static void sturm_counts(int nl, int b0, int b1, const double *d,
                         const double *e2, double pivmin, const double *x,
                         int *cnt)
{
    if (nl <= 1) {
        sturm_counts_1(b0, b1, d, e2, pivmin, x, cnt);
    } else if (nl <= 2) {
        sturm_counts_2(b0, b1, d, e2, pivmin, x, cnt);
    } else if (nl <= 4) {
        sturm_counts_4(b0, b1, d, e2, pivmin, x, cnt);
    } else {
        sturm_counts_8(b0, b1, d, e2, pivmin, x, cnt);
    }
}

int logt_tridiag_eig_interval(int n, const double *d, const double *e,
                              double vl, double vu, double *w, int *iblock,
                              int *isplit, int *nsplit, double *work)
{
    const double ulp = DBL_EPSILON, safemn = DBL_MIN;
    double *e2 = work;
    double tnorm = 0.0, emax2 = 0.0, pivmin, atoli;
    int i, b, b0, m = 0, ns = 0;

    if (n < 1 || !(vl < vu)) {
        return -1;
    }
    /* Split where the off-diagonal is negligible (the dstebz criterion). */
    for (i = 0; i < n - 1; i++) {
        double t = e[i] * e[i];
        if (fabs(d[i] * d[i + 1]) * ulp * ulp + safemn > t) {
            isplit[ns++] = i + 1;
            e2[i] = 0.0;
        } else {
            e2[i] = t;
            if (t > emax2) {
                emax2 = t;
            }
        }
    }
    isplit[ns++] = n;
    *nsplit = ns;
    pivmin = safemn * (emax2 > 1.0 ? emax2 : 1.0);
    for (i = 0; i < n; i++) {
        double r = fabs(d[i]);
        if (i > 0) {
            r += fabs(e[i - 1]);
        }
        if (i < n - 1) {
            r += fabs(e[i]);
        }
        if (r > tnorm) {
            tnorm = r;
        }
    }
    atoli = ulp * tnorm;

    b0 = 0;
    for (b = 0; b < ns; b++) {
        int b1 = isplit[b], nb = b1 - b0, nl, nu, j0;
        double gl = d[b0], gu = d[b0], lo0, hi0, xs[LANES];
        int cs[LANES];
        if (nb == 1) {
            if (vl < d[b0] && d[b0] <= vu) {
                w[m] = d[b0];
                iblock[m] = b + 1;
                m++;
            }
            b0 = b1;
            continue;
        }
        /* Gershgorin interval of the block, widened as dstebz does. */
        for (i = b0; i < b1; i++) {
            double r = 0.0;
            if (i > b0) {
                r += fabs(e[i - 1]);
            }
            if (i < b1 - 1) {
                r += fabs(e[i]);
            }
            if (d[i] - r < gl) {
                gl = d[i] - r;
            }
            if (d[i] + r > gu) {
                gu = d[i] + r;
            }
        }
        {
            double bnorm = fabs(gl) > fabs(gu) ? fabs(gl) : fabs(gu);
            double fudge = 2.1 * ulp * bnorm * nb + 2.1 * 2.0 * pivmin;
            gl -= fudge;
            gu += fudge;
        }
        lo0 = vl > gl ? vl : gl;
        hi0 = vu < gu ? vu : gu;
        if (!(lo0 < hi0)) {
            b0 = b1;
            continue;
        }
        xs[0] = lo0;
        xs[1] = hi0;
        for (i = 2; i < LANES; i++) {
            xs[i] = hi0;
        }
        sturm_counts(2, b0, b1, d, e2, pivmin, xs, cs);
        nl = cs[0];
        nu = cs[1];
        /* Bisect indices nl .. nu-1 (0-based within the block), LANES at a
         * time: lane l keeps lo[l] < lambda_j <= hi[l] with
         * count(lo) <= j < count(hi). */
        int mstart = m;
        for (j0 = nl; j0 < nu; j0 += LANES) {
            double lo[LANES], hi[LANES], mid[LANES];
            int idx[LANES], cnt[LANES], active, l;
            int nlanes = nu - j0 < LANES ? nu - j0 : LANES;
            for (l = 0; l < LANES; l++) {
                idx[l] = j0 + (l < nlanes ? l : nlanes - 1);
                lo[l] = lo0;
                hi[l] = hi0;
            }
            for (;;) {
                active = 0;
                for (l = 0; l < LANES; l++) {
                    mid[l] = 0.5 * (lo[l] + hi[l]);
                }
                for (l = 0; l < nlanes; l++) {
                    double aw = fabs(lo[l]) > fabs(hi[l]) ? fabs(lo[l]) : fabs(hi[l]);
                    double tol = 2.0 * ulp * aw;
                    if (tol < atoli) {
                        tol = atoli;
                    }
                    if (tol < pivmin) {
                        tol = pivmin;
                    }
                    if (hi[l] - lo[l] > tol) {
                        active = 1;
                    }
                }
                if (!active) {
                    break;
                }
                sturm_counts(nlanes, b0, b1, d, e2, pivmin, mid, cnt);
                for (l = 0; l < nlanes; l++) {
                    if (cnt[l] > idx[l]) {
                        hi[l] = mid[l];
                    } else {
                        lo[l] = mid[l];
                    }
                }
            }
            for (l = 0; l < nlanes; l++) {
                w[m] = 0.5 * (lo[l] + hi[l]);
                iblock[m] = b + 1;
                m++;
            }
        }
        /* lanes converge independently: restore ascending order within the block */
        for (i = mstart + 1; i < m; i++) {
            double v = w[i];
            int k = i - 1;
            while (k >= mstart && w[k] > v) { w[k + 1] = w[k]; k--; }
            w[k + 1] = v;
        }
        b0 = b1;
    }
    return m;
}

int logt_tridiag_count(int n, const double *d, const double *e, double x)
{
    double emax2 = 0.0, pivmin, q;
    int i, c;
    for (i = 0; i < n - 1; i++) {
        double t = e[i] * e[i];
        if (t > emax2) {
            emax2 = t;
        }
    }
    pivmin = DBL_MIN * (emax2 > 1.0 ? emax2 : 1.0);
    q = d[0] - x;
    if (fabs(q) < pivmin) {
        q = -pivmin;
    }
    c = q <= 0.0;
    for (i = 1; i < n; i++) {
        q = d[i] - x - e[i - 1] * e[i - 1] / q;
        if (fabs(q) < pivmin) {
            q = -pivmin;
        }
        c += q <= 0.0;
    }
    return c;
}
