/* stallrule.c — when a region given fewer threads than it asked for counts as stalled: pure rules for the stall net. */
#include "stallrule.h"

/* "Far longer than its history": a region slower than perfect scaling down by this factor is not just slow. */
#define STALL_FACTOR 10u

uint64_t scaf_stallrule_limit_ns(uint64_t hist_ns, unsigned hist_team, unsigned team, uint64_t floor_ns)
{
    uint64_t expect = hist_ns;

    if (hist_ns && hist_team > team && team >= 1)
        expect = hist_ns / team * hist_team;
    if (expect > UINT64_MAX / STALL_FACTOR)
        return UINT64_MAX;
    expect *= STALL_FACTOR;
    return expect > floor_ns ? expect : floor_ns;
}

int scaf_stallrule_idle(uint64_t user_ticks, uint64_t sys_ticks, uint64_t wall_ns, long hz)
{
    if (hz <= 0 || wall_ns == 0 || user_ticks > sys_ticks)
        return 0;
    /* A yield loop with a CPU to itself spends a sixth to a quarter of it in user space on a 2-vCPU VM with
     * syscall mitigations (13-18 of 100 ticks a second), more where system calls are cheaper: a tenth of a CPU alone
     * missed it in most windows, so twice as much in the kernel is enough, whatever the amount. */
    if (user_ticks * 2 <= sys_ticks)
        return 1;
    /* user_ticks / hz seconds < wall / 10, in integers: user_ticks * 1e9 * 10 < wall_ns * hz. */
    return (double)user_ticks * 1e10 < (double)wall_ns * (double)hz;
}
