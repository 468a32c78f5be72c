/* foreignload.c — the lookout's arithmetic, pure: busy contexts no client explains, their moving average, and the contexts left to clients. */
#include "foreignload.h"

#include <math.h>

/* Weight of the newest sample in the moving average: a busy loop shows up within 2-3 s of one-second samples. */
#define FOREIGNLOAD_ALPHA 0.5

double scaf_foreignload_measure(uint64_t dbusy, uint64_t dclients, uint64_t dtotal, uint32_t ncpu)
{
    double per_cpu, f;

    if (dtotal == 0 || ncpu == 0 || dclients >= dbusy)
        return 0.0;
    /* dtotal covers ncpu CPUs: dtotal/ncpu ticks is the interval's length on one CPU. */
    per_cpu = (double)dtotal / ncpu;
    f = (double)(dbusy - dclients) / per_cpu;
    return f > ncpu ? ncpu : f;
}

double scaf_foreignload_ema(double old, double f)
{
    return FOREIGNLOAD_ALPHA * f + (1.0 - FOREIGNLOAD_ALPHA) * old;
}

double scaf_foreignload_smooth(double foreign, double f, double gone, double *prev)
{
    /* A process's smoothed load in the foreign list is its share of this average (the same step): what ended
     * leaves at once. Its last interval stays in f, and goes at the next sample. */
    double kept = gone > 0.0 ? fmax(0.0, foreign - gone) : foreign;

    *prev = kept;
    return scaf_foreignload_ema(kept, f);
}

uint32_t scaf_foreignload_available(uint32_t cpus, double foreign, double foreign_prev, double gone)
{
    /* A context goes only to foreign load seen in two samples in a row: one busy second (a command
     * starting a program, `scaf run`'s own start-up, a bench harness between runs) takes nothing. What has
     * ended is out at once: until the next sample an arrival (a start team is the program's for its whole run)
     * or a turn would be sized by a program that is gone. */
    double kept = fmax(0.0, fmin(foreign, foreign_prev) - fmax(gone, 0.0));
    int64_t available = (int64_t)cpus - (int64_t)lround(kept);

    return available < 1 ? 1 : (uint32_t)available;
}

double scaf_foreignload_gone(double smoothed)
{
    return smoothed >= SCAF_FOREIGN_GONE_MIN_CPU ? smoothed : 0.0;
}
