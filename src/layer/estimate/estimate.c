/* estimate.c — the efficiency estimator's state and its per-region steps: timing, baselines, window, watch. */
#include "estimate.h"

#include <stdatomic.h>

#include "../core/page.h"
#include "../core/say.h"
#include "../core/settings.h"
#include "../core/site.h"
#include "../sandbox/sandbox.h"
#include "baseline.h"
#include "estimate_math.h"
#include "experiment.h"
#include "filter.h"
#include "perfctr.h"
#include "publish.h"
#include "rundelay.h"
#include "schedule.h"
#include "watchdog.h"
#include "scaf/clock.h"

/* All of the estimator's state but the per-thread counter group: one place. */
static struct scaf_estimator {
    _Atomic(struct scaf_page *) page;
    _Atomic uint32_t active;      /* outermost regions running now (several program threads may run one) */
    _Atomic uint64_t last_end_ns; /* when the latest one ended, or attach time */
    _Atomic int attached;         /* the first attach ran (settings complaints, counters detected) */
    _Atomic uint64_t budget_next_ns; /* no budgeted sample before this (scaf_baseline_alone) */
    struct scaf_filter filter;
    struct scaf_schedule exp;
    struct scaf_watchdog watch;
} E = {.filter = SCAF_FILTER_INIT, .exp = SCAF_SCHEDULE_INIT, .watch = SCAF_WATCHDOG_INIT};

/* Settings are read once in the constructor and never change: a short name for them. */
static const struct scaf_settings *const cfg = &scaf_settings;

/* The master thread's counter group: per thread by nature, so thread-local, opened on first use. */
static __thread struct scaf_perfctr tl_pc = {-1, -1};
static __thread int tl_pc_tried;

/*
 * Which measured instances read the process CPU clock (two syscalls, ~1 us):
 * every instance of a site whose regions take 200 us or more, every 16th of
 * shorter ones.
 */
#define CPU_SAMPLE_MIN_NS 200000ull
#define CPU_SAMPLE_EVERY 16
/* At most this share of a region's wall time is taken as run-queue wait: a team starved
 * outright says little, and the correction must not divide by ~0. */
#define RUN_DELAY_MAX 0.9

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

int scaf_estimate_long_region_check(uint64_t now)
{
    struct scaf_page *pg = atomic_load_explicit(&E.page, memory_order_acquire);

    if (!pg || !cfg->estimate || scaf_sandbox_in_child())
        return 0;
    if (now == 0)
        now = scaf_clock_ns(CLOCK_MONOTONIC);
    if (scaf_schedule_live(&E.exp))
        scaf_schedule_collect(&E.exp, now, cfg->interval_ns);
    return scaf_watchdog_update(&E.watch, pg, now, cfg->long_ns, 1, &E.filter, cfg->assumed);
}

/* This instance runs on one thread as the site's baseline, unless another thread is taking one. */
static int in_place(struct scaf_region *r, struct scaf_site *s)
{
    if (!scaf_site_claim(s))
        return SCAF_TEAM_EST_PLAIN;
    r->cpu0_ns = scaf_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    return SCAF_TEAM_EST_INPLACE;
}

/*
 * A sample is wanted: in place (one thread) or forked, whichever costs less; PLAIN when neither can start.
 * Alone (SCAF_LAZY), and for every extra sample that only sharpens a site's mean, only in place and losing at
 * most SCAF_ALONE_SHARE of the program's time: none costs more than that share of the interval, and each is
 * repaid by 1/share times its cost without another.
 */
static int baseline_mode(struct scaf_region *r, struct scaf_page *pg, struct scaf_site *s, unsigned team,
                         int forkable, uint64_t now, enum scaf_baseline_need need)
{
    if (need == SCAF_BASELINE_MORE || (cfg->lazy && scaf_page_nclients(pg) <= 1)) {
        uint64_t cost;

        if (cfg->alone_share <= 0 ||
            !scaf_baseline_alone(s, team, now, LD(E.budget_next_ns),
                                 (uint64_t)((double)cfg->interval_ns * cfg->alone_share), &cost) ||
            in_place(r, s) != SCAF_TEAM_EST_INPLACE)
            return SCAF_TEAM_EST_PLAIN;
        ST(E.budget_next_ns, now + (uint64_t)((double)cost / cfg->alone_share));
        return SCAF_TEAM_EST_INPLACE;
    }
    if (scaf_baseline_in_place(s, team, cfg->inplace_ns, LD(E.exp.fork_ns_seen)))
        return in_place(r, s);
    if (LD(s->par_ns) && forkable && cfg->experiments && !LD(E.exp.disabled) && !(LD(s->flags) & SCAF_SITE_NOFORK)) {
        r->exp_pid = scaf_schedule_start(&E.exp, r->run, r->data, pg, s, now, cfg->exp_max_ns, cfg->interval_ns);
        if (r->exp_pid)
            return SCAF_TEAM_EST_EXPERIMENT;
    }
    return SCAF_TEAM_EST_PLAIN;
}

int scaf_estimate_begin(struct scaf_region *r, struct scaf_site *site, void (*fn)(void *), void (*run)(void *),
                        void *data, unsigned team, int forkable)
{
    struct scaf_page *pg = atomic_load_explicit(&E.page, memory_order_acquire);
    struct scaf_site *s;
    uint64_t now, par;
    enum scaf_baseline_need need;

    r->fn = fn;
    r->run = run ? run : fn;
    r->data = data;
    r->site = NULL;
    r->t0_ns = 0;
    r->team = team;
    r->mode = SCAF_TEAM_EST_PLAIN;
    r->exp_pid = 0;
    r->cpu0_ns = 0;
    r->slot = -1;
    r->pc_on = 0;
    r->rd0_ns = UINT64_MAX;
    if (!pg || !cfg->estimate)
        return r->mode;
    if (scaf_sandbox_in_child())
        return r->mode = SCAF_TEAM_EST_INPLACE;
    now = scaf_clock_ns(CLOCK_MONOTONIC);
    r->t0_ns = now;
    if (atomic_fetch_add_explicit(&E.active, 1, memory_order_relaxed) == 0) {
        uint64_t last = LD(E.last_end_ns);

        if (last && now > last)
            scaf_filter_add_serial(&E.filter, now - last, team);
    }
    r->slot = scaf_watchdog_claim(&E.watch, now);
    if (scaf_schedule_live(&E.exp))
        scaf_schedule_collect(&E.exp, now, cfg->interval_ns);
    s = site;
    r->site = s;
    if (!s)
        return r->mode;
    atomic_fetch_add_explicit(&s->instances, 1, memory_order_relaxed);
    par = LD(s->par_ns);
    need = scaf_baseline_due(s, now, cfg->interval_ns);
    if (need != SCAF_BASELINE_NONE) {
        r->mode = baseline_mode(r, pg, s, team, forkable, now, need);
        if (r->mode != SCAF_TEAM_EST_PLAIN)
            return r->mode;
    }
    /* Time the team spent waiting for a CPU is not the program's parallelism: sampled on the
     * calling thread, the other threads of a team see about the same run queues. */
    if (cfg->run_delay && team >= 2 && LD(s->serial_ns) &&
        (par >= CPU_SAMPLE_MIN_NS || LD(s->instances) % CPU_SAMPLE_EVERY == 0))
        r->rd0_ns = scaf_rundelay_ns();
    /* Off by default: CPU time cannot see threads that sleep on a lock (a critical
     * section looked more efficient than ep), which the wall formula does. */
    if (cfg->cpu_view && team >= 2 && LD(s->serial_ns) && !scaf_perfctr_available() &&
        (par >= CPU_SAMPLE_MIN_NS || LD(s->instances) % CPU_SAMPLE_EVERY == 0))
        r->cpu0_ns = scaf_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    /* IPC of this thread against the experiment's, where counters exist and the region is long enough to pay
     * for three syscalls. */
    if (team >= 2 && LD(s->serial_ins) && par >= 1000000ull && scaf_perfctr_available()) {
        if (!tl_pc_tried) {
            tl_pc_tried = 1;
            if (scaf_perfctr_open(&tl_pc) != 0)
                tl_pc.leader = -1;
        }
        r->pc_on = tl_pc.leader >= 0 && scaf_perfctr_start(&tl_pc) == 0;
    }
    return r->mode;
}

/*
 * Efficiency of a plain instance: IPC ratio where counted, else the site's: the mean of its serial samples over
 * team x the mean of its plain instances' times (`mean_ns`).
 */
static double instance_efficiency(struct scaf_region *r, struct scaf_site *s, double mean_ns, int *counted)
{
    uint64_t ins, cyc, sins = LD(s->serial_ins), scyc = LD(s->serial_cyc);

    *counted = 0;
    if (r->pc_on && scaf_perfctr_read(&tl_pc, &ins, &cyc) == 0 && cyc && sins && scyc) {
        double e = ((double)ins / (double)cyc) / ((double)sins / (double)scyc);

        *counted = 1;
        return e > 1.0 ? 1.0 : e;
    }
    return scaf_region_efficiency(LD(s->serial_ns), r->team, mean_ns >= 1.0 ? (uint64_t)mean_ns : 1);
}

/* A plain instance ended at `now` after `el` ns: remember its parallel time and add it to the window. */
static void measured(struct scaf_region *r, struct scaf_site *s, uint64_t el, uint64_t now)
{
    int counted = 0;
    uint64_t cpu = 0, ran = el;
    double e;

    if (r->team >= 2) {
        ST(s->par_ns, el);
        ST(s->par_threads, r->team);
    }
    if (cfg->run_delay && r->team >= 2 && LD(s->serial_ns)) {
        /* The wall time the team could have run: without the share it waited on run queues
         * (other programs, or its own threads on fewer CPUs than threads). The serial
         * baseline is CPU time, which excludes waiting, so both sides now agree. */
        uint64_t rd1 = r->rd0_ns != UINT64_MAX ? scaf_rundelay_ns() : UINT64_MAX;
        double f;

        if (rd1 != UINT64_MAX && rd1 >= r->rd0_ns) {
            f = scaf_rundelay_fraction(rd1 - r->rd0_ns, el, RUN_DELAY_MAX);
            ST(s->delay_ppm, (uint32_t)(f * 1e6));
        } else {
            f = LD(s->delay_ppm) / 1e6;
        }
        ran = (uint64_t)((double)el * (1.0 - f));
        if (ran == 0)
            ran = 1;
    }
    e = instance_efficiency(r, s, scaf_baseline_observe(s, r->team, ran, now, cfg->interval_ns), &counted);
    if (r->cpu0_ns && !counted) {
        uint64_t c = scaf_clock_ns(CLOCK_PROCESS_CPUTIME_ID);

        cpu = c > r->cpu0_ns ? c - r->cpu0_ns : 0;
    }
    scaf_filter_add_region(&E.filter, el, e, r->team, LD(s->serial_ns), cpu, counted);
}

void scaf_estimate_end(struct scaf_region *r)
{
    struct scaf_page *pg;
    struct scaf_site *s = r->site;
    uint64_t now, el;

    if (r->t0_ns == 0)
        return;
    now = scaf_clock_ns(CLOCK_MONOTONIC);
    el = now > r->t0_ns ? now - r->t0_ns : 1;
    scaf_watchdog_release(&E.watch, r->slot);
    switch (r->mode) {
    case SCAF_TEAM_EST_INPLACE: {
        uint64_t cpu = scaf_clock_ns(CLOCK_THREAD_CPUTIME_ID);

        scaf_baseline_set(s, cpu > r->cpu0_ns ? cpu - r->cpu0_ns : el, now, cfg->interval_ns);
        scaf_layer_log("in-place sample at site %p: %.3f ms (mean of %.1f: %.3f ms)", (void *)LD(s->key),
                       (double)(cpu > r->cpu0_ns ? cpu - r->cpu0_ns : el) / 1e6, LD(s->serial_n),
                       (double)LD(s->serial_ns) / 1e6);
        scaf_site_release(s);
        break;
    }
    case SCAF_TEAM_EST_EXPERIMENT:
        /* Counters need only the IPC over the same stretch: stop the child now. */
        if (scaf_perfctr_available())
            scaf_schedule_stop_early(&E.exp, r->exp_pid);
        scaf_schedule_collect(&E.exp, now, cfg->interval_ns);
        break;
    default:
        if (s)
            measured(r, s, el, now);
        break;
    }
    if (atomic_fetch_sub_explicit(&E.active, 1, memory_order_relaxed) == 1)
        ST(E.last_end_ns, now);
    pg = atomic_load_explicit(&E.page, memory_order_acquire);
    if (!pg)
        return;
    scaf_filter_close(&E.filter, pg, now, cfg->window_ns, cfg->tau_s, &E.watch.flagged);
    if (scaf_watchdog_flagged(&E.watch))
        scaf_watchdog_update(&E.watch, pg, now, cfg->long_ns, 0, &E.filter, cfg->assumed);
}

/* Once per process, at the first connect: only processes that run OpenMP say or detect anything. */
static void first_attach(void)
{
    int have;

    scaf_settings_complain();
    if (cfg->counters == 0)
        return;
    have = scaf_perfctr_detect(cfg->counters);
    if (!have && cfg->counters == 1)
        scaf_layer_log("SCAF_COUNTERS=1 but no hardware instruction/cycle counters here; timing estimator");
    else if (have)
        scaf_layer_log("hardware counters available: IPC estimator on");
}

void scaf_estimate_attach(struct scaf_page *page)
{
    int expected = 0;

    if (atomic_compare_exchange_strong(&E.attached, &expected, 1))
        first_attach();
    if (page) {
        uint64_t now = scaf_clock_ns(CLOCK_MONOTONIC);

        if (LD(E.last_end_ns) == 0)
            ST(E.last_end_ns, now);
        scaf_filter_start(&E.filter, now);
        scaf_watchdog_attach(&E.watch, page, &E.filter, cfg->assumed);
    }
    atomic_store_explicit(&E.page, page, memory_order_release);
}

/* The program is exiting: its experiment must not outlive it even for the moment PDEATHSIG takes. */
__attribute__((destructor)) static void estimate_fini(void)
{
    if (scaf_sandbox_in_child())
        return;
    scaf_schedule_abort(&E.exp);
}
