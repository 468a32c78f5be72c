/* malleable.h — the seam between the region core, the adapters' evidence and the malleability verdict (malleable.c). */
#ifndef SCAF_LAYER_MALLEABLE_H
#define SCAF_LAYER_MALLEABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/team.h"
#include "scaf/proto.h"

/*
 * Takes SCAF_MALLEABLE, SCAF_CHECK_SEED and SCAF_REPORT from the settings
 * (read first). Cheap and file-free: called from the layer's constructor. The
 * rules files are read later, by scaf_malleable_prepare, only in processes
 * that go on to connect.
 */
void scaf_malleable_init(void);

/* Reads the rules files once, through rules.c (before the first HELLO, so that it can carry the verdict). */
void scaf_malleable_prepare(void);

/*
 * The daemon's memory on the page just mapped (client/conn.c, at every
 * (re)connect): a program remembered as malleable by scaf check (page
 * memory_verdict MALLEABLE, memory_source CHECK) is treated as a `malleable`
 * rule treats it, through the same path: its verdict is malleable with source
 * CHECK and no evidence is judged. The user's word (SCAF_MALLEABLE, a rules
 * line) wins; SCAF_MEMORY=0 recalls nothing; a program evidence has already
 * fixed stays fixed.
 */
void scaf_malleable_recall(const struct scaf_page *page);

/*
 * The user's word on malleability (SCAF_MALLEABLE, a rules line, scaf check's
 * seeded teams): its source (enum scaf_verdict_source), verdict and reason;
 * 0 when the evidence decides or the word is the memory's (scaf check's
 * malleable, recalled: the start reads that from the page). Rules are known
 * after scaf_malleable_prepare.
 */
uint32_t scaf_malleable_user_word(uint32_t *verdict, char *reason, size_t len);

/* Whether the program has read (omp_get_max_threads, a team size escaped from a region) or set its count. */
void scaf_malleable_count_seen(int *read, int *set);

/*
 * The program started with `team` (client/start.c): it is its count and bound
 * from now on; when `fixed`, its team is fixed at it with `source` and
 * `reason` (over any verdict, and no evidence is judged any more). The page
 * gets started_with, now and at every reconnect.
 */
void scaf_malleable_start(unsigned team, int fixed, uint32_t source, const char *reason);

struct scaf_site;

/*
 * A site was just inserted in the site table (its first instance is about to
 * run): when the page's known[] remembers it clean, it starts settled
 * (core/verdict.c's scaf_verdict_memo_site), steered from that instance.
 */
void scaf_malleable_site_new(struct scaf_site *s, void (*fn)(void *), const struct scaf_page *p);

/* Evidence from an adapter's omp_* wrappers, each called only outside any parallel region. */
void scaf_malleable_query(void *caller);          /* omp_get_max_threads() */
void scaf_malleable_set(void *caller, int team);  /* omp_set_num_threads(); team: the new nthreads-var
                                                     (it bounds every team from now on) */

/*
 * Evidence from inside regions: omp_get_thread_num() / omp_get_num_threads().
 * Cheap when repeated: the adapter asks scaf_malleable_tid_new (two loads and
 * a compare); only for the first call of a region instance does it check that
 * the call is at the outermost level (the runtime's omp_get_level() == 1) and
 * then records it with scaf_malleable_saw_tid.
 */
extern _Atomic unsigned scaf_mall_epoch, scaf_mall_tid_epoch, scaf_mall_nth_epoch;
void scaf_malleable_saw_tid(unsigned epoch);
void scaf_malleable_saw_nth(unsigned epoch);

/* Nonzero when this region instance (*epoch) has no omp_get_thread_num() recorded yet. */
static inline int scaf_malleable_tid_new(unsigned *epoch)
{
    *epoch = atomic_load_explicit(&scaf_mall_epoch, memory_order_relaxed);
    return atomic_load_explicit(&scaf_mall_tid_epoch, memory_order_relaxed) != *epoch;
}

/* Nonzero when this region instance (*epoch) has no omp_get_num_threads() recorded yet. */
static inline int scaf_malleable_nth_new(unsigned *epoch)
{
    *epoch = atomic_load_explicit(&scaf_mall_epoch, memory_order_relaxed);
    return atomic_load_explicit(&scaf_mall_nth_epoch, memory_order_relaxed) != *epoch;
}

/* Per outermost region instance, kept by the wrapper between begin and end. */
struct scaf_mall_region {
    void (*fn)(void *);
    struct scaf_site *site; /* the site's record (core/site.h), NULL when the table is full */
    unsigned epoch;
    int mode;        /* enum scaf_team_mode */
    int tls;         /* the site's object has thread-local storage */
    int check_due;   /* a TLS check of this site is due: start it before the region runs */
};

/*
 * Decides how the region's team is chosen (core/verdict.c) and opens its
 * evidence window. `num_threads`: the program's clause (0: none); `strict`:
 * a clause that must stand as written. A clause equal to the program's own
 * default (nthreads-var) is steered like no clause. Fills the verdict's part
 * of `in` for scaf_team_decide: mode, bound, fixed_team, watch_team and, for
 * SCAF_TEAM_CHECK, check_team. Returns the mode.
 */
int scaf_malleable_region_begin(struct scaf_mall_region *m, struct scaf_site *site, void (*fn)(void *),
                                unsigned num_threads, int strict, struct scaf_team_in *in);

/*
 * A BLAS library's region (core/blasobj.h): no verdict decides its team and
 * nothing its threads call is the program's evidence; it only closes the
 * window of the region before it. Sets m->mode to SCAF_TEAM_LIBRARY.
 */
void scaf_malleable_region_library(struct scaf_mall_region *m, struct scaf_site *site, void (*fn)(void *));

/* Closes the window: judges what the region's threads called. `team`: the team it ran with. */
void scaf_malleable_region_end(const struct scaf_mall_region *m, unsigned team);

/*
 * The stall net's word (client/stall.h): the region at `fn` ran `secs` with
 * `team` of the `asked` threads while its thread only yielded or waited. The
 * program's team is fixed from now on (its first-look team), with a reason
 * naming the region, and the memory learns that the site fixes the program
 * (so the next run starts with its share and keeps it). Over any verdict but
 * a fixed one; the user's forced word included, since a stall is not a
 * judgement of results but of progress.
 */
void scaf_malleable_stalled(void (*fn)(void *), struct scaf_site *site, unsigned team, unsigned asked, double secs);

/* Nonzero once the team is fixed for good (the fast path's only question). */
extern _Atomic int scaf_mall_fixed;

/* nthreads-var as the program last left it: the bound, or what omp_set_num_threads set. */
unsigned scaf_malleable_bound(void);

/* Writes verdict, source, reason (and the fixed team), the start team and the sites learned into a page; called on
 * every (re)connect. */
void scaf_malleable_publish(struct scaf_page *page);

#endif
