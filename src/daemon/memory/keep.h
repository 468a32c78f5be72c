/* keep.h — the memories scafd keeps, one per user: the state directory, each user's table loaded at first use, written back at most once a second (not an installed interface). */
#ifndef SCAFD_MEMORY_KEEP_H
#define SCAFD_MEMORY_KEEP_H

#include "store.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SCAF_MEMORY_PROGRAMS_DEFAULT 256u
/* A user's memory is written at most this often (seconds): the loop's batch of departures. */
#define SCAF_MEMORY_WRITE_EVERY_S 1.0

struct scaf_memory {
    bool on;                 /* false with --no-memory, or when no state directory could be used */
    int dirfd;               /* the state directory, opened once (memory/statedir.c); -1 when off */
    char dir[PATH_MAX];      /* its path, for log lines */
    uint32_t programs;       /* --memory-programs: the most programs remembered per user */
    long long kill_at;       /* tests only (SCAFD_TEST_MEMORY_KILL_AT): die this far into a write; -1 = never */
    struct scaf_memo_store *stores; /* the users whose memory was loaded, nstores of them */
    uint32_t nstores, capstores;
    double tally_s;          /* CLOCK_MONOTONIC when the clients' peer time was last counted (memory/memory.c) */
};

/* What scafd's options ask for. */
struct scaf_memory_opts {
    const char *state_dir; /* --state-dir, or NULL for the default */
    bool off;              /* --no-memory */
    uint32_t programs;     /* --memory-programs; 0 = the default */
};

/*
 * Sets *m up: off with --no-memory; else the state directory chosen
 * (memory/statedir.c) and opened (main's first line says where). A default
 * directory that cannot be used turns the memory off with one line saying
 * why; a --state-dir that cannot be used is an error. Returns 0, or -1 (said
 * on stderr): the daemon should not start.
 */
int scaf_memory_open(struct scaf_memory *m, const struct scaf_memory_opts *o);

/*
 * uid's table, loaded at its first use: an absent file is an empty memory; a
 * damaged or foreign one is set aside (memory-UID.bin.bad-TIMESTAMP) with
 * one line, and the user starts empty; a file that cannot be read at all
 * leaves the user without memory (one line; the file is left alone). NULL
 * when the memory is off, the user's file is unreadable, or out of memory.
 */
struct scaf_memo_store *scaf_memory_store(struct scaf_memory *m, uid_t uid);

/*
 * Writes every changed table (atomically: memory/file.c) whose last write is
 * at least SCAF_MEMORY_WRITE_EVERY_S old (now: CLOCK_MONOTONIC seconds), or
 * every changed one with `force` (at exit). A failed write is said once and
 * tried again later.
 */
void scaf_memory_flush(struct scaf_memory *m, double now, bool force);

/* Writes what changed (force) and frees everything. */
void scaf_memory_close(struct scaf_memory *m);

#endif
