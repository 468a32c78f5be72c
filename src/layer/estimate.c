/* estimate.c — the efficiency estimator: region timing, serial baselines (in place or forked), window mix, RC filter, publication. */
#include "estimate.h"

#include "estimate_math.h"
#include "experiment.h"
#include "layer.h"
#include "perfctr.h"
#include "site.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------- settings */

struct settings {
    int enabled;          /* SCAF_ESTIMATE */
    int lazy;             /* SCAF_LAZY */
    int experiments;      /* SCAF_EXPERIMENTS */
    int cpu_view;         /* SCAF_CPU_VIEW: region efficiency from process CPU time instead of wall time */
    int counters;         /* SCAF_COUNTERS: -1 auto, 0 off, 1 wanted */
    double tau_s;         /* SCAF_RC_TAU_S */
    uint64_t interval_ns; /* SCAF_EXPERIMENT_INTERVAL_S */
    uint64_t long_ns;     /* SCAF_LONG_REGION_S */
    uint64_t inplace_ns;  /* SCAF_INPLACE_MAX_MS */
    uint64_t exp_max_ns;  /* SCAF_EXPERIMENT_MAX_S */
    uint64_t window_ns;   /* SCAF_WINDOW_MS */
    double assumed;       /* SCAF_ASSUMED_EFFICIENCY */
};

static struct settings cfg = {
    .enabled = 1,
    .lazy = 1,
    .experiments = 1,
    .counters = -1,
    .tau_s = 1.0,
    .interval_ns = 10000000000ull,
    .long_ns = 10000000000ull,
    .inplace_ns = 5000000ull,
    .exp_max_ns = 10000000000ull,
    .window_ns = 100000000ull,
    .assumed = 0.5,
};
static _Atomic int cfg_read;

/*
 * A bad value is the user's mistake, so it is reported even without
 * SCAF_VERBOSE (one line on stderr) and the default stays in force.
 */
static void bad_setting(const char *name, const char *val, const char *want)
{
    char msg[256];
    int n = snprintf(msg, sizeof msg, "ignoring %s=\"%.64s\": expected %s", name, val, want);

    if (n > 0)
        (void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
}

static void env_double(const char *name, double *out, double lo, double hi, const char *want)
{
    const char *v = getenv(name);
    char *end;
    double d;

    if (!v || !*v)
        return;
    errno = 0;
    d = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(d) || d < lo || d > hi) {
        bad_setting(name, v, want);
        return;
    }
    *out = d;
}

static void env_ns(const char *name, uint64_t *out, double scale, double hi, const char *want)
{
    double d = (double)*out / scale;

    env_double(name, &d, 0.0, hi, want);
    *out = (uint64_t)(d * scale);
}

static void env_bool(const char *name, int *out)
{
    const char *v = getenv(name);

    if (!v || !*v)
        return;
    if (strcmp(v, "0") == 0)
        *out = 0;
    else if (strcmp(v, "1") == 0)
        *out = 1;
    else
        bad_setting(name, v, "0 or 1");
}

static void read_settings(void)
{
    int c = -1;

    env_bool("SCAF_ESTIMATE", &cfg.enabled);
    env_bool("SCAF_LAZY", &cfg.lazy);
    env_bool("SCAF_EXPERIMENTS", &cfg.experiments);
    env_bool("SCAF_CPU_VIEW", &cfg.cpu_view);
    env_bool("SCAF_COUNTERS", &c);
    cfg.counters = c;
    env_double("SCAF_RC_TAU_S", &cfg.tau_s, 0.0, 3600.0, "seconds in [0, 3600]");
    env_ns("SCAF_EXPERIMENT_INTERVAL_S", &cfg.interval_ns, 1e9, 86400.0, "seconds in [0, 86400]");
    env_ns("SCAF_LONG_REGION_S", &cfg.long_ns, 1e9, 86400.0, "seconds in [0, 86400]");
    env_ns("SCAF_INPLACE_MAX_MS", &cfg.inplace_ns, 1e6, 60000.0, "milliseconds in [0, 60000]");
    env_ns("SCAF_EXPERIMENT_MAX_S", &cfg.exp_max_ns, 1e9, 3600.0, "seconds in [0, 3600]");
    env_ns("SCAF_WINDOW_MS", &cfg.window_ns, 1e6, 60000.0, "milliseconds in [0, 60000]");
    env_double("SCAF_ASSUMED_EFFICIENCY", &cfg.assumed, 0.0, 1.0, "a number in [0, 1]");
    if (cfg.long_ns == 0)
        cfg.long_ns = 1; /* 0 s: every region is long at once (tests) */
    if (cfg.exp_max_ns < 1000000ull)
        cfg.exp_max_ns = 1000000ull;
    if (cfg.counters != 0) {
        int have = scaf_perfctr_detect(cfg.counters);

        if (!have && cfg.counters == 1)
            scaf_layer_log("SCAF_COUNTERS=1 but no hardware instruction/cycle counters here; timing estimator");
        else if (have)
            scaf_layer_log("hardware counters available: IPC estimator on");
    }
}

/* ---------------------------------------------------------------- state */

static _Atomic(struct scaf_page *) page_g;
static _Atomic uint32_t active;      /* outermost regions running now (several program threads may run one) */
static _Atomic uint64_t last_end_ns; /* when the latest one ended, or attach time */

/* The window and the filter, behind a try-lock: a region that finds it taken drops its sample, never waits. */
static atomic_flag win_lock = ATOMIC_FLAG_INIT;
static struct scaf_mix win;
static _Atomic uint64_t win_start_ns;
static uint64_t last_pub_ns;
static double filt;
static int have_filt;
static unsigned filt_team;
static int win_counters;
static uint32_t filt_kind = SCAF_ESTIMATE_NONE;

/* The one experiment that may run at a time. exp_live is the lock-free "is there one" hint. */
static atomic_flag exp_lock = ATOMIC_FLAG_INIT;
static _Atomic int exp_live;
static struct scaf_experiment exp_cur;
static struct scaf_site *exp_site;
static struct scaf_page *exp_page;
static _Atomic int exp_disabled; /* the kernel refused seccomp once: never fork an unconfined child */
static _Atomic uint64_t fork_ns_seen; /* how long the latest fork took: grows with the heap */

/*
 * What an experiment costs the program, in multiples of the fork time: after
 * the fork, every page the parent or the child writes is copied. Measured with
 * tests/progs/bigheap (bench/experiment_cost.py): a region writing all of a
 * 1 GiB heap ran ~20x slower in the parent, ~50 fork times.
 */
#define EXP_COST_FORKS 16

/*
 * Before the first fork there is no fork time to go by: estimate it from the
 * resident set (page tables to copy), ~100 ns per resident page as measured
 * here (a 1 GiB heap forked in ~25 ms). Read only when a baseline is due.
 */
static uint64_t fork_ns_estimate(void)
{
    uint64_t seen = atomic_load_explicit(&fork_ns_seen, memory_order_relaxed);
    char buf[128];
    unsigned long long size = 0, resident = 0;
    int fd;
    ssize_t n;

    if (seen)
        return seen;
    fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
        return 0;
    return (uint64_t)resident * 100u;
}

/* Start times of running outermost regions, for the long-region check. */
#define LONG_SLOTS 16
static _Atomic uint64_t long_t0[LONG_SLOTS];
static _Atomic uint32_t long_team[LONG_SLOTS];
static _Atomic int long_flagged;
static pthread_mutex_t long_mu = PTHREAD_MUTEX_INITIALIZER;

static __thread struct scaf_perfctr tl_pc = {-1, -1};
static __thread int tl_pc_tried;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* All threads of this process: a syscall (no vDSO), so only read for sampled instances. */
static uint64_t process_cpu_ns(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Which measured instances read the process CPU clock (two syscalls, ~1 us):
 * every instance of a site whose regions take 200 us or more, every 16th of
 * shorter ones.
 */
#define CPU_SAMPLE_MIN_NS 200000ull
#define CPU_SAMPLE_EVERY 16

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

/* ---------------------------------------------------------- publication */

/*
 * Client half of the page under the client_seq seqlock. Two publishers can
 * meet (the helper's long-region check and a region end), so the odd value is
 * taken with a compare-and-swap: a second writer waits the few stores it takes.
 */
static void page_publish(struct scaf_page *pg, double eff, unsigned team, uint32_t kind)
{
    uint32_t s = atomic_load_explicit(&pg->client_seq, memory_order_relaxed);

    for (;;) {
        if (s & 1u) {
            s = atomic_load_explicit(&pg->client_seq, memory_order_relaxed);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&pg->client_seq, &s, s + 1, memory_order_acquire,
                                                  memory_order_relaxed))
            break;
    }
    atomic_thread_fence(memory_order_release);
    ST(pg->efficiency_ppm, scaf_efficiency_to_ppm(eff));
    ST(pg->eff_threads, team < 1 ? 1u : team);
    ST(pg->estimate, kind);
    atomic_store_explicit(&pg->client_seq, s + 2, memory_order_release);
}

/* What the page should say now, given the filter and the long-region state. Caller holds long_mu or win_lock. */
static void republish(struct scaf_page *pg)
{
    if (LD(long_flagged)) {
        if (filt_kind == SCAF_ESTIMATE_COUNTERS && have_filt)
            page_publish(pg, filt, filt_team, SCAF_ESTIMATE_COUNTERS);
        else
            page_publish(pg, cfg.assumed, filt_team ? filt_team : LD(pg->last_team), SCAF_ESTIMATE_ASSUMED);
    } else if (have_filt) {
        page_publish(pg, filt, filt_team, filt_kind);
    } else if (LD(pg->estimate) == SCAF_ESTIMATE_ASSUMED) {
        /* The long region ended before anything was measured: back to "no estimate", not a stale assumption. */
        page_publish(pg, 0.0, 0, SCAF_ESTIMATE_NONE);
    }
}

static int win_trylock(void)
{
    return !atomic_flag_test_and_set_explicit(&win_lock, memory_order_acquire);
}

static void win_unlock(void)
{
    atomic_flag_clear_explicit(&win_lock, memory_order_release);
}

/* Close the window if it is old enough: mix, filter, publish. */
static void maybe_publish(struct scaf_page *pg, uint64_t now)
{
    double e;
    unsigned team;
    uint64_t start = LD(win_start_ns);

    if (now - start < cfg.window_ns || !win_trylock())
        return;
    start = LD(win_start_ns);
    if (now - start >= cfg.window_ns) {
        if (scaf_mix_value(&win, &e, &team)) {
            double dt = have_filt ? (double)(now - last_pub_ns) / 1e9 : 0.0;

            filt = scaf_rc_filter(filt, have_filt, e, dt, cfg.tau_s);
            have_filt = 1;
            filt_team = team;
            filt_kind = win_counters ? SCAF_ESTIMATE_COUNTERS : SCAF_ESTIMATE_MEASURED;
            last_pub_ns = now;
            if (!LD(long_flagged))
                page_publish(pg, filt, filt_team, filt_kind);
            scaf_mix_reset(&win);
            win_counters = 0;
            ST(win_start_ns, now);
        } else if ((double)(now - start) > fmax(4.0 * cfg.tau_s, 1.0) * 1e9) {
            /* Only serial time and unmeasured regions: older than the filter remembers, drop it. */
            scaf_mix_reset(&win);
            ST(win_start_ns, now);
        }
    }
    win_unlock();
}

/* ---------------------------------------------------------- experiments */

static void set_baseline(struct scaf_site *s, uint64_t serial_ns, uint64_t now)
{
    ST(s->serial_ns, serial_ns ? serial_ns : 1);
    ST(s->serial_at_ns, now);
    ST(s->failures, 0);
}

static void exp_failed(struct scaf_site *s, uint64_t now, int fatal)
{
    uint32_t f = atomic_fetch_add_explicit(&s->failures, 1, memory_order_relaxed) + 1;

    /* A blocked call happens every time; a bound hit twice is a region that cannot run alone. */
    if (fatal || f >= 2)
        atomic_fetch_or_explicit(&s->flags, SCAF_SITE_NOFORK, memory_order_relaxed);
    ST(s->next_try_ns, now + cfg.interval_ns);
}

/*
 * The child's serial time. Its system time is mostly copy-on-write faults that
 * a normal run never pays (the child writes pages the parent still shares), so
 * only the user share counts where the kernel sampled enough ticks to split it.
 */
static uint64_t serial_of(const struct scaf_exp_result *res)
{
    uint64_t u = res->utime_us, k = res->stime_us;

    if (u + k >= 20000u) /* at least a few ticks: the split means something */
        return (uint64_t)((double)res->cpu_ns * (double)u / (double)(u + k));
    return res->cpu_ns;
}

/* Collect the running experiment if it has an outcome. Never blocks: a busy lock means someone else is at it. */
static void exp_collect(uint64_t now)
{
    struct scaf_exp_result res;
    enum scaf_exp_outcome o;
    struct scaf_site *s;
    pid_t pid;

    if (atomic_flag_test_and_set_explicit(&exp_lock, memory_order_acquire))
        return;
    if (!LD(exp_live))
        goto out;
    pid = exp_cur.pid;
    o = scaf_experiment_poll(&exp_cur, now, &res);
    if (o == SCAF_EXP_RUNNING)
        goto out;
    s = exp_site;
    switch (o) {
    case SCAF_EXP_DONE:
        if (res.complete)
            set_baseline(s, serial_of(&res), now);
        if (res.ins && res.cyc) {
            ST(s->serial_ins, res.ins);
            ST(s->serial_cyc, res.cyc);
            ST(s->serial_at_ns, now);
        }
        if (!res.complete && !(res.ins && res.cyc))
            exp_failed(s, now, 0);
        atomic_fetch_add_explicit(&exp_page->experiments, 1, memory_order_relaxed);
        break;
    case SCAF_EXP_BLOCKED:
        exp_failed(s, now, 1);
        break;
    case SCAF_EXP_NOSANDBOX:
        ST(exp_disabled, 1);
        exp_failed(s, now, 1);
        break;
    default:
        exp_failed(s, now, 0);
        break;
    }
    scaf_layer_log("experiment %d at site %p: %s (serial %.3f ms, cpu %.3f ms, wall %.3f ms%s)", (int)pid,
                   (void *)LD(s->key), scaf_experiment_outcome_name(o),
                   o == SCAF_EXP_DONE ? (double)serial_of(&res) / 1e6 : 0.0,
                   o == SCAF_EXP_DONE ? (double)res.cpu_ns / 1e6 : 0.0,
                   o == SCAF_EXP_DONE ? (double)res.wall_ns / 1e6 : 0.0,
                   o == SCAF_EXP_DONE && !res.complete ? ", stopped early" : "");
    ST(exp_page->experiment_pid, 0);
    scaf_site_release(s);
    exp_site = NULL;
    atomic_store_explicit(&exp_live, 0, memory_order_release);
out:
    atomic_flag_clear_explicit(&exp_lock, memory_order_release);
}

/* Fork an experiment for this instance. Returns 1 when the parent should run threads-1. */
static int exp_start(struct scaf_region *r, struct scaf_page *pg, struct scaf_site *s, uint64_t now)
{
    struct scaf_exp_config c;
    uint64_t par = LD(s->par_ns), pt = LD(s->par_threads);
    int ok = 0;

    if (LD(exp_live) || atomic_flag_test_and_set_explicit(&exp_lock, memory_order_acquire))
        return 0;
    if (LD(exp_live) || !scaf_site_claim(s))
        goto out;
    /* Serial time is at most about threads x parallel time (efficiency <= 1); leave room for noise. */
    c.bound_ns = 4 * pt * par + 100000000ull;
    if (c.bound_ns > cfg.exp_max_ns)
        c.bound_ns = cfg.exp_max_ns;
    c.counters = scaf_perfctr_available();
    if (scaf_experiment_start(&exp_cur, r->fn, r->data, &c, now) != 0) {
        scaf_layer_log("cannot fork an experiment: %s", strerror(errno));
        scaf_site_release(s);
        ST(s->next_try_ns, now + cfg.interval_ns);
        goto out;
    }
    ST(fork_ns_seen, exp_cur.fork_ns);
    scaf_layer_log("experiment %d forked in %.3f ms (bound %.0f ms + copy-on-write allowance)", (int)exp_cur.pid,
                   (double)exp_cur.fork_ns / 1e6, (double)c.bound_ns / 1e6);
    exp_site = s;
    exp_page = pg;
    ST(pg->experiment_pid, (int32_t)exp_cur.pid);
    r->exp_fd = exp_cur.fd;
    r->exp_pid = exp_cur.pid;
    atomic_store_explicit(&exp_live, 1, memory_order_release);
    ok = 1;
out:
    atomic_flag_clear_explicit(&exp_lock, memory_order_release);
    return ok;
}

/* --------------------------------------------------------- long regions */

static int long_claim(uint64_t now, unsigned threads)
{
    for (int i = 0; i < LONG_SLOTS; i++) {
        uint64_t z = 0;

        if (LD(long_t0[i]) == 0 &&
            atomic_compare_exchange_strong_explicit(&long_t0[i], &z, now, memory_order_relaxed, memory_order_relaxed)) {
            ST(long_team[i], threads);
            return i;
        }
    }
    return -1; /* more concurrent outermost regions than slots: that one is not watched */
}

/* Set or clear the flag to match the running regions. `wait`: the helper may wait for the mutex, regions may not. */
static int long_update(struct scaf_page *pg, uint64_t now, int wait)
{
    uint64_t oldest = 0;
    int is_long, flagged;

    for (int i = 0; i < LONG_SLOTS; i++) {
        uint64_t t = LD(long_t0[i]);

        if (t && (oldest == 0 || t < oldest))
            oldest = t;
    }
    is_long = oldest != 0 && now > oldest && now - oldest >= cfg.long_ns;
    if (is_long == LD(long_flagged))
        return is_long;
    if (wait ? pthread_mutex_lock(&long_mu) != 0 : pthread_mutex_trylock(&long_mu) != 0)
        return LD(long_flagged);
    flagged = LD(long_flagged);
    if (is_long != flagged) {
        ST(long_flagged, is_long);
        if (is_long) {
            atomic_fetch_or_explicit(&pg->client_flags, SCAF_CLIENT_LONG_REGION, memory_order_relaxed);
            scaf_layer_log("a region has run %.1f s: long region, affinity control",
                           (double)(now - oldest) / 1e9);
        } else {
            atomic_fetch_and_explicit(&pg->client_flags, ~SCAF_CLIENT_LONG_REGION, memory_order_relaxed);
        }
        /* The filter fields are only read here; a torn pair costs one odd sample the next window fixes. */
        republish(pg);
    }
    pthread_mutex_unlock(&long_mu);
    return is_long;
}

int scaf_estimate_long_region_check(uint64_t now)
{
    struct scaf_page *pg = atomic_load_explicit(&page_g, memory_order_acquire);

    if (!pg || !cfg.enabled || scaf_experiment_in_child())
        return 0;
    if (now == 0)
        now = now_ns();
    if (LD(exp_live))
        exp_collect(now);
    return long_update(pg, now, 1);
}

/* ------------------------------------------------------------- regions */

static int baseline_due(const struct scaf_site *s, struct scaf_page *pg, uint64_t now)
{
    uint64_t at;

    if (cfg.lazy && LD(pg->nclients) <= 1)
        return 0;
    if (now < LD(s->next_try_ns) || LD(s->busy))
        return 0;
    if (LD(s->serial_ns) == 0 && LD(s->serial_ins) == 0)
        return 1;
    at = LD(s->serial_at_ns);
    return now - at >= cfg.interval_ns;
}

unsigned scaf_estimate_begin(struct scaf_region *r, void (*fn)(void *), void *data, unsigned threads, int forkable)
{
    struct scaf_page *pg = atomic_load_explicit(&page_g, memory_order_acquire);
    struct scaf_site *s;
    uint64_t now, par;
    uint32_t pt;

    r->fn = fn;
    r->data = data;
    r->site = NULL;
    r->t0_ns = 0;
    r->threads = threads;
    r->mode = SCAF_REGION_PLAIN;
    r->exp_fd = -1;
    r->exp_pid = 0;
    r->cpu0_ns = 0;
    r->slot = -1;
    r->pc_on = 0;
    if (!pg)
        return threads;
    if (scaf_experiment_in_child())
        return 1;
    if (!cfg.enabled)
        return threads;
    now = now_ns();
    r->t0_ns = now;
    if (atomic_fetch_add_explicit(&active, 1, memory_order_relaxed) == 0) {
        uint64_t last = LD(last_end_ns);

        if (last && now > last && win_trylock()) {
            scaf_mix_add_serial(&win, now - last, threads);
            win_unlock();
        }
    }
    r->slot = long_claim(now, threads);
    if (LD(exp_live))
        exp_collect(now);
    s = scaf_site_lookup(fn);
    r->site = s;
    if (!s)
        return threads;
    atomic_fetch_add_explicit(&s->instances, 1, memory_order_relaxed);
    par = LD(s->par_ns);
    pt = LD(s->par_threads);
    if (baseline_due(s, pg, now)) {
        /*
         * One thread: every instance is a serial run, and taking it in place costs nothing.
         * Otherwise in place loses (threads-1) x par of parallel work: worth it for short
         * regions, and for longer ones when the heap makes a fork dearer still.
         */
        uint64_t lost = (uint64_t)(pt ? pt - 1 : 0) * par;
        if (threads <= 1 || (par && cfg.inplace_ns &&
                             ((uint64_t)pt * par <= cfg.inplace_ns || lost <= EXP_COST_FORKS * fork_ns_estimate()))) {
            if (scaf_site_claim(s)) {
                r->mode = SCAF_REGION_INPLACE;
                r->cpu0_ns = thread_cpu_ns();
                return 1;
            }
        } else if (par && forkable && cfg.experiments && !LD(exp_disabled) &&
                   !(LD(s->flags) & SCAF_SITE_NOFORK)) {
            if (exp_start(r, pg, s, now)) {
                r->mode = SCAF_REGION_EXPERIMENT;
                return threads - 1;
            }
        }
    }
    /* Off by default: CPU time cannot see threads that sleep on a lock (a critical
     * section looked more efficient than ep), which the wall formula does. */
    if (cfg.cpu_view && threads >= 2 && LD(s->serial_ns) && !scaf_perfctr_available() &&
        (par >= CPU_SAMPLE_MIN_NS || LD(s->instances) % CPU_SAMPLE_EVERY == 0))
        r->cpu0_ns = process_cpu_ns();
    /* IPC of this thread against the experiment's, where counters exist and the region is long enough to pay
     * for three syscalls. */
    if (threads >= 2 && LD(s->serial_ins) && par >= 1000000ull && scaf_perfctr_available()) {
        if (!tl_pc_tried) {
            tl_pc_tried = 1;
            if (scaf_perfctr_open(&tl_pc) != 0)
                tl_pc.leader = -1;
        }
        r->pc_on = tl_pc.leader >= 0 && scaf_perfctr_start(&tl_pc) == 0;
    }
    return threads;
}

/* Efficiency of a plain instance: IPC ratio where counted, else serial baseline over threads x time. */
static double instance_efficiency(struct scaf_region *r, struct scaf_site *s, uint64_t el, int *counted)
{
    uint64_t ins, cyc, sins = LD(s->serial_ins), scyc = LD(s->serial_cyc);

    *counted = 0;
    if (r->pc_on && scaf_perfctr_read(&tl_pc, &ins, &cyc) == 0 && cyc && sins && scyc) {
        double e = ((double)ins / (double)cyc) / ((double)sins / (double)scyc);

        *counted = 1;
        return e > 1.0 ? 1.0 : e;
    }
    return scaf_region_efficiency(LD(s->serial_ns), r->threads, el);
}

void scaf_estimate_end(struct scaf_region *r)
{
    struct scaf_page *pg;
    struct scaf_site *s = r->site;
    uint64_t now, el;

    if (r->t0_ns == 0)
        return;
    now = now_ns();
    el = now > r->t0_ns ? now - r->t0_ns : 1;
    if (r->slot >= 0)
        ST(long_t0[r->slot], 0);
    switch (r->mode) {
    case SCAF_REGION_INPLACE: {
        uint64_t cpu = thread_cpu_ns();

        set_baseline(s, cpu > r->cpu0_ns ? cpu - r->cpu0_ns : el, now);
        scaf_layer_log("in-place baseline at site %p: %.3f ms", (void *)LD(s->key),
                       (double)LD(s->serial_ns) / 1e6);
        scaf_site_release(s);
        break;
    }
    case SCAF_REGION_EXPERIMENT:
        /* Counters need only the IPC over the same stretch: stop the child now. */
        if (scaf_perfctr_available() && atomic_flag_test_and_set_explicit(&exp_lock, memory_order_acquire) == 0) {
            if (LD(exp_live) && exp_cur.pid == r->exp_pid)
                scaf_experiment_stop_early(&exp_cur);
            atomic_flag_clear_explicit(&exp_lock, memory_order_release);
        }
        exp_collect(now);
        break;
    default:
        if (s) {
            int counted = 0;
            uint64_t cpu = 0;
            double e;

            if (r->threads >= 2) {
                ST(s->par_ns, el);
                ST(s->par_threads, r->threads);
            }
            e = instance_efficiency(r, s, el, &counted);
            if (r->cpu0_ns && !counted) {
                uint64_t c = process_cpu_ns();

                cpu = c > r->cpu0_ns ? c - r->cpu0_ns : 0;
            }
            if (win_trylock()) {
                scaf_mix_add_region(&win, el, e, r->threads);
                if (cpu)
                    scaf_mix_add_cpu(&win, LD(s->serial_ns), cpu);
                win_counters |= counted;
                win_unlock();
            }
        }
        break;
    }
    if (atomic_fetch_sub_explicit(&active, 1, memory_order_relaxed) == 1)
        ST(last_end_ns, now);
    pg = atomic_load_explicit(&page_g, memory_order_acquire);
    if (!pg)
        return;
    maybe_publish(pg, now);
    if (LD(long_flagged))
        long_update(pg, now, 0);
}

/* ------------------------------------------------------------ lifetime */

void scaf_estimate_attach(struct scaf_page *page)
{
    int expected = 0;

    if (atomic_compare_exchange_strong(&cfg_read, &expected, 1))
        read_settings();
    if (page) {
        uint64_t now = now_ns();

        if (LD(last_end_ns) == 0)
            ST(last_end_ns, now);
        if (LD(win_start_ns) == 0)
            ST(win_start_ns, now);
        /* A new page after a reconnect starts blank: give it what we know. */
        if (pthread_mutex_lock(&long_mu) == 0) {
            if (LD(long_flagged))
                atomic_fetch_or_explicit(&page->client_flags, SCAF_CLIENT_LONG_REGION, memory_order_relaxed);
            republish(page);
            pthread_mutex_unlock(&long_mu);
        }
    }
    atomic_store_explicit(&page_g, page, memory_order_release);
}

int scaf_estimate_in_child(void)
{
    return scaf_experiment_in_child();
}

/* The program is exiting: its experiment must not outlive it even for the moment PDEATHSIG takes. */
__attribute__((destructor)) static void estimate_fini(void)
{
    if (scaf_experiment_in_child() || !LD(exp_live))
        return;
    if (atomic_flag_test_and_set_explicit(&exp_lock, memory_order_acquire))
        return;
    if (LD(exp_live)) {
        scaf_experiment_abort(&exp_cur);
        if (exp_page)
            ST(exp_page->experiment_pid, 0);
        ST(exp_live, 0);
    }
    atomic_flag_clear_explicit(&exp_lock, memory_order_release);
}
