/* startteam.c — the team a program starts with: the share a static split would give it among the programs running now or usually beside it. */
#include "scaf/policy.h"

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
