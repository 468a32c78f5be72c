/* prepare.c — one client made the referee's input: report collected and clamped, uid, rigid team and policy state stepped. */
#include "prepare.h"
#include "clamp.h"
#include "idle.h"
#include "referee.h"
#include "rigid.h"
#include "scaf/policy.h"

#include <math.h>

/*
 * A remembered curve is a prior, not evidence. One that holds its client at one chunk (its reports from one
 * thread say nothing about scaling, so the curve's points stand) is probed after this long, once in each run,
 * until the run has measured it from 2 or more threads, instead of after the probe interval: a run shorter than
 * that interval would measure nothing wider, the memory would keep the curve (a run that measured nothing keeps
 * it), and a program that scales would run on one thread for good. Planted at 0.2, such a curve took a lone
 * program 5.2 s for plain's 2.6 on 2 CPUs, at every run.
 */
#define PROBE_REMEMBERED_NS 1000000000ull

static bool usable(const struct scaf_memo_point *p)
{
    return p->team >= 2 && p->team <= SCAF_MAX_CPUS && p->efficiency_ppm > 0 && p->efficiency_ppm <= 1000000u;
}

bool scaf_prepare_remembered(const struct scaf_memo_point *pts, uint32_t n, uint32_t most, uint32_t *team, double *e,
                             uint32_t *alt_team, double *alt_e)
{
    int in = -1, low = -1, alt = -1;

    for (uint32_t i = 0; i < n; i++) {
        if (!usable(&pts[i]))
            continue;
        if (pts[i].team <= most && (in < 0 || pts[i].team > pts[in].team))
            in = (int)i;
        if (low < 0 || pts[i].team < pts[low].team)
            low = (int)i;
    }
    if (in < 0)
        in = low; /* nothing within reach: the smallest team, clamped as any report is (decide/clamp.c) */
    if (in < 0)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        if ((int)i == in || !usable(&pts[i]) || pts[i].team > most || pts[i].team == pts[in].team)
            continue;
        if (alt < 0 || fabs(log((double)pts[i].team / pts[in].team)) > fabs(log((double)pts[alt].team / pts[in].team)))
            alt = (int)i;
    }
    *team = pts[in].team;
    *e = scaf_efficiency_from_ppm(pts[in].efficiency_ppm);
    *alt_team = alt < 0 ? 0 : pts[alt].team;
    *alt_e = alt < 0 ? 0.0 : scaf_efficiency_from_ppm(pts[alt].efficiency_ppm);
    return true;
}

void scaf_prepare_client(const struct scaf_prepare_in *in, struct scaf_rigid *rigid, struct scaf_client_state *state,
                         struct scaf_idle *idle, const struct scaf_prepare_turn *turn, struct scaf_referee_client *out)
{
    const struct scaf_page_report *r = in->report;
    struct scaf_idle_obs obs = {
        .now_ns = turn->now_ns,
        .regions = r->regions,
        .woke = in->woke,
        .cpu_ok = in->cpu_ok,
        .cpu_ticks = in->cpu_ticks,
    };

    scaf_referee_collect(r, in->max_threads, in->alloc, out);
    scaf_referee_clamp(out, turn->cpus);
    out->uid = in->uid;
    out->rigid_team = scaf_rigid_step(rigid, turn->now_ns, r->rigid_regions, r->rigid_team, r->long_region,
                                      r->last_team);
    /* A pool that read its count at start (polars, onnxruntime, the JVM ...) runs that team whatever its share:
     * placed like a fixed team of it (docs/runtimes.md). One thread is no team. */
    if (r->runtime_team >= 2 && r->runtime_team > out->rigid_team)
        out->rigid_team = r->runtime_team;
    uint64_t interval = turn->probe_interval_ns;

    if (in->prior && state->probe.probe_end_ns == 0 && interval > PROBE_REMEMBERED_NS)
        interval = PROBE_REMEMBERED_NS;
    scaf_client_state_step(state, turn->now_ns, interval, in->alloc ? in->alloc->share : 0, turn->chunk,
                           r->eff_team, r->estimate == SCAF_ESTIMATE_NONE ? -1.0 : r->efficiency, &out->pol);
    out->pol.group = in->group;
    /* No measured report yet: what the memory kept of its curve stands in, from the first second. */
    if (in->nremembered && r->estimate < SCAF_ESTIMATE_MEASURED) {
        uint32_t most = out->pol.max_threads ? out->pol.max_threads : 1;

        if (turn->cpus && most > turn->cpus)
            most = turn->cpus;
        if (scaf_prepare_remembered(in->remembered, in->nremembered, most, &out->pol.eff_team, &out->pol.efficiency,
                                    &out->pol.alt_team, &out->pol.alt_efficiency)) {
            /* This run's points belong to its own reports, not to the remembered curve. */
            out->pol.side_team = 0;
            out->pol.side_efficiency = 0.0;
            scaf_referee_clamp(out, turn->cpus);
        }
    }
    /* After the collect, which clears the entry. */
    out->idle = turn->idle_rule && scaf_idle_step(idle, &obs, turn->idle_rule);
    out->idle_epoch = idle->epoch;
    /* Any trace of a region (its count, the team of the last one, one running long) says it has opened one. */
    out->regionless = r->regions == 0 && r->last_team == 0 && !r->long_region;
}
