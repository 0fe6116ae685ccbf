/* Cyclic Jacobi eigensolver and BLAS-free PSD projection for tiny matrices.
 * See logt_jacobi.h. Classic two-sided cyclic Jacobi with Rutishauser's stable
 * rotation formulas (Golub & Van Loan, Matrix Computations, 8.5). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "logt_jacobi.h"

int logt_jacobi_eigh(int n, double *a, double *w, double *v, int max_sweeps)
{
    int i, j, p, q, r, sweep, round;
    int mm = n + (n & 1);          /* n rounded up to even */
    double fro2 = 0.0, abs_floor, conv2;
    /* per-round rotation data; a round has at most LOGT_JACOBI_MAX_PAIRS pairs */
    int pp[LOGT_JACOBI_MAX_PAIRS], qq[LOGT_JACOBI_MAX_PAIRS];
    double tt[LOGT_JACOBI_MAX_PAIRS], cc[LOGT_JACOBI_MAX_PAIRS];

    if (n > 2 * LOGT_JACOBI_MAX_PAIRS) {
        return LOGT_JACOBI_TOOBIG;
    }

    /* Mirror the upper triangle so both triangles are valid, V = I. */
    for (i = 0; i < n; i++) {
        for (j = i; j < n; j++) {
            double aij = a[i * n + j];
            a[j * n + i] = aij;
            fro2 += (i == j ? 1.0 : 2.0) * aij * aij;
        }
    }
    memset(v, 0, (size_t)n * (size_t)n * sizeof(double));
    for (i = 0; i < n; i++) {
        v[i * n + i] = 1.0;
    }
    /* An off-diagonal entry below abs_floor is negligible in norm (it moves
     * eigenvalues by far less than the backward error eps*||A||_F). */
    abs_floor = DBL_EPSILON * DBL_EPSILON * sqrt(fro2);
    conv2 = DBL_EPSILON * DBL_EPSILON * fro2;

    for (sweep = 0; sweep < max_sweeps; sweep++) {
        int rotated = 0;
        double off2 = 0.0;
        /* Stop when the off-diagonal part E is below eps*||A||_F: then
         * A = V (diag(w) + E) V^T, and since a projection onto a convex set
         * is 1-Lipschitz, dropping E moves Pi(A) by at most ||E||_F, the size
         * of the rounding errors of the rotations themselves. */
        for (p = 0; p < n - 1; p++) {
            for (q = p + 1; q < n; q++) {
                off2 += a[p * n + q] * a[p * n + q];
            }
        }
        if (2.0 * off2 <= conv2) {
            break;
        }
        /* One sweep = m-1 rounds of the round-robin ("circle") ordering,
         * m = n rounded up to even: each round is a set of disjoint pairs.
         * Rotations on disjoint pairs commute and none changes another's
         * (app, aqq, apq), so all angles of a round are computed first (their
         * sqrt/div chains overlap in the CPU) and then applied in turn; the
         * result equals applying them one by one. */
        for (round = 0; round < mm - 1; round++) {
            int np = 0, k;
            for (k = 0; k < mm / 2; k++) {
                /* circle method: position mm-1 fixed, the rest rotate */
                int i1 = k == 0 ? mm - 1 : (round + k) % (mm - 1);
                int i2 = (round + mm - 1 - k) % (mm - 1);
                double apq, app, aqq, dd, rr, t;
                if (i1 >= n || i2 >= n) {
                    continue;   /* the dummy index of an odd n */
                }
                p = i1 < i2 ? i1 : i2;
                q = i1 < i2 ? i2 : i1;
                apq = a[p * n + q];
                if (apq == 0.0) {
                    continue;
                }
                app = a[p * n + p];
                aqq = a[q * n + q];
                /* Negligible relative to both diagonal entries (keeps high
                 * relative accuracy) or in absolute terms. */
                if (apq * apq <= 0.25 * DBL_EPSILON * DBL_EPSILON * fabs(app * aqq)
                    || fabs(apq) <= abs_floor) {
                    a[p * n + q] = 0.0;
                    a[q * n + p] = 0.0;
                    continue;
                }
                /* t = tan(phi), the smaller root of t^2 + 2 t theta - 1 = 0,
                 * theta = (aqq - app) / (2 apq), written without theta so
                 * a tiny apq cannot overflow it (entries are O(1) here and
                 * |apq| > abs_floor, so nothing under- or overflows). */
                dd = aqq - app;
                rr = sqrt(dd * dd + 4.0 * apq * apq);
                t = 2.0 * apq / (fabs(dd) + rr);
                if (dd < 0.0) {
                    t = -t;
                }
                pp[np] = p;
                qq[np] = q;
                tt[np] = t;
                cc[np] = 1.0 / sqrt(t * t + 1.0);
                np++;
            }
            for (k = 0; k < np; k++) {
                double t = tt[k], c = cc[k], s = t * c, apq, app, aqq;
                p = pp[k];
                q = qq[k];
                apq = a[p * n + q];
                app = a[p * n + p];
                aqq = a[q * n + q];
                rotated = 1;
                a[p * n + p] = app - t * apq;
                a[q * n + q] = aqq + t * apq;
                a[p * n + q] = 0.0;
                a[q * n + p] = 0.0;
                for (r = 0; r < n; r++) {
                    double g, h;
                    if (r == p || r == q) {
                        continue;
                    }
                    g = a[r * n + p];
                    h = a[r * n + q];
                    a[r * n + p] = a[p * n + r] = c * g - s * h;
                    a[r * n + q] = a[q * n + r] = s * g + c * h;
                }
                for (r = 0; r < n; r++) {
                    double g = v[r * n + p];
                    double h = v[r * n + q];
                    v[r * n + p] = c * g - s * h;
                    v[r * n + q] = s * g + c * h;
                }
            }
        }
        if (!rotated) {
            break;
        }
    }
    for (i = 0; i < n; i++) {
        w[i] = a[i * n + i];
    }
    return sweep < max_sweeps ? sweep : LOGT_JACOBI_NOCONV;
}

/* x (upper triangle) <- x * 2^k, entry by entry (exact unless the result is
 * subnormal, where it is correctly rounded). */
static void ldexp_upper(int n, double *x, int k)
{
    int i, j;
    for (i = 0; i < n; i++) {
        for (j = i; j < n; j++) {
            x[i * n + j] = ldexp(x[i * n + j], k);
        }
    }
}

/* The projection for max|a_ij| = amax in [0.5 * 2^e, 2^e), |e| <= LOGT_SAFE_EXP. */
static int project_scaled(int n, double *x, double *work, int e)
{
    double *a = work;
    double *v = work + (size_t)n * (size_t)n;
    double *w = v + (size_t)n * (size_t)n;
    double scale, unscale;
    int i, j, k, npos = 0, nneg = 0, status;

    /* Exact power-of-two scaling to max|a_ij| in [0.5, 1). */
    scale = ldexp(1.0, -e);
    unscale = ldexp(1.0, e);
    for (i = 0; i < n; i++) {
        for (j = i; j < n; j++) {
            a[i * n + j] = x[i * n + j] * scale;
        }
    }
    status = logt_jacobi_eigh(n, a, w, v, LOGT_JACOBI_MAX_SWEEPS);
    if (status < 0) {
        return status;
    }
    for (k = 0; k < n; k++) {
        if (w[k] > 0.0) {
            npos++;
        } else if (w[k] < 0.0) {
            nneg++;
        } else if (w[k] != 0.0) {
            return LOGT_JACOBI_NONFINITE;   /* NaN */
        }
    }
    if (nneg == 0) {
        /* Already PSD: the input itself (mirrored) is the projection. */
        for (i = 0; i < n; i++) {
            for (j = i + 1; j < n; j++) {
                x[j * n + i] = x[i * n + j];
            }
        }
        return 0;
    }
    /* P = sum_{w_k > 0} w_k v_k v_k^T, or A - sum_{w_k < 0} w_k v_k v_k^T
     * (whichever has fewer terms), computed on the upper triangle. */
    if (npos <= nneg) {
        for (i = 0; i < n; i++) {
            for (j = i; j < n; j++) {
                double sacc = 0.0;
                for (k = 0; k < n; k++) {
                    if (w[k] > 0.0) {
                        sacc += w[k] * v[i * n + k] * v[j * n + k];
                    }
                }
                x[i * n + j] = sacc * unscale;
            }
        }
    } else {
        for (i = 0; i < n; i++) {
            for (j = i; j < n; j++) {
                double sacc = 0.0;
                for (k = 0; k < n; k++) {
                    if (w[k] < 0.0) {
                        sacc -= w[k] * v[i * n + k] * v[j * n + k];
                    }
                }
                x[i * n + j] = (x[i * n + j] * scale + sacc) * unscale;
            }
        }
    }
    for (i = 0; i < n; i++) {
        if (!isfinite(x[i * n + i])) {
            /* a NaN in any eigenvector row reaches its diagonal entry */
            return LOGT_JACOBI_NONFINITE;
        }
        for (j = i + 1; j < n; j++) {
            x[j * n + i] = x[i * n + j];
        }
    }
    return 0;
}

int logt_psd_project_small(int n, double *x, double *work)
{
    double amax = 0.0;
    int i, j, e, status;

    if (n > 2 * LOGT_JACOBI_MAX_PAIRS) {
        return LOGT_JACOBI_TOOBIG;
    }
    for (i = 0; i < n; i++) {
        for (j = i; j < n; j++) {
            double t = fabs(x[i * n + j]);
            if (t > amax) {
                amax = t;
            }
        }
    }
    if (amax == 0.0) {
        memset(x, 0, (size_t)n * (size_t)n * sizeof(double));
        return 0; /* the zero matrix is PSD */
    }
    if (!isfinite(amax)) {
        return LOGT_JACOBI_NONFINITE;
    }
    frexp(amax, &e);
    if (e >= -LOGT_SAFE_EXP && e <= LOGT_SAFE_EXP) {
        return project_scaled(n, x, work, e);
    }
    /* Subnormal or near-overflow entries: 2^-e or 2^e is not a normal
     * number, so rescale the matrix itself (max|a_ij| in [0.5, 1)), project,
     * and scale the result back, checking for overflow. */
    ldexp_upper(n, x, -e);
    status = project_scaled(n, x, work, 0);
    if (status != 0) {
        return status;
    }
    for (i = 0; i < n * n; i++) {
        x[i] = ldexp(x[i], e);
        if (isinf(x[i])) {
            return LOGT_JACOBI_OVERFLOW;
        }
    }
    return 0;
}
