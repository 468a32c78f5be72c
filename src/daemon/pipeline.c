/* pipeline.c — one referee turn: decode the pages, decide, write the pages that changed, log the result. */
#include "pipeline.h"
#include "client.h"
#include "say.h"
#include "scafd.h"
#include "collect/page.h"
#include "decide/clamp.h"
#include "decide/referee.h"
#include "decide/rigid.h"
#include "report/alloclog.h"
#include "report/jsonbuf.h"
#include "report/status.h"
#include "scaf/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int scaf_pipeline_init(struct scafd *d)
{
    d->rclients = calloc(d->opt.max_clients, sizeof *d->rclients);
    d->rallocs = calloc(d->opt.max_clients, sizeof *d->rallocs);
    d->rscratch = calloc(1, sizeof *d->rscratch);
    if (!d->rclients || !d->rallocs || !d->rscratch ||
        scaf_referee_scratch_reserve(d->rscratch, d->opt.max_clients) < 0) {
        scaf_pipeline_free(d);
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void scaf_pipeline_free(struct scafd *d)
{
    free(d->rclients);
    free(d->rallocs);
    if (d->rscratch)
        scaf_referee_scratch_free(d->rscratch);
    free(d->rscratch);
    d->rclients = NULL;
    d->rallocs = NULL;
    d->rscratch = NULL;
}

/* collect: every client's page through the one decoder; a torn report keeps the last whole one. */
static void collect(struct scafd *d)
{
    for (uint32_t i = 0; i < d->nclients; i++) {
        struct scaf_client *c = d->clients[i];
        (void)scaf_page_read(c->page, c->max_threads, c->hello_fixed, &c->report);
    }
}

static int decide(struct scafd *d)
{
    struct scaf_referee_snapshot snap;
    uint64_t now = scaf_clock_ns(CLOCK_MONOTONIC);

    for (uint32_t i = 0; i < d->nclients; i++) {
        struct scaf_client *c = d->clients[i];

        scaf_referee_collect(&c->report, c->max_threads, c->applied ? &c->alloc : NULL, &d->rclients[i]);
        scaf_referee_clamp(&d->rclients[i], d->capacity.cpus);
        d->rclients[i].uid = c->uid;
        d->rclients[i].rigid_team = scaf_rigid_step(&c->rigid, now, c->report.rigid_regions, c->report.rigid_team,
                                                    c->report.long_region, c->report.last_team);
        scaf_client_state_step(&c->state, now, (uint64_t)(d->opt.probe_interval_s * 1e9),
                               c->applied ? c->alloc.share : 0, d->chunk, c->report.eff_team,
                               c->report.estimate == SCAF_ESTIMATE_NONE ? -1.0 : c->report.efficiency,
                               &d->rclients[i].pol);
    }
    snap = (struct scaf_referee_snapshot){
        .available = d->lookout.available,
        .cpus = d->capacity.cpus,
        .chunk = d->chunk,
        .nclients = d->nclients,
        .clients = d->rclients,
        .cpu_list = d->capacity.cpu_list,
        .cpu_list_len = d->capacity.cpu_list_len,
        .gang = d->opt.gang_quantum_s > 0,
        .per_user = d->opt.shared,
        .min_gain = d->opt.min_gain,
    };
    if (scaf_referee_decide(d->policy, &snap, d->rscratch, d->rallocs) < 0) {
        scaf_say("policy %s failed (%s); allocations unchanged", d->policy->name, strerror(errno));
        return -1;
    }
    return 0;
}

static bool same_alloc(const struct scaf_referee_alloc *a, const struct scaf_referee_alloc *b)
{
    return a->threads == b->threads && a->control == b->control && a->malleable == b->malleable &&
           a->gang_slot == b->gang_slot && memcmp(a->cpuset, b->cpuset, sizeof a->cpuset) == 0;
}

static uint32_t gang_state(const struct scafd *d, uint32_t slot)
{
    if (slot == 0 || d->gang_slots < 2)
        return SCAF_GANG_OFF;
    return slot - 1 == d->gang_turn ? SCAF_GANG_RUN : SCAF_GANG_WAIT;
}

/* apply: pages are written only when something in them changed, so clients are not woken for nothing.
 * Returns whether any client's allocation changed. */
static bool apply(struct scafd *d)
{
    uint32_t nclients = d->nclients;
    bool changed = false;

    d->gang_slots = 0;
    for (uint32_t i = 0; i < nclients; i++)
        if (d->rallocs[i].gang_slot > d->gang_slots)
            d->gang_slots = d->rallocs[i].gang_slot;
    if (d->gang_slots < 2)
        d->gang_slots = 0;
    if (d->gang_turn >= d->gang_slots)
        d->gang_turn = 0;
    for (uint32_t i = 0; i < nclients; i++) {
        struct scaf_client *c = d->clients[i];
        const struct scaf_referee_alloc *a = &d->rallocs[i];
        bool differs = !c->applied || !same_alloc(&c->alloc, a);

        if (differs || c->page_nclients != nclients)
            scaf_page_write(c->page, a->threads, a->control, a->cpuset, nclients, d->capacity.cpus);
        changed |= differs;
        c->alloc = *a;
        c->applied = true;
        c->page_nclients = nclients;
        scaf_page_write_gang(c->page, gang_state(d, a->gang_slot));
    }
    return changed;
}

/* The --log line and the -v line, from the reports and allocations this turn used. */
static void report(struct scafd *d)
{
    if (scaf_alloclog_on(&d->log)) {
        struct scaf_status_daemon sd = scafd_status_daemon(d);
        struct scaf_buf b = {0};
        if (scaf_status_build(&sd, d->clients, d->nclients, &b) == 0)
            scaf_alloclog_write(&d->log, b.p);
        scaf_buf_free(&b);
    }
    if (d->opt.verbose) {
        struct scaf_buf b = {0};
        scaf_buf_printf(&b, "allocation (%s, %u available):", d->policy->name, d->lookout.available);
        for (uint32_t i = 0; i < d->nclients; i++) {
            const struct scaf_client *c = d->clients[i];
            scaf_buf_printf(&b, " %s[%d]=%u%s", c->name, (int)c->pid, c->alloc.threads,
                            c->alloc.control == SCAF_CONTROL_CPUSET ? "(cpuset)" : "");
        }
        if (d->nclients == 0)
            scaf_buf_printf(&b, " no clients");
        if (!b.failed)
            scaf_say("%s", b.p);
        scaf_buf_free(&b);
    }
}

void scaf_pipeline_run(struct scafd *d, bool members)
{
    bool referee = d->referee_due || members;

    d->referee_due = false;
    d->log_due |= members;
    if (!referee && !d->status_due)
        return;
    collect(d);
    if (!referee || decide(d) < 0)
        return; /* a failed policy leaves the pages and log_due as they were */
    if (apply(d) || d->log_due)
        report(d);
    d->log_due = false;
}

void scaf_pipeline_gang_tick(struct scafd *d)
{
    if (d->gang_slots < 2)
        return;
    d->gang_turn = (d->gang_turn + 1) % d->gang_slots;
    for (uint32_t i = 0; i < d->nclients; i++) {
        struct scaf_client *c = d->clients[i];
        if (c->applied)
            scaf_page_write_gang(c->page, gang_state(d, c->alloc.gang_slot));
    }
}
