/* baseline.h — a call site's serial baseline: when one is due, whether to take it in place, and recording it. */
#ifndef SCAF_LAYER_BASELINE_H
#define SCAF_LAYER_BASELINE_H

#include <stdint.h>

#include "experiment.h"
#include "../core/site.h"

/*
 * Nonzero when the site needs a (new) baseline now: none yet, or older than
 * `interval_ns`; never while another is taken, before the site's retry time,
 * or (`lazy`) while the program is the daemon's only client (`nclients` <= 1).
 */
int scaf_baseline_due(const struct scaf_site *s, unsigned nclients, int lazy, uint64_t now,
                      uint64_t interval_ns);

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
