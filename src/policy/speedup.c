/* speedup.c — the max-speedup policy: every context to the client whose fitted curve gains most from it, damped by confidence. */
#include "marginal.h"

#include <errno.h>
#include <stdlib.h>

/*
 * The model, the allocation and the damping are src/policy/marginal.c's, with
 * no threshold: a context goes wherever it adds any speedup. See
 * docs/policy.md for the curve each report gives and every edge case.
 */
int scaf_policy_speedup(const struct scaf_policy_input *in, uint32_t *share, double *coef)
{
    return scaf_marginal_decide(in, 0.0, share, coef, NULL);
}

int scaf_policy_speedup_model(const struct scaf_policy_input *in, double *coef, double *exact)
{
    uint32_t k = in ? in->nclients : 0, *out = malloc((k ? k : 1) * sizeof(*out)),
             *undamped = malloc((k ? k : 1) * sizeof(*undamped));
    int ret = -1;

    if (!out || !undamped) {
        errno = ENOMEM;
        goto out;
    }
    if (scaf_marginal_decide(in, 0.0, out, coef, undamped) < 0)
        goto out;
    for (uint32_t i = 0; exact && i < k; i++)
        exact[i] = undamped[i];
    ret = 0;
out:
    free(out);
    free(undamped);
    return ret;
}
