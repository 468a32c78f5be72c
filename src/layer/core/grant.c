/* grant.c — the split of a client's share between its thread-count permits: pure, table-tested (tests/unit/test_layer_grant.c). */
#include "grant.h"

unsigned scaf_grant_split(unsigned share, unsigned busy, const struct scaf_grant_want *w, unsigned n,
                          unsigned *grant)
{
    unsigned budget, used = 0, active = 0;
    int more = 1;

    if (share < 1)
        share = 1;
    budget = share - 1 > busy ? share - 1 - busy : 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned max = w[i].max;

        grant[i] = 0;
        if (w[i].state == SCAF_GRANT_INACTIVE)
            continue;
        /* A min above the max is the requester's error: the max wins. */
        grant[i] = w[i].min < max ? w[i].min : max;
        used += grant[i];
    }
    budget = budget > used ? budget - used : 0;
    /* One at a time round the permits: the fair split of whatever is left. */
    while (budget > 0 && more) {
        more = 0;
        for (unsigned i = 0; i < n && budget > 0; i++) {
            if (w[i].state == SCAF_GRANT_INACTIVE || grant[i] >= w[i].max)
                continue;
            grant[i]++;
            budget--;
            more = 1;
        }
    }
    for (unsigned i = 0; i < n; i++)
        if (w[i].state == SCAF_GRANT_ACTIVE)
            active += grant[i];
    return active;
}
