/* foreign.h — which processes that are not clients take CPU, by name, and why scaf does not steer them. */
#ifndef SCAFD_FOREIGN_H
#define SCAFD_FOREIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "foreignload.h"

/* Parallel runtimes and scaf layers seen in a process's /proc/PID/maps (bits of a mask). */
enum {
    SCAF_RT_GOMP = 1u << 0,      /* GNU libgomp */
    SCAF_RT_LLVM_OMP = 1u << 1,  /* LLVM libomp */
    SCAF_RT_INTEL_OMP = 1u << 2, /* Intel libiomp5 */
    SCAF_RT_TBB = 1u << 3,       /* oneTBB */
    SCAF_RT_OPENBLAS = 1u << 4,  /* OpenBLAS, any build or renaming */
    SCAF_RT_MKL = 1u << 5,       /* Intel MKL */
    SCAF_RT_BLIS = 1u << 6,      /* BLIS */
    SCAF_RT_LAYER_GOMP = 1u << 7, /* libscaf_gomp.so: the layer for libgomp */
    SCAF_RT_LAYER_OMP = 1u << 8,  /* libscaf_omp.so: the layer for LLVM/Intel OpenMP */
    SCAF_RT_LAYER_TCM = 1u << 9,  /* libscaf_tcm.so: scaf's TCM provider, which steers oneTBB */
};

/* The runtime and layer bits of /proc/PID/maps text (each mapped path's basename is matched). */
unsigned scaf_foreign_maps_mask(const char *maps);

/*
 * The path of the oneTBB library (libtbb.so...) mapped in /proc/PID/maps text, into out (len bytes).
 * Returns 0, or -1 when none is mapped or its path does not fit.
 */
int scaf_foreign_tbb_path(const char *maps, char *out, size_t len);

/* A short name for the first runtime bit in `mask` that is not a layer ("libgomp", "libomp", ...), or NULL. */
const char *scaf_foreign_runtime_name(unsigned mask);

/* What /proc tells about one process, for the reason. */
struct scaf_foreign_facts {
    unsigned mask;          /* scaf_foreign_maps_mask; 0 when maps could not be read */
    int tbb_tcm;            /* its oneTBB asks a TCM: 1 yes, 0 no, -1 unknown (or no oneTBB) */
    const char *tbb_version; /* that oneTBB's version, "" or NULL when unknown */
    bool maps_known;        /* maps was readable */
    bool env_known;         /* /proc/PID/environ was readable (same user, or root) */
    bool disabled;          /* SCAF_DISABLE=1 in its environment */
    const char *socket;     /* its SCAF_SOCKET, NULL when unset or unknown */
    const char *our_socket; /* the socket this daemon serves */
};

/*
 * Why a process that takes CPU is not a client, in one short sentence
 * (at most `len` - 1 bytes): "not started under scaf run", "oneTBB older than
 * 2021.11 ...: scaf cannot steer it", "layer inert: SCAF_DISABLE=1", ...
 */
void scaf_foreign_reason(const struct scaf_foreign_facts *f, char *out, size_t len);

/* "prog arg1" from /proc/PID/cmdline bytes (NUL-separated): basename of argv[0], then argv[1]'s basename
 * when argv[0] is an interpreter (python, perl, sh, ...). Empty for kernel threads. */
void scaf_foreign_cmd(const char *cmdline, size_t n, char *out, size_t len);

/* The fields of /proc/PID/stat the list needs. Returns 0, or -1 with errno EINVAL. */
struct scaf_foreign_stat {
    char comm[16];
    pid_t ppid;
    uint64_t ticks;     /* utime + stime */
    uint64_t starttime; /* clock ticks after boot: with the pid, the process's identity */
};
int scaf_foreign_stat_parse(const char *text, struct scaf_foreign_stat *out);

/* One process in the list. */
struct scaf_foreign_proc {
    pid_t pid;
    uint64_t starttime;
    uint64_t ticks;      /* utime+stime at the last sample */
    double cpu;          /* smoothed contexts it kept busy (1.0 = one CPU all the time) */
    uint32_t uid;
    bool detail;         /* name, uid and reason filled */
    double detail_at;    /* when (monotonic seconds): refreshed now and then, a program may load a runtime later */
    char comm[16];
    char cmd[64];
    char reason[112];
};

/* The list. All storage is allocated once in scaf_foreign_init. */
struct scaf_foreign {
    bool on;
    struct scaf_foreign_proc *table, *next; /* open-addressing tables by pid, swapped each sample */
    size_t cap;                             /* slots in each (a power of two) */
    double last_s;                          /* monotonic time of the last sample */
    char *buf;                              /* /proc/PID/maps, kept between samples */
    size_t buf_cap;
    const char *our_socket;
};

/* Shown when at least this many contexts, smoothed (docs/daemon.md). */
#define SCAF_FOREIGN_MIN_CPU 0.2
/* At most this many in a status reply, the busiest first. */
#define SCAF_FOREIGN_SHOW 8

/* Returns 0, or -1 (ENOMEM: the list stays off; foreign load is still counted). */
int scaf_foreign_init(struct scaf_foreign *f, bool on, const char *our_socket);
void scaf_foreign_free(struct scaf_foreign *f);

/*
 * One sample (once a second, after the lookout's): walks /proc, skips `known`
 * pids (the clients and their experiment children), updates each process's
 * CPU use, and names the significant ones. Bounded: at most the table's
 * capacity of processes, and a few maps/environ reads per sample.
 */
void scaf_foreign_sample(struct scaf_foreign *f, const pid_t *known, size_t nknown);

/* The significant processes, busiest first: fills out[] with up to max pointers into f's table; returns how many. */
size_t scaf_foreign_top(const struct scaf_foreign *f, const struct scaf_foreign_proc **out, size_t max);

/*
 * The smoothed CPU use (contexts) of the processes in the list that have
 * ended since the last sample: the part of the lookout's foreign load that
 * is already gone. One /proc/PID/stat read per process that kept at least
 * SCAF_FOREIGN_GONE_MIN_CPU busy; 0 when the list is off.
 */
double scaf_foreign_gone_cpu(const struct scaf_foreign *f);

#endif
