/* rigid.h — the team a client runs that the daemon did not choose, held for a while after it was seen (not an installed interface). */
#ifndef SCAFD_RIGID_H
#define SCAFD_RIGID_H

#include <stdbool.h>
#include <stdint.h>

/* How long a team seen in a region the daemon did not choose still counts after the last such
 * region: a program that alternates such regions (num_threads(4) on a 2-CPU default) with steered
 * ones is not reshuffled at every turn. */
#define SCAF_RIGID_HOLD_NS 2000000000ull

/* Per client, kept by the pipeline between referee turns. Zero-initialised: nothing seen. */
struct scaf_rigid {
    uint32_t seen;      /* the page's rigid_regions at the last turn */
    uint32_t team;      /* the largest such team within the hold */
    uint64_t until_ns;  /* it counts until then */
};

/*
 * One referee turn: the team this client runs whatever its allocation, 0 for
 * none. `rigid_regions`/`rigid_team` as the page says (regions the daemon did
 * not choose, and the team of the latest); a change of the count means such
 * regions ran since the last turn, and their team counts for the hold. A
 * region running past the long-region threshold (`long_region`) runs the team
 * it started with (`last_team`) until it returns, whatever the daemon says
 * meanwhile. A team of one is none: one thread never waits for another.
 */
uint32_t scaf_rigid_step(struct scaf_rigid *r, uint64_t now_ns, uint32_t rigid_regions, uint32_t rigid_team,
                         bool long_region, uint32_t last_team);

#endif
