/* page.c — the only writer of the client half of the shared page, and the page the wrappers read. */
#include "page.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Atomic(struct scaf_page *) scaf_layer_page;

void scaf_page_set(struct scaf_page *page)
{
    atomic_store_explicit(&scaf_layer_page, page, memory_order_release);
}

/* ---- the daemon's half ---- */

/*
 * Another gang's turn (docs/daemon.md, "Fixed teams"): hold this region until
 * ours comes. The whole team is parked where it would be between regions, so
 * no thread is interrupted. Bounded: a daemon that died mid-turn costs at most
 * GANG_WAIT_MAX_MS per region until the helper reconnects.
 */
#define GANG_WAIT_MAX_MS 1000

void scaf_page_wait_turn(struct scaf_page *p)
{
    struct timespec slice = {0, 50 * 1000 * 1000};
    int saved = errno;

    for (int waited = 0; waited < GANG_WAIT_MAX_MS; waited += 50) {
        if (atomic_load_explicit(&p->gang, memory_order_acquire) != SCAF_GANG_WAIT ||
            scaf_page_get() != p)
            break;
        /* Shared futex: the daemon, another process, wakes it. */
        syscall(SYS_futex, &p->gang, FUTEX_WAIT, SCAF_GANG_WAIT, &slice, NULL, 0);
    }
    errno = saved;
}

int scaf_page_read_control(struct scaf_page *p, uint32_t *control, uint64_t words[SCAF_CPUSET_WORDS])
{
    for (int tries = 0; tries < 1000; tries++) {
        uint32_t s1 = atomic_load_explicit(&p->seq, memory_order_acquire);

        if (s1 & 1u) {
            sched_yield();
            continue;
        }
        *control = atomic_load_explicit(&p->control, memory_order_relaxed);
        for (int i = 0; i < SCAF_CPUSET_WORDS; i++)
            words[i] = atomic_load_explicit(&p->cpuset[i], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&p->seq, memory_order_relaxed) == s1)
            return 0;
    }
    errno = EAGAIN;
    return -1;
}

void scaf_page_gang_off(struct scaf_page *p)
{
    /* The one write to the daemon's half: the daemon that owned it is gone, and a held team must run. */
    if (atomic_exchange(&p->gang, SCAF_GANG_OFF) != SCAF_GANG_OFF)
        syscall(SYS_futex, &p->gang, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void scaf_page_sleep(struct scaf_page *p, uint32_t seq, unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    /* Shared (not private) futex: the daemon, another process, wakes it. */
    syscall(SYS_futex, (uint32_t *)&p->seq, FUTEX_WAIT, seq, &ts, NULL, 0);
}

void scaf_page_wake(struct scaf_page *p)
{
    syscall(SYS_futex, (uint32_t *)&p->seq, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* ---- the daemon's memory ---- */

void scaf_page_read_memory(const struct scaf_page *p, struct scaf_page_memory *m)
{
    m->start_team = p->start_team > SCAF_MAX_CPUS ? 0 : p->start_team;
    m->runs = p->memory_runs;
    m->verdict = p->memory_verdict;
    m->source = p->memory_source;
    m->known_sites = p->known_sites > SCAF_MEMORY_SITES ? SCAF_MEMORY_SITES : p->known_sites;
    m->cpus = atomic_load_explicit(&((struct scaf_page *)p)->cpus, memory_order_relaxed);
    /* Nothing remembered means nothing at all: a verdict without runs is not the daemon's word. */
    if (m->runs == 0)
        m->verdict = m->source = 0;
}

uint32_t scaf_page_known(const struct scaf_page *p, uint64_t object, uint32_t offset)
{
    unsigned n = p->known_sites > SCAF_MEMORY_SITES ? SCAF_MEMORY_SITES : p->known_sites;

    for (unsigned i = 0; i < n; i++)
        if (p->known[i].object == object && p->known[i].offset == offset)
            return p->known[i].bits & SCAF_MEMO_ALL;
    return 0;
}

int scaf_page_known_any(const struct scaf_page *p, uint32_t bits)
{
    unsigned n = p->known_sites > SCAF_MEMORY_SITES ? SCAF_MEMORY_SITES : p->known_sites;

    for (unsigned i = 0; i < n; i++)
        if (p->known[i].bits & bits & SCAF_MEMO_ALL)
            return 1;
    return 0;
}

/* ---- the client's half ---- */

void scaf_page_set_started(struct scaf_page *p, unsigned team)
{
    atomic_store_explicit(&p->started_with, team, memory_order_relaxed);
}

void scaf_page_publish_learned(struct scaf_page *p, const struct scaf_site_memo *memo, unsigned from, unsigned n)
{
    if (n > SCAF_MEMORY_SITES)
        n = SCAF_MEMORY_SITES;
    for (unsigned i = from; i < n; i++)
        p->learned[i] = memo[i];
    atomic_store_explicit(&p->learned_sites, n, memory_order_release);
}

void scaf_page_publish_estimate(struct scaf_page *p, double efficiency, unsigned team, uint32_t kind)
{
    uint32_t s = atomic_load_explicit(&p->client_seq, memory_order_relaxed);

    for (;;) {
        if (s & 1u) {
            s = atomic_load_explicit(&p->client_seq, memory_order_relaxed);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&p->client_seq, &s, s + 1, memory_order_acquire,
                                                  memory_order_relaxed))
            break;
    }
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&p->efficiency_ppm, scaf_efficiency_to_ppm(efficiency), memory_order_relaxed);
    atomic_store_explicit(&p->eff_team, team < 1 ? 1u : team, memory_order_relaxed);
    atomic_store_explicit(&p->estimate, kind, memory_order_relaxed);
    atomic_store_explicit(&p->client_seq, s + 2, memory_order_release);
}

uint32_t scaf_page_estimate_kind(const struct scaf_page *p)
{
    return atomic_load_explicit(&((struct scaf_page *)p)->estimate, memory_order_relaxed);
}

void scaf_page_publish_verdict(struct scaf_page *p, uint32_t verdict, uint32_t source, const char *reason,
                               unsigned fixed_team)
{
    uint32_t s = atomic_load_explicit(&p->reason_seq, memory_order_relaxed);

    s += s & 1;
    atomic_store_explicit(&p->reason_seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    memcpy(p->reason, reason, sizeof p->reason);
    atomic_store_explicit(&p->reason_seq, s + 2, memory_order_release);
    atomic_store_explicit(&p->verdict_source, source, memory_order_relaxed);
    if (verdict == SCAF_VERDICT_FIXED) {
        atomic_store(&p->fixed_team, fixed_team);
        atomic_fetch_or(&p->client_flags, SCAF_CLIENT_NONMALLEABLE);
    }
    atomic_store_explicit(&p->verdict, verdict, memory_order_release);
}

void scaf_page_flag(struct scaf_page *p, uint32_t flag, int on)
{
    if (on)
        atomic_fetch_or_explicit(&p->client_flags, flag, memory_order_relaxed);
    else
        atomic_fetch_and_explicit(&p->client_flags, ~flag, memory_order_relaxed);
}

void scaf_page_set_experiment(struct scaf_page *p, pid_t pid)
{
    atomic_store_explicit(&p->experiment_pid, (int32_t)pid, memory_order_relaxed);
}

void scaf_page_count_experiment(struct scaf_page *p)
{
    atomic_fetch_add_explicit(&p->experiments, 1, memory_order_relaxed);
}
