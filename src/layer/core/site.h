/* site.h — per-region-site records of the verdict and the estimator: one fixed open-addressing table keyed by the outlined function. */
#ifndef SCAF_LAYER_SITE_H
#define SCAF_LAYER_SITE_H

#include <stdatomic.h>
#include <stdint.h>

/* Table capacity; a program with more distinct region sites runs the rest unmeasured, and watches
 * them at every instance (the verdict cannot remember them). */
#define SCAF_SITE_SLOTS 1024u

#define SCAF_SITE_NOFORK 0x1u /* an experiment here hit a blocked call or its bound twice: no more forks */
#define SCAF_SITE_LIB_CHECKED 0x2u /* whether its code is a BLAS library's was looked up (core/blasobj.h) */
#define SCAF_SITE_LIBRARY 0x4u     /* it is: the region keeps the team the library asks for */
#define SCAF_SITE_MEMO_SAID 0x80000000u /* in `memo`: an entry was written (its bits may be 0) */

/*
 * Every field is an atomic because outermost regions on different program
 * threads may run the same site at once. Counters are updated with relaxed
 * order: a lost race costs one sample, never a torn value. `busy` is the only
 * claim: whoever wins it takes the site's next serial baseline.
 */
struct scaf_site {
    _Atomic uintptr_t key;           /* outlined fn; 0 = free slot */
    /* The verdict's (malleable/malleable.c) */
    _Atomic uint32_t verdict;        /* enum scaf_site_bits (core/verdict.h); 0 until an instance ended */
    _Atomic uint32_t tls_result;     /* enum scaf_tls_result of its TLS check */
    _Atomic uint32_t memo;           /* what the daemon's memory was last told of it (learned[]): enum scaf_memo_bits
                                        | SCAF_SITE_MEMO_SAID, 0 = nothing yet */
    /* The estimator's */
    _Atomic uint64_t instances;      /* outermost instances seen */
    _Atomic uint64_t par_ns;         /* wall time of the latest plain instance with >= 2 threads */
    _Atomic uint32_t par_threads;    /* the team it ran with */
    _Atomic uint32_t busy;           /* 1 while a baseline (in place or forked) is being taken */
    _Atomic uint64_t serial_ns;      /* serial baseline: the mean of the samples below (CPU time of one thread); 0 = none */
    _Atomic uint64_t serial_at_ns;   /* CLOCK_MONOTONIC when the latest sample was measured */
    _Atomic double serial_n;         /* the samples, faded by age (struct scaf_samples; written by the claim holder) */
    _Atomic double serial_sum;
    _Atomic double serial_sq;
    _Atomic uint32_t mean_team;      /* the team of the plain instances below (another starts them again) */
    _Atomic double mean_n;           /* plain instances (run-queue wait taken out), faded like the samples */
    _Atomic double mean_sum;         /* and their faded sum of wall times, ns */
    _Atomic uint64_t mean_at_ns;     /* when the latest one ended */
    _Atomic uint64_t next_try_ns;    /* no baseline attempt before this */
    _Atomic uint64_t serial_ins;     /* experiment child's instructions (counters), 0 = none */
    _Atomic uint64_t serial_cyc;     /* and cycles */
    _Atomic uint32_t flags;          /* SCAF_SITE_* */
    _Atomic uint32_t failures;       /* experiments that ended without a baseline */
    _Atomic uint32_t delay_ppm;      /* run-queue share of the last sampled plain instance's wall time */
};

/*
 * The record for `fn`, inserted on first use; NULL when fn is NULL or the
 * table is full. Lock-free. *fresh is set to 1 for the one caller that
 * inserted it (it may start the record from the daemon's memory), left
 * alone otherwise.
 */
struct scaf_site *scaf_site_lookup(void (*fn)(void *), int *fresh);

/*
 * Every record whose function lies in [lo, hi) starts again as fresh: its code was unloaded (dlclose), and
 * what comes later at those addresses is other code. The key stays (a slot is never freed). Returns how many.
 * Nothing may run those functions meanwhile: they are gone.
 */
unsigned scaf_site_forget_range(uintptr_t lo, uintptr_t hi);

/* Claim the site for one baseline; nonzero on success. Release with scaf_site_release. */
int scaf_site_claim(struct scaf_site *s);
void scaf_site_release(struct scaf_site *s);

#endif
