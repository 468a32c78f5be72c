/* malleable.h — the seam between the region wrappers and the malleability verdict (malleable.c). */
#ifndef SCAF_LAYER_MALLEABLE_H
#define SCAF_LAYER_MALLEABLE_H

#include <stdatomic.h>
#include <stdint.h>

#include "scaf/proto.h"

/* How an outermost region that left its count to the runtime gets its team. */
enum scaf_team_mode {
    SCAF_TEAM_KEEP = 0,  /* fixed program: libgomp's own count, the daemon steers CPUs */
    SCAF_TEAM_WATCH = 1, /* first instance of a site under suspicion: libgomp's count, evidence recorded */
    SCAF_TEAM_STEER = 2, /* the page's allocation, within the cap */
    SCAF_TEAM_CHECK = 3, /* scaf check: a seeded pseudo-random team within the cap */
};

/*
 * Reads SCAF_MALLEABLE, SCAF_CHECK_SEED and SCAF_REPORT. Cheap and file-free:
 * called from the layer's constructor. The rules files are read later, by
 * scaf_malleable_prepare, only in processes that go on to connect.
 */
void scaf_malleable_init(void);

/* Reads the rules files once (before the first HELLO, so that it can carry the verdict). */
void scaf_malleable_prepare(void);

/* Evidence from the omp_* wrappers, each called only outside any parallel region. */
void scaf_malleable_query(void *caller);          /* omp_get_max_threads() */
void scaf_malleable_set(void *caller, int team);  /* omp_set_num_threads(); team: the new nthreads-var */

/* Evidence from inside regions: omp_get_thread_num() / omp_get_num_threads(). Cheap when repeated. */
extern _Atomic unsigned scaf_mall_epoch, scaf_mall_tid_epoch, scaf_mall_nth_epoch;
void scaf_malleable_saw_tid(unsigned epoch);
void scaf_malleable_saw_nth(unsigned epoch);

static inline void scaf_malleable_tid_call(void)
{
    unsigned e = atomic_load_explicit(&scaf_mall_epoch, memory_order_relaxed);

    if (atomic_load_explicit(&scaf_mall_tid_epoch, memory_order_relaxed) != e)
        scaf_malleable_saw_tid(e);
}

static inline void scaf_malleable_nth_call(void)
{
    unsigned e = atomic_load_explicit(&scaf_mall_epoch, memory_order_relaxed);

    if (atomic_load_explicit(&scaf_mall_nth_epoch, memory_order_relaxed) != e)
        scaf_malleable_saw_nth(e);
}

/* Per outermost region instance, kept by the wrapper between begin and end. */
struct scaf_mall_region {
    void (*fn)(void *);
    void *site; /* the site's record, NULL when not looked up (or the table is full) */
    unsigned epoch;
    int mode; /* enum scaf_team_mode */
};

/*
 * Decides how the region's team is chosen and opens its evidence window.
 * `explicit_count`: the program passed num_threads (then the mode is KEEP and
 * no evidence is judged). For SCAF_TEAM_CHECK, *team is the team to request.
 */
int scaf_malleable_region_begin(struct scaf_mall_region *m, void (*fn)(void *), int explicit_count,
                                unsigned *team);

/* Closes the window: judges what the region's threads called. `team`: the team it ran with. */
void scaf_malleable_region_end(const struct scaf_mall_region *m, unsigned team);

/* Nonzero once the team is fixed for good (the fast path's only question). */
extern _Atomic int scaf_mall_fixed;

/* nthreads-var as the program last left it: the bound, or what omp_set_num_threads set. */
unsigned scaf_malleable_cap(void);

/* The team of a first look (or a fixed team): the cap, or less if a region read a smaller team. */
unsigned scaf_malleable_watch_team(void);

/* The num_threads to pass libgomp for a region whose team the layer leaves alone (0 = libgomp's own). */
unsigned scaf_malleable_request(unsigned num_threads);

/* Team size a fixed program runs at. */
unsigned scaf_malleable_fixed_team(void);

/* Writes verdict, source, reason (and the fixed team) into a page; called on every (re)connect. */
void scaf_malleable_publish(struct scaf_page *page);

#endif
