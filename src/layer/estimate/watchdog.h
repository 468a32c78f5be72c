/* watchdog.h — the long-region watch: start times of running outermost regions, and the page flag they raise. */
#ifndef SCAF_LAYER_WATCHDOG_H
#define SCAF_LAYER_WATCHDOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "filter.h"

#define SCAF_WATCH_SLOTS 16

struct scaf_watchdog {
    _Atomic uint64_t t0[SCAF_WATCH_SLOTS]; /* CLOCK_MONOTONIC at entry of a running region, 0 = free */
    _Atomic int flagged;                    /* SCAF_CLIENT_LONG_REGION is set on the page */
    pthread_mutex_t mu;                     /* serialises flag changes with their republication */
};

#define SCAF_WATCHDOG_INIT {.mu = PTHREAD_MUTEX_INITIALIZER}

/* A slot for a region starting at `now`, or -1 when more regions run at once than there are slots (unwatched). */
int scaf_watchdog_claim(struct scaf_watchdog *w, uint64_t now);

static inline void scaf_watchdog_release(struct scaf_watchdog *w, int slot)
{
    if (slot >= 0)
        atomic_store_explicit(&w->t0[slot], 0, memory_order_relaxed);
}

static inline int scaf_watchdog_flagged(struct scaf_watchdog *w)
{
    return atomic_load_explicit(&w->flagged, memory_order_relaxed);
}

/*
 * Sets or clears the flag to match the running regions (long: the oldest is
 * `long_ns` old) and republishes the report. `wait`: the helper may wait for
 * the mutex, a region may not (it returns the current state). Returns 1 while
 * a long region is flagged.
 */
int scaf_watchdog_update(struct scaf_watchdog *w, struct scaf_page *pg, uint64_t now, uint64_t long_ns,
                         int wait, const struct scaf_filter *f, double assumed);

/* A new page (after a reconnect) starts blank: give it the flag and the report we have. */
void scaf_watchdog_attach(struct scaf_watchdog *w, struct scaf_page *pg, const struct scaf_filter *f,
                          double assumed);

#endif
