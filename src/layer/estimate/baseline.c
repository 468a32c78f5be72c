/* baseline.c — per call site, the serial samples and the parallel instances whose means give its efficiency: when a sample is due, in place or forked, and what an outcome leaves behind. */
#include "baseline.h"

#include <math.h>

#include "estimate_math.h"
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
 * How many serial samples a site's mean takes: at least SAMPLES_MIN, more until
 * the mean's relative standard error is SAMPLES_RSE, never more than
 * SAMPLES_MAX. The minimum is for the rare large instance: where one instance
 * in eight is forty times the others (tests/progs/skewed.c), 16 samples missed
 * every large one in 12% of runs (the spread then looks like none, and the
 * mean a fifth of the truth); 64 miss them in 0.02%. A HistGradientBoosting
 * fit's main histogram site (median 31 us, mean 70 us, p99 0.7 ms at one
 * thread) read 0.39 at 2 threads from one sample where it ran at 0.86.
 */
#define SAMPLES_MIN 64.0
#define SAMPLES_RSE 0.1
#define SAMPLES_MAX 1000.0

/*
 * An extra sample is taken at one instance in MORE_ONE_IN, picked by a hash of
 * its number, not at the first one the budget allows: that one follows a pause,
 * and a pause is most often the preparation of a large instance (the
 * fit above partitions a node's rows before it builds that node's histogram).
 * Taken that way, its samples had a median of 67 us where its instances' is 31.
 */
#define MORE_ONE_IN 16u

/*
 * Before the first fork there is no fork time to go by: estimate it from the
 * resident set (page tables to copy), ~100 ns per resident page as measured
 * here (a 1 GiB heap forked in ~25 ms). Read only when a baseline is due.
 */
static uint64_t fork_ns_estimate(uint64_t seen)
{
    return seen ? seen : scaf_procfs_resident_pages() * 100u;
}

/* e^(-age/interval): what a sample or an instance taken `at` still counts at `now`. */
static double fade_of(uint64_t at, uint64_t now, uint64_t interval_ns)
{
    double x;

    if (!at || now <= at || !interval_ns)
        return 1.0;
    x = (double)(now - at) / (double)interval_ns;
    /* Instances come microseconds apart: the series is exact to 1e-7 there, and costs no exp() per region. */
    return x < 0.01 ? 1.0 - x + 0.5 * x * x : exp(-x);
}

static struct scaf_samples samples_of(const struct scaf_site *s)
{
    return (struct scaf_samples){LD(s->serial_n), LD(s->serial_sum), LD(s->serial_sq)};
}

enum scaf_baseline_need scaf_baseline_due(const struct scaf_site *s, uint64_t now, uint64_t interval_ns)
{
    struct scaf_samples st;
    double f;

    if (now < LD(s->next_try_ns) || LD(s->busy))
        return SCAF_BASELINE_NONE;
    if ((LD(s->serial_ns) == 0 && LD(s->serial_ins) == 0) || now - LD(s->serial_at_ns) >= interval_ns)
        return SCAF_BASELINE_DUE;
    if (!LD(s->serial_ns) || !scaf_samples_pick(LD(s->key), LD(s->instances), MORE_ONE_IN))
        return SCAF_BASELINE_NONE;
    /* Faded to now: samples stop counting as they age, so a site is sampled again before it goes stale. */
    st = samples_of(s);
    f = fade_of(LD(s->serial_at_ns), now, interval_ns);
    st.n *= f;
    st.sum *= f;
    st.sq *= f;
    return scaf_samples_want_more(&st, SAMPLES_RSE, SAMPLES_MIN, SAMPLES_MAX) ? SCAF_BASELINE_MORE
                                                                              : SCAF_BASELINE_NONE;
}

int scaf_baseline_alone(const struct scaf_site *s, unsigned threads, uint64_t now, uint64_t not_before_ns,
                        uint64_t budget_ns, uint64_t *cost)
{
    uint64_t par = LD(s->par_ns), pt = LD(s->par_threads);
    double n = LD(s->mean_n);
    uint32_t mt = LD(s->mean_team);

    *cost = 0;
    if (threads <= 1)
        return 1;
    /* Priced at the mean parallel instance where there is one: the instance sampled is any one, and the latest
     * is most often a small one at a site of skewed sizes (the budget would then be overrun by the skew). */
    if (n >= 1.0 && mt >= 2) {
        par = (uint64_t)(LD(s->mean_sum) / n);
        pt = mt;
    }
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

void scaf_baseline_set(struct scaf_site *s, uint64_t serial_ns, uint64_t now, uint64_t interval_ns)
{
    struct scaf_samples st = samples_of(s);
    uint64_t at = LD(s->serial_at_ns);
    double mean;

    scaf_samples_add(&st, serial_ns ? (double)serial_ns : 1.0, fade_of(at, now, interval_ns));
    ST(s->serial_n, st.n);
    ST(s->serial_sum, st.sum);
    ST(s->serial_sq, st.sq);
    mean = scaf_samples_mean(&st);
    ST(s->serial_ns, mean >= 1.0 ? (uint64_t)(mean + 0.5) : 1);
    ST(s->serial_at_ns, now);
    ST(s->failures, 0);
}

double scaf_baseline_observe(struct scaf_site *s, unsigned team, uint64_t ns, uint64_t now, uint64_t interval_ns)
{
    struct scaf_samples st = {LD(s->mean_n), LD(s->mean_sum), 0.0}; /* no spread kept: sq is left unused */
    double f = fade_of(LD(s->mean_at_ns), now, interval_ns);

    if (LD(s->mean_team) != team) {
        ST(s->mean_team, team);
        f = 0.0;
    }
    scaf_samples_add(&st, (double)ns, f);
    ST(s->mean_n, st.n);
    ST(s->mean_sum, st.sum);
    ST(s->mean_at_ns, now);
    return scaf_samples_mean(&st);
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
