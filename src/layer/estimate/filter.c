/* filter.c — the window of region and serial time, the RC filter over windows, and the publication of each new value. */
#include "filter.h"

#include <math.h>

#include "../core/page.h"

static int trylock(struct scaf_filter *f)
{
    return !atomic_flag_test_and_set_explicit(&f->lock, memory_order_acquire);
}

static void unlock(struct scaf_filter *f)
{
    atomic_flag_clear_explicit(&f->lock, memory_order_release);
}

void scaf_filter_start(struct scaf_filter *f, uint64_t now)
{
    if (atomic_load_explicit(&f->win_start_ns, memory_order_relaxed) == 0)
        atomic_store_explicit(&f->win_start_ns, now, memory_order_relaxed);
}

void scaf_filter_add_serial(struct scaf_filter *f, uint64_t ns, unsigned team)
{
    if (!trylock(f))
        return;
    scaf_mix_add_serial(&f->win, ns, team);
    unlock(f);
}

void scaf_filter_add_region(struct scaf_filter *f, uint64_t ns, double eff, unsigned threads,
                            uint64_t serial_ns, uint64_t cpu_ns, int counted)
{
    if (!trylock(f))
        return;
    scaf_mix_add_region(&f->win, ns, eff, threads);
    if (cpu_ns)
        scaf_mix_add_cpu(&f->win, serial_ns, cpu_ns);
    f->win_counters |= counted;
    unlock(f);
}

void scaf_filter_close(struct scaf_filter *f, struct scaf_page *pg, uint64_t now, uint64_t window_ns,
                       double tau_s, const _Atomic int *hold)
{
    double e;
    unsigned team;
    uint64_t start = atomic_load_explicit(&f->win_start_ns, memory_order_relaxed);

    if (now - start < window_ns || !trylock(f))
        return;
    start = atomic_load_explicit(&f->win_start_ns, memory_order_relaxed);
    if (now - start >= window_ns) {
        if (scaf_mix_value(&f->win, &e, &team)) {
            double dt = f->have ? (double)(now - f->last_pub_ns) / 1e9 : 0.0;
            int publish = 1;

            /*
             * An estimate belongs to its team size: E at 1 thread is near 1 whatever the
             * program, so carrying it into the first windows at 4 threads would make a
             * program that serialises look scalable for a time constant; and one window
             * at the new size alone is a single noisy sample. So a new team size gets a
             * filter of its own and replaces the published (E, p') only once it has a
             * time constant of windows; until then the old pair, still true, stands.
             */
            if (f->have && team != f->team) {
                uint64_t need = (uint64_t)(tau_s * 1e9);

                if (f->cand_team != team) {
                    f->cand = e;
                    f->cand_team = team;
                    f->cand_start_ns = now;
                } else {
                    f->cand = scaf_rc_filter(f->cand, 1, e, (double)(now - f->last_pub_ns) / 1e9, tau_s);
                }
                f->last_pub_ns = now;
                publish = now - f->cand_start_ns >= need;
                if (publish) {
                    f->value = f->cand;
                    f->team = team;
                    f->cand_team = 0;
                }
            } else {
                f->value = scaf_rc_filter(f->value, f->have, e, dt, tau_s);
                f->have = 1;
                f->team = team;
                f->cand_team = 0;
                f->last_pub_ns = now;
            }
            f->kind = f->win_counters ? SCAF_ESTIMATE_COUNTERS : SCAF_ESTIMATE_MEASURED;
            if (publish && !atomic_load_explicit(hold, memory_order_relaxed))
                scaf_page_publish_estimate(pg, f->value, f->team, f->kind);
            scaf_mix_reset(&f->win);
            f->win_counters = 0;
            atomic_store_explicit(&f->win_start_ns, now, memory_order_relaxed);
        } else if ((double)(now - start) > fmax(4.0 * tau_s, 1.0) * 1e9) {
            /* Only serial time and unmeasured regions: older than the filter remembers, drop it. */
            scaf_mix_reset(&f->win);
            atomic_store_explicit(&f->win_start_ns, now, memory_order_relaxed);
        }
    }
    unlock(f);
}
