/* equipartition.c — equal shares: floor(N/k) each in chunks, the remainder spread, bounds honoured. */
#include "scaf/policy.h"

#include <errno.h>
#include <stdlib.h>

/*
 * Equal weights through the integer partition: floor(N/k) (in chunks) each,
 * the remainder one chunk at a time to the lowest indices, a bounded client's
 * excess to the others, and 1 each when there are more clients than
 * contexts. The model policies start from these shares (src/policy/marginal.c),
 * so clients they cannot tell apart get exactly this.
 */
int scaf_policy_equipartition(const struct scaf_policy_input *in, uint32_t *share, double *coef)
{
    uint32_t k;
    double *ones = NULL;
    uint32_t *bound = NULL;
    int ret = -1;

    if (!in || in->available == 0 || in->chunk == 0 || (in->nclients > 0 && (!in->clients || !share))) {
        errno = EINVAL;
        return -1;
    }
    k = in->nclients;
    if (k == 0)
        return 0;
    ones = malloc(k * sizeof(*ones));
    bound = malloc(k * sizeof(*bound));
    if (!ones || !bound) {
        errno = ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < k; i++) {
        ones[i] = 1.0;
        bound[i] = in->clients[i].max_threads; /* 0 = no bound, defensively */
    }
    if (scaf_intpart_chunked(ones, k, in->available, in->chunk, bound, share) < 0)
        goto out;
    if (coef)
        for (uint32_t i = 0; i < k; i++)
            coef[i] = 0.0;
    ret = 0;
out:
    free(ones);
    free(bound);
    return ret;
}
