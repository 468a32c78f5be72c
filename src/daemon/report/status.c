/* status.c — the daemon's state as JSON: the STATUS_REPLY body and each --log line. */
#include "status.h"
#include "../clientrec.h"
#include "../collect/foreign.h"
#include "../recall/recall.h"
#include "scaf/startenv.h"

#include <errno.h>
#include <math.h>
#include <unistd.h>

static void client_json(struct scaf_buf *b, const struct scaf_client *c)
{
    const struct scaf_page_report *r = &c->report;
    /* Until its first measured report, the curve the memory kept stands in for its estimate (decide/prepare.c). */
    struct scaf_recall_view memory = scaf_recall_view(c);
    uint32_t eff_team = memory.standin ? memory.eff_team : r->eff_team;
    bool first = true;

    /* program: the id of the client whose process tree it is in (a pool's parent), its own id when none. */
    scaf_buf_printf(b, "{\"id\":%u,\"pid\":%d,\"uid\":%u,\"program\":%u,\"name\":", c->id, (int)c->pid,
                    (unsigned)c->uid, c->group);
    scaf_buf_json_string(b, c->name);
    /* threads: the team the page tells the client; share: the contexts the policy gave it (the
     * size of its CPU set). They differ only for a fixed team steered by affinity. */
    scaf_buf_printf(b, ",\"threads\":%u,\"share\":%u,\"malleable\":%s,\"cpuset\":[", c->alloc.threads,
                    c->alloc.share, c->alloc.malleable ? "true" : "false");
    for (int cpu = 0; cpu < SCAF_MAX_CPUS; cpu++)
        if (c->alloc.cpuset[cpu / 64] & (1ull << (cpu % 64))) {
            scaf_buf_printf(b, "%s%d", first ? "" : ",", cpu);
            first = false;
        }
    scaf_buf_printf(b, "],\"nlwp\":%u,\"max_threads\":%u,\"last_team\":%u,\"regions\":%llu,\"efficiency\":",
                    c->lookout.nlwp, c->max_threads, r->last_team, (unsigned long long)r->regions);
    if (memory.standin)
        scaf_buf_printf(b, "%.6f", memory.efficiency);
    else if (r->estimate == SCAF_ESTIMATE_NONE)
        scaf_buf_printf(b, "null");
    else
        scaf_buf_printf(b, "%.6f", r->efficiency);
    scaf_buf_printf(b, ",\"coef\":%.6g,\"estimate\":\"%s\",\"long_region\":%s,\"experiments\":%llu",
                    isfinite(c->alloc.coef) ? c->alloc.coef : 0.0,
                    memory.standin ? "remembered" : scaf_pageread_estimate_name(r->estimate),
                    r->long_region ? "true" : "false", (unsigned long long)r->experiments);
    scaf_buf_printf(b, ",\"gang\":%u,\"control\":\"%s\",\"rigid_team\":%u,\"wanted\":%u",
                    c->alloc.gang_slot, c->alloc.control == SCAF_CONTROL_CPUSET ? "cpuset" : "threads",
                    c->alloc.rigid, r->wanted);
    /* Idle: it ran nothing for a while, holds no share (share 0) and keeps its team for its next region. */
    scaf_buf_printf(b, ",\"idle\":%s", c->alloc.idle ? "true" : "false");
    scaf_buf_printf(b, ",\"eff_threads\":%u,\"probing\":%s", eff_team,
                    c->state.probe.probe_since_ns || c->state.shrink.probe_since_ns ? "true" : "false");
    scaf_buf_printf(b, ",\"verdict\":\"%s\",\"verdict_source\":\"%s\",\"reason\":", scaf_pageread_verdict_name(r->verdict),
                    scaf_pageread_source_name(r->source));
    scaf_buf_json_string(b, r->reason);
    /* What the memory knew of its program when it arrived (null: nothing; run_s 0: how long it runs is not
     * known), the share it was offered to start with, and the team the layer started it with (0: as usual). */
    if (memory.runs)
        scaf_buf_printf(b, ",\"memory\":{\"runs\":%u,\"verdict\":\"%s\",\"source\":\"%s\",\"run_s\":%.3f}",
                        memory.runs, scaf_pageread_verdict_name(memory.verdict), scaf_pageread_source_name(memory.source),
                        memory.run_s);
    else
        scaf_buf_printf(b, ",\"memory\":null");
    scaf_buf_printf(b, ",\"start_team\":%u,\"started_with\":%u,\"runtimes\":[", memory.start_team, r->started_with);
    first = true;
    for (int i = 0; i < SCAF_RT_COUNT; i++)
        if (r->runtimes & (1u << i)) {
            const struct scaf_startenv_runtime *rt = &scaf_startenv_table()[i];

            scaf_buf_printf(b, "%s{\"name\":\"%s\",\"variable\":", first ? "" : ",", rt->name);
            if (rt->var)
                scaf_buf_printf(b, "\"%s\"", rt->var);
            else
                scaf_buf_printf(b, "null");
            scaf_buf_printf(b, ",\"follows\":%s,\"spins\":%s}",
                            rt->follow == SCAF_FOLLOW_LAYER || (r->runtimes_follow & (1u << i)) ? "true" : "false",
                            rt->spins ? "true" : "false");
            first = false;
        }
    scaf_buf_printf(b, "],\"runtime_team\":%u}", r->runtime_team);
}

/* Where `cpus` comes from: which bound applies, and the cgroup quota if any. Printed before "clients",
 * which stays last. */
static void cgroup_json(struct scaf_buf *b, const struct scaf_status_daemon *d)
{
    const char *limit = "affinity";

    if (d->cpus_override)
        limit = "--cpus";
    else if (d->quota > 0 && d->quota < d->affinity)
        limit = "cgroup quota";
    scaf_buf_printf(b, "\"refused\":%llu,\"affinity\":%u,\"limit\":\"%s\",\"cgroup\":{\"version\":",
                    (unsigned long long)d->refused, d->affinity, limit);
    if (d->cgroup_version)
        scaf_buf_printf(b, "%d", d->cgroup_version);
    else
        scaf_buf_printf(b, "null");
    scaf_buf_printf(b, ",\"quota\":");
    if (d->quota) {
        scaf_buf_printf(b, "%u,\"quota_file\":", d->quota);
        scaf_buf_json_string(b, d->quota_file ? d->quota_file : "");
    } else {
        scaf_buf_printf(b, "null,\"quota_file\":null");
    }
    scaf_buf_printf(b, "},");
}

/* The busiest processes that are not clients, each with why (docs/daemon.md, "Foreign processes"). */
static void foreign_json(struct scaf_buf *b, const struct scaf_foreign *f)
{
    const struct scaf_foreign_proc *top[SCAF_FOREIGN_SHOW];
    size_t n = f ? scaf_foreign_top(f, top, SCAF_FOREIGN_SHOW) : 0;

    scaf_buf_printf(b, ",\"foreign_procs\":[");
    for (size_t i = 0; i < n; i++) {
        scaf_buf_printf(b, "%s{\"pid\":%d,\"name\":", i ? "," : "", (int)top[i]->pid);
        scaf_buf_json_string(b, top[i]->comm);
        scaf_buf_printf(b, ",\"cmd\":");
        scaf_buf_json_string(b, top[i]->cmd);
        scaf_buf_printf(b, ",\"uid\":%u,\"cpu\":%.3f,\"reason\":", top[i]->uid, top[i]->cpu);
        scaf_buf_json_string(b, top[i]->reason);
        scaf_buf_printf(b, "}");
    }
    scaf_buf_printf(b, "]");
}

int scaf_status_build(const struct scaf_status_daemon *daemon, struct scaf_client *const *clients, uint32_t nclients,
                      struct scaf_buf *b)
{
    uint32_t shown = 0, others = 0, other_threads = 0;

    scaf_buf_printf(b, "{\"version\":%u,\"daemon_pid\":%d,\"policy\":", SCAF_PROTO_VERSION, (int)getpid());
    scaf_buf_json_string(b, daemon->policy);
    /* A site's batch job id: which job got what, in status, --log lines and Prometheus labels. */
    scaf_buf_printf(b, ",\"job\":");
    if (daemon->job)
        scaf_buf_json_string(b, daemon->job);
    else
        scaf_buf_printf(b, "null");
    scaf_buf_printf(b, ",\"cpus\":%u,\"available\":%u,\"foreign\":%.3f,\"rate_hz\":%g,\"chunk\":%u,\"time\":%.6f,",
                    daemon->cpus, daemon->available, daemon->foreign, daemon->rate_hz, daemon->chunk, daemon->time);
    cgroup_json(b, daemon);
    scaf_buf_printf(b, "\"clients\":[");
    for (uint32_t i = 0; i < nclients; i++) {
        /* Everything about a client (pid, name, user, efficiency, ...) is its user's business. */
        if (daemon->private_view && clients[i]->uid != daemon->viewer) {
            others++;
            other_threads += clients[i]->alloc.threads;
            continue;
        }
        if (shown++)
            scaf_buf_printf(b, ",");
        client_json(b, clients[i]);
    }
    scaf_buf_printf(b, "]");
    foreign_json(b, daemon->procs);
    if (daemon->private_view)
        scaf_buf_printf(b, ",\"other_clients\":%u,\"other_threads\":%u", others, other_threads);
    scaf_buf_printf(b, "}");
    if (b->failed) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}
