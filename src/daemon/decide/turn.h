/* turn.h — one referee turn's decision as one pure call over an explicit snapshot: every client prepared, then the referee; scafd and the simulator (libscaf_decide.so) both call it (not an installed interface). */
#ifndef SCAFD_DECIDE_TURN_H
#define SCAFD_DECIDE_TURN_H

#include "prepare.h"
#include "referee.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct scaf_policy;

/* One client as the turn gets it: what the daemon knows of it now, and its decide state kept between turns. */
struct scaf_decide_client {
    struct scaf_prepare_in in;       /* its report, last allocation, remembered curve, WAKE and CPU time */
    struct scaf_rigid *rigid;        /* stepped by the turn (decide/rigid.c) */
    struct scaf_client_state *state; /* stepped by the turn (the policy state: probes, noise, points) */
    struct scaf_idle *idle;          /* stepped by the turn (decide/idle.c) */
};

/* One turn: the machine as the daemon sees it now, and its clients in arrival order. */
struct scaf_decide_in {
    struct scaf_prepare_turn turn; /* the clock, --probe-interval, chunk, cpus, the idle rule (NULL: off) */
    uint32_t available;            /* contexts for clients after foreign load (0 is read as 1) */
    const int *cpu_list;           /* real CPUs of virtual contexts (referee.h, snapshot) */
    uint32_t cpu_list_len;
    bool gang;                     /* --gang-quantum > 0 */
    bool kernel_places;            /* --placement kernel */
    bool per_user;                 /* --shared */
    double min_gain;               /* --min-gain (0: the policy's default) */
    uint32_t nclients;
    const struct scaf_decide_client *clients;
};

/*
 * The decide stage of one referee turn, pure: no globals, no client table,
 * no I/O, no clock (in->turn.now_ns is the time). For each client in order,
 * scaf_prepare_client (its report collected and clamped, its rigid team, its
 * policy state and its idle rule stepped, a remembered curve standing in)
 * into prepared[i]; then scaf_referee_decide over that snapshot into
 * out[0..nclients). `scratch` is grown to nclients if it is smaller (zero it
 * before the first call; scaf_referee_scratch_free releases it).
 *
 * Every client's state pointers must be non-NULL. Returns 0, or -1 with errno:
 * EINVAL (a NULL argument or state pointer, nothing stepped; or the policy
 * refused its input, the states stepped), ENOMEM (the scratch could not grow,
 * the states stepped). On -1, out[] is as it was. prepared[] is what the
 * referee read, which the daemon shows (a stand-in curve's team and E).
 */
int scaf_decide_turn(const struct scaf_policy *policy, const struct scaf_decide_in *in,
                     struct scaf_referee_client *prepared, struct scaf_referee_scratch *scratch,
                     struct scaf_referee_alloc *out);

#endif
