/* scoreboard.c — -t SECS: a table of clients and their threads, like the original scafd's. */
#include "daemon.h"

void scaf_scoreboard_print(const struct scafd *d, FILE *f)
{
    uint32_t threads = 0, nlwp = 0;

    fprintf(f, "%8s %-16s %7s %5s\n", "PID", "NAME", "THREADS", "NLWP");
    /* d->order is the referee's arrival order, refreshed on every arrival and departure. */
    for (uint32_t i = 0; i < d->nclients; i++) {
        const struct scafd_conn *c = &d->conns[d->order[i]];
        if (c->state != SCAFD_CONN_CLIENT)
            continue;
        fprintf(f, "%8d %-16s %7u %5u\n", (int)c->pid, c->name, c->alloc.threads, c->nlwp);
        threads += c->alloc.threads;
        nlwp += c->nlwp;
    }
    fprintf(f, "%8s %-16s %7u %5u\n\n", "all", "", threads, nlwp);
    fflush(f);
}
