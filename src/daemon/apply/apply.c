/* apply.c — writes the referee's allocations to the pages that changed, and passes the gangs' turns. */
#include "apply.h"
#include "pagewrite.h"
#include "../clientrec.h"

#include <string.h>

static bool same_alloc(const struct scaf_referee_alloc *a, const struct scaf_referee_alloc *b)
{
    return a->threads == b->threads && a->control == b->control && a->malleable == b->malleable &&
           a->gang_slot == b->gang_slot && a->idle == b->idle && memcmp(a->cpuset, b->cpuset, sizeof a->cpuset) == 0;
}

static uint32_t gang_state(const struct scaf_gangs *g, uint32_t slot)
{
    if (slot == 0 || g->slots < 2)
        return SCAF_GANG_OFF;
    return slot - 1 == g->turn ? SCAF_GANG_RUN : SCAF_GANG_WAIT;
}

bool scaf_apply_run(struct scaf_client *const *clients, uint32_t n, const struct scaf_referee_alloc *allocs,
                    uint32_t cpus, struct scaf_gangs *g)
{
    bool changed = false;

    g->slots = 0;
    for (uint32_t i = 0; i < n; i++)
        if (allocs[i].gang_slot > g->slots)
            g->slots = allocs[i].gang_slot;
    if (g->slots < 2)
        g->slots = 0;
    if (g->turn >= g->slots)
        g->turn = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct scaf_client *c = clients[i];
        const struct scaf_referee_alloc *a = &allocs[i];
        bool differs = !c->applied || !same_alloc(&c->alloc, a);

        if (differs || c->page_nclients != n)
            scaf_pagewrite_alloc(c->page, a->threads, a->control, a->cpuset, n, cpus);
        changed |= differs;
        c->alloc = *a;
        c->applied = true;
        c->page_nclients = n;
        scaf_pagewrite_gang(c->page, gang_state(g, a->gang_slot));
        scaf_pagewrite_idle(c->page, a->idle);
    }
    return changed;
}

void scaf_apply_gang_tick(struct scaf_client *const *clients, uint32_t n, struct scaf_gangs *g)
{
    if (g->slots < 2)
        return;
    g->turn = (g->turn + 1) % g->slots;
    for (uint32_t i = 0; i < n; i++) {
        struct scaf_client *c = clients[i];
        if (c->applied)
            scaf_pagewrite_gang(c->page, gang_state(g, c->alloc.gang_slot));
    }
}
