/* filter.h — the estimator's window (region and serial time mixed) and its RC filter, behind one try-lock. */
#ifndef SCAF_LAYER_FILTER_H
#define SCAF_LAYER_FILTER_H

#include <stdatomic.h>
#include <stdint.h>

#include "estimate_math.h"
#include "scaf/proto.h"

struct scaf_page;

/*
 * A region that finds the lock taken drops its sample instead of waiting:
 * concurrent outermost regions from several program threads never block.
 * value/have/team/kind are read without the lock by the publication
 * (publish.c); a torn pair costs one odd sample the next window fixes.
 */
struct scaf_filter {
    atomic_flag lock;
    struct scaf_mix win;
    _Atomic uint64_t win_start_ns;
    uint64_t last_pub_ns;
    double value;     /* the filtered efficiency */
    int have;         /* value is meaningful */
    unsigned team;    /* the team size it was measured at */
    int win_counters; /* the open window used the IPC ratio */
    uint32_t kind;    /* enum scaf_estimate of value */
    /* A team size other than `team`: filtered apart, published once it has a time constant of windows. */
    double cand;
    unsigned cand_team; /* 0 = none */
    uint64_t cand_start_ns;
};

#define SCAF_FILTER_INIT {.lock = ATOMIC_FLAG_INIT, .kind = SCAF_ESTIMATE_NONE}

/* Opens the first window at `now` (the first attach); later calls keep the open one. */
void scaf_filter_start(struct scaf_filter *f, uint64_t now);

/* A serial stretch between regions: `ns` with one thread busy of the `team` held. Dropped when the lock is taken. */
void scaf_filter_add_serial(struct scaf_filter *f, uint64_t ns, unsigned team);

/*
 * A measured region instance: wall `ns`, efficiency `eff` (< 0: no baseline),
 * team `threads`; `cpu_ns` > 0 adds the CPU view (serial baseline `serial_ns`),
 * `counted` says the IPC ratio was used. Dropped when the lock is taken.
 */
void scaf_filter_add_region(struct scaf_filter *f, uint64_t ns, double eff, unsigned threads,
                            uint64_t serial_ns, uint64_t cpu_ns, int counted);

/*
 * Closes the window once it is `window_ns` old: mixes it, filters with time
 * constant `tau_s`, and publishes to `pg` unless *hold (a long region is
 * flagged and its assumed estimate stands; read under the lock). Never waits
 * for the lock.
 */
void scaf_filter_close(struct scaf_filter *f, struct scaf_page *pg, uint64_t now, uint64_t window_ns,
                       double tau_s, const _Atomic int *hold);

#endif
