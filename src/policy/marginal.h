/* marginal.h — the allocation the model-based policies share: a curve per client, contexts by marginal gain, damping by confidence. */
#ifndef SCAF_POLICY_MARGINAL_H
#define SCAF_POLICY_MARGINAL_H

#include "scaf/policy.h"

/*
 * min_gain = 0: the speedup policy (a context goes wherever it adds any
 * speedup; contexts no curve gains from go to clients whose curve is a guess
 * from one point, so only a saturation that was measured leaves them idle).
 * min_gain > 0: the consumption policy (a context goes only where it adds at
 * least min_gain; the rest stay idle). undamped (may be NULL) gets the
 * allocation before damping. Returns 0, or -1 with errno = EINVAL or ENOMEM.
 */
int scaf_marginal_decide(const struct scaf_policy_input *in, double min_gain, uint32_t *share, double *coef,
                         uint32_t *undamped);

#endif
