/* foreignload.h — the lookout's arithmetic, pure: busy contexts no client explains, their moving average, and the contexts left to clients; scafd and the simulator both call it (not an installed interface). */
#ifndef SCAFD_FOREIGNLOAD_H
#define SCAFD_FOREIGNLOAD_H

#include <stdint.h>

/* Only foreign processes that kept at least this much busy (contexts, smoothed) leave the average at once when
 * they end (scaf_foreignload_gone); scaf_foreign_gone_cpu looks only those up again. */
#define SCAF_FOREIGN_GONE_MIN_CPU 0.05

/* Busy contexts not explained by clients over one interval: (dbusy - dclients) ticks over the interval's length on
 * one CPU (dtotal / ncpu), clamped to [0, ncpu]; 0 for an empty interval. */
double scaf_foreignload_measure(uint64_t dbusy, uint64_t dclients, uint64_t dtotal, uint32_t ncpu);

/* One step of a moving average of busy contexts (the lookout's and each listed foreign process's): OLD after an
 * interval that measured F. */
double scaf_foreignload_ema(double old, double f);

/*
 * One step of the smoothed foreign load: the average FOREIGN after an interval that measured F, less GONE,
 * the smoothed load of foreign processes that ended since (never below 0). *PREV gets the average the step
 * started from, GONE taken out: `available` counts the smaller of the two.
 */
double scaf_foreignload_smooth(double foreign, double f, double gone, double *prev);

/* The contexts left to clients: cpus less the smaller of the foreign load now and one sample earlier, each less
 * GONE (the smoothed load of foreign processes that ended since that sample: scaf_foreign_gone_cpu), rounded; >= 1. */
uint32_t scaf_foreignload_available(uint32_t cpus, double foreign, double foreign_prev, double gone);

/* What a foreign process that has ended takes out of the average at once: its smoothed load SMOOTHED when that is
 * at least SCAF_FOREIGN_GONE_MIN_CPU, else 0 (it decays with the average). */
double scaf_foreignload_gone(double smoothed);

#endif
