/* prepare.h — one client as the referee's input: its report collected and clamped, its rigid team and policy state stepped (not an installed interface). */
#ifndef SCAFD_PREPARE_H
#define SCAFD_PREPARE_H

#include "../memory/memo.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct scaf_client_state;
struct scaf_idle;
struct scaf_idle_rule;
struct scaf_page_report;
struct scaf_referee_alloc;
struct scaf_referee_client;
struct scaf_rigid;

/* What every client's preparation in one turn shares. */
struct scaf_prepare_turn {
    uint64_t now_ns;            /* CLOCK_MONOTONIC of the turn */
    uint64_t probe_interval_ns; /* --probe-interval */
    uint32_t chunk;
    uint32_t cpus;
    const struct scaf_idle_rule *idle_rule; /* when a client counts as idle (decide/idle.h) */
};

/* One client as the daemon knows it. */
struct scaf_prepare_in {
    const struct scaf_page_report *report;  /* its page as last decoded */
    uint32_t max_threads;                   /* from HELLO */
    const struct scaf_referee_alloc *alloc; /* as last written to its page; NULL before the first */
    uid_t uid;
    /* Its curve as the memory kept it (recall/recall.c), until its first measured report; NULL = none. */
    const struct scaf_memo_point *remembered;
    uint32_t nremembered;
    /* It arrived with a remembered curve, and this run has not measured it from 2 or more threads yet. */
    bool prior;
    bool woke;          /* a WAKE came on its connection since the last turn */
    bool cpu_ok;        /* cpu_ticks was read this turn */
    uint64_t cpu_ticks; /* utime + stime of its process */
    uint32_t group;     /* its program (struct scaf_policy_client's group): 0, one of its own */
};

/*
 * Fills the referee's entry for one client: its report and allocation as the
 * referee reads them (scaf_referee_collect), clamped (decide/clamp.c), its
 * uid, the team of the regions the daemon did not choose (scaf_rigid_step,
 * which steps *rigid), its policy state (scaf_client_state_step, which
 * steps *state) and whether it is idle (scaf_idle_step, which steps *idle).
 * While its report is not measured (no estimate, or an assumed one) a
 * remembered curve stands in for it (scaf_prepare_remembered).
 */
void scaf_prepare_client(const struct scaf_prepare_in *in, struct scaf_rigid *rigid, struct scaf_client_state *state,
                         struct scaf_idle *idle, const struct scaf_prepare_turn *turn, struct scaf_referee_client *out);

/*
 * The estimate a remembered curve stands for (docs/memory.md, "Known sites,
 * and the curve"): its largest team within reach (at most `most`, the
 * client's bound and cpus; else its smallest team) as the report, in
 * *team and *e, and the point furthest from it in team size, within reach,
 * as the curve's second point in *alt_team and *alt_e (0 when none). Returns
 * false, touching nothing, when no point is usable (team >= 2, E in (0, 1]). Pure.
 */
bool scaf_prepare_remembered(const struct scaf_memo_point *pts, uint32_t n, uint32_t most, uint32_t *team, double *e,
                             uint32_t *alt_team, double *alt_e);

#endif
