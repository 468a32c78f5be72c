/* start.h — a program's first touch of the OpenMP API: the moment it may start with its share (docs/memory.md, "The start team"). */
#ifndef SCAF_LAYER_CLIENT_START_H
#define SCAF_LAYER_CLIENT_START_H

#include <stdatomic.h>

/* What the adapter owns that the start needs: the runtime's real entry points. */
struct scaf_start_runtime {
    int (*level)(void);        /* omp_get_level */
    int (*get_threads)(void);  /* omp_get_max_threads: nthreads-var of the calling thread */
    void (*set_threads)(int);  /* omp_set_num_threads */
};

/*
 * Once, after scaf_client_init: whether a start team could apply to this
 * process at all (SCAF_MEMORY on, a daemon not ruled out, the user neither
 * said malleable nor set OMP_NUM_THREADS, a count above 1; or scaf run's
 * SCAF_START_TEAM). Only then does the first touch connect early.
 */
void scaf_start_init(const struct scaf_start_runtime *rt);

/* How the program touches the API. */
enum scaf_touch {
    SCAF_TOUCH_QUERY = 0,  /* omp_get_max_threads() */
    SCAF_TOUCH_SET = 1,    /* omp_set_num_threads(), before the runtime's */
    SCAF_TOUCH_REGION = 2, /* an outermost region, before it opens */
};

/* Nonzero until the first touch at the outermost level decided (one relaxed load on every path). */
extern _Atomic int scaf_start_pending;

void scaf_start_touch_slow(int how);

/*
 * `procs` (the runtime's omp_get_num_procs()), or the start team when the
 * program started with its share and keeps it and that is smaller: the count
 * of processors it would see inside a cpuset of its share.
 */
int scaf_start_procs(int procs);

/*
 * Each interposed omp_* call that reads or sets the count, and each
 * outermost region, calls this first. Decides once: connects when the answer
 * depends on the daemon's page, then (core/start.c) starts the program with
 * its share on this thread, or says in the log (SCAF_VERBOSE) why not.
 * Preserves errno.
 */
static inline void scaf_start_touch(int how)
{
    if (__builtin_expect(atomic_load_explicit(&scaf_start_pending, memory_order_relaxed), 0))
        scaf_start_touch_slow(how);
}

#endif
