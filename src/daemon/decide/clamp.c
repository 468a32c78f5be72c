/* clamp.c — what one client's report may claim: an efficiency measured at no more threads than it can run. */
#include "clamp.h"

void scaf_referee_clamp(struct scaf_referee_client *c, uint32_t cpus)
{
    uint32_t most = c->pol.max_threads ? c->pol.max_threads : 1;

    if (cpus && most > cpus)
        most = cpus;
    if (c->pol.eff_team > most)
        c->pol.eff_team = most;
}
