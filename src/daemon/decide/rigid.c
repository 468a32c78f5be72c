/* rigid.c — the team a client runs that the daemon did not choose: seen through the page's counter, held for a while. */
#include "rigid.h"

uint32_t scaf_rigid_step(struct scaf_rigid *r, uint64_t now_ns, uint32_t rigid_regions, uint32_t rigid_team,
                         bool long_region, uint32_t last_team)
{
    uint32_t team;

    if (rigid_regions != r->seen) {
        /* Such regions ran since the last turn: their team counts, and the largest one within the
         * hold, since the page only keeps the latest. */
        r->team = now_ns < r->until_ns && r->team > rigid_team ? r->team : rigid_team;
        r->until_ns = now_ns + SCAF_RIGID_HOLD_NS;
        r->seen = rigid_regions;
    }
    team = now_ns < r->until_ns ? r->team : 0;
    if (long_region && last_team > team)
        team = last_team;
    return team >= 2 ? team : 0;
}
