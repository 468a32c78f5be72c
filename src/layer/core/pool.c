/* pool.c — thread pools the layer steers between regions (BLAS libraries): the table, the rescan trigger, the apply step. */
#include "pool.h"

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "page.h"
#include "runtimes.h"
#include "say.h"

#define POOL_MAX 8

/* Written by the helper thread only; `npools` is published after the entry it counts. */
static struct scaf_pool pools[POOL_MAX];
static _Atomic unsigned npools;
/* The adapters' scanners (BLAS, Arrow), in the order they registered. */
#define SCANNERS 4
static void (*_Atomic scanners[SCANNERS])(void);

/*
 * Held across fork, so that a child is never forked while the helper is
 * inside the loader's locks (a rescan) or inside a library's setter: the
 * child would inherit them held. Two locks, each with its own fork handlers,
 * because of when each pair is registered: fork runs prepare handlers in the
 * reverse order of registration. The apply pair is registered once a pool is
 * found, after the library registered its own (OpenBLAS shuts its server down
 * in its prepare handler, and its setter restarts a server it finds down), so
 * ours runs first and no setter call can fall between the library's handler
 * and the fork. The helper never holds both at once.
 */
static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t apply_lock = PTHREAD_MUTEX_INITIALIZER;
/* Set at exit, under apply_lock: a pool the process is tearing down is never called again (scaf_pool_stop_at_exit). */
static int stopped;
static int apply_registered; /* helper thread only */

static void scan_prepare(void)
{
    pthread_mutex_lock(&scan_lock);
}

static void scan_release(void)
{
    pthread_mutex_unlock(&scan_lock);
}

static void apply_prepare(void)
{
    pthread_mutex_lock(&apply_lock);
}

static void apply_release(void)
{
    pthread_mutex_unlock(&apply_lock);
}

/* The loader's counters of objects ever added and removed: they change exactly when dlopen/dlclose did. */
struct objcount {
    unsigned long long adds, subs;
};
static struct objcount seen;
static int seen_valid;

static int read_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct objcount *c = arg;

    /* dlpi_adds/dlpi_subs exist since glibc 2.4; older callers pass a shorter struct. */
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        return 1;
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
    return 1; /* the first object is enough */
}

void scaf_pool_set_scanner(void (*scan)(void))
{
    static _Atomic int registered;

    if (!scan) {
        for (int i = 0; i < SCANNERS; i++)
            atomic_store(&scanners[i], NULL);
        return;
    }
    /* From a constructor: no lock of ours is held (fork holds glibc's atfork lock while it runs them). */
    if (!atomic_exchange(&registered, 1))
        pthread_atfork(scan_prepare, scan_release, scan_release);
    for (int i = 0; i < SCANNERS; i++) {
        void (*none)(void) = NULL;

        if (atomic_load(&scanners[i]) == scan || atomic_compare_exchange_strong(&scanners[i], &none, scan))
            return;
    }
}

int scaf_pool_watching(void)
{
    for (int i = 0; i < SCANNERS; i++)
        if (atomic_load(&scanners[i]) != NULL)
            return 1;
    return 0;
}

/* exit() runs this before the library's own destructor of its pool (registered later: see pool.h). */
static void stop(void)
{
    pthread_mutex_lock(&apply_lock);
    stopped = 1;
    pthread_mutex_unlock(&apply_lock);
}

void scaf_pool_stop_at_exit(void)
{
    static _Atomic int registered;

    if (!atomic_exchange(&registered, 1))
        atexit(stop);
}

int scaf_pool_add(const struct scaf_pool *p)
{
    unsigned n = atomic_load_explicit(&npools, memory_order_relaxed);

    for (unsigned i = 0; i < n; i++)
        if (pools[i].set_fn == p->set_fn)
            return 0;
    if (n >= POOL_MAX) {
        errno = ENOSPC;
        return -1;
    }
    pools[n] = *p;
    pools[n].applied = p->bound;
    pools[n].fixed = 0;
    atomic_store_explicit(&npools, n + 1, memory_order_release);
    scaf_layer_log("%s thread pool found in %s: %u threads (its bound)", p->lib, p->path, p->bound);
    return 1;
}

unsigned scaf_pool_get_int(const struct scaf_pool *p)
{
    int (*f)(void);
    int n;

    memcpy(&f, &p->get_fn, sizeof f);
    n = f();
    return n > 0 ? (unsigned)n : 0;
}

unsigned scaf_pool_count(void)
{
    return atomic_load_explicit(&npools, memory_order_acquire);
}

unsigned scaf_pool_max_bound(void)
{
    unsigned n = scaf_pool_count(), max = 0;

    for (unsigned i = 0; i < n; i++)
        if (pools[i].bound > max)
            max = pools[i].bound;
    return max;
}

/*
 * One pool. What the pool shows now differs from what we left it at only when
 * someone else set it: the program (threadpoolctl, openblas_set_num_threads).
 * Like a program's omp_set_num_threads for its regions, that is the program's
 * word; here it is kept for good, since a later value equal to ours could not
 * be told apart from our own.
 */
static void apply_one(struct scaf_pool *p, unsigned threads)
{
    unsigned want = threads < p->bound ? threads : p->bound;
    unsigned now;

    if (p->fixed)
        return;
    if (want < 1)
        want = 1;
    now = p->get(p);
    if (now != 0 && now != p->applied) {
        p->fixed = 1;
        scaf_layer_log("%s pool set to %u by the program (we left %u): left alone from now on", p->lib, now,
                       p->applied);
        return;
    }
    if (now == want)
        return;
    p->set(p, want);
    p->applied = want;
    scaf_layer_log("%s pool: %u threads", p->lib, want);
}

unsigned scaf_pool_poll(struct scaf_page *page)
{
    struct objcount c = {0, 0};
    unsigned n;

    pthread_mutex_lock(&scan_lock);
    dl_iterate_phdr(read_counts, &c);
    if (!seen_valid || c.adds != seen.adds || c.subs != seen.subs) {
        seen = c;
        seen_valid = 1;
        for (int i = 0; i < SCANNERS; i++) {
            void (*scan)(void) = atomic_load(&scanners[i]);

            if (scan)
                scan();
        }
        /* The other runtimes by their objects' names (core/runtimes.h): SCAF_BLAS=0 does not hide them. */
        scaf_runtimes_scan();
    }
    pthread_mutex_unlock(&scan_lock);
    n = scaf_pool_count();
    /* With no lock held: fork holds glibc's atfork lock while it runs the prepare handlers. */
    if (n > 0 && !apply_registered) {
        pthread_atfork(apply_prepare, apply_release, apply_release);
        apply_registered = 1;
    }
    if (page && n > 0) {
        unsigned threads = scaf_page_threads(page);
        unsigned last = 0;

        pthread_mutex_lock(&apply_lock);
        for (unsigned i = 0; i < n && !stopped; i++) {
            apply_one(&pools[i], threads);
            last = pools[i].fixed ? pools[i].get(&pools[i]) : pools[i].applied;
        }
        /* A process that runs no region still shows the team its pools run with. */
        if (last && scaf_page_last_team(page) != last && atomic_load(&page->regions) == 0)
            scaf_page_set_last_team(page, last);
        pthread_mutex_unlock(&apply_lock);
    }
    return n;
}
