/* equipartition.c — equal shares: floor(N/k) each in chunks, the remainder spread, bounds honoured. */
#include "scaf/policy.h"

#include <errno.h>
#include <stdlib.h>

uint32_t scaf_policy_group_size(const struct scaf_policy_input *in, uint32_t i)
{
    uint32_t g = in->clients[i].group, n = 0;

    if (g == 0)
        return 1;
    for (uint32_t j = 0; j < in->nclients; j++)
        n += in->clients[j].group == g;
    return n;
}

/*
 * Equal weights per program through the integer partition: a program of one
 * client gets floor(N/k) (in chunks), a program of several clients (a pool's
 * parent and workers) one such share split between them,
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
        ones[i] = 1.0 / (double)scaf_policy_group_size(in, i);
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
