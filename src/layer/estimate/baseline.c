/* baseline.c — serial baselines per call site: due or not, in place or forked, and what an outcome leaves behind. */
#include "baseline.h"

#include <stdio.h>

#include "scaf/procfs.h"

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

/*
 * What an experiment costs the program, in multiples of the fork time: after
 * the fork, every page the parent or the child writes is copied. Measured with
 * tests/progs/bigheap (tools/experiments/experiment_cost.py): a region writing all of a
 * 1 GiB heap ran ~20x slower in the parent, ~50 fork times.
 */
#define EXP_COST_FORKS 16

/*
 * Before the first fork there is no fork time to go by: estimate it from the
 * resident set (page tables to copy), ~100 ns per resident page as measured
 * here (a 1 GiB heap forked in ~25 ms). Read only when a baseline is due.
 */
static uint64_t fork_ns_estimate(uint64_t seen)
{
    char buf[128];
    unsigned long long size = 0, resident = 0;

    if (seen)
        return seen;
    if (scaf_procfs_read_pid(0, "statm", buf, sizeof buf) <= 0)
        return 0;
    if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
        return 0;
    return (uint64_t)resident * 100u;
}

int scaf_baseline_due(const struct scaf_site *s, uint64_t now, uint64_t interval_ns)
{
    if (now < LD(s->next_try_ns) || LD(s->busy))
        return 0;
    if (LD(s->serial_ns) == 0 && LD(s->serial_ins) == 0)
        return 1;
    return now - LD(s->serial_at_ns) >= interval_ns;
}

int scaf_baseline_alone(const struct scaf_site *s, unsigned threads, uint64_t now, uint64_t not_before_ns,
                        uint64_t budget_ns, uint64_t *cost)
{
    uint64_t par = LD(s->par_ns), pt = LD(s->par_threads);

    *cost = 0;
    if (threads <= 1)
        return 1;
    if (now < not_before_ns || !par || pt < 2)
        return 0;
    *cost = (pt - 1) * par;
    return *cost <= budget_ns;
}

int scaf_baseline_in_place(const struct scaf_site *s, unsigned threads, uint64_t inplace_ns,
                           uint64_t fork_ns_seen)
{
    uint64_t par = LD(s->par_ns), pt = LD(s->par_threads);
    uint64_t lost = (pt ? pt - 1 : 0) * par;

    if (threads <= 1)
        return 1;
    return par && inplace_ns && (pt * par <= inplace_ns || lost <= EXP_COST_FORKS * fork_ns_estimate(fork_ns_seen));
}

void scaf_baseline_set(struct scaf_site *s, uint64_t serial_ns, uint64_t now)
{
    ST(s->serial_ns, serial_ns ? serial_ns : 1);
    ST(s->serial_at_ns, now);
    ST(s->failures, 0);
}

void scaf_baseline_failed(struct scaf_site *s, uint64_t now, uint64_t interval_ns, int fatal)
{
    uint32_t f = atomic_fetch_add_explicit(&s->failures, 1, memory_order_relaxed) + 1;

    /* A blocked call happens every time; a bound hit twice is a region that cannot run alone. */
    if (fatal || f >= 2)
        atomic_fetch_or_explicit(&s->flags, SCAF_SITE_NOFORK, memory_order_relaxed);
    ST(s->next_try_ns, now + interval_ns);
}

uint64_t scaf_baseline_serial_of(const struct scaf_exp_result *res)
{
    uint64_t u = res->utime_us, k = res->stime_us;

    if (u + k >= 20000u) /* at least a few ticks: the split means something */
        return (uint64_t)((double)res->cpu_ns * (double)u / (double)(u + k));
    return res->cpu_ns;
}
