/* page.h — the layer's side of the shared page: the page in use, readers of the daemon's half, the only writers of the client's half. */
#ifndef SCAF_LAYER_PAGE_H
#define SCAF_LAYER_PAGE_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "scaf/proto.h"

/*
 * The page the region wrappers read, NULL while the layer is inert. Published
 * with release order once mapped; an old page stays mapped forever after a
 * reconnect because a region thread may still be reading it.
 */
extern _Atomic(struct scaf_page *) scaf_layer_page;

static inline struct scaf_page *scaf_page_get(void)
{
    return atomic_load_explicit(&scaf_layer_page, memory_order_acquire);
}

/* Makes `page` (or NULL: none) the one the wrappers read. */
void scaf_page_set(struct scaf_page *page);

/* ---- the daemon's half: read here, written only by scafd ---- */

/* The page's `threads`: the team size the daemon gives (one word: no seqlock), >= 1 unless the daemon misbehaves. */
static inline unsigned scaf_page_threads(const struct scaf_page *p)
{
    return atomic_load_explicit(&((struct scaf_page *)p)->threads, memory_order_relaxed);
}

/* Clients the daemon serves now (experiments are lazy while 1). */
static inline unsigned scaf_page_nclients(const struct scaf_page *p)
{
    return atomic_load_explicit(&((struct scaf_page *)p)->nclients, memory_order_relaxed);
}

/* The daemon's `idle` word: 0, or the idle period it counts the client in (it holds no share then). One relaxed
 * load: the region path reads it at every outermost region. */
static inline uint32_t scaf_page_idle(const struct scaf_page *p)
{
    return atomic_load_explicit(&((struct scaf_page *)p)->idle, memory_order_relaxed);
}

/* Nonzero while another gang has its turn: a new outermost region must wait (scaf_page_wait_turn). */
static inline int scaf_page_gang_waiting(const struct scaf_page *p)
{
    return atomic_load_explicit(&((struct scaf_page *)p)->gang, memory_order_relaxed) == SCAF_GANG_WAIT;
}

/*
 * Holds the calling thread until the gang's turn comes, the page is replaced,
 * or about a second passed (a daemon that died mid-turn must not stop the
 * program). Preserves errno.
 */
void scaf_page_wait_turn(struct scaf_page *p);

/*
 * `control` and `cpuset` read consistently under the daemon's seqlock.
 * Returns 0, or -1 with errno EAGAIN when the daemon kept the page
 * mid-update too long (the caller tries again later).
 */
int scaf_page_read_control(struct scaf_page *p, uint32_t *control, uint64_t words[SCAF_CPUSET_WORDS]);

/* The daemon is gone: no one passes the turn any more, so release anyone held for it. */
void scaf_page_gang_off(struct scaf_page *p);

/* The futex word the daemon wakes on every change; the helper sleeps on it. */
static inline uint32_t scaf_page_seq(const struct scaf_page *p)
{
    return atomic_load_explicit(&((struct scaf_page *)p)->seq, memory_order_acquire);
}

/* Sleeps until the daemon changes the page (seq != `seq`) or `ms` passed. */
void scaf_page_sleep(struct scaf_page *p, uint32_t seq, unsigned ms);

/* Wakes the helper from scaf_page_sleep before its tick (it then looks at everything again). */
void scaf_page_wake(struct scaf_page *p);

/* ---- the daemon's memory (protocol 6): written before WELCOME, never after, so read without a seqlock ---- */

/* The memory of this program the daemon wrote, checked (the page is the daemon's word, not a proof). */
struct scaf_page_memory {
    unsigned start_team;  /* 0 = none */
    unsigned runs, verdict, source;
    unsigned known_sites; /* clamped to SCAF_MEMORY_SITES */
    unsigned cpus;        /* the daemon's N */
};

void scaf_page_read_memory(const struct scaf_page *p, struct scaf_page_memory *m);

/* The memo bits known[] holds for the site (object, offset), 0 when it is not there. */
uint32_t scaf_page_known(const struct scaf_page *p, uint64_t object, uint32_t offset);

/* Whether any site the page's memory knows has one of `bits` (enum scaf_memo_bits). */
int scaf_page_known_any(const struct scaf_page *p, uint32_t bits);

/* ---- the client's half: every write goes through here ---- */

/* One more outermost region (relaxed: the daemon only samples it). */
static inline void scaf_page_count_region(struct scaf_page *p)
{
    atomic_fetch_add_explicit(&p->regions, 1, memory_order_relaxed);
}

/* The team the latest outermost region ran with. */
static inline void scaf_page_set_last_team(struct scaf_page *p, unsigned team)
{
    atomic_store_explicit(&p->last_team, team, memory_order_relaxed);
}

/* A region ran a team the daemon did not choose (a clause other than the default, a fixed team): the
 * daemon must not confine the process to fewer CPUs than that (relaxed: it samples). */
static inline void scaf_page_note_rigid(struct scaf_page *p, unsigned team)
{
    atomic_store_explicit(&p->rigid_team, team, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->rigid_regions, 1, memory_order_relaxed);
}

/* The most threads the client can use now, 0 for no limit (relaxed: the daemon samples it). */
static inline void scaf_page_set_wanted(struct scaf_page *p, unsigned n)
{
    atomic_store_explicit(&p->wanted, n, memory_order_relaxed);
}

/* The process's other parallel runtimes and the team those that read their count once run (core/runtimes.h). */
static inline void scaf_page_set_runtimes(struct scaf_page *p, uint32_t bits, uint32_t follow, unsigned team)
{
    atomic_store_explicit(&p->runtime_team, team, memory_order_relaxed);
    atomic_store_explicit(&p->runtimes_follow, follow, memory_order_relaxed);
    atomic_store_explicit(&p->runtimes, bits, memory_order_relaxed);
}

static inline unsigned scaf_page_wanted(const struct scaf_page *p)
{
    return atomic_load_explicit(&((struct scaf_page *)p)->wanted, memory_order_relaxed);
}

static inline unsigned scaf_page_last_team(const struct scaf_page *p)
{
    return atomic_load_explicit(&((struct scaf_page *)p)->last_team, memory_order_relaxed);
}

/*
 * The efficiency report (efficiency_ppm, eff_team, estimate) under the
 * client_seq seqlock. Two publishers can meet (the helper's long-region check
 * and a region end), so the odd value is taken with a compare-and-swap: a
 * second writer waits the few stores it takes.
 */
void scaf_page_publish_estimate(struct scaf_page *p, double efficiency, unsigned team, uint32_t kind);

/* The kind of the report last published (enum scaf_estimate). */
uint32_t scaf_page_estimate_kind(const struct scaf_page *p);

/*
 * The verdict, its source and reason (SCAF_REASON_MAX bytes, copied under reason_seq), and for a fixed
 * program its team and the NONMALLEABLE flag. The verdict is stored last: the
 * daemon reads it first and the reason only when it shows it.
 */
void scaf_page_publish_verdict(struct scaf_page *p, uint32_t verdict, uint32_t source, const char *reason,
                               unsigned fixed_team);

/* The team the layer started the program with (client/start.c), 0 = as usual. */
void scaf_page_set_started(struct scaf_page *p, unsigned team);

/*
 * learned[from .. n-1] from `memo`, then learned_sites = n (release): the
 * daemon reads the count first (acquire), so it never sees an entry half
 * written. n is at most SCAF_MEMORY_SITES. One writer at a time (the caller's
 * lock).
 */
void scaf_page_publish_learned(struct scaf_page *p, const struct scaf_site_memo *memo, unsigned from, unsigned n);

/* Sets or clears SCAF_CLIENT_* bits in client_flags. */
void scaf_page_flag(struct scaf_page *p, uint32_t flag, int on);

/* The running serial experiment's pid, or 0. */
void scaf_page_set_experiment(struct scaf_page *p, pid_t pid);

/* One more serial experiment completed. */
void scaf_page_count_experiment(struct scaf_page *p);

#endif
