/* baseline.h — a call site's serial baseline: when one is due, whether to take it in place, and recording it. */
#ifndef SCAF_LAYER_BASELINE_H
#define SCAF_LAYER_BASELINE_H

#include <stdint.h>

#include "experiment.h"
#include "../core/site.h"

/*
 * Nonzero when the site needs a (new) baseline now: none yet, or older than
 * `interval_ns`; never while another is taken or before the site's retry time.
 */
int scaf_baseline_due(const struct scaf_site *s, uint64_t now, uint64_t interval_ns);

/*
 * A program that is the daemon's only client (and SCAF_LAZY on) takes a due
 * baseline only this way: in place, and only when it is cheap. Its estimate
 * then steers nobody else, but it decides the program's own team (a dominant
 * critical section ran 2.5-3.6X slower on 2 threads than on 1, alone) and it
 * is what the daemon remembers of the program for its next run. Nonzero when
 * the instance may run as the baseline now, at a team of `threads`: at one
 * thread it costs nothing (*cost = 0); otherwise the site's latest parallel
 * instance says what running it on one thread would lose ((threads-1) x its
 * time, *cost), which must be at most `budget_ns`, and not before
 * `not_before_ns` (the caller spaces these so that they lose a bounded share
 * of the program's time).
 */
int scaf_baseline_alone(const struct scaf_site *s, unsigned threads, uint64_t now, uint64_t not_before_ns,
                        uint64_t budget_ns, uint64_t *cost);

/*
 * Nonzero when the baseline should be taken in place, on one thread, at a
 * team of `threads`: at one thread it costs nothing; otherwise in place loses
 * (threads-1) x parallel time of work, worth it for regions up to
 * `inplace_ns` of threads x parallel time, and for longer ones while a fork
 * would cost more still (`fork_ns_seen`: the latest fork's time, 0 = none yet).
 */
int scaf_baseline_in_place(const struct scaf_site *s, unsigned threads, uint64_t inplace_ns,
                           uint64_t fork_ns_seen);

/* Records a serial time measured at `now` (0 counts as 1 ns: "have one") and clears the failures. */
void scaf_baseline_set(struct scaf_site *s, uint64_t serial_ns, uint64_t now);

/*
 * An experiment ended without a baseline: retry after `interval_ns`; a blocked
 * call (`fatal`) or a second failure stops forking at this site.
 */
void scaf_baseline_failed(struct scaf_site *s, uint64_t now, uint64_t interval_ns, int fatal);

/*
 * The experiment child's serial time. Its system time is mostly copy-on-write
 * faults that a normal run never pays, so only the user share counts where the
 * kernel sampled enough ticks to split it.
 */
uint64_t scaf_baseline_serial_of(const struct scaf_exp_result *res);

#endif
