/* scoreboard.c — -t SECS: a table of clients and their threads, like the original scafd's. */
#include "scoreboard.h"
#include "../clientrec.h"

void scaf_scoreboard_print(struct scaf_client *const *clients, uint32_t nclients, FILE *f)
{
    uint32_t threads = 0, nlwp = 0;

    fprintf(f, "%8s %-16s %7s %5s\n", "PID", "NAME", "THREADS", "NLWP");
    for (uint32_t i = 0; i < nclients; i++) {
        const struct scaf_client *c = clients[i];
        fprintf(f, "%8d %-16s %7u %5u\n", (int)c->pid, c->name, c->alloc.threads, c->lookout.nlwp);
        threads += c->alloc.threads;
        nlwp += c->lookout.nlwp;
    }
    fprintf(f, "%8s %-16s %7u %5u\n\n", "all", "", threads, nlwp);
    fflush(f);
}
