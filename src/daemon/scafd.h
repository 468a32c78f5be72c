/* scafd.h — the daemon's state: what main sets up, the loop's handlers change, and the end-of-batch step acts on (not an installed interface). */
#ifndef SCAFD_SCAFD_H
#define SCAFD_SCAFD_H

#include "apply/apply.h"
#include "collect/capacity.h"
#include "collect/foreign.h"
#include "collect/lookout.h"
#include "decide/idle.h"
#include "memory/keep.h"
#include "recall/recall.h"
#include "report/alloclog.h"
#include "report/refusals.h"
#include "report/status.h"
#include "scaf/clock.h"
#include "scaf/policy.h"
#include "scaf/sockpath.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Hard ceiling for --max-clients: keeps a full status reply far below SCAF_STATUS_MAX. */
#define SCAFD_MAX_CLIENTS_LIMIT 1024u

struct scafd_opts {
    char socket[SCAF_SOCKPATH_MAX];
    bool socket_is_default;  /* no --socket: the per-user search order gave it */
    uint32_t cpus;           /* --cpus; 0 = detect */
    double rate_hz;          /* referee rate */
    double scoreboard_s;     /* -t; 0 = off */
    const char *log_path;    /* --log; NULL = off */
    double idle_exit_s;      /* 0 = never */
    uint32_t max_clients;
    uint32_t chunk;          /* --chunk; 0 = SMT width */
    bool lookout;            /* false with --no-lookout */
    double gang_quantum_s;   /* --gang-quantum; 0 = fixed teams that do not fit run unconfined */
    bool place_kernel;       /* --placement kernel (default): fixed teams that fit are left to the kernel, not given CPU sets */
    double probe_interval_s; /* --probe-interval; 0 = a client at one chunk is never probed */
    double min_gain;         /* --min-gain: the consumption policy's threshold */
    double idle_after_s;     /* --idle-after: quiet this long, a client is idle (decide/idle.h); 0 = never */
    bool shared;             /* --shared: socket mode 0666, per-user quotas and shares, private status */
    uint32_t user_clients;   /* --shared: the most clients one user may hold (--user-clients) */
    const char *job;         /* --job: the batch system's job this daemon serves (status, log); NULL = none */
    pid_t exit_with;         /* --exit-with: exit once this process has ended and no client is left; 0 = off */
    struct scaf_keep_opts memory; /* --state-dir, --no-memory, --memory-programs */
    int verbose;
};

struct scafd_conn;            /* transport/session.c */
struct scaf_client;           /* clientrec.h */
struct scaf_referee_client;   /* decide/referee.h */
struct scaf_referee_alloc;
struct scaf_referee_scratch;
struct scaf_decide_client;    /* decide/turn.h */

struct scafd {
    struct scafd_opts opt;
    const struct scaf_policy *policy;
    size_t policy_index;
    struct scaf_capacity capacity;
    uint32_t chunk;
    int listen_fd; /* the listening socket (transport/listener.c; main owns the rest of it) */
    int epfd, sigfd, referee_tfd, lookout_tfd, score_tfd, idle_tfd, gang_tfd;

    /* connections (transport/session.c) */
    struct scafd_conn *conns;
    uint32_t nconns; /* slots in conns[] */
    uint32_t nopen;  /* connections that have not said HELLO */
    /* clients (clients.c) */
    uint32_t next_id;
    struct scaf_client **clients; /* registered clients in arrival order (by id); nclients of them */
    uint32_t nclients;

    struct scaf_lookout lookout;
    struct scaf_foreign foreign; /* the non-clients behind the foreign load, named */
    struct scaf_keep keep;       /* the store: what is remembered of each user's programs (memory/) */
    struct scaf_recall recall;   /* the recall step's part: the store it asks, the peer tally (recall/) */

    /* turning peers away without being stalled or spun by them (transport/session.c, loop.c) */
    struct scaf_refusals refusals;
    int spare_fd;         /* held open so that, out of descriptors, one can be freed to accept and close */
    unsigned long fd_limit; /* RLIMIT_NOFILE: connections stop short of it, keeping room for /proc and pages */
    bool listen_paused;   /* out of descriptors: the listener is out of epoll until a connection ends */
    uint32_t paused_at;   /* connections open when it was paused */

    /* the pipeline's scratch, max_clients entries each, and the gangs' turns */
    struct scaf_referee_client *rclients;
    struct scaf_referee_alloc *rallocs;
    struct scaf_referee_scratch *rscratch; /* the referee's per-turn arrays, sized once for max_clients */
    struct scaf_decide_client *dclients;   /* each client as the turn's decide call gets it (decide/turn.h) */
    struct scaf_gangs gangs; /* which gangs take turns, and whose turn it is (apply/apply.c) */
    struct scaf_idle_rule idle_rule; /* when a client is idle (--idle-after, the clock's ticks) */
    struct scaf_alloclog log;

    /* What the end-of-batch step has to do: set by the handlers, cleared by the step. */
    bool referee_due;     /* the referee timer fired, or SIGUSR1 changed the policy */
    bool members_changed; /* a client arrived or left */
    uint64_t departures;  /* clients that have left since start: the loop settles after a batch that adds one */
    pid_t killed_sid;     /* the session of the latest client that was killed (-1: none), and when */
    double killed_at;     /* (CLOCK_MONOTONIC s): the loop waits a moment for the rest of its session */
    bool log_due;         /* a client came or went since the last --log line */
    bool welcomes_due;    /* a registered client waits for its WELCOME */
    bool status_due;      /* a status reply waits: the pages are decoded for it */
    bool stop;
    /* --exit-with: a pidfd of the process (readable when it ends), or -1 when the kernel has none and
     * the once-a-second tick polls instead; owner_gone once it has ended. */
    int owner_fd;
    bool owner_gone;
    uint64_t refused; /* connections refused since start (status: operators' alerting) */
};

/*
 * The contexts clients may count on now: the lookout's, less the smoothed load of foreign processes that have
 * ended since its last sample. The next sample takes it out of the average; until then an arrival (a start
 * team is the program's for its whole run) or a turn would be sized by a program that is gone.
 */
static inline uint32_t scafd_available(const struct scafd *d)
{
    double gone = d->lookout.on ? scaf_foreign_gone_cpu(&d->foreign) : 0.0;

    return scaf_foreignload_available(d->capacity.cpus, d->lookout.foreign, d->lookout.foreign_prev, gone);
}

/* The daemon-wide half of a status object, as of now. */
static inline struct scaf_status_daemon scafd_status_daemon(const struct scafd *d)
{
    return (struct scaf_status_daemon){
        .policy = d->policy->name,
        .job = d->opt.job,
        .cpus = d->capacity.cpus,
        .available = scafd_available(d),
        .foreign = d->lookout.foreign,
        .procs = &d->foreign,
        .rate_hz = d->opt.rate_hz,
        .chunk = d->chunk,
        .time = scaf_clock_s(CLOCK_REALTIME),
        .affinity = d->capacity.cpu_list_len,
        .cgroup_version = d->capacity.cgroup_version,
        .quota = d->capacity.quota,
        .quota_file = d->capacity.quota_file,
        .cpus_override = d->opt.cpus > 0,
        .refused = d->refused,
    };
}

#endif
