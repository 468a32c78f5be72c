/* held.h — what the recall step holds in each client's record (clientrec.h): what was recalled of its program at its arrival, and the daemon's tally of its run until it leaves (not an installed interface). */
#ifndef SCAFD_RECALL_HELD_H
#define SCAFD_RECALL_HELD_H

#include "../memory/memo.h"
#include "scaf/proto.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * Held in struct scaf_client by value, so that a client is one piece of storage (its connection's slot). Only
 * recall/recall.c reads or writes it: decide and status ask through recall.h. A header of its own, below
 * clientrec.h, because recall.c works over the client table that holds it.
 */
struct scaf_recall_client {
    uint64_t key;        /* HELLO's; 0 = none */
    bool kept;           /* the memory is on for it (a key, and its user's memory loaded): learned when it leaves */
    /* Recalled at arrival (runs 0: nothing was known). */
    uint32_t runs;
    uint32_t verdict;    /* enum scaf_verdict */
    uint32_t source;     /* enum scaf_verdict_source */
    uint32_t start_team; /* written on its page: its share at arrival */
    double run_s;        /* how long its runs last, as remembered (0: not known): scaf_start_outlasts */
    struct scaf_memo_point points[SCAF_MEMO_POINTS]; /* its remembered curve, npoints of them */
    uint32_t npoints;
    /* The remembered curve stands in for an estimate until the first measured one (decide/prepare.c). */
    bool measured;
    /* This run has measured it from 2 or more threads: the remembered curve is checked (decide/prepare.c). */
    bool measured_wide;
    /* When the remembered points were put in its policy state: a point still of that time was not measured. */
    uint64_t seeded_ns;
    uint32_t standin_team; /* the point that stood in at the last turn (status: estimate "remembered"); 0 = none */
    double standin_e;
    /* Tallied while it runs. */
    double arrived_s;    /* CLOCK_MONOTONIC of its arrival */
    double peer_s;       /* the integral of the other busy clients over its run so far (client-seconds) */
    char name[SCAF_MEMORY_NAME]; /* exe and script basenames, from /proc/PID/cmdline at arrival */
};

#endif
