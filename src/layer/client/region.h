/* region.h — what a runtime adapter calls around each parallel region; the same for every OpenMP runtime. */
#ifndef SCAF_LAYER_REGION_H
#define SCAF_LAYER_REGION_H

#include "../core/page.h"
#include "../estimate/estimate.h"
#include "../malleable/malleable.h"
#include "conn.h"
#include "start.h"

/* What the core needs from the OpenMP runtime an adapter wraps. */
struct scaf_runtime {
    int (*level)(void); /* the runtime's omp_get_level(); may be NULL only when `unusable` is set */
    int max_threads;    /* its initial nthreads-var, read in the constructor (< 1: unknown) */
    const char *unusable; /* NULL, or why the runtime cannot be steered: the layer then stays inert */
    /* Its omp_get_max_threads() and omp_set_num_threads(), for the start team (client/start.h); NULL: none. */
    int (*get_threads)(void);
    void (*set_threads)(int);
};

/* Once, from the adapter's initialisation: its constructor, or the `init` of scaf_region_begin if a region comes first. */
void scaf_region_init(const struct scaf_runtime *rt);

/* What an adapter says of a region's entry point (the `flags` of scaf_region_begin_*). */
#define SCAF_REGION_FORKABLE 0x1u /* fn(data) alone on one thread is a complete serial execution
                                   * (GOMP_parallel), so the estimator's forked experiment may run it */
#define SCAF_REGION_STRICT 0x2u   /* the num_threads clause must stand as written (LLVM's strict clause) */

/* One outermost region instance, from its wrapper's entry to its exit (on the wrapper's stack). */
struct scaf_region_rec {
    struct scaf_region est;     /* the estimator's record */
    void (*run)(void *);        /* set by the adapter: what an experiment runs as run(data); NULL: fn */
    /* Set by the adapter where it has one: a complete serial execution of the region on the calling
     * thread, serial(serial_data) (the real entry point with one thread); NULL: fn(data) when
     * forkable, else none. The TLS check runs it (malleable/tlscheck.h). */
    void (*serial)(void *);
    void *serial_data;
    struct scaf_mall_region mall;
    unsigned team;              /* the team it ran with (the runtime's own count when not ours) */
    unsigned char live;         /* connected and outermost: scaf_region_end has work to do */
    unsigned char est_on;       /* the estimator timed it */
    unsigned char permit;       /* counted among the OpenMP threads that oneTBB's permits give way to */
    signed char stall;          /* the stall net's slot (client/stall.h) while it runs with fewer threads than
                                   it asked for, else -1 */
};

/* The two ways into a region that scaf_region_begin takes: connected, and not connected yet (or a forked child). */
unsigned scaf_region_begin_live(struct scaf_page *p, struct scaf_region_rec *r, void (*fn)(void *),
                                void *data, unsigned num_threads, unsigned flags);
unsigned scaf_region_begin_slow(struct scaf_region_rec *r, void (*fn)(void *), void *data,
                                unsigned num_threads, unsigned flags, void (*init)(void));

/*
 * A region's entry, from its wrapper: returns the num_threads to pass the
 * runtime's real entry point. `num_threads`: the program's clause, 0 for none;
 * `flags`: SCAF_REGION_*. The adapter has set r->run, r->serial and
 * r->serial_data (NULL where it has none). `init`: the adapter's once-only
 * initialisation, run before the first connect (the adapter's constructor may
 * not have run yet when another library's constructor opens a region).
 * Inlined into the wrapper, so that an inert process pays one load and one
 * branch; the count goes down into the core and comes back only as the result.
 */
static inline unsigned scaf_region_begin(struct scaf_region_rec *r, void (*fn)(void *), void *data,
                                         unsigned num_threads, unsigned flags, void (*init)(void))
{
    struct scaf_page *p = scaf_page_get();

    r->live = 0;
    r->est_on = 0;
    if (__builtin_expect(p != NULL, 1))
        return scaf_region_begin_live(p, r, fn, data, num_threads, flags);
    if (__builtin_expect(atomic_load_explicit(&scaf_conn_state, memory_order_relaxed) == SCAF_CONN_INERT, 1))
        return num_threads;
    return scaf_region_begin_slow(r, fn, data, num_threads, flags, init);
}

/* After the real entry point returned: judges the evidence, then lets the estimator time it. */
void scaf_region_end_live(struct scaf_region_rec *r);

static inline void scaf_region_end(struct scaf_region_rec *r)
{
    if (r->live)
        scaf_region_end_live(r);
}

#endif
