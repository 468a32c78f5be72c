/* estimate.h — the seam between the region wrappers (gomp.c) and the efficiency estimator (estimate.c). */
#ifndef SCAF_LAYER_ESTIMATE_H
#define SCAF_LAYER_ESTIMATE_H

#include <stdint.h>
#include <sys/types.h>

struct scaf_page;

/* What the estimator decided for one outermost region instance. */
enum scaf_region_mode {
    SCAF_REGION_PLAIN = 0,      /* just time it */
    SCAF_REGION_INPLACE = 1,    /* run on one thread in place: a serial baseline */
    SCAF_REGION_EXPERIMENT = 2, /* a forked child runs it serially while we run threads-1 */
};

/* Lives on the wrapper's stack (or in a thread-local for the split _start/_end API). */
struct scaf_region {
    void (*fn)(void *);
    void *data;
    void *site;      /* estimator's per-call-site record */
    uint64_t t0_ns;  /* CLOCK_MONOTONIC at entry */
    unsigned threads; /* team size the wrapper chose (the allocation); the return value is what to request */
    int mode;        /* enum scaf_region_mode */
    int exp_fd;      /* experiment: read end of the child's pipe, else -1 */
    pid_t exp_pid;   /* experiment: child pid, else 0 */
    /* Added by the estimator (additive; the wrapper only needs to keep the struct alive until _end). */
    uint64_t cpu0_ns; /* in-place baseline: thread CPU time at entry */
    int slot;         /* long-region watch slot, or -1 */
    int pc_on;        /* counters were started for this instance */
};

/*
 * Called by every outermost-region wrapper after it chose `threads`.
 * `forkable` is nonzero only where running fn(data) alone on one thread is a
 * complete serial execution of the region (GOMP_parallel), so an experiment is
 * allowed. Returns the team size to request from libgomp (1 for an in-place
 * baseline, threads-1 while an experiment runs). In an experiment child it does
 * not return: the child runs the region, reports and _exits.
 * Must stay cheap: a clock read and a lookup.
 */
unsigned scaf_estimate_begin(struct scaf_region *r, void (*fn)(void *), void *data,
                             unsigned threads, int forkable);

/* Called after the real libgomp entry returned. */
void scaf_estimate_end(struct scaf_region *r);

/* The connection module hands over the page to publish to (NULL when disconnected). */
void scaf_estimate_attach(struct scaf_page *page);

/*
 * Nonzero inside a serial-experiment child: wrappers then run every region with
 * one thread. Either fn(data) directly or the real libgomp entry with
 * num_threads 1 works; a team of 2 or more hangs there, because libgomp's pool
 * threads were not copied by fork. scaf_estimate_begin returns 1 in the child.
 */
int scaf_estimate_in_child(void);

/*
 * For the helper thread, on every wake (at least about once a second):
 * flags a region that has run past SCAF_LONG_REGION_S without returning
 * (client_flags |= SCAF_CLIENT_LONG_REGION, an assumed efficiency unless
 * counters measured one), clears the flag once no region is that old, and
 * collects a finished experiment or kills one past its bound. `now_ns` is
 * CLOCK_MONOTONIC in ns, or 0 to read the clock here. Never blocks.
 * Returns 1 while a long region is flagged, else 0.
 */
int scaf_estimate_long_region_check(uint64_t now_ns);

#endif
