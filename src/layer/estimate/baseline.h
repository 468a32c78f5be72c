/* baseline.h — a call site's serial samples and the mean of its parallel instances: when a sample is due, whether to take it in place, and recording both. */
#ifndef SCAF_LAYER_BASELINE_H
#define SCAF_LAYER_BASELINE_H

#include <stdint.h>

#include "experiment.h"
#include "../core/site.h"

/* What a site's serial baseline needs at an instance (scaf_baseline_due). */
enum scaf_baseline_need {
    SCAF_BASELINE_NONE, /* nothing now: fresh and sharp enough, being taken, or before the retry time */
    SCAF_BASELINE_DUE,  /* none yet, or the latest sample is older than the interval: take one any way */
    SCAF_BASELINE_MORE, /* one more sample would sharpen the mean: only where it is cheap (in place, budgeted) */
};

/* Never while another sample is taken or before the site's retry time. */
enum scaf_baseline_need scaf_baseline_due(const struct scaf_site *s, uint64_t now, uint64_t interval_ns);

/*
 * The budgeted way to take a sample: in place, and only when it is cheap. A
 * program that is the daemon's only client (and SCAF_LAZY on) takes every
 * baseline this way, and every program takes its extra samples
 * (SCAF_BASELINE_MORE) this way. Alone, the estimate steers nobody else, but
 * it decides the program's own team (a dominant critical section ran 2.5-3.6X
 * slower on 2 threads than on 1, alone) and it is what the daemon remembers of
 * the program for its next run. Nonzero when the instance may run as a sample
 * now, at a team of `threads`: at one thread it costs nothing (*cost = 0);
 * otherwise the site's mean parallel instance (the latest one, before there is
 * a mean at two or more threads) says what running it on one thread would lose
 * ((threads-1) x its time, *cost), which must be at most
 * `budget_ns`, and not before `not_before_ns` (the caller spaces these so that
 * they lose a bounded share of the program's time).
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

/*
 * Adds a serial sample measured at `now` (0 counts as 1 ns: "have one"), the older ones faded by their age
 * over `interval_ns`; the baseline becomes their mean. Clears the failures. Only the claim holder calls it.
 */
void scaf_baseline_set(struct scaf_site *s, uint64_t serial_ns, uint64_t now, uint64_t interval_ns);

/*
 * A plain instance at a team of `team` ran `ns` (its run-queue wait taken out) and ended at `now`: adds it to
 * the site's mean of them, faded like the samples over `interval_ns`, and returns that mean. The site's
 * efficiency is the ratio of the two means (serial_ns / (team x this)): both average the same stretch of the
 * program's life, so instances of very different sizes, and a program whose sizes change (a small fit, then a
 * large one), are read right. A new team size starts the mean again.
 */
double scaf_baseline_observe(struct scaf_site *s, unsigned team, uint64_t ns, uint64_t now, uint64_t interval_ns);

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
