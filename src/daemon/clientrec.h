/* clientrec.h — the record of a registered client: what HELLO said, its page, and each stage's part of it (its last report, share, policy state, recall) (not an installed interface). */
#ifndef SCAFD_CLIENTREC_H
#define SCAFD_CLIENTREC_H

#include "collect/lookout.h"
#include "collect/pageread.h"
#include "decide/idle.h"
#include "decide/referee.h"
#include "decide/rigid.h"
#include "recall/held.h"
#include "scaf/proto.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Stored in its connection's slot (transport/session.c), filled and emptied by clients.c; the other files get it
 * through struct scafd's clients[]. Each stage's part is held by value, so this header includes the headers of
 * those parts' types (collect/, decide/, recall/held.h) and of nothing above them: apply/, report/ and the
 * recall step, which work over the table, stand above it.
 */
struct scaf_client {
    uint32_t id;   /* arrival order, from 1 */
    pid_t pid;     /* SO_PEERCRED: the kernel's word, never the client's */
    uid_t uid;     /* SO_PEERCRED too: whose program it is (status), and whose quota and share it counts
                    * against (--shared) */
    pid_t sid;     /* its session (/proc/PID/stat at HELLO), -1 when unknown: who is killed with it */
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
