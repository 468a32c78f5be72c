/* schedule.c — when a forked serial experiment starts, and what its outcome does to the call site and the page. */
#include "schedule.h"

#include <errno.h>
#include <string.h>

#include "../core/page.h"
#include "../core/say.h"
#include "baseline.h"
#include "perfctr.h"

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

static int trylock(struct scaf_schedule *x)
{
    return !atomic_flag_test_and_set_explicit(&x->lock, memory_order_acquire);
}

static void unlock(struct scaf_schedule *x)
{
    atomic_flag_clear_explicit(&x->lock, memory_order_release);
}

void scaf_schedule_collect(struct scaf_schedule *x, uint64_t now, uint64_t interval_ns)
{
    struct scaf_exp_result res;
    enum scaf_exp_outcome o;
    struct scaf_site *s;
    pid_t pid;

    if (!trylock(x))
        return;
    if (!LD(x->live))
        goto out;
    pid = x->cur.pid;
    o = scaf_experiment_poll(&x->cur, now, &res);
    if (o == SCAF_EXP_RUNNING)
        goto out;
    s = x->site;
    switch (o) {
    case SCAF_EXP_DONE:
        if (res.complete)
            scaf_baseline_set(s, scaf_baseline_serial_of(&res), now, interval_ns);
        if (res.ins && res.cyc) {
            ST(s->serial_ins, res.ins);
            ST(s->serial_cyc, res.cyc);
            ST(s->serial_at_ns, now);
        }
        if (!res.complete && !(res.ins && res.cyc))
            scaf_baseline_failed(s, now, interval_ns, 0);
        scaf_page_count_experiment(x->page);
        break;
    case SCAF_EXP_BLOCKED:
        scaf_baseline_failed(s, now, interval_ns, 1);
        break;
    case SCAF_EXP_NOSANDBOX:
        ST(x->disabled, 1);
        scaf_baseline_failed(s, now, interval_ns, 1);
        break;
    default:
        scaf_baseline_failed(s, now, interval_ns, 0);
        break;
    }
    scaf_layer_log("experiment %d at site %p: %s (serial %.3f ms, cpu %.3f ms, wall %.3f ms%s)", (int)pid,
                   (void *)LD(s->key), scaf_experiment_outcome_name(o),
                   o == SCAF_EXP_DONE ? (double)scaf_baseline_serial_of(&res) / 1e6 : 0.0,
                   o == SCAF_EXP_DONE ? (double)res.cpu_ns / 1e6 : 0.0,
                   o == SCAF_EXP_DONE ? (double)res.wall_ns / 1e6 : 0.0,
                   o == SCAF_EXP_DONE && !res.complete ? ", stopped early" : "");
    scaf_page_set_experiment(x->page, 0);
    scaf_site_release(s);
    x->site = NULL;
    atomic_store_explicit(&x->live, 0, memory_order_release);
out:
    unlock(x);
}

pid_t scaf_schedule_start(struct scaf_schedule *x, void (*fn)(void *), void *data, struct scaf_page *pg,
                          struct scaf_site *s, uint64_t now, uint64_t exp_max_ns, uint64_t interval_ns)
{
    struct scaf_exp_config c;
    uint64_t par = LD(s->par_ns), pt = LD(s->par_threads);
    pid_t pid = 0;

    if (LD(x->live) || !trylock(x))
        return 0;
    if (LD(x->live) || !scaf_site_claim(s))
        goto out;
    /* Serial time is at most about threads x parallel time (efficiency <= 1); leave room for noise. */
    c.bound_ns = 4 * pt * par + 100000000ull;
    if (c.bound_ns > exp_max_ns)
        c.bound_ns = exp_max_ns;
    c.counters = scaf_perfctr_available();
    if (scaf_experiment_start(&x->cur, fn, data, &c, now) != 0) {
        scaf_layer_log("cannot fork an experiment: %s", strerror(errno));
        scaf_site_release(s);
        ST(s->next_try_ns, now + interval_ns);
        goto out;
    }
    ST(x->fork_ns_seen, x->cur.fork_ns);
    scaf_layer_log("experiment %d forked in %.3f ms (bound %.0f ms + copy-on-write allowance)", (int)x->cur.pid,
                   (double)x->cur.fork_ns / 1e6, (double)c.bound_ns / 1e6);
    x->site = s;
    x->page = pg;
    scaf_page_set_experiment(pg, x->cur.pid);
    pid = x->cur.pid;
    atomic_store_explicit(&x->live, 1, memory_order_release);
out:
    unlock(x);
    return pid;
}

void scaf_schedule_stop_early(struct scaf_schedule *x, pid_t pid)
{
    if (!trylock(x))
        return;
    if (LD(x->live) && x->cur.pid == pid)
        scaf_experiment_stop_early(&x->cur);
    unlock(x);
}

void scaf_schedule_abort(struct scaf_schedule *x)
{
    if (!LD(x->live) || !trylock(x))
        return;
    if (LD(x->live)) {
        scaf_experiment_abort(&x->cur);
        if (x->page)
            scaf_page_set_experiment(x->page, 0);
        ST(x->live, 0);
    }
    unlock(x);
}
