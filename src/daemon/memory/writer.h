/* writer.h — a user's memory file written by a child process, so that the daemon's loop never waits for the disk (not an installed interface). */
#ifndef SCAFD_MEMORY_WRITER_H
#define SCAFD_MEMORY_WRITER_H

#include "file.h"
#include "store.h"

#include <stdbool.h>
#include <sys/types.h>

/* A write under way: the child, and a descriptor that becomes readable when it ends (-1: none, poll it). */
struct scaf_memwriter {
    pid_t pid;          /* 0: none */
    int fd;             /* a pidfd, -1 without one (none runs, or Linux before 5.3) */
    uint32_t store;     /* the index of the store it writes */
    uint64_t changes;   /* that store's change count when the child took its copy */
};

/*
 * Forks a child that writes s's table into the state directory `dirfd`
 * (scaf_memfile_save, with `hooks`) and exits 0, or 1 after saying why on
 * stderr (unless `quiet`: the failure was said already). The child keeps
 * nothing of the daemon's but that directory and the standard descriptors:
 * a listening socket or the daemon's lock held by it would outlive a daemon
 * that died meanwhile. Returns 0 with *w filled, or -1 with errno when fork
 * failed (the caller writes in place).
 */
int scaf_memwriter_start(struct scaf_memwriter *w, int dirfd, const char *dir, uint32_t index,
                         const struct scaf_store *s, bool quiet, const struct scaf_memfile_hooks *hooks);

/*
 * Whether the child has ended, waiting for it when `wait`: 1 it wrote the
 * file, 0 it failed (or died), -1 still writing (never with `wait`). On 0 or
 * 1 the pidfd is closed and *w cleared.
 */
int scaf_memwriter_reap(struct scaf_memwriter *w, bool wait);

#endif
