/* status.c — the daemon's state as JSON: the STATUS_REPLY body and each --log line. */
#include "daemon.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static const char *estimate_name(uint32_t e)
{
    switch (e) {
    case SCAF_ESTIMATE_ASSUMED:
        return "assumed";
    case SCAF_ESTIMATE_MEASURED:
        return "measured";
    case SCAF_ESTIMATE_COUNTERS:
        return "counters";
    default:
        return "none";
    }
}

static int by_id(const void *a, const void *b)
{
    const struct scafd_conn *x = *(const struct scafd_conn *const *)a, *y = *(const struct scafd_conn *const *)b;
    return (x->id > y->id) - (x->id < y->id);
}

static void client_json(struct scaf_buf *b, const struct scafd_conn *c)
{
    const struct scaf_page *pg = c->page;
    uint32_t flags = atomic_load_explicit(&pg->client_flags, memory_order_relaxed);
    uint32_t est = atomic_load_explicit(&pg->estimate, memory_order_relaxed);
    uint32_t ppm = atomic_load_explicit(&pg->efficiency_ppm, memory_order_relaxed);
    struct scaf_page_verdict v;
    bool first = true;

    scaf_page_verdict_read(pg, c->hello_nonmalleable, &v);

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
    scaf_buf_printf(b, "],\"nlwp\":%u,\"max_threads\":%u,\"last_team\":%u,\"regions\":%llu,\"efficiency\":", c->nlwp,
                    c->max_threads, atomic_load_explicit(&pg->last_team, memory_order_relaxed),
                    (unsigned long long)atomic_load_explicit(&pg->regions, memory_order_relaxed));
    if (est == SCAF_ESTIMATE_NONE || est > SCAF_ESTIMATE_COUNTERS)
        scaf_buf_printf(b, "null");
    else
        scaf_buf_printf(b, "%.6f", ppm / 1e6);
    scaf_buf_printf(b, ",\"coef\":%.6g,\"estimate\":\"%s\",\"long_region\":%s,\"experiments\":%llu",
                    isfinite(c->alloc.coef) ? c->alloc.coef : 0.0, estimate_name(est),
                    flags & SCAF_CLIENT_LONG_REGION ? "true" : "false",
                    (unsigned long long)atomic_load_explicit(&pg->experiments, memory_order_relaxed));
    scaf_buf_printf(b, ",\"gang\":%u", c->alloc.gang_slot);
    scaf_buf_printf(b, ",\"verdict\":\"%s\",\"verdict_source\":\"%s\",\"reason\":", scaf_verdict_name(v.verdict),
                    scaf_verdict_source_name(v.source));
    scaf_buf_json_string(b, v.reason);
    scaf_buf_printf(b, "}");
}

int scaf_status_build(const struct scafd *d, struct scaf_buf *b)
{
    const struct scafd_conn **list = NULL;
    uint32_t k = 0;

    list = calloc(d->nconns ? d->nconns : 1, sizeof *list);
    if (!list) {
        errno = ENOMEM;
        return -1;
    }
    for (uint32_t i = 0; i < d->nconns; i++)
        if (d->conns[i].state == SCAFD_CONN_CLIENT)
            list[k++] = &d->conns[i];
    qsort(list, k, sizeof *list, by_id);

    scaf_buf_printf(b, "{\"version\":%u,\"daemon_pid\":%d,\"policy\":", SCAF_PROTO_VERSION, (int)getpid());
    scaf_buf_json_string(b, d->policy->name);
    scaf_buf_printf(b, ",\"cpus\":%u,\"available\":%u,\"foreign\":%.3f,\"rate_hz\":%g,\"chunk\":%u,\"time\":%.6f,"
                       "\"clients\":[",
                    d->cap.n, d->available, d->foreign, d->opt.rate_hz, d->chunk, scaf_clock_s(CLOCK_REALTIME));
    for (uint32_t i = 0; i < k; i++) {
        if (i)
            scaf_buf_printf(b, ",");
        client_json(b, list[i]);
    }
    scaf_buf_printf(b, "]}");
    free(list);
    if (b->failed) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}
