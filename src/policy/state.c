/* state.c — the per-client state a caller of the model policies keeps between rounds, stepped once per round. */
#include "scaf/policy.h"

#include <math.h>

/*
 * Whether a measured point (the second or the third) shows the curve still
 * rising at the report's team: a smaller team at a lower speedup, or a larger
 * team at a higher one, by more than twice the noise of the two (each
 * point's sd of E taken as the report's, scaled to its E). A curve that peaks
 * once rises everywhere below a team that ran faster than a smaller one, so
 * either way the allocation is not past its peak. Without a measured noise,
 * nothing is claimed.
 */
static bool climbing(const struct scaf_policy_client *pol, uint32_t p, double e)
{
    const uint32_t team[2] = {pol->alt_team, pol->side_team};
    const double eff[2] = {pol->alt_efficiency, pol->side_efficiency};

    if (!(pol->e_sd > 0.0) || !(e > 0.0) || p < 2)
        return false;
    for (int j = 0; j < 2; j++) {
        double s_sd = pol->e_sd * p, t_sd = pol->e_sd * (eff[j] / e) * team[j];
        double rise = (e * p - eff[j] * team[j]) * (team[j] < p ? 1.0 : -1.0);

        if (team[j] >= 2 && team[j] != p && eff[j] > 0.0 && rise > 2.0 * sqrt(s_sd * s_sd + t_sd * t_sd))
            return true;
    }
    return false;
}

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
                              pol->alt_team, known && climbing(pol, eff_team, efficiency), &tm);
    if (shrink && !pol->probe)
        pol->probe = shrink == 1 ? SCAF_PROBE_SHRINK : SCAF_PROBE_HOLD;
}

size_t scaf_client_state_size(void)
{
    return sizeof(struct scaf_client_state);
}
