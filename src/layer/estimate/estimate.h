/* estimate.h — the seam between the region core and the efficiency estimator: it observes regions and requests modes. */
#ifndef SCAF_LAYER_ESTIMATE_H
#define SCAF_LAYER_ESTIMATE_H

#include <stdint.h>
#include <sys/types.h>

#include "../core/team.h"

struct scaf_page;
struct scaf_site;

/* Lives on the wrapper's stack (or in a thread-local for the split _start/_end API). */
struct scaf_region {
    void (*fn)(void *);  /* the region's code: its site's identity */
    void (*run)(void *); /* what a forked experiment calls, run(data): fn itself, or an adapter's runner */
    void *data;
    void *site;       /* estimator's per-call-site record */
    uint64_t t0_ns;   /* CLOCK_MONOTONIC at entry; 0 = not timed (scaf_estimate_end does nothing) */
    unsigned team;    /* the steered team it was shown: the region's team when PLAIN */
    int mode;         /* enum scaf_team_est it requested */
    pid_t exp_pid;    /* experiment: child pid, else 0 */
    uint64_t cpu0_ns; /* in-place baseline: thread CPU time at entry; CPU view: process CPU time */
    int slot;         /* long-region watch slot, or -1 */
    int pc_on;        /* counters were started for this instance */
    uint64_t rd0_ns;  /* the thread's run-queue delay at entry; UINT64_MAX = not sampled */
};

/*
 * Called for every steered outermost region with the team team.c chose
 * for it (`team`). `forkable` is nonzero only where running fn(data) alone on one
 * thread is a complete serial execution of the region (GOMP_parallel), so an
 * experiment is allowed. `run`: what the experiment calls instead of fn, with
 * data (NULL: fn); an adapter whose region code does not take one pointer
 * (LLVM's variadic microtasks) passes a runner that calls it. `fn` stays the
 * site's identity. Returns the mode it requests (enum scaf_team_est):
 * PLAIN, INPLACE (the caller runs one thread) or EXPERIMENT (a child was
 * forked and runs the instance serially; the caller runs one thread fewer).
 * team.c turns the mode into the number. In an experiment child the fork does
 * not return here: the child runs the region, reports and _exits. `site`: the
 * site's record in the table the verdict shares (core/site.h), NULL when the
 * table is full (then the instance is not measured).
 * Must stay cheap: a clock read and a few loads.
 */
int scaf_estimate_begin(struct scaf_region *r, struct scaf_site *site, void (*fn)(void *), void (*run)(void *),
                        void *data, unsigned team, int forkable);

/* Called after the real runtime entry returned. */
void scaf_estimate_end(struct scaf_region *r);

/*
 * The connection hands over the page to publish to (NULL when disconnected).
 * The first call also says which estimator settings were malformed and
 * detects hardware counters.
 */
void scaf_estimate_attach(struct scaf_page *page);

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
