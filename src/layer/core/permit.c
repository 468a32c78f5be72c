/* permit.c — thread-count permits (oneTBB's arenas through TCM): the table, the split of the share on each request, renegotiation from the helper thread. */
#include "permit.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "grant.h"
#include "page.h"
#include "pool.h"
#include "runtimes.h"
#include "say.h"

/*
 * How long every permit must have been inactive or idle before the page says
 * the client wants 1 thread: oneTBB deactivates a permit between any two
 * parallel algorithms, for microseconds, and the daemon must not take the
 * share away for those.
 */
#define IDLE_HOLD_NS 1000000000ull

#define SLOT_BITS 8 /* the key's low bits: slot + 1; SCAF_PERMIT_MAX < 255 */
#define SLOT_MASK ((1u << SLOT_BITS) - 1)

struct slot {
    int used;
    uint32_t gen;          /* bumped at each open: part of the key */
    unsigned min, max, state;
    unsigned grant;        /* what the split gives it now */
    unsigned told;         /* what its runtime was last given (by its own read or by notify) */
    unsigned told_state;
    scaf_permit_notify notify;
    void *owner, *arg;
    int busy;              /* the helper is inside its notify */
    int callers_enter;     /* every working thread enters it: none inside means no work */
    _Atomic int threads;   /* threads working for it now (registered) */
};

/*
 * All of the module's state but two: what a thread registered with is
 * thread-local (`entered`, below), and scaf_permit_any is read by the region
 * path (permit.h). Everything is under `lock` except the slots' `threads` and
 * the atomics; `idle` signals the end of a notify.
 */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t idle;
    struct slot slots[SCAF_PERMIT_MAX];
    unsigned nopen;
    pthread_t notifier;      /* the thread inside a notify, while one runs */
    int notifying;
    uint64_t last_active_ns; /* when a permit was last seen active (0: never) */
    _Atomic int omp_busy;    /* the division of a mixed process's share (permit.h): OpenMP threads busy now beyond
                              * one per region */
    _Atomic int squeezed;    /* the last split gave permits less because of busy OpenMP threads: they want it back
                              * when those end */
} P = {.lock = PTHREAD_MUTEX_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* 1 + what the permits that ask for workers ask (with lock held). */
static unsigned asked(void)
{
    unsigned n = 1;

    for (unsigned i = 0; i < SCAF_PERMIT_MAX; i++)
        if (P.slots[i].used)
            n += P.slots[i].max < SCAF_PERMIT_MAX_WORKERS ? P.slots[i].max : SCAF_PERMIT_MAX_WORKERS;
    return n < SCAF_PERMIT_MAX_WORKERS ? n : SCAF_PERMIT_MAX_WORKERS;
}

/*
 * Whether any permit works now. oneTBB keeps a permit active while it has no
 * worker to notice that the work ran out (a share of 1 grants none), so where
 * every working thread enters the permit, callers included (oneTBB 2022.0
 * and later), a permit without threads inside does not work, whatever its
 * state; elsewhere the state is all there is.
 */
static int any_working(void)
{
    for (unsigned i = 0; i < SCAF_PERMIT_MAX; i++) {
        const struct slot *s = &P.slots[i];

        if (!s->used)
            continue;
        if (s->callers_enter ? atomic_load_explicit(&s->threads, memory_order_relaxed) > 0
                             : s->state == SCAF_GRANT_ACTIVE)
            return 1;
    }
    return 0;
}

/*
 * The page's `wanted` (with lock held): only for a process whose only
 * parallelism is oneTBB (no OpenMP region ran, no BLAS pool), whose demand
 * the permits tell completely. It rises at once when a permit becomes active
 * (the daemon raises the share at its next turn, and the helper then
 * renegotiates), and drops to 1 only after IDLE_HOLD_NS without any.
 */
static void publish_wanted(struct scaf_page *page)
{
    unsigned want = 0;

    if (!page)
        return;
    if (any_working())
        P.last_active_ns = now_ns();
    if (atomic_load_explicit(&page->regions, memory_order_relaxed) == 0 && scaf_pool_count() == 0 && P.nopen > 0)
        want = P.last_active_ns && now_ns() - P.last_active_ns < IDLE_HOLD_NS ? asked() : 1;
    if (scaf_page_wanted(page) != want) {
        scaf_page_set_wanted(page, want);
        scaf_layer_log("TCM permits: %u threads wanted%s", want, want == 1 ? " (all idle)" : "");
    }
}

static _Thread_local uint64_t entered; /* the permit this thread registered with, 0 when none */

/* Mirrors P.nopen > 0 for the region path, which reads it without the lock (permit.h). */
_Atomic int scaf_permit_any;

void scaf_permit_note_region(int delta)
{
    int now = atomic_fetch_add_explicit(&P.omp_busy, delta, memory_order_relaxed) + delta;

    /* The last region ended while oneTBB had given way: the helper gives the workers back now, not at its
     * tick (an arena without workers never asks again by itself). One relaxed load otherwise. */
    if (now == 0 && delta < 0 && atomic_load_explicit(&P.squeezed, memory_order_relaxed)) {
        struct scaf_page *p = scaf_page_get();

        atomic_store_explicit(&P.squeezed, 0, memory_order_relaxed);
        if (p)
            scaf_page_wake(p);
    }
}

static uint64_t key_of(unsigned i)
{
    return ((uint64_t)P.slots[i].gen << SLOT_BITS) | (i + 1);
}

/* The slot a key names, or -1 (with lock held). */
static int slot_of(uint64_t key)
{
    unsigned i = (unsigned)(key & SLOT_MASK);

    if (i == 0 || i > SCAF_PERMIT_MAX)
        return -1;
    i--;
    if (!P.slots[i].used || key_of(i) != key)
        return -1;
    return (int)i;
}

/* The share the split uses: the page's threads, or no limit at all without a page (the runtime's own max). */
static unsigned current_share(void)
{
    struct scaf_page *p = scaf_page_get();

    return p ? scaf_page_threads(p) : 0;
}

/* Splits the share again (with lock held). Returns the active grants' sum. */
static unsigned resplit(void)
{
    struct scaf_grant_want w[SCAF_PERMIT_MAX];
    unsigned g[SCAF_PERMIT_MAX];
    unsigned share = current_share();
    unsigned active;

    for (unsigned i = 0; i < SCAF_PERMIT_MAX; i++) {
        w[i].state = P.slots[i].used ? P.slots[i].state : SCAF_GRANT_INACTIVE;
        w[i].min = P.slots[i].min;
        w[i].max = P.slots[i].max;
    }
    if (share == 0) {
        /* No daemon ever answered: every permit gets what it asks, as without scaf. */
        for (unsigned i = 0; i < SCAF_PERMIT_MAX; i++)
            g[i] = w[i].state == SCAF_GRANT_INACTIVE ? 0 : w[i].max;
        active = 0;
    } else {
        int busy = atomic_load_explicit(&P.omp_busy, memory_order_relaxed);

        active = scaf_grant_split(share, busy > 0 ? (unsigned)busy : 0, w, SCAF_PERMIT_MAX, g);
        if (busy > 0 && P.nopen > 0)
            atomic_store_explicit(&P.squeezed, 1, memory_order_relaxed);
    }
    for (unsigned i = 0; i < SCAF_PERMIT_MAX; i++)
        if (P.slots[i].used)
            P.slots[i].grant = g[i];
    return active;
}

int scaf_permit_open(unsigned min, unsigned max, unsigned state, int callers_enter, scaf_permit_notify notify,
                     void *owner, void *arg, uint64_t *key)
{
    int rc = -1;

    pthread_mutex_lock(&P.lock);
    for (unsigned i = 0; i < SCAF_PERMIT_MAX; i++) {
        struct slot *s = &P.slots[i];

        if (s->used || s->busy)
            continue;
        s->used = 1;
        s->gen = (s->gen + 1) & 0xffffffu;
        if (s->gen == 0)
            s->gen = 1;
        s->min = min;
        s->max = max;
        s->state = state;
        s->callers_enter = callers_enter;
        s->notify = notify;
        s->owner = owner;
        s->arg = arg;
        atomic_store(&s->threads, 0);
        P.nopen++;
        atomic_store_explicit(&scaf_permit_any, 1, memory_order_relaxed);
        scaf_runtimes_tcm_asked();
        resplit();
        s->told = s->grant;
        s->told_state = s->state;
        /* A runtime that just connected is about to work: its first second counts as working. */
        if (P.last_active_ns == 0)
            P.last_active_ns = now_ns();
        if (state == SCAF_GRANT_ACTIVE)
            publish_wanted(scaf_page_get());
        *key = key_of(i);
        rc = 0;
        break;
    }
    if (rc != 0)
        errno = ENOSPC;
    pthread_mutex_unlock(&P.lock);
    return rc;
}

static int change(uint64_t key, int bounds, unsigned min, unsigned max, unsigned state)
{
    int i, rc = -1;

    pthread_mutex_lock(&P.lock);
    i = slot_of(key);
    if (i < 0) {
        errno = EINVAL;
        goto out;
    }
    if (bounds) {
        P.slots[i].min = min;
        P.slots[i].max = max;
    }
    P.slots[i].state = state;
    resplit();
    /* A permit that starts working wants its share back now, not at the helper's next tick. */
    if (state == SCAF_GRANT_ACTIVE)
        publish_wanted(scaf_page_get());
    rc = 0;
out:
    pthread_mutex_unlock(&P.lock);
    return rc;
}

int scaf_permit_update(uint64_t key, unsigned min, unsigned max, unsigned state)
{
    return change(key, 1, min, max, state);
}

int scaf_permit_set_state(uint64_t key, unsigned state)
{
    return change(key, 0, 0, 0, state);
}

int scaf_permit_read(uint64_t key, unsigned *grant, unsigned *state)
{
    int i, rc = -1;

    pthread_mutex_lock(&P.lock);
    i = slot_of(key);
    if (i < 0) {
        errno = EINVAL;
        goto out;
    }
    /* The runtime now knows this grant: the helper need not tell it again. */
    P.slots[i].told = P.slots[i].grant;
    P.slots[i].told_state = P.slots[i].state;
    *grant = P.slots[i].grant;
    *state = P.slots[i].state;
    rc = 0;
out:
    pthread_mutex_unlock(&P.lock);
    return rc;
}

/* Frees slot i once no notify of it runs (with lock held); a notify may close its own permit. */
static void close_slot(unsigned i)
{
    while (P.slots[i].busy && !(P.notifying && pthread_equal(P.notifier, pthread_self())))
        pthread_cond_wait(&P.idle, &P.lock);
    P.slots[i].used = 0;
    P.slots[i].notify = NULL;
    P.slots[i].owner = P.slots[i].arg = NULL;
    P.nopen--;
    atomic_store_explicit(&scaf_permit_any, P.nopen > 0, memory_order_relaxed);
    resplit();
}

int scaf_permit_close(uint64_t key)
{
    int i, rc = -1;

    pthread_mutex_lock(&P.lock);
    i = slot_of(key);
    if (i < 0) {
        errno = EINVAL;
        goto out;
    }
    close_slot((unsigned)i);
    rc = 0;
out:
    pthread_mutex_unlock(&P.lock);
    return rc;
}

void scaf_permit_close_owner(void *owner)
{
    pthread_mutex_lock(&P.lock);
    for (unsigned i = 0; i < SCAF_PERMIT_MAX; i++)
        if (P.slots[i].used && P.slots[i].owner == owner)
            close_slot(i);
    pthread_mutex_unlock(&P.lock);
}

int scaf_permit_thread_enter(uint64_t key)
{
    int i, rc = -1;

    pthread_mutex_lock(&P.lock);
    i = slot_of(key);
    if (i < 0) {
        errno = EINVAL;
        goto out;
    }
    if (entered == 0) {
        atomic_fetch_add_explicit(&P.slots[i].threads, 1, memory_order_relaxed);
        entered = key;
        /* Work starts: a client that said it wanted 1 thread wants its share back now. */
        if (P.slots[i].callers_enter)
            publish_wanted(scaf_page_get());
    }
    rc = 0;
out:
    pthread_mutex_unlock(&P.lock);
    return rc;
}

int scaf_permit_thread_leave(void)
{
    int i;

    pthread_mutex_lock(&P.lock);
    i = entered ? slot_of(entered) : -1;
    /* A thread whose permit was released meanwhile just forgets it. */
    if (i >= 0)
        atomic_fetch_sub_explicit(&P.slots[i].threads, 1, memory_order_relaxed);
    entered = 0;
    pthread_mutex_unlock(&P.lock);
    return 0;
}

unsigned scaf_permit_count(void)
{
    unsigned n;

    pthread_mutex_lock(&P.lock);
    n = P.nopen;
    pthread_mutex_unlock(&P.lock);
    return n;
}

/*
 * The threads the permits let run when they work: oneTBB deactivates a permit
 * each time its arena runs out of work, between two parallel algorithms, so
 * the active grants alone would flicker between 1 and the share. Every open
 * permit that asks for workers is counted as if active (with lock held).
 */
static unsigned working_team(unsigned share)
{
    struct scaf_grant_want w[SCAF_PERMIT_MAX];
    unsigned g[SCAF_PERMIT_MAX];

    for (unsigned i = 0; i < SCAF_PERMIT_MAX; i++) {
        w[i].state = P.slots[i].used && P.slots[i].max > 0 ? SCAF_GRANT_ACTIVE : SCAF_GRANT_INACTIVE;
        w[i].min = P.slots[i].min;
        w[i].max = P.slots[i].max;
    }
    return 1 + scaf_grant_split(share, 0, w, SCAF_PERMIT_MAX, g);
}

void scaf_permit_poll(struct scaf_page *page)
{
    pthread_mutex_lock(&P.lock);
    if (P.nopen == 0) {
        /* The last permit went (oneTBB finalized): no more limit of theirs. */
        if (page && scaf_page_wanted(page) != 0)
            scaf_page_set_wanted(page, 0);
        pthread_mutex_unlock(&P.lock);
        return;
    }
    resplit();
    publish_wanted(page);
    /* A process that runs no OpenMP region still shows how many threads its permits let run. */
    if (page && atomic_load_explicit(&page->regions, memory_order_relaxed) == 0) {
        unsigned team = working_team(scaf_page_threads(page));

        if (scaf_page_last_team(page) != team)
            scaf_page_set_last_team(page, team);
    }
    for (unsigned i = 0; i < SCAF_PERMIT_MAX; i++) {
        struct slot *s = &P.slots[i];
        scaf_permit_notify notify;
        void *owner, *arg;
        uint64_t key;

        if (!s->used || !s->notify || (s->grant == s->told && s->state == s->told_state))
            continue;
        scaf_layer_log("permit %u: %u workers (was %u), %d threads in it", i, s->grant, s->told,
                       atomic_load_explicit(&s->threads, memory_order_relaxed));
        s->told = s->grant;
        s->told_state = s->state;
        s->busy = 1;
        notify = s->notify;
        owner = s->owner;
        arg = s->arg;
        key = key_of(i);
        P.notifier = pthread_self();
        P.notifying = 1;
        /* The runtime reads the permit back from inside its callback: never with our lock held. */
        pthread_mutex_unlock(&P.lock);
        notify(key, owner, arg);
        pthread_mutex_lock(&P.lock);
        P.notifying = 0;
        s->busy = 0;
        pthread_cond_broadcast(&P.idle);
    }
    pthread_mutex_unlock(&P.lock);
}
