/* keep.h — the memories scafd keeps, one per user, knowing nothing of clients: the state directory, each user's table loaded at first use, written back at most once a second by a child process (not an installed interface). */
#ifndef SCAFD_MEMORY_KEEP_H
#define SCAFD_MEMORY_KEEP_H

#include "file.h"
#include "store.h"
#include "writer.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SCAF_KEEP_PROGRAMS_DEFAULT 256u
/* A user's memory is written at most this often (seconds): the loop's batch of departures. */
#define SCAF_KEEP_WRITE_EVERY_S 1.0

struct scaf_keep {
    bool on;                 /* false with --no-memory, or when no state directory could be used */
    int dirfd;               /* the state directory, opened once (memory/statedir.c); -1 when off */
    char dir[PATH_MAX];      /* its path, for log lines */
    uint32_t programs;       /* --memory-programs: the most programs remembered per user */
    struct scaf_memfile_hooks hooks; /* tests only: SCAFD_TEST_MEMORY_KILL_AT and SCAFD_TEST_MEMORY_HOLD */
    struct scaf_memwriter writer;    /* the write under way in a child, if any: one at a time */
    struct scaf_store *stores; /* the users whose memory was loaded, nstores of them */
    uint32_t nstores, capstores;
};

/* What scafd's options ask for. */
struct scaf_keep_opts {
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
int scaf_keep_open(struct scaf_keep *m, const struct scaf_keep_opts *o);

/*
 * uid's table, loaded at its first use: an absent file is an empty memory; a
 * damaged or foreign one is set aside (memory-UID.bin.bad-TIMESTAMP) with
 * one line, and the user starts empty; a file that cannot be read at all
 * leaves the user without memory (one line; the file is left alone). NULL
 * when the memory is off, the user's file is unreadable, or out of memory.
 */
struct scaf_store *scaf_keep_store(struct scaf_keep *m, uid_t uid);

/*
 * Writes the changed tables (atomically: memory/file.c), each at most once
 * in SCAF_KEEP_WRITE_EVERY_S (now: CLOCK_MONOTONIC seconds). Without
 * `force`, a child process writes one table at a time (memory/writer.c) and
 * the call never waits for the disk: it settles a child that has ended and
 * starts the next one. Returns 1 when it started a child, whose end
 * scaf_keep_writer_fd() then signals, else 0. With `force` (at exit) it
 * waits for a child under way, then writes every changed table itself. A
 * failed write is said once and tried again later; a table changed while a
 * child wrote it stays changed.
 */
int scaf_keep_flush(struct scaf_keep *m, double now, bool force);

/* A descriptor that becomes readable when the child writing a table ends (a pidfd), or -1: none runs, or the
 * kernel has no pidfd (the next flush looks). */
int scaf_keep_writer_fd(const struct scaf_keep *m);

/* Writes what changed (force) and frees everything. */
void scaf_keep_close(struct scaf_keep *m);

#endif
