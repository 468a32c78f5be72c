/* clientrec.h — the record of a registered client: what HELLO said, its page, and each stage's part of it (its last report, share, policy state, recall) (not an installed interface). */
#ifndef SCAFD_CLIENTREC_H
#define SCAFD_CLIENTREC_H

#include "collect/lineage.h"
#include "collect/lookout.h"
#include "collect/pageread.h"
#include "decide/idle.h"
#include "decide/referee.h"
#include "decide/rigid.h"
#include "memory/memo.h"
#include "scaf/proto.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The recall step's part of a client: what was recalled of its program at its arrival, and the daemon's tally of
 * its run until it leaves. Only recall/recall.c reads or writes it; decide and status ask through recall.h. It is
 * written here, not in recall/, because the step works over the table of these records and so stands above them.
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
    double peer_s;       /* the integral of the other busy programs over its run so far (program-seconds) */
    char name[SCAF_MEMORY_NAME]; /* exe and script basenames, from /proc/PID/cmdline at arrival */
};

/*
 * Stored in its connection's slot (transport/session.c), filled and emptied by clients.c; the other files get it
 * through struct scafd's clients[]. Each stage's part is held by value, so that a client is one piece of
 * storage: this header includes the headers of those parts' types (collect/, decide/, memory/memo.h) and of
 * nothing above them; apply/, recall/ and report/, which work over the table, stand above it.
 */
struct scaf_client {
    uint32_t id;   /* arrival order, from 1 */
    pid_t pid;     /* SO_PEERCRED: the kernel's word, never the client's */
    uid_t uid;     /* SO_PEERCRED too: whose program it is (status), and whose quota and share it counts
                    * against (--shared) */
    pid_t sid;     /* its session (/proc/PID/stat at HELLO), -1 when unknown: who is killed with it */
    struct scaf_lineage lineage; /* its process's ancestors (/proc at HELLO) */
    uint32_t group; /* its program: the id of the outermost client among its ancestors, else its own id */
    char name[SCAF_NAME_MAX];   /* /proc/PID/comm, printable */
    uint32_t max_threads;       /* from HELLO */
    bool hello_fixed;           /* HELLO said the team is fixed */
    struct scaf_page *page;
    struct scaf_page_report report;  /* the page as last decoded */
    struct scaf_referee_alloc alloc; /* as last written to the page */
    bool applied;                    /* alloc holds something written */
    uint32_t page_nclients;          /* nclients as last written */
    struct scaf_lookout_client lookout;
    struct scaf_client_state state; /* probes, the noise of E, its curve's points (scaf_client_state_step) */
    struct scaf_rigid rigid;        /* teams it ran that the daemon did not choose (scaf_rigid_step) */
    struct scaf_recall_client recall; /* what the memory recalled of its program, and its run's tally (recall/) */
    struct scaf_idle idle;          /* whether it runs nothing now (scaf_idle_step): its share goes to the others */
    bool woke;                      /* a WAKE came since the last turn (transport/session.c) */
    bool cpu_ok;                    /* cpu_ticks was read in this turn's collect */
    uint64_t cpu_ticks;             /* utime + stime of its process, for the idle rule */
};

#endif
