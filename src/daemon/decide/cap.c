/* cap.c — what one client's report may claim: an estimate measured at no more threads than it can run. */
#include "cap.h"

void scaf_referee_cap(struct scaf_referee_client *c, uint32_t cpus)
{
    uint32_t most = c->pol.max_threads ? c->pol.max_threads : 1;

    if (cpus && most > cpus)
        most = cpus;
    if (c->pol.report_threads > most)
        c->pol.report_threads = most;
}
