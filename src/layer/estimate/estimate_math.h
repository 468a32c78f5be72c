/* estimate_math.h — pure arithmetic of the efficiency estimate: region efficiency, the time-weighted window mix, the RC filter. */
#ifndef SCAF_LAYER_ESTIMATE_MATH_H
#define SCAF_LAYER_ESTIMATE_MATH_H

/*
 * Header-only and free of I/O and globals so that tests/unit/test_estimate_math.c
 * checks exactly the code the layer runs (the layer is a preload library that
 * unit tests cannot link).
 */
#include <math.h>
#include <stdint.h>

/*
 * Efficiency of one region instance: serial time / (threads x parallel time).
 * Not clamped here: `serial_ns` is the mean of the site's serial samples, and
 * instances of one site can differ tenfold in size (a tree builder's
 * histogram per node), so a small instance reads above 1 and a large one
 * below. Only their time-weighted mean, the window's, is the site's
 * efficiency (clamped in scaf_mix_value); clamping each instance at 1 read a
 * scikit-learn fit at 0.39 where it ran at 0.72. Returns -1 when it cannot be
 * computed.
 */
static inline double scaf_region_efficiency(uint64_t serial_ns, unsigned threads, uint64_t par_ns)
{
    if (serial_ns == 0 || threads == 0 || par_ns == 0)
        return -1.0;
    return (double)serial_ns / ((double)threads * (double)par_ns);
}

/*
 * A call site's serial samples, each faded by its age (time constant: the
 * baseline interval), so a phase change is followed. One sample is one draw
 * from the site's instance sizes, and those are often skewed (most small, a
 * few large): its mean needs as many samples as the spread says.
 */
struct scaf_samples {
    double n;   /* faded count */
    double sum; /* faded sum of serial times, ns */
    double sq;  /* faded sum of their squares */
};

/* Sample `x` ns, `fade` (in (0, 1]) being e^(-age of the previous ones / interval). */
static inline void scaf_samples_add(struct scaf_samples *st, double x, double fade)
{
    st->n = st->n * fade + 1.0;
    st->sum = st->sum * fade + x;
    st->sq = st->sq * fade + x * x;
}

static inline double scaf_samples_mean(const struct scaf_samples *st)
{
    return st->n > 0.0 ? st->sum / st->n : 0.0;
}

/*
 * Nonzero for one instance number in `one_in` of a site keyed `key`, picked at
 * random (splitmix64) but the same for the same number: a choice that does not
 * depend on when the instance comes.
 */
static inline int scaf_samples_pick(uint64_t key, uint64_t instance, unsigned one_in)
{
    uint64_t z = key + instance * 0x9e3779b97f4a7c15ull;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return one_in <= 1 || z % one_in == 0;
}

/*
 * Nonzero while the mean is not known to a relative standard error of `rse`:
 * fewer than `min_n` samples (a few equal small ones would hide the rare large
 * ones), or a spread that needs more; never beyond `max_n` samples.
 */
static inline int scaf_samples_want_more(const struct scaf_samples *st, double rse, double min_n, double max_n)
{
    double mean, var;

    if (st->n < min_n)
        return 1;
    if (st->n >= max_n || st->n <= 1.0)
        return st->n <= 1.0;
    mean = st->sum / st->n;
    var = (st->sq / st->n - mean * mean) * st->n / (st->n - 1.0);
    if (mean <= 0.0 || var <= 0.0)
        return 0;
    return var > rse * rse * st->n * mean * mean;
}

/*
 * One window of the process's life. Time spent in regions whose call site has
 * a serial baseline counts with the regions' efficiency; time between regions
 * counts as 1/N (one thread busy on N allocated contexts); region time without
 * a baseline is left out, which weighs the window as if it ran like the
 * measured regions.
 */
struct scaf_mix {
    double w_known;   /* ns in measured regions */
    double we_known;  /* sum of ns x efficiency over them */
    double w_serial;  /* ns between regions */
    double we_serial; /* sum of ns x 1/N over them */
    double wt;        /* sum of ns x team size (measured regions and serial stretches) */
    double w_unknown; /* ns in regions without a baseline (reported, not mixed) */
    double serial_cpu; /* sum of serial baselines over instances whose process CPU time was read */
    double par_cpu;    /* sum of the process CPU time those instances consumed */
};

static inline void scaf_mix_reset(struct scaf_mix *m)
{
    m->w_known = m->we_known = m->w_serial = m->we_serial = m->wt = m->w_unknown = 0.0;
    m->serial_cpu = m->par_cpu = 0.0;
}

static inline void scaf_mix_add_region(struct scaf_mix *m, uint64_t ns, double eff, unsigned threads)
{
    if (eff < 0.0) {
        m->w_unknown += (double)ns;
        return;
    }
    m->w_known += (double)ns;
    m->we_known += (double)ns * eff;
    m->wt += (double)ns * threads;
}

/*
 * CPU view of one measured instance: its serial baseline (CPU time of one
 * thread) and the CPU time the whole process consumed while it ran. Their
 * ratio is the time analogue of the IPC ratio: the work the region needs over
 * the CPU the team burned for it (spinning, contention and stalls included),
 * and, unlike wall time, it does not fall when the machine time-slices the
 * team with other programs. Summed over the window, so the tick granularity
 * of other threads' CPU clocks averages out.
 */
static inline void scaf_mix_add_cpu(struct scaf_mix *m, uint64_t serial_ns, uint64_t cpu_ns)
{
    if (serial_ns == 0 || cpu_ns == 0)
        return;
    m->serial_cpu += (double)serial_ns;
    m->par_cpu += (double)cpu_ns;
}

static inline void scaf_mix_add_serial(struct scaf_mix *m, uint64_t ns, unsigned contexts)
{
    if (contexts == 0)
        contexts = 1;
    m->w_serial += (double)ns;
    m->we_serial += (double)ns / contexts;
    m->wt += (double)ns * contexts;
}

/*
 * The window's efficiency and the team size it was measured at (rounded
 * time-weighted mean, at least 1). Returns 0 and leaves the outputs alone when
 * no measured region fell in the window: serial stretches alone say nothing
 * about how the regions scale.
 */
static inline int scaf_mix_value(const struct scaf_mix *m, double *eff, unsigned *team)
{
    double w = m->w_known + m->w_serial;
    double t;

    double e_reg;

    if (m->w_known <= 0.0 || w <= 0.0)
        return 0;
    /* Region efficiency from the CPU view where the window has one, else from wall times. */
    if (m->par_cpu > 0.0) {
        e_reg = m->serial_cpu / m->par_cpu;
    } else {
        e_reg = m->we_known / m->w_known;
    }
    /* Above 1: superlinear, or a baseline taken on a cold cache; either would tell the policy that more
     * contexts pay off without bound. */
    if (e_reg > 1.0)
        e_reg = 1.0;
    *eff = (m->w_known * e_reg + m->we_serial) / w;
    t = m->wt / w + 0.5;
    *team = t < 1.0 ? 1u : (unsigned)t;
    return 1;
}

/*
 * First-order RC low-pass filter sampled at irregular intervals: the exact
 * discretisation y += (1 - e^(-dt/tau)) (x - y), so the result does not depend
 * on how often the layer happens to publish. tau <= 0 passes x through.
 * `have` == 0 means no previous output: start at x instead of at 0.
 */
static inline double scaf_rc_filter(double y, int have, double x, double dt_s, double tau_s)
{
    double a;

    if (!have || tau_s <= 0.0)
        return x;
    if (dt_s <= 0.0)
        return y;
    a = 1.0 - exp(-dt_s / tau_s);
    return y + a * (x - y);
}

#endif
