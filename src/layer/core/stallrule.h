/* stallrule.h — when a region given fewer threads than it asked for counts as stalled: pure rules for the stall net (client/stall.h). */
#ifndef SCAF_LAYER_STALLRULE_H
#define SCAF_LAYER_STALLRULE_H

#include <stdint.h>

/*
 * How long a region may run before the net looks at it: `floor_ns`
 * (SCAF_STALL_S), or ten times what its site's history says it takes at
 * `team` threads when that is longer. `hist_ns`: the site's usual wall time
 * at `hist_team` threads (0: no history); a smaller team is allowed the
 * time of perfect scaling down (hist_ns * hist_team / team). Pure
 * (tests/unit/test_layer_stallrule.c).
 */
uint64_t scaf_stallrule_limit_ns(uint64_t hist_ns, unsigned hist_team, unsigned team, uint64_t floor_ns);

/*
 * Whether a thread that used `user_ticks` of user time and `sys_ticks` of
 * system time over `wall_ns` only yields or waits: at least twice as much
 * time in the kernel as in user space, or under a tenth of a CPU in user
 * space and no more of it there than in the kernel. One that calls
 * sched_yield in a loop spends most of its time in the kernel, and one that
 * waits on a futex spends none. A thread that computes is mostly in user
 * space, however little CPU it gets: a machine loaded twenty-fold is not a
 * stall.
 * `hz`: clock ticks a second. Pure.
 */
int scaf_stallrule_idle(uint64_t user_ticks, uint64_t sys_ticks, uint64_t wall_ns, long hz);

#endif
