/* schedule.h — the one serial experiment a process may run at a time: starting it at a region, collecting its outcome. */
#ifndef SCAF_LAYER_SCHEDULE_H
#define SCAF_LAYER_SCHEDULE_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "experiment.h"
#include "../core/site.h"

struct scaf_page;

/*
 * `live` is the lock-free "is there one" hint read at every region; the rest
 * is behind the try-lock `lock`: whoever finds it taken leaves the work to
 * its holder and never waits.
 */
struct scaf_schedule {
    atomic_flag lock;
    _Atomic int live;
    struct scaf_experiment cur;
    struct scaf_site *site;       /* the site it measures */
    struct scaf_page *page;       /* the page it was announced on (experiment_pid) */
    _Atomic int disabled;         /* the kernel refused seccomp once: never fork an unconfined child */
    _Atomic uint64_t fork_ns_seen; /* how long the latest fork took: grows with the heap */
};

#define SCAF_SCHEDULE_INIT {.lock = ATOMIC_FLAG_INIT}

static inline int scaf_schedule_live(struct scaf_schedule *x)
{
    return atomic_load_explicit(&x->live, memory_order_relaxed);
}

/*
 * Forks an experiment running fn(data) for site `s` (claimed here), bounded
 * by 4 x the site's threads x parallel time + 0.1 s, at most `exp_max_ns`.
 * Returns the child's pid (the parent then runs the instance with one thread
 * fewer), or 0 when none was started (one runs already, the site is busy, or
 * fork failed: retried after `interval_ns`). Never returns in the child.
 */
pid_t scaf_schedule_start(struct scaf_schedule *x, void (*fn)(void *), void *data, struct scaf_page *pg,
                          struct scaf_site *s, uint64_t now, uint64_t exp_max_ns, uint64_t interval_ns);

/* Collects the running experiment if it has an outcome. Never blocks. */
void scaf_schedule_collect(struct scaf_schedule *x, uint64_t now, uint64_t interval_ns);

/* Counters mode, at the end of the parent's instance: the child `pid` may stop and report now. */
void scaf_schedule_stop_early(struct scaf_schedule *x, pid_t pid);

/* The program is exiting: kill the running child, if any. */
void scaf_schedule_abort(struct scaf_schedule *x);

#endif
