/* prepare.c — one client made the referee's input: report collected and clamped, uid, rigid team and policy state stepped. */
#include "prepare.h"
#include "clamp.h"
#include "idle.h"
#include "referee.h"
#include "rigid.h"
#include "scaf/policy.h"

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
    scaf_client_state_step(state, turn->now_ns, turn->probe_interval_ns, in->alloc ? in->alloc->share : 0,
                           turn->chunk, r->eff_team, r->estimate == SCAF_ESTIMATE_NONE ? -1.0 : r->efficiency,
                           &out->pol);
    /* After the collect, which clears the entry. */
    out->idle = turn->idle_rule && scaf_idle_step(idle, &obs, turn->idle_rule);
    out->idle_epoch = idle->epoch;
}
