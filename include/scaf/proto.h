/* proto.h — the wire format shared by scafd and its clients: socket messages and the per-client shared page. */
#ifndef SCAF_PROTO_H
#define SCAF_PROTO_H

#include <assert.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Versioning rule: struct scaf_msg_header is frozen forever (magic, then
 * version first) so that a daemon can always read a client's version and
 * refuse it with a clear message. Any change to any other struct in this file,
 * or to the meaning of a field, bumps SCAF_PROTO_VERSION.
 *
 * All integers are native-endian: both ends run on the same machine.
 * The messages are encoded and checked in one place, the codec of wire.h
 * (src/common/wire.c), which scafd and the layer both use.
 */
#define SCAF_PROTO_MAGIC 0x46414353u /* "SCAF" read as little-endian bytes */
#define SCAF_PROTO_VERSION 6u

#define SCAF_NAME_MAX 16     /* like TASK_COMM_LEN, NUL included */
#define SCAF_CPUSET_WORDS 16 /* 1024 CPUs */
#define SCAF_MAX_CPUS (SCAF_CPUSET_WORDS * 64)
#define SCAF_PAGE_SIZE 4096u
#define SCAF_REFUSE_TEXT 120
/* A STATUS_REPLY is the only variable-length message; it never exceeds this. */
#define SCAF_STATUS_MAX (1u << 20)

enum scaf_msg_type {
    SCAF_MSG_HELLO = 1,        /* client -> daemon: register; answered by WELCOME (+ fd) or REFUSE */
    SCAF_MSG_WELCOME = 2,      /* daemon -> client: carries the page's memfd via SCM_RIGHTS */
    SCAF_MSG_REFUSE = 3,       /* daemon -> client: why not; the daemon closes afterwards */
    SCAF_MSG_STATUS_REQ = 4,   /* anyone -> daemon: ask for the state as JSON */
    SCAF_MSG_STATUS_REPLY = 5, /* daemon -> asker: header, then `length - 16` bytes of JSON */
    SCAF_MSG_MEMORY = 6,       /* anyone -> daemon (protocol 6): recall, forget or remember a program */
    SCAF_MSG_MEMORY_REPLY = 7, /* daemon -> asker: the answer to MEMORY */
    SCAF_MSG_WAKE = 8,         /* client -> daemon (protocol 6): a bare header, on a client's connection
                                * only: its page said idle and it runs a region again; no answer */
};

enum scaf_refuse_reason {
    SCAF_REFUSE_VERSION = 1,   /* client speaks another protocol version */
    SCAF_REFUSE_MALFORMED = 2, /* bad magic, type, length or field value */
    SCAF_REFUSE_FULL = 3,      /* client table full (scafd --max-clients) */
    SCAF_REFUSE_INTERNAL = 4,  /* daemon-side failure (memfd, mmap, ...) */
    SCAF_REFUSE_DUPLICATE = 5, /* this connection already said HELLO */
};

/* Every message starts with this header; `length` is the whole message, header included. */
struct scaf_msg_header {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t length;
    uint32_t reserved; /* must be 0 */
};
static_assert(sizeof(struct scaf_msg_header) == 16, "frozen header layout");

#define SCAF_HELLO_F_NONMALLEABLE 0x1u /* the program already fixed its team size */
#define SCAF_HELLO_F_ALL (SCAF_HELLO_F_NONMALLEABLE)

struct scaf_msg_hello {
    struct scaf_msg_header h;
    uint32_t max_threads; /* 1..SCAF_MAX_CPUS: the largest team the program could have seen */
    uint32_t flags;       /* SCAF_HELLO_F_*; unknown bits are malformed */
    char name[SCAF_NAME_MAX]; /* informational only; the daemon prefers /proc/PID/comm */
    /* The program's identity (include/scaf/progkey.h), protocol 6: what the daemon's memory of it is
     * kept under, for this user only. 0: none, nothing is recalled or remembered. */
    uint64_t key;
    uint32_t reserved[2]; /* must be 0 */
};
static_assert(sizeof(struct scaf_msg_hello) == 56, "wire size");
static_assert(offsetof(struct scaf_msg_hello, key) == 40, "tests/support/wire.py packs HELLO by this layout");

struct scaf_msg_welcome {
    struct scaf_msg_header h;
    uint32_t client_id;
    uint32_t page_size; /* SCAF_PAGE_SIZE */
    uint32_t cpus;      /* the daemon's N */
    uint32_t reserved;
};
static_assert(sizeof(struct scaf_msg_welcome) == 32, "wire size");

struct scaf_msg_refuse {
    struct scaf_msg_header h;
    uint32_t reason;         /* enum scaf_refuse_reason */
    uint32_t daemon_version; /* SCAF_PROTO_VERSION of the daemon */
    char text[SCAF_REFUSE_TEXT]; /* NUL-terminated, human readable */
};
static_assert(sizeof(struct scaf_msg_refuse) == 144, "wire size");

/* STATUS_REQ is a bare header with length 16. */

/*
 * MEMORY (protocol 6): what the daemon remembers of a program between its
 * runs (docs/memory.md), asked on a connection of its own by anyone; the
 * daemon answers MEMORY_REPLY and closes. Each user's memory is their own:
 * the daemon acts on the asker's uid (SO_PEERCRED), never on a uid the asker
 * names. A client connection never sends it (it gets its memory on its page).
 */
enum scaf_memory_op {
    SCAF_MEMORY_RECALL = 1,   /* what is remembered of `key`, and the team it would start with now */
    SCAF_MEMORY_FORGET = 2,   /* forget `key`; key 0: every program of this user */
    SCAF_MEMORY_REMEMBER = 3, /* record `verdict` for `key` as scaf check's (source SCAF_SOURCE_CHECK) */
};

#define SCAF_MEMORY_NAME 48 /* how status names a remembered program, NUL included */

struct scaf_msg_memory {
    struct scaf_msg_header h;
    uint32_t op;          /* enum scaf_memory_op */
    uint32_t max_threads; /* RECALL: the program's bound, 1..SCAF_MAX_CPUS; otherwise 0 */
    uint64_t key;         /* RECALL, REMEMBER: nonzero; FORGET: 0 for all */
    uint32_t verdict;     /* REMEMBER: SCAF_VERDICT_FIXED or SCAF_VERDICT_MALLEABLE; otherwise 0 */
    uint32_t reserved;    /* must be 0 */
    char name[SCAF_MEMORY_NAME]; /* REMEMBER: the program's name for status (NUL-terminated); else zeros */
};
static_assert(sizeof(struct scaf_msg_memory) == 88, "wire size");

enum scaf_memory_status {
    SCAF_MEMORY_OK = 0,
    SCAF_MEMORY_OFF = 1,       /* the daemon keeps no memory (scafd --no-memory, or no state directory) */
    SCAF_MEMORY_UNKNOWN = 2,   /* RECALL, FORGET of one key: nothing is remembered of it */
    SCAF_MEMORY_FAILED = 3,    /* the daemon could not do it (its state directory, its table) */
};

struct scaf_msg_memory_reply {
    struct scaf_msg_header h;
    uint32_t op;         /* the request's */
    uint32_t status;     /* enum scaf_memory_status */
    uint32_t runs;       /* RECALL: the runs remembered */
    uint32_t verdict;    /* RECALL: enum scaf_verdict remembered */
    uint32_t source;     /* RECALL: enum scaf_verdict_source of that verdict */
    uint32_t start_team; /* RECALL: the team the program would start with if it arrived now; 0 = as usual */
    uint32_t forgotten;  /* FORGET: programs forgotten */
    uint32_t reserved;   /* 0 */
};
static_assert(sizeof(struct scaf_msg_memory_reply) == 48, "wire size");

/* ---- the shared page: one per client, a memfd the daemon creates ---- */

#define SCAF_PAGE_MAGIC 0x45474150u /* "PAGE" */

enum scaf_control {
    SCAF_CONTROL_THREADS = 0, /* apply `threads` at each outermost region */
    SCAF_CONTROL_CPUSET = 1,  /* team fixed; helper thread applies `cpuset` as affinity */
};

#define SCAF_CLIENT_NONMALLEABLE 0x1u /* team size fixed: control through cpuset */
#define SCAF_CLIENT_LONG_REGION 0x2u  /* a region has run past SCAF_LONG_REGION_S */
/* The program is ending through exit(): its socket will close because it finished, not because it
 * was killed. Set by the layer's destructor; a daemon that does not know it ignores it. */
#define SCAF_CLIENT_EXITING 0x4u

/*
 * Gang turns for fixed teams that together oversubscribe the machine: a
 * client in WAIT starts no outermost region until its turn comes (RUN).
 */
enum scaf_gang {
    SCAF_GANG_OFF = 0,  /* not in a gang: run freely */
    SCAF_GANG_RUN = 1,  /* its gang's turn */
    SCAF_GANG_WAIT = 2, /* another gang's turn: hold new regions */
};

/* Whether the program's results may depend on its team size (see docs/layer.md). */
enum scaf_verdict {
    SCAF_VERDICT_UNDECIDED = 0, /* evidence still being gathered: regions run at the full team */
    SCAF_VERDICT_MALLEABLE = 1, /* team steered at each outermost region */
    SCAF_VERDICT_FIXED = 2,     /* team kept; the daemon steers its CPUs instead */
};

/* Who decided the verdict. */
enum scaf_verdict_source {
    SCAF_SOURCE_DEFAULT = 0,  /* no evidence either way yet */
    SCAF_SOURCE_EVIDENCE = 1, /* the layer's rule, from the program's omp_* calls */
    SCAF_SOURCE_USER = 2,     /* SCAF_MALLEABLE=yes|no (scaf run --malleable / --fixed) */
    SCAF_SOURCE_RULES = 3,    /* a line of a rules file */
    SCAF_SOURCE_CHECK = 4,    /* scaf check's test mode (SCAF_CHECK_SEED) */
};

#define SCAF_REASON_MAX 200 /* NUL included */

/*
 * One region site as the memory keeps it (protocol 6): the object its code is
 * in (include/scaf/progkey.h: a hash of the object's build ID, or of its
 * path, size and mtime), the site's offset in it, and what was learned.
 */
struct scaf_site_memo {
    uint64_t object;
    uint32_t offset;
    uint32_t bits; /* enum scaf_memo_bits */
};
static_assert(sizeof(struct scaf_site_memo) == 16, "wire size");

enum scaf_memo_bits {
    SCAF_MEMO_CLEAN = 1u << 0,     /* seen, and nothing it called bound its team: steered from its first instance */
    SCAF_MEMO_TLS = 1u << 1,       /* its code's object has thread-local storage ... */
    SCAF_MEMO_TLS_CLEAR = 1u << 2, /* ... which its check showed to be per-region scratch */
    SCAF_MEMO_FIXES = 1u << 3,     /* the evidence at this site fixed the program's team */
    SCAF_MEMO_STALLS = 1u << 4,    /* given fewer threads than it asked for, it stalled (the layer's stall net):
                                      the program keeps its team in every later run */
};
#define SCAF_MEMO_ALL 0x1fu

#define SCAF_MEMORY_SITES 64 /* sites a page carries each way */

enum scaf_estimate {
    SCAF_ESTIMATE_NONE = 0,     /* no estimate yet */
    SCAF_ESTIMATE_ASSUMED = 1,  /* a stated default, not measured */
    SCAF_ESTIMATE_MEASURED = 2, /* from timings and serial baselines */
    SCAF_ESTIMATE_COUNTERS = 3, /* from hardware counters (IPC ratio) */
};

/*
 * Daemon-written fields follow a seqlock: the daemon makes `seq` odd, writes,
 * then makes it even and FUTEX_WAKEs it (shared, not private: two processes).
 * Readers of a single word (threads) need no retry; readers of cpuset retry
 * while seq is odd or changed. The client's efficiency report (eff_team,
 * efficiency_ppm, estimate) follows the same rule with `client_seq`; the daemon samples it at
 * its own rate, retries a torn read a few times, and otherwise keeps the last
 * whole report it decoded. It never waits for a client.
 */
struct scaf_page {
    /* daemon -> client */
    uint32_t magic;   /* SCAF_PAGE_MAGIC */
    uint32_t version; /* SCAF_PROTO_VERSION */
    _Atomic uint32_t seq;
    _Atomic uint32_t threads;  /* allocated team size, >= 1 */
    _Atomic uint32_t control;  /* enum scaf_control */
    _Atomic uint32_t cpus;     /* daemon's N, for information */
    _Atomic uint32_t nclients; /* clients registered now (experiments are lazy while 1) */
    uint32_t reserved0;
    _Atomic uint64_t cpuset[SCAF_CPUSET_WORDS]; /* real CPU numbers for this client */
    _Atomic uint32_t gang; /* enum scaf_gang; a single word outside the seqlock, FUTEX_WAKEd */
    /* Protocol 6: nonzero while the daemon counts the client idle (no region and next to no CPU for a
     * while): its share went to the busy clients. A single word outside the seqlock. The layer reads it
     * at each outermost region; the first region that finds it set sends one WAKE and runs at once. The value
     * names the idle period (never 0, different for each period), so that one WAKE goes per period. */
    _Atomic uint32_t idle;
    uint8_t daemon_reserved[56];

    /* client -> daemon */
    _Atomic uint32_t client_flags;   /* SCAF_CLIENT_* */
    _Atomic uint32_t fixed_team;     /* team size of a non-malleable client */
    _Atomic uint32_t last_team;      /* team size of the latest outermost region */
    _Atomic uint32_t eff_team;       /* p': the team size the estimate was measured at */
    _Atomic uint32_t efficiency_ppm; /* E * 1e6; meaningful when estimate != NONE */
    _Atomic uint32_t estimate;       /* enum scaf_estimate */
    _Atomic int32_t experiment_pid;  /* running serial-experiment child, or 0 */
    /* Seqlock over the efficiency report (eff_team, efficiency_ppm, estimate): odd while written. */
    _Atomic uint32_t client_seq;
    _Atomic uint64_t regions;        /* outermost regions run so far */
    _Atomic uint64_t experiments;    /* serial experiments completed */
    _Atomic uint32_t verdict;        /* enum scaf_verdict */
    _Atomic uint32_t verdict_source; /* enum scaf_verdict_source */
    /* Seqlock over `reason`, like the daemon's `seq`: odd while the client rewrites it. */
    _Atomic uint32_t reason_seq;
    uint32_t reserved1;
    char reason[SCAF_REASON_MAX]; /* why: the call, function and object; NUL-terminated */
    /* Regions that ran a team the daemon did not choose (a num_threads other than the program's
     * default, a fixed team): the team of the latest one, and how many there were (wraps). The
     * daemon never confines such a client to fewer CPUs than that team (protocol 4). */
    _Atomic uint32_t rigid_team;
    _Atomic uint32_t rigid_regions;
    /* The most threads the client can use now (protocol 5), 0 = not said (no limit): a client whose
     * only parallelism is oneTBB through TCM permits says 1 once they have all been inactive or idle
     * for a while, and what they ask as soon as one is active again. The daemon never allocates it
     * more, so the other clients get those contexts meanwhile. */
    _Atomic uint32_t wanted;
    /* The parallel runtimes of the process other than OpenMP and BLAS (1 << enum scaf_startenv_id,
     * include/scaf/startenv.h), and the team those that read their count once run: a pool that cannot
     * shrink, placed like a fixed team of that size (0: none, or they follow the share). Written by layers
     * since December 2026 in what was reserved; an older layer leaves both 0. */
    _Atomic uint32_t runtimes;
    _Atomic uint32_t runtime_team;
    /* Of those, the ones whose pool follows the share now, through the layer: numba on its OpenMP layer, or
     * on oneTBB that asks TCM (a bit set here is not counted in runtime_team). Since December 2026, in what
     * was reserved; an older layer leaves it 0, and only the table's SCAF_FOLLOW_LAYER rows follow. */
    _Atomic uint32_t runtimes_follow;
    uint8_t client_reserved[40];

    /* ---- protocol 6: what the daemon remembers of the program (docs/memory.md) ---- */

    /* daemon -> client: written before WELCOME is sent, never after, so read without a seqlock. */
    uint32_t start_team;     /* the program's share at its arrival: the team a program known to keep
                              * its team starts with, as a static split would give it; 0 = none */
    uint32_t memory_runs;    /* runs of this program remembered; 0 = nothing known (the rest is 0) */
    uint32_t memory_verdict; /* enum scaf_verdict remembered */
    uint32_t memory_source;  /* enum scaf_verdict_source remembered */
    uint32_t known_sites;    /* entries of known[] (at most SCAF_MEMORY_SITES) */
    uint32_t reserved2;
    struct scaf_site_memo known[SCAF_MEMORY_SITES];

    /* client -> daemon: the layer writes an entry of learned[], then makes it count (release); the
     * daemon reads learned_sites (acquire) and that many entries when the client leaves. */
    _Atomic uint32_t started_with;  /* the team the layer started the program with; 0 = as usual */
    _Atomic uint32_t learned_sites; /* entries of learned[] that are whole */
    struct scaf_site_memo learned[SCAF_MEMORY_SITES];
};
static_assert(sizeof(struct scaf_page) <= SCAF_PAGE_SIZE, "page fits");
static_assert(sizeof(struct scaf_page) == 2632, "page layout is part of the protocol");
static_assert(offsetof(struct scaf_page, eff_team) == 236, "tests/support/wire.py mirrors the page by offsets");
static_assert(offsetof(struct scaf_page, start_team) == 552, "tests/support/wire.py mirrors the page by offsets");
static_assert(offsetof(struct scaf_page, started_with) == 1600, "tests/support/wire.py mirrors the page by offsets");
static_assert(offsetof(struct scaf_page, idle) == 164, "tests/support/wire.py mirrors the page by offsets");

/* Efficiency E in [0, 1] travels as parts per million; these two are the only conversions. */
static inline uint32_t scaf_efficiency_to_ppm(double e)
{
    if (!(e > 0.0))
        return 0;
    if (e >= 1.0)
        return 1000000u;
    return (uint32_t)(e * 1e6 + 0.5);
}

/* A client-written ppm above 1e6 is clamped: the page is untrusted. */
static inline double scaf_efficiency_from_ppm(uint32_t ppm)
{
    return ppm >= 1000000u ? 1.0 : (double)ppm / 1e6;
}

#endif
