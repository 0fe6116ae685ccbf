/* See logt_sqdist.h. */
#include <stdint.h>
#include <string.h>

#include "logt_sqdist.h"

#define LOGT_EXP_BITS UINT64_C(0x7ff0000000000000)   /* a double's exponent field */
#define LOGT_EXP_ONE UINT64_C(0x0010000000000000)    /* its lowest bit */

int logt_sqdist_row(const double *restrict g, const double *restrict sqc, double s,
                    double *restrict dist, ptrdiff_t m)
{
    /* (bits & EXP) + ONE reaches bit 63 only when the exponent field is all ones
     * (infinity or NaN): OR-ed over the row, bit 63 flags a non-finite entry. */
    uint64_t flags = 0;
    for (ptrdiff_t j = 0; j < m; j++) {
        double gj = g[j], v = (s + sqc[j]) - 2.0 * gj;
        uint64_t bits;
        memcpy(&bits, &gj, sizeof bits);
        dist[j] = v > 0.0 ? v : 0.0;
        flags |= (bits & LOGT_EXP_BITS) + LOGT_EXP_ONE;
    }
    return (int)(flags >> 63);
}
