/* rundelay.h — the calling thread's run-queue delay: time it was runnable but another thread ran (Linux schedstat). */
#ifndef SCAF_LAYER_RUNDELAY_H
#define SCAF_LAYER_RUNDELAY_H

#include <stdint.h>

/*
 * Cumulative nanoseconds the calling thread has waited on a run queue, from
 * /proc/thread-self/schedstat (one pread on a descriptor kept per thread).
 * Returns UINT64_MAX when it cannot be read (no schedstat in this kernel, no
 * /proc); after a failure the thread does not try again.
 */
uint64_t scaf_rundelay_ns(void);

/*
 * Pure: the share of a region's wall time `wall_ns` that the thread spent
 * waiting to run (`delay_ns`), clamped to [0, max]. 0 when wall_ns is 0.
 */
static inline double scaf_rundelay_fraction(uint64_t delay_ns, uint64_t wall_ns, double max)
{
    double f;

    if (wall_ns == 0)
        return 0.0;
    f = (double)delay_ns / (double)wall_ns;
    return f < 0.0 ? 0.0 : f > max ? max : f;
}

#endif
