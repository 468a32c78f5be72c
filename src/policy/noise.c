/* noise.c — how much a client's reported efficiency wanders at one team size: the confidence the damping uses. */
#include "scaf/policy.h"

#include <math.h>

/*
 * Exponentially weighted (weight alpha for the new sample) so that the figure
 * follows the machine's load rather than the whole history; restarted when p'
 * changes, because E at 2 threads and E at 3 are different quantities. The
 * variance update is the standard incremental form for EW moments.
 */
double scaf_noise_update(struct scaf_noise *st, uint32_t p, double e, double alpha)
{
    double d;

    if (!st)
        return 0.0;
    if (p < 2 || !isfinite(e) || e < 0.0 || !(alpha > 0.0 && alpha <= 1.0)) {
        st->p = 0;
        st->n = 0;
        return 0.0;
    }
    if (st->p != p || st->n == 0) {
        st->p = p;
        st->n = 1;
        st->mean = e;
        st->var = 0.0;
        return 0.0;
    }
    d = e - st->mean;
    st->mean += alpha * d;
    st->var = (1.0 - alpha) * (st->var + alpha * d * d);
    if (st->n < UINT32_MAX)
        st->n++;
    return st->n >= SCAF_NOISE_MIN_SAMPLES ? sqrt(st->var) : 0.0;
}
