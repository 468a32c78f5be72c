/* referee.h — the decision: client reports in, shares, thread counts and CPU sets out; pure (not an installed interface). */
#ifndef SCAFD_REFEREE_H
#define SCAFD_REFEREE_H

#include "../collect/pageread.h"
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
    /* Idle (decide/idle.h): it runs nothing, so it holds nothing. It is left out of every step (no
     * share, no CPU set, no gang, not in its user's demand) and its page keeps idle_team, the team
     * it had, so that its next region starts at once; the WAKE that region sends re-divides. */
    bool idle;
    uint32_t idle_epoch;           /* its idle period (never 0 while idle): the page's `idle` word */
    uint32_t idle_team;            /* the threads its page said before (0: none yet) */
    /* Busy, but it has opened no region yet (a program's start: an interpreter's imports, R's; or work only a
     * BLAS pool or oneTBB runs). A turn holds only regions, so a turn of its own would hold the others while
     * it runs anyway: it takes none, and counts for none when the referee decides whether teams take turns. */
    bool regionless;
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
    /* Fixed teams that fit are left where the kernel puts them, as a static split leaves them (true,
     * --placement kernel), instead of CPU sets of their own; either way their contexts are theirs. */
    bool kernel_places;
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
    uint32_t idle;      /* 0: busy; else idle, in the idle period the page's `idle` word names */
    double coef;
    uint64_t cpuset[SCAF_CPUSET_WORDS];
};

/*
 * What one turn works in, allocated once and kept between turns: every array
 * holds `size` entries, one per client (the daemon sizes it for its client
 * table at start-up, so a turn allocates nothing). Zero it before the first
 * scaf_referee_scratch_reserve; scaf_referee_scratch_free releases it.
 */
struct scaf_referee_scratch {
    uint32_t size;
    struct scaf_policy_client *pc; /* the policy's input: the malleable clients, in client order */
    uint32_t *idx;                 /* pc[k] is clients[idx[k]] */
    uint32_t *pshare;              /* the policy's share of pc[k], before the clamp to [1, max_threads] */
    double *coef;                  /* the policy's coef of pc[k] */
    uint32_t *share;               /* each client's share, by client */
    uint64_t (*sets)[SCAF_CPUSET_WORDS]; /* each client's CPU set, by client */
    uint32_t *slot;                /* each client's gang, by client */
    /* Per user (snapshot per_user): uid of pc[k], its user's number, each user's demand, client
     * count and part, and one user's clients with the policy's answer for them. */
    uid_t *uid;
    uint32_t *group, *demand, *count, *quota, *sub_share;
    struct scaf_policy_client *sub;
    double *sub_coef;
};

/* Room for n clients: grows the arrays only when n exceeds size. Returns 0, or -1 with errno = ENOMEM
 * (the scratch is then as it was). */
int scaf_referee_scratch_reserve(struct scaf_referee_scratch *s, uint32_t n);
void scaf_referee_scratch_free(struct scaf_referee_scratch *s);

/* The first step: which clients the policy steers, and what is left for them. */
struct scaf_referee_parts {
    uint32_t nmall;     /* malleable clients steered by their thread count: pc[0..nmall), idx[0..nmall) */
    uint32_t nfixed;    /* clients placed like a fixed team */
    uint32_t fixed_sum; /* the contexts their teams take, each at most cpus */
    bool fits;          /* the fixed teams fit beside one chunk per steered client */
    bool placed;        /* they fit, and CPU sets of their own (not snap->kernel_places) */
    bool gangs;         /* they do not, gangs are on, and there are two groups or more to take turns */
    uint32_t rest;      /* the contexts the policy divides among the steered clients (>= nmall chunks) */
};

/*
 * Partition: splits the snapshot's clients into those placed like a fixed
 * team (share[i] = their team, at most cpus) and the malleable ones the
 * policy steers (copied to pc[], their bound at least 1, with idx[]), and
 * works out `parts`. share[] of a steered client is left as it was. Pure.
 */
void scaf_referee_partition(const struct scaf_referee_snapshot *snap, struct scaf_policy_client *pc, uint32_t *idx,
                            uint32_t *share, struct scaf_referee_parts *parts);

/*
 * Policy: runs the policy over the steered clients s->pc[0..parts->nmall) on
 * parts->rest contexts (per user first with snap->per_user, decide/peruser.c),
 * and sets share[idx[k]] to its share clamped to [1, max_threads] and
 * s->coef[k] to its coef. Returns 0, or -1 with the policy's errno.
 */
int scaf_referee_policy(const struct scaf_policy *policy, const struct scaf_referee_snapshot *snap,
                        const struct scaf_referee_parts *parts, struct scaf_referee_scratch *s, uint32_t *share);

/* Contiguous blocks of virtual contexts, in client order, wrapping at cpus; real CPU = cpu_list[v % len]. */
void scaf_cpuset_layout(const uint32_t *share, uint32_t nclients, uint32_t cpus, const int *cpu_list, uint32_t len,
                        uint64_t (*sets)[SCAF_CPUSET_WORDS]);

/*
 * Gang packing: the clients placed like a fixed team go first fit, in client
 * order, into gangs whose shares sum to at most cpus; the steered clients,
 * all together, are the last gang. Sets slot[i] to client i's gang, 1..n, and
 * returns n; with fewer than two gangs every slot is 0 and it returns 0. Pure.
 */
uint32_t scaf_referee_gangs(const struct scaf_referee_snapshot *snap, const uint32_t *share, uint32_t *slot);

/* A client's decoded report as the decision sees it. `max_threads` is the client's bound from HELLO;
 * `prev` its previous allocation, NULL before its first. */
void scaf_referee_collect(const struct scaf_page_report *report, uint32_t max_threads,
                          const struct scaf_referee_alloc *prev, struct scaf_referee_client *out);

/*
 * Pure (no globals, no I/O): partition, policy, CPU-set layout and gang
 * packing over the snapshot, in `scratch` (grown to nclients if it is
 * smaller); fills out[0..nclients). Returns 0, or -1 with errno (ENOMEM, or
 * the policy's EINVAL).
 */
int scaf_referee_decide(const struct scaf_policy *policy, const struct scaf_referee_snapshot *snap,
                        struct scaf_referee_scratch *scratch, struct scaf_referee_alloc *out);

#endif
