/* referee.h — the decision: client reports in, shares, thread counts and CPU sets out; pure (not an installed interface). */
#ifndef SCAFD_REFEREE_H
#define SCAFD_REFEREE_H

#include "../collect/page.h"
#include "scaf/policy.h"
#include "scaf/proto.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* One client as the decision sees it: everything decide() needs, nothing it could write. */
struct scaf_referee_client {
    struct scaf_policy_client pol; /* what the policy gets */
    bool malleable;                /* false: its team is fixed, so its CPU set is steered instead */
    uint32_t fixed_team;           /* team of a non-malleable client (>= 1 when !malleable) */
    bool long_region;              /* a region ran past the threshold (it is in rigid_team) */
    uint32_t rigid_team;           /* a team it runs now that the daemon did not choose (decide/rigid.c),
                                    * 0: none; >= 2 makes a malleable client placed like a fixed team */
    uid_t uid;                     /* its user: with per_user, whose part it shares */
};

struct scaf_referee_snapshot {
    uint32_t available; /* contexts for clients after foreign load, >= 1 */
    uint32_t cpus;      /* the daemon's N: virtual contexts 0..cpus-1 */
    uint32_t chunk;
    uint32_t nclients;
    const struct scaf_referee_client *clients;
    const int *cpu_list; /* real CPUs; virtual context v runs on cpu_list[v % cpu_list_len] */
    uint32_t cpu_list_len;
    bool gang; /* fixed teams that do not fit may take turns */
    /* --shared: the contexts for malleable clients are split between users first (decide/peruser.c),
     * then the policy splits each user's part between that user's clients. */
    bool per_user;
    double min_gain; /* the consumption policy's threshold (0 = its default) */
};

struct scaf_referee_alloc {
    uint32_t share;     /* contexts the policy gave */
    uint32_t threads;   /* what the page says: share, or the fixed team */
    uint32_t control;   /* enum scaf_control */
    bool malleable;     /* as decided: status shows this, so it always matches threads and control */
    uint32_t rigid;     /* the team it was placed for while it runs teams the daemon did not choose, else 0 */
    uint32_t gang_slot; /* 0: not in a gang; else its turn, 1..number of gangs */
    double coef;
    uint64_t cpuset[SCAF_CPUSET_WORDS];
};

/* A client's decoded report as the decision sees it. `max_threads` is the client's bound from HELLO;
 * `prev` its previous allocation, NULL before its first. */
void scaf_referee_collect(const struct scaf_page_report *report, uint32_t max_threads,
                          const struct scaf_referee_alloc *prev, struct scaf_referee_client *out);

/* Contiguous blocks of virtual contexts, in client order, wrapping at cpus; real CPU = cpu_list[v % len]. */
void scaf_cpuset_layout(const uint32_t *share, uint32_t nclients, uint32_t cpus, const int *cpu_list, uint32_t len,
                        uint64_t (*sets)[SCAF_CPUSET_WORDS]);

/* Pure (no globals, no I/O): runs the policy on the snapshot and fills out[0..nclients).
 * Returns 0, or -1 with errno (ENOMEM, or the policy's EINVAL). */
int scaf_referee_decide(const struct scaf_policy *policy, const struct scaf_referee_snapshot *snap,
                        struct scaf_referee_alloc *out);

#endif
