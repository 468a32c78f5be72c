/* policy.h — allocation policies: pure functions from an explicit snapshot to integer team sizes. */
#ifndef SCAF_POLICY_H
#define SCAF_POLICY_H

#include <stddef.h>
#include <stdint.h>

/*
 * The policy module does no I/O and keeps no global state. The daemon, the
 * unit tests, `scaf allocate` and the simulator (through libscaf_policy.so and
 * ctypes) all call exactly these functions.
 */

struct scaf_policy_client {
    uint32_t max_threads;    /* never allocate more than this; >= 1 */
    uint32_t prev;           /* this client's previous allocation; 0 = new client */
    uint32_t report_threads; /* p': allocation the efficiency was measured at; 0 = none */
    double efficiency;       /* E at p'; < 0 (or NaN) = unknown */
    int32_t measured;        /* 1 measured, 0 assumed/unknown */
    int32_t malleable;       /* 0 = team fixed (controlled by cpuset); counted the same */
};

struct scaf_policy_input {
    uint32_t contexts;  /* N available to clients (after foreign load), >= 1 */
    uint32_t chunk;     /* allocation granularity (SMT width), >= 1 */
    uint32_t nclients;  /* may exceed contexts */
    const struct scaf_policy_client *clients;
};

/*
 * A policy fills threads[i] (>= 1 for every client) and coef[i] (its model
 * coefficient, or 0 where the policy has none) for i < nclients.
 * Guarantees, tested in tests/unit: every client gets >= 1; when
 * nclients <= contexts the sum is <= contexts (exactly contexts unless caps by
 * max_threads leave some unused); when nclients > contexts every client gets 1.
 * Returns 0, or -1 with errno = EINVAL on an input it cannot use.
 */
typedef int (*scaf_policy_fn)(const struct scaf_policy_input *in, uint32_t *threads, double *coef);

struct scaf_policy {
    const char *name;        /* "equipartition", "speedup" */
    const char *description; /* one line for --help */
    scaf_policy_fn decide;
};

/* NULL with errno = ENOENT when no policy has that name. */
const struct scaf_policy *scaf_policy_lookup(const char *name);
/* Registered policies in a fixed order; NULL past the end. SIGUSR1 cycles them. */
const struct scaf_policy *scaf_policy_at(size_t index);
size_t scaf_policy_count(void);

/*
 * C-friendly entry point for ctypes: run policy `name` on arrays.
 * Returns 0, or -1 with errno set (ENOENT unknown name, EINVAL bad input).
 */
int scaf_policy_run(const char *name, uint32_t contexts, uint32_t chunk, uint32_t nclients,
                    const struct scaf_policy_client *clients, uint32_t *threads, double *coef);

#endif
