/* startteam.c — the team a program starts with: the share a static split would give it among the programs running now or usually beside it. */
#include "scaf/policy.h"

#include <math.h>

uint32_t scaf_start_team(uint32_t available, uint32_t busy, uint32_t peers, uint32_t bound)
{
    /* 64 bits: 1 + UINT32_MAX must not wrap to a division by zero. */
    uint64_t k = 1ull + (busy > peers ? busy : peers);
    uint64_t team = (available ? available : 1) / k;

    if (team < 1)
        team = 1;
    if (bound && team > bound)
        team = bound;
    return (uint32_t)team;
}

bool scaf_start_outlasts(double elapsed_s, double expect_s, double newcomer_s, bool held)
{
    if (!isfinite(elapsed_s) || !isfinite(expect_s) || !isfinite(newcomer_s) || expect_s <= 0 || newcomer_s <= 0)
        return true; /* either run unknown: it counts, as a static split counts every program */
    if (elapsed_s > expect_s * SCAF_START_OVERRUN)
        return true; /* longer than its runs have been: its memory does not describe this run */
    return expect_s - elapsed_s > newcomer_s * (held ? SCAF_START_ENDING_HELD : SCAF_START_ENDING);
}
