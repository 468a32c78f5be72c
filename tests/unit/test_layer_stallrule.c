/* test_layer_stallrule.c — when a region given fewer threads than it asked for counts as stalled, row by row. */
#include "../../src/layer/core/stallrule.h"

#include <stdio.h>

#include "check.h"

#define S 1000000000ull

int main(void)
{
    static const struct {
        const char *what;
        uint64_t hist_ns;
        unsigned hist_team, team;
        uint64_t floor_ns, want;
    } limits[] = {
        {"no history: the floor", 0, 0, 1, 10 * S, 10 * S},
        {"short history: the floor", S / 10, 2, 1, 10 * S, 10 * S},
        {"history at the same team: ten times it", 3 * S, 2, 2, 10 * S, 30 * S},
        {"history at a larger team: scaled down perfectly", 2 * S, 4, 2, 1 * S, 40 * S},
        {"history at a smaller team: not scaled up", 2 * S, 1, 2, 1 * S, 20 * S},
        {"team 0 taken as the history's", 2 * S, 4, 0, 1 * S, 20 * S},
        {"no floor", S / 10, 1, 1, 0, S},
        {"huge history saturates", UINT64_MAX / 2, 1, 1, 0, UINT64_MAX},
    };
    static const struct {
        const char *what;
        uint64_t user_ticks, sys_ticks, wall_ns;
        long hz;
        int want;
    } idles[] = {
        {"no time at all: waits on a futex", 0, 0, S, 100, 1},
        {"a yield loop: a tick a second in user space, the rest in the kernel", 1, 60, S, 100, 1},
        {"a yield loop starved by other programs", 1, 3, S, 100, 1},
        {"just under a tenth of a CPU, mostly in the kernel", 9, 40, S, 100, 1},
        {"as much in user space as in the kernel", 5, 5, S, 100, 1},
        {"a yield loop with a CPU of its own, as the 2-vCPU VM counts it", 16, 84, S, 100, 1},
        {"the same loop sharing its CPU with another", 11, 57, S, 100, 1},
        {"a yield loop with a CPU of its own, a third in user space", 33, 67, S, 100, 1},
        {"a tenth of a CPU in user space, the rest in the kernel", 10, 90, S, 100, 1},
        {"computing with many system calls: more than a third in user space", 40, 60, S, 100, 0},
        {"a tenth of a CPU, as much in user space as in the kernel", 10, 10, S, 100, 0},
        {"computing", 100, 0, S, 100, 0},
        {"computing, starved to a fifth", 20, 0, S, 100, 0},
        {"computing, starved to a twentieth by a loaded machine", 5, 0, S, 100, 0},
        {"computing a little more in user space than in the kernel", 6, 5, S, 100, 0},
        {"no window", 0, 0, 0, 100, 0},
        {"no clock rate", 0, 0, S, 0, 0},
        {"another clock rate", 99, 500, S, 1000, 1},
    };

    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        uint64_t got = scaf_stallrule_limit_ns(limits[i].hist_ns, limits[i].hist_team, limits[i].team,
                                               limits[i].floor_ns);
        CHECK(got == limits[i].want, "%s: limit %llu, want %llu", limits[i].what, (unsigned long long)got,
              (unsigned long long)limits[i].want);
    }
    for (size_t i = 0; i < sizeof idles / sizeof idles[0]; i++) {
        int got = scaf_stallrule_idle(idles[i].user_ticks, idles[i].sys_ticks, idles[i].wall_ns, idles[i].hz);
        CHECK(got == idles[i].want, "%s: %d, want %d", idles[i].what, got, idles[i].want);
    }
    return check_exit("test_layer_stallrule");
}
