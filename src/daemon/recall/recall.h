/* recall.h — the recall step: what the memory knows of a client's program put on its page at arrival, its run learned at departure, MEMORY requests answered, and all that this knowledge changes in decide and status (not an installed interface). */
#ifndef SCAFD_RECALL_H
#define SCAFD_RECALL_H

#include "scaf/wire.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct scaf_client;
struct scaf_keep;
struct scaf_memo_point;

/* The daemon's part of the step: the store it asks, and the peer tally's clock. */
struct scaf_recall {
    struct scaf_keep *keep; /* each user's remembered programs (memory/keep.h); never NULL once set up */
    double tally_s;         /* CLOCK_MONOTONIC when the clients' peer time was last counted */
    int verbose;            /* -v: a line for each run remembered, each start team that leaves out an ending client */
};

/*
 * Every call that looks at the other clients gets the table of registered clients as the daemon holds it:
 * `clients`, `n` of them, in arrival order. `available`: the contexts clients may count on now
 * (scafd_available).
 */

/*
 * A client arrives (clients.c, before it enters the table and before its
 * WELCOME): counts the time of the clients already here with their current
 * number of peers, then writes its page's memory half (apply/pagewrite.c):
 * its start team (scaf_start_team over the available contexts, split with
 * the running clients of its own program, cl->group, and the other programs
 * now, with the peers remembered), and, for a nonzero `key` whose
 * user's memory is kept, the runs, verdict and known sites remembered. Its
 * remembered curve is held in cl->recall (and seeds cl->state's points) until
 * its first measured report. The record's last seen is brought forward.
 */
void scaf_recall_arrive(struct scaf_recall *rc, struct scaf_client *const *clients, uint32_t n, uint32_t available,
                        struct scaf_client *cl, uint64_t key);

/*
 * A client leaves (clients.c, while it is still in the table and its page
 * mapped; also when it was killed): its run is learned into its user's
 * memory (memory/memo.c) from the page (verdict, source, reason, learned
 * sites, each checked) and the daemon's own tally (curve points, peers, run
 * time), and that memory marked to be written.
 */
void scaf_recall_leave(struct scaf_recall *rc, struct scaf_client *const *clients, uint32_t n,
                       struct scaf_client *cl);

/*
 * A referee turn, before idleness is judged again: each client's peer time
 * is counted up to now with the programs that were running (not idle) over
 * the stretch since the last count, each once however many of its clients
 * ran. A start team's busy programs are the running ones too: a pool's idle
 * worker or waiting parent is nobody's peer.
 */
void scaf_recall_turn(struct scaf_recall *rc, struct scaf_client *const *clients, uint32_t n);

/*
 * Answers a MEMORY request from a peer of uid `uid` (SO_PEERCRED: never a uid
 * the peer names) into *r. Never fails: what it cannot do is a status in *r.
 */
void scaf_recall_answer(struct scaf_recall *rc, struct scaf_client *const *clients, uint32_t n, uint32_t available,
                        uid_t uid, const struct scaf_wire_memory *req, struct scaf_wire_memory_reply *r);

/* The curve that stands in for a client's estimate in this turn's decide (decide/prepare.h's `remembered`). */
struct scaf_recall_curve {
    const struct scaf_memo_point *points; /* its remembered curve while that stands in; NULL = none */
    uint32_t npoints;
    bool prior; /* it arrived with a curve that this run has not measured from 2 or more threads yet */
};

/*
 * decide, before client `c` is prepared (pipeline.c), its report collected:
 * a measured report ends the remembered curve's stand-in for good, and one
 * measured from 2 or more threads checks it. Returns what stands in now.
 */
struct scaf_recall_curve scaf_recall_curve(struct scaf_client *c);

/* decide, once `c` is prepared: the team and efficiency the referee was given for it, which are the remembered
 * curve's while that stood in (status shows them as estimate "remembered"). */
void scaf_recall_stood_in(struct scaf_client *c, uint32_t team, double efficiency);

/* What status shows of a client's memory. */
struct scaf_recall_view {
    bool standin;       /* its remembered curve stands for its estimate: eff_team and efficiency are the curve's */
    uint32_t eff_team;
    double efficiency;
    uint32_t runs;      /* what the memory knew of its program at its arrival; 0: nothing */
    uint32_t verdict;   /* enum scaf_verdict */
    uint32_t source;    /* enum scaf_verdict_source */
    double run_s;       /* how long its runs last, as remembered; 0: not known */
    uint32_t start_team; /* the share it was offered to start with */
};

/* For status (report/status.c), as of `c`'s last decoded report. */
struct scaf_recall_view scaf_recall_view(const struct scaf_client *c);

#endif
