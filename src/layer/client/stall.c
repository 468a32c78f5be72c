/* stall.c — the stall net: running regions that were given fewer threads than they asked for, watched from the helper thread; one that runs far past its history while its thread only yields or waits is said once, and fixes the program's team. */
#include "stall.h"

#include <errno.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../core/say.h"
#include "../core/settings.h"
#include "../core/site.h"
#include "../core/stallrule.h"
#include "../malleable/malleable.h"
#include "../malleable/reason.h"
#include "scaf/clock.h"
#include "scaf/procfs.h"

#define SLOTS 16
/* The window over which the opening thread's user time is judged. */
#define WINDOW_NS 1000000000ull

/* One watched region. `t0` is the claim: written last by the region's thread, cleared at its end. */
struct watch {
    _Atomic uint64_t t0; /* CLOCK_MONOTONIC at entry, 0 = free */
    _Atomic int tid;
    void (*_Atomic fn)(void *);
    struct scaf_site *_Atomic site;
    _Atomic unsigned team, asked;
};

static struct watch slots[SLOTS];

/* The helper's own view of each slot (helper thread only): the window it is judging. */
static struct {
    uint64_t t0;       /* the claim this view belongs to */
    uint64_t limit_ns; /* how long that region may run before it is looked at */
    uint64_t w0_ns;    /* the window's start, 0 = none yet */
    uint64_t w0_user;  /* the thread's user ticks then */
    uint64_t w0_sys;   /* and its system ticks */
} view[SLOTS];

static _Atomic int said; /* the net speaks once per process */
static _Thread_local int my_tid;

int scaf_stall_begin(void (*fn)(void *), struct scaf_site *site, unsigned team, unsigned asked)
{
    if (team >= asked || scaf_settings.stall_ns == 0 || atomic_load_explicit(&said, memory_order_relaxed))
        return -1;
    if (!my_tid)
        my_tid = (int)syscall(SYS_gettid);
    for (int i = 0; i < SLOTS; i++) {
        uint64_t z = 0, now;

        if (atomic_load_explicit(&slots[i].t0, memory_order_relaxed) != 0)
            continue;
        /* Claim with a placeholder, fill in, then stamp the real start: the helper reads t0 last. */
        if (!atomic_compare_exchange_strong_explicit(&slots[i].t0, &z, 1, memory_order_acquire,
                                                     memory_order_relaxed))
            continue;
        atomic_store_explicit(&slots[i].tid, my_tid, memory_order_relaxed);
        atomic_store_explicit(&slots[i].fn, fn, memory_order_relaxed);
        atomic_store_explicit(&slots[i].site, site, memory_order_relaxed);
        atomic_store_explicit(&slots[i].team, team, memory_order_relaxed);
        atomic_store_explicit(&slots[i].asked, asked, memory_order_relaxed);
        now = scaf_clock_ns(CLOCK_MONOTONIC);
        atomic_store_explicit(&slots[i].t0, now > 1 ? now : 2, memory_order_release);
        return i;
    }
    return -1;
}

void scaf_stall_end(int slot)
{
    if (slot >= 0)
        atomic_store_explicit(&slots[slot].t0, 0, memory_order_relaxed);
}

/* What the site's history says one instance takes, and at which team (0: no history). */
static uint64_t history(const struct scaf_site *s, unsigned *team)
{
    double n, sum;

    *team = 0;
    if (!s)
        return 0;
    n = atomic_load_explicit(&s->mean_n, memory_order_relaxed);
    sum = atomic_load_explicit(&s->mean_sum, memory_order_relaxed);
    if (n > 0 && sum > 0) {
        *team = atomic_load_explicit(&s->mean_team, memory_order_relaxed);
        return (uint64_t)(sum / n);
    }
    *team = atomic_load_explicit(&s->par_threads, memory_order_relaxed);
    return atomic_load_explicit(&s->par_ns, memory_order_relaxed);
}

static void fire(int i, uint64_t now, uint64_t t0)
{
    void (*fn)(void *) = atomic_load_explicit(&slots[i].fn, memory_order_relaxed);
    struct scaf_site *site = atomic_load_explicit(&slots[i].site, memory_order_relaxed);
    unsigned team = atomic_load_explicit(&slots[i].team, memory_order_relaxed);
    unsigned asked = atomic_load_explicit(&slots[i].asked, memory_order_relaxed);
    double secs = (double)(now - t0) / 1e9;
    char where[160];

    if (atomic_exchange(&said, 1))
        return;
    scaf_reason_describe((void *)fn, where, sizeof where);
    scaf_say_always("scaf: %s (pid %d): the region %s has run %.0f s with %u of the %u threads it asked for, "
                    "while its thread only yields or waits: its work may wait for a thread it was not given. "
                    "Its team is fixed from now on and in the next runs (scaf status shows why; "
                    "scaf forget -- %s undoes it); this run may not recover",
                    program_invocation_short_name, (int)getpid(), where, secs, team, asked,
                    program_invocation_short_name);
    scaf_malleable_stalled(fn, site, team, asked, secs);
}

void scaf_stall_check(uint64_t now)
{
    long hz = 0;

    if (atomic_load_explicit(&said, memory_order_relaxed))
        return;
    for (int i = 0; i < SLOTS; i++) {
        uint64_t t0 = atomic_load_explicit(&slots[i].t0, memory_order_acquire), user, sys;
        int tid;

        if (t0 <= 1 || now <= t0)
            continue;
        if (view[i].t0 != t0) {
            unsigned hist_team, team = atomic_load_explicit(&slots[i].team, memory_order_relaxed);
            uint64_t hist = history(atomic_load_explicit(&slots[i].site, memory_order_relaxed), &hist_team);

            view[i].t0 = t0;
            view[i].limit_ns = scaf_stallrule_limit_ns(hist, hist_team, team, scaf_settings.stall_ns);
            view[i].w0_ns = 0;
        }
        if (now - t0 < view[i].limit_ns)
            continue;
        tid = atomic_load_explicit(&slots[i].tid, memory_order_relaxed);
        if (scaf_procfs_task_times(tid, &user, &sys, NULL) < 0)
            continue;
        if (view[i].w0_ns == 0 || now - view[i].w0_ns < WINDOW_NS) {
            if (view[i].w0_ns == 0) {
                view[i].w0_ns = now;
                view[i].w0_user = user;
                view[i].w0_sys = sys;
            }
            continue;
        }
        if (!hz)
            hz = sysconf(_SC_CLK_TCK);
        /* The region may have ended and its slot been taken again meanwhile: only the same claim counts. */
        if (atomic_load_explicit(&slots[i].t0, memory_order_acquire) != t0)
            continue;
        if (scaf_stallrule_idle(user - view[i].w0_user, sys - view[i].w0_sys, now - view[i].w0_ns, hz)) {
            fire(i, now, t0);
            return;
        }
        /* It computes: judge the next window. */
        view[i].w0_ns = now;
        view[i].w0_user = user;
        view[i].w0_sys = sys;
    }
}
