/* status.c — the daemon's state as JSON: the STATUS_REPLY body and each --log line. */
#include "status.h"
#include "../client.h"

#include <errno.h>
#include <math.h>
#include <unistd.h>

static void client_json(struct scaf_buf *b, const struct scaf_client *c)
{
    const struct scaf_page_report *r = &c->report;
    bool first = true;

    scaf_buf_printf(b, "{\"id\":%u,\"pid\":%d,\"name\":", c->id, (int)c->pid);
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
    if (r->estimate == SCAF_ESTIMATE_NONE)
        scaf_buf_printf(b, "null");
    else
        scaf_buf_printf(b, "%.6f", r->efficiency);
    scaf_buf_printf(b, ",\"coef\":%.6g,\"estimate\":\"%s\",\"long_region\":%s,\"experiments\":%llu",
                    isfinite(c->alloc.coef) ? c->alloc.coef : 0.0, scaf_estimate_name(r->estimate),
                    r->long_region ? "true" : "false", (unsigned long long)r->experiments);
    scaf_buf_printf(b, ",\"gang\":%u", c->alloc.gang_slot);
    scaf_buf_printf(b, ",\"eff_threads\":%u,\"probing\":%s", r->eff_threads,
                    c->probe.probe_since_ns ? "true" : "false");
    scaf_buf_printf(b, ",\"verdict\":\"%s\",\"verdict_source\":\"%s\",\"reason\":", scaf_verdict_name(r->verdict),
                    scaf_verdict_source_name(r->source));
    scaf_buf_json_string(b, r->reason);
    scaf_buf_printf(b, "}");
}

int scaf_status_build(const struct scaf_status_daemon *daemon, struct scaf_client *const *clients, uint32_t nclients,
                      struct scaf_buf *b)
{
    scaf_buf_printf(b, "{\"version\":%u,\"daemon_pid\":%d,\"policy\":", SCAF_PROTO_VERSION, (int)getpid());
    scaf_buf_json_string(b, daemon->policy);
    scaf_buf_printf(b, ",\"cpus\":%u,\"available\":%u,\"foreign\":%.3f,\"rate_hz\":%g,\"chunk\":%u,\"time\":%.6f,"
                       "\"clients\":[",
                    daemon->cpus, daemon->available, daemon->foreign, daemon->rate_hz, daemon->chunk, daemon->time);
    for (uint32_t i = 0; i < nclients; i++) {
        if (i)
            scaf_buf_printf(b, ",");
        client_json(b, clients[i]);
    }
    scaf_buf_printf(b, "]}");
    if (b->failed) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}
