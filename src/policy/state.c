/* state.c — the per-client state a caller of the model policies keeps between rounds, stepped once per round. */
#include "scaf/policy.h"

#include <math.h>

void scaf_client_state_step(struct scaf_client_state *st, uint64_t now_ns, uint64_t interval_ns, uint32_t prev,
                            uint32_t chunk, uint32_t eff_team, double efficiency,
                            struct scaf_policy_client *pol)
{
    const struct scaf_probe_timing tm = {interval_ns, SCAF_PROBE_HOLD_MIN_NS, SCAF_PROBE_HOLD_MAX_NS};
    int known = isfinite(efficiency) && efficiency >= 0.0, shrink;

    if (!st || !pol)
        return;
    pol->probe = (uint32_t)scaf_probe_step(&st->probe, now_ns, prev, chunk, eff_team, &tm);
    pol->e_sd = known ? scaf_noise_update(&st->noise, eff_team, efficiency, SCAF_NOISE_ALPHA) : 0.0;
    scaf_points_update(&st->points, now_ns, known ? eff_team : 0, efficiency, SCAF_POINTS_MAX_AGE_NS,
                       &pol->alt_team, &pol->alt_efficiency, &pol->side_team, &pol->side_efficiency);
    shrink = scaf_shrink_step(&st->shrink, now_ns, prev, chunk, known ? eff_team : 0, efficiency,
                              pol->alt_team, &tm);
    if (shrink && !pol->probe)
        pol->probe = shrink == 1 ? SCAF_PROBE_SHRINK : SCAF_PROBE_HOLD;
}

size_t scaf_client_state_size(void)
{
    return sizeof(struct scaf_client_state);
}
