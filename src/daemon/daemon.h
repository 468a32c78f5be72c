/* daemon.h — scafd's internal types and the functions its files share (not an installed interface). */
#ifndef SCAFD_DAEMON_H
#define SCAFD_DAEMON_H

#include "say.h"
#include "scaf/clock.h"
#include "scaf/policy.h"
#include "scaf/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/un.h>

#define SCAFD_SOCKPATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)
/* Hard ceiling for --max-clients: keeps a full status reply far below SCAF_STATUS_MAX. */
#define SCAFD_MAX_CLIENTS_LIMIT 1024u
/* Connections that have not said HELLO yet (status askers, slow handshakes) beyond the client table. */
#define SCAFD_EXTRA_CONNS 64u
/* A peer that leaves a status reply unread this long is dropped. */
#define SCAFD_OUTPUT_STALL_S 5.0
/* A connection that has said nothing (no HELLO, no status request) this long is dropped. */
#define SCAFD_OPEN_IDLE_S 30.0

/* ---- options (main.c) ---- */

struct scafd_opts {
    char socket[SCAFD_SOCKPATH_MAX];
    bool socket_is_default;  /* no --socket: the per-user search order gave it */
    size_t policy_index;     /* into scaf_policy_at() */
    uint32_t cpus;           /* --cpus; 0 = detect */
    double rate_hz;          /* referee rate */
    double scoreboard_s;     /* -t; 0 = off */
    const char *log_path;    /* --log; NULL = off */
    double idle_exit_s;      /* 0 = never */
    uint32_t max_clients;
    uint32_t chunk;          /* --chunk; 0 = SMT width */
    bool lookout;            /* false with --no-lookout */
    double gang_quantum_s;   /* --gang-quantum; 0 = fixed teams that do not fit run unconfined */
    bool shared;             /* --shared: socket mode 0666 */
    int verbose;
};

/* ---- capacity.c ---- */

struct scaf_capacity {
    uint32_t n;          /* contexts the daemon may hand out (N) */
    uint32_t ncpu;       /* entries in cpu[]: the daemon's affinity list, ascending */
    int cpu[SCAF_MAX_CPUS];
    uint32_t smt;        /* hardware threads per core of cpu0, >= 1 */
    uint32_t quota;      /* ceil(cpu.max quota / period); 0 = no cgroup limit found */
};

/* "max 100000" -> *limit = 0; "150000 100000" -> 2. Returns 0, or -1 with errno = EINVAL. */
int scaf_cpumax_parse(const char *text, uint32_t *limit);
/* Linux CPU list ("0-3,8,10-11"): fills up to max entries in ascending order of appearance.
 * Returns the number of CPUs listed, or -1 with errno = EINVAL (syntax) / E2BIG (more than max). */
int scaf_cpulist_parse(const char *text, int *cpus, size_t max);
/* Affinity, cgroup v2 cpu.max, SMT width; `cpus_override` (> 0) replaces N. Returns 0 or -1 with errno. */
int scaf_capacity_detect(struct scaf_capacity *cap, uint32_t cpus_override);

/* ---- lookout.c: /proc parsing (pure) and the once-a-second sample ---- */

struct scaf_cpustat {
    uint64_t busy;  /* user + nice + system + irq + softirq + steal */
    uint64_t total; /* busy + idle + iowait */
    uint32_t ncpu;  /* per-CPU lines summed */
};

/* Sums the per-CPU lines of /proc/stat text for the CPUs in cpus[] (all of them when cpus is NULL).
 * Returns 0, or -1 with errno = EINVAL when no matching line was found. */
int scaf_procstat_sum(const char *text, const int *cpus, size_t ncpus, struct scaf_cpustat *out);

struct scaf_pidstat {
    pid_t ppid;
    uint64_t utime, stime, cutime, cstime; /* clock ticks */
    uint32_t nlwp;
};

/* Parses /proc/PID/stat text (comm may hold spaces and parentheses). Returns 0 or -1, errno = EINVAL. */
int scaf_pidstat_parse(const char *text, struct scaf_pidstat *out);

/* Busy contexts not explained by clients over one interval, clamped to [0, ncpu]. */
double scaf_lookout_foreign(uint64_t dbusy, uint64_t dclients, uint64_t dtotal, uint32_t ncpu);

/* ---- jsonbuf.c ---- */

struct scaf_buf {
    char *p;
    size_t len, cap;
    bool failed; /* an allocation failed; the content is incomplete */
};

void scaf_buf_printf(struct scaf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included; bytes that are not valid UTF-8 become U+FFFD. */
void scaf_buf_json_string(struct scaf_buf *b, const char *s);
void scaf_buf_free(struct scaf_buf *b);

/* ---- page.c: the client's verdict, decoded once ---- */

struct scaf_page_verdict {
    uint32_t verdict; /* enum scaf_verdict, validated */
    uint32_t source;  /* enum scaf_verdict_source, validated */
    char reason[SCAF_REASON_MAX]; /* printable, NUL-terminated; empty when torn or absent */
};

/* Reads and validates the verdict fields of a client page (untrusted). */
void scaf_page_verdict_read(const struct scaf_page *pg, bool hello_fixed, struct scaf_page_verdict *out);
const char *scaf_verdict_name(uint32_t verdict);
const char *scaf_verdict_source_name(uint32_t source);

/* ---- referee.c: collect -> decide (pure) -> apply ---- */

/* One client as the decision sees it: everything decide() needs, nothing it could write. */
struct scaf_referee_client {
    struct scaf_policy_client pol; /* what the policy gets */
    uint32_t fixed_team;           /* team of a non-malleable client (>= 1 when !pol.malleable) */
    bool long_region;              /* a region ran past the threshold: affinity control */
};

struct scaf_referee_snapshot {
    uint32_t available; /* contexts for clients after foreign load, >= 1 */
    uint32_t n;         /* the daemon's N: virtual contexts 0..n-1 */
    uint32_t chunk;
    uint32_t nclients;
    const struct scaf_referee_client *clients;
    const int *cpu; /* real CPU list; virtual context v runs on cpu[v % ncpu] */
    uint32_t ncpu;
    bool gang; /* fixed teams that do not fit may take turns */
};

struct scaf_referee_alloc {
    uint32_t share;   /* contexts the policy gave */
    uint32_t threads; /* what the page says: share, or the fixed team */
    uint32_t control; /* enum scaf_control */
    bool malleable;   /* as decided: status shows this, so it always matches threads and control */
    uint32_t gang_slot; /* 0: not in a gang; else its turn, 1..number of gangs */
    double coef;
    uint64_t cpuset[SCAF_CPUSET_WORDS];
};

/* Contiguous blocks of virtual contexts, in client order, wrapping at n; real CPU = cpu[v % ncpu]. */
void scaf_cpuset_layout(const uint32_t *share, uint32_t nclients, uint32_t n, const int *cpu, uint32_t ncpu,
                        uint64_t (*sets)[SCAF_CPUSET_WORDS]);

/* Pure (no globals, no I/O): runs the policy on the snapshot and fills out[0..nclients).
 * Returns 0, or -1 with errno (ENOMEM, or the policy's EINVAL). */
int scaf_referee_decide(const struct scaf_policy *policy, const struct scaf_referee_snapshot *snap,
                        struct scaf_referee_alloc *out);

/* ---- the daemon ---- */

/* epoll tags: small constants for the daemon's own descriptors, CONN|gen|slot for connections. */
enum scafd_tag {
    SCAFD_TAG_LISTEN = 1,
    SCAFD_TAG_SIGNAL,
    SCAFD_TAG_REFEREE,
    SCAFD_TAG_LOOKOUT,
    SCAFD_TAG_SCOREBOARD,
    SCAFD_TAG_IDLE,
    SCAFD_TAG_GANG,
};
#define SCAFD_TAG_CONN (1ull << 63)

enum scafd_conn_state {
    SCAFD_CONN_FREE = 0,
    SCAFD_CONN_OPEN,   /* connected, no HELLO yet: may ask for status */
    SCAFD_CONN_CLIENT, /* HELLO accepted: owns a page and a share */
};

struct scafd_conn {
    enum scafd_conn_state state;
    int fd;
    uint32_t gen; /* bumped on reuse, so stale epoll events for an old fd are ignored */

    /* input: one message at a time; nothing is acted on until it is complete */
    unsigned char in[sizeof(struct scaf_msg_hello)];
    size_t inlen;

    /* pending status reply (a peer that reads slowly) */
    char *out;
    size_t outlen, outoff;
    double out_since;
    double last_active; /* last event on this connection (monotonic seconds) */

    /* client (state == SCAFD_CONN_CLIENT) */
    uint32_t id;
    pid_t pid;
    uid_t uid;
    char name[SCAF_NAME_MAX];
    uint32_t max_threads;
    bool hello_nonmalleable;
    struct scaf_page *page;
    struct scaf_referee_alloc alloc; /* as last written to the page */
    bool applied;                    /* alloc holds something written */
    uint32_t page_nclients;          /* nclients as last written */

    /* lookout bookkeeping */
    bool have_ticks;
    uint64_t ticks;    /* utime+stime+cutime+cstime at the last sample */
    pid_t exp_pid;     /* experiment child seen at the last sample */
    uint64_t exp_ticks;
    uint32_t nlwp;
};

struct scafd {
    struct scafd_opts opt;
    const struct scaf_policy *policy;
    size_t policy_index;
    struct scaf_capacity cap;
    uint32_t chunk;

    int epfd, lfd, sigfd, referee_tfd, lookout_tfd, score_tfd, idle_tfd, gang_tfd;
    uint32_t gang_slots; /* gangs taking turns now (0 or >= 2) */
    uint32_t gang_turn;  /* whose turn: 0..gang_slots-1 */
    int lockfd;
    dev_t sock_dev;
    ino_t sock_ino;

    struct scafd_conn *conns;
    uint32_t nconns; /* slots in conns[] */
    uint32_t nclients;
    uint32_t nopen; /* connections in state OPEN */
    uint32_t next_id;

    /* lookout */
    double foreign;     /* smoothed busy contexts of non-clients */
    uint32_t available; /* N - round(foreign), >= 1 */
    bool have_stat;
    struct scaf_cpustat last_stat;
    uint64_t last_self_ticks;
    char *stat_buf; /* /proc/stat, kept between samples */
    size_t stat_cap;

    /* referee scratch, nconns entries each */
    struct scaf_referee_client *rclients;
    struct scaf_referee_alloc *rallocs;
    uint32_t *order; /* slots of clients, by id */

    FILE *log;
    bool membership_changed; /* a client came or went since the last log line */
    bool stop;
};

/* listener.c */
/* Binds the socket (creating a per-user parent directory, recovering a stale socket).
 * Returns 0, or -1 after printing a clear message on stderr. */
int scaf_listener_open(struct scafd *d);
/* Removes the socket only if it is still the one this daemon bound. */
void scaf_listener_close(struct scafd *d);

/* client.c */
void scaf_client_accept(struct scafd *d);
void scaf_client_event(struct scafd *d, struct scafd_conn *c, uint32_t events);
void scaf_client_drop(struct scafd *d, struct scafd_conn *c, const char *why);
/* The epoll tag of a connection slot (its generation makes stale events detectable). */
uint64_t scaf_client_tag(const struct scafd *d, const struct scafd_conn *c);
/* The connection an epoll tag names, or NULL when that connection is gone. */
struct scafd_conn *scaf_client_from_tag(struct scafd *d, uint64_t tag);
/* Drops peers that leave a status reply unread; called once a second. */
void scaf_client_reap_stalled(struct scafd *d, double now);
int scaf_client_table_init(struct scafd *d);
void scaf_client_table_free(struct scafd *d);

/* lookout.c */
void scaf_lookout_sample(struct scafd *d);
/* Takes a new client's CPU-time baseline, so its past does not count as foreign load. */
void scaf_lookout_client_start(struct scafd_conn *c);

/* referee.c */
/* Collects pages, decides, writes pages, logs when anything changed. */
void scaf_referee_run(struct scafd *d);
/* Passes the turn to the next gang (the gang timer). */
void scaf_referee_gang_tick(struct scafd *d);

/* status.c */
/* The status JSON (the STATUS_REPLY body and each --log line). Returns 0 or -1 (ENOMEM). */
int scaf_status_build(const struct scafd *d, struct scaf_buf *b);

/* log.c */
int scaf_log_open(struct scafd *d);
void scaf_log_write(struct scafd *d);
void scaf_log_close(struct scafd *d);

/* scoreboard.c */
void scaf_scoreboard_print(const struct scafd *d, FILE *f);

/* loop.c */
/* Runs until SIGTERM/SIGINT or --idle-exit. Returns the exit status (0 or 1). */
int scaf_loop_run(struct scafd *d);
/* Arms the --idle-exit timer when there are no clients, disarms it otherwise. */
void scaf_loop_idle_update(struct scafd *d);

#endif
