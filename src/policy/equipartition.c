/* equipartition.c — equal shares: floor(N/k) each, the remainder spread over the first clients. */
#include "scaf/policy.h"

#include <errno.h>

int scaf_policy_equipartition(const struct scaf_policy_input *in, uint32_t *threads, double *coef)
{
    uint32_t k = in->nclients, n = in->contexts;

    if (n == 0 || (k > 0 && (!in->clients || !threads))) {
        errno = EINVAL;
        return -1;
    }
    for (uint32_t i = 0; i < k; i++) {
        uint32_t share = k > n ? 1 : n / k + (i < n % k);
        threads[i] = share;
        if (coef)
            coef[i] = 0.0;
    }
    return 0;
}
