/* registry.c — the table of policies, name lookup, and the ctypes entry point. */
#include "scaf/policy.h"

#include <errno.h>
#include <string.h>

/* The first entry is the default; SIGUSR1 steps through them in this order. */
static const struct scaf_policy policies[] = {
    {"speedup", "each context to the largest gain on fitted speedup curves (they may peak), damped", scaf_policy_speedup, 1},
    {"equipartition", "equal shares: floor(N/k) each, the remainder spread", scaf_policy_equipartition, 0},
    {"consumption", "chunk by chunk by marginal speedup; idle below --min-gain", scaf_policy_consumption, 1},
};

size_t scaf_policy_count(void)
{
    return sizeof(policies) / sizeof(policies[0]);
}

const struct scaf_policy *scaf_policy_at(size_t index)
{
    return index < scaf_policy_count() ? &policies[index] : NULL;
}

const struct scaf_policy *scaf_policy_lookup(const char *name)
{
    for (size_t i = 0; name && i < scaf_policy_count(); i++)
        if (strcmp(policies[i].name, name) == 0)
            return &policies[i];
    errno = ENOENT;
    return NULL;
}

int scaf_policy_run(const char *name, uint32_t available, uint32_t chunk, uint32_t nclients,
                    const struct scaf_policy_client *clients, uint32_t *share, double *coef)
{
    return scaf_policy_run_gain(name, available, chunk, 0.0, nclients, clients, share, coef);
}

int scaf_policy_run_gain(const char *name, uint32_t available, uint32_t chunk, double min_gain, uint32_t nclients,
                         const struct scaf_policy_client *clients, uint32_t *share, double *coef)
{
    const struct scaf_policy *p = scaf_policy_lookup(name);
    struct scaf_policy_input in = {available, chunk, nclients, clients, min_gain};

    if (!p)
        return -1;
    return p->decide(&in, share, coef);
}

size_t scaf_policy_client_size(void)
{
    return sizeof(struct scaf_policy_client);
}
