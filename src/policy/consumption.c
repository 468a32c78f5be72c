/* consumption.c — the consumption policy: a context only where it adds at least min_gain of speedup; the rest stay idle. */
#include "marginal.h"

#include <math.h>

/*
 * The same curves, allocation and damping as the speedup policy
 * (src/policy/marginal.c), with a threshold: contexts that would add less
 * than min_gain to every client are left idle, and contexts nobody's curve
 * gains from are never handed out for want of a better use.
 */
int scaf_policy_consumption(const struct scaf_policy_input *in, uint32_t *share, double *coef)
{
    double min_gain = in && isfinite(in->min_gain) && in->min_gain > 0.0 ? in->min_gain : SCAF_MIN_GAIN_DEFAULT;

    return scaf_marginal_decide(in, min_gain, share, coef, NULL);
}
