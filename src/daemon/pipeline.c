/* pipeline.c — one referee turn: decode the pages, decide, write the pages that changed, log the result. */
#include "pipeline.h"
#include "clientrec.h"
#include "say.h"
#include "scafd.h"
#include "apply/apply.h"
#include "collect/lookout.h"
#include "collect/pageread.h"
#include "decide/idle.h"
#include "decide/prepare.h"
#include "decide/referee.h"
#include "decide/turn.h"
#include "recall/recall.h"
#include "report/alloclog.h"
#include "report/jsonbuf.h"
#include "report/status.h"
#include "scaf/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int scaf_pipeline_init(struct scafd *d)
{
    d->rclients = calloc(d->opt.max_clients, sizeof *d->rclients);
    d->rallocs = calloc(d->opt.max_clients, sizeof *d->rallocs);
    d->rscratch = calloc(1, sizeof *d->rscratch);
    d->dclients = calloc(d->opt.max_clients, sizeof *d->dclients);
    if (!d->rclients || !d->rallocs || !d->rscratch || !d->dclients ||
        scaf_referee_scratch_reserve(d->rscratch, d->opt.max_clients) < 0) {
        scaf_pipeline_free(d);
        errno = ENOMEM;
        return -1;
    }
    long hz = sysconf(_SC_CLK_TCK);
    d->idle_rule = scaf_idle_rule_default(hz > 0 && hz < 1000000 ? (uint32_t)hz : 100);
    d->idle_rule.window_ns = (uint64_t)(d->opt.idle_after_s * 1e9);
    return 0;
}

void scaf_pipeline_free(struct scafd *d)
{
    free(d->rclients);
    free(d->rallocs);
    if (d->rscratch)
        scaf_referee_scratch_free(d->rscratch);
    free(d->rscratch);
    free(d->dclients);
    d->dclients = NULL;
    d->rclients = NULL;
    d->rallocs = NULL;
    d->rscratch = NULL;
}

/*
 * collect: every client's page through the one decoder; a torn report keeps the last whole one. For
 * the idle rule, each client's CPU time (one /proc read): a busy turn's reading starts the span the
 * next turn judges, so that a client is idle one quiet turn after its last region, not two.
 */
static void collect(struct scafd *d, bool referee)
{
    for (uint32_t i = 0; i < d->nclients; i++) {
        struct scaf_client *c = d->clients[i];
        (void)scaf_pageread_report(c->page, c->max_threads, c->hello_fixed, &c->report);
        c->cpu_ok = referee && d->opt.idle_after_s > 0 && scaf_lookout_client_cpu(c->pid, &c->cpu_ticks) == 0;
    }
}

/* decide: what the daemon knows of each client, then the one pure entry point (decide/turn.c) the simulator also drives. */
static int decide(struct scafd *d)
{
    struct scaf_decide_in in = {
        .turn = {
            .now_ns = scaf_clock_ns(CLOCK_MONOTONIC),
            .probe_interval_ns = (uint64_t)(d->opt.probe_interval_s * 1e9),
            .chunk = d->chunk,
            .cpus = d->capacity.cpus,
            .idle_rule = d->opt.idle_after_s > 0 ? &d->idle_rule : NULL,
        },
        .available = scafd_available(d),
        .cpu_list = d->capacity.cpu_list,
        .cpu_list_len = d->capacity.cpu_list_len,
        .gang = d->opt.gang_quantum_s > 0,
        .kernel_places = d->opt.place_kernel,
        .per_user = d->opt.shared,
        .min_gain = d->opt.min_gain,
        .nclients = d->nclients,
        .clients = d->dclients,
    };
    int rc;

    for (uint32_t i = 0; i < d->nclients; i++) {
        struct scaf_client *c = d->clients[i];
        /* The remembered curve stands in until the first measured report (recall/recall.c). */
        struct scaf_recall_curve remembered = scaf_recall_curve(c);

        d->dclients[i] = (struct scaf_decide_client){
            .in = {
                .report = &c->report,
                .max_threads = c->max_threads,
                .alloc = c->applied ? &c->alloc : NULL,
                .uid = c->uid,
                .remembered = remembered.points,
                .nremembered = remembered.npoints,
                .prior = remembered.prior,
                .woke = c->woke,
                .cpu_ok = c->cpu_ok,
                .cpu_ticks = c->cpu_ticks,
                .group = c->group,
            },
            .rigid = &c->rigid,
            .state = &c->state,
            .idle = &c->idle,
        };
        c->woke = false;
    }
    rc = scaf_decide_turn(d->policy, &in, d->rclients, d->rscratch, d->rallocs);
    for (uint32_t i = 0; i < d->nclients; i++)
        scaf_recall_stood_in(d->clients[i], d->rclients[i].pol.eff_team, d->rclients[i].pol.efficiency);
    if (rc < 0) {
        scaf_say("policy %s failed (%s); allocations unchanged", d->policy->name, strerror(errno));
        return -1;
    }
    return 0;
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
        scaf_buf_printf(&b, "allocation (%s, %u available):", d->policy->name, scafd_available(d));
        for (uint32_t i = 0; i < d->nclients; i++) {
            const struct scaf_client *c = d->clients[i];
            scaf_buf_printf(&b, " %s[%d]=%u%s%s", c->name, (int)c->pid, c->alloc.threads,
                            c->alloc.control == SCAF_CONTROL_CPUSET ? "(cpuset)" : "", c->alloc.idle ? "(idle)" : "");
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
    collect(d, referee);
    if (referee)
        scaf_recall_turn(&d->recall, d->clients, d->nclients); /* with the idleness that held since the last turn, before decide judges it */
    if (!referee || decide(d) < 0)
        return; /* a failed policy leaves the pages and log_due as they were */
    if (scaf_apply_run(d->clients, d->nclients, d->rallocs, d->capacity.cpus, &d->gangs) || d->log_due)
        report(d);
    d->log_due = false;
}
