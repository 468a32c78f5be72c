/* rundir.h — the one safe way to make or accept the directory a daemon's socket, lock and log live in. */
#ifndef SCAF_RUNDIR_H
#define SCAF_RUNDIR_H

#include <stddef.h>
#include <sys/types.h>

/* Flags for scaf_rundir_open. */
enum {
    /* The per-user default path (/tmp/scaf-$UID, $XDG_RUNTIME_DIR/scaf): an existing directory must be
     * ours and writable by nobody else, or another user could have made it first and planted links. */
    SCAF_RUNDIR_PRIVATE = 1,
    /* A system-wide daemon's directory: created 0755 so that every user can reach the socket. */
    SCAF_RUNDIR_SHARED = 2,
};

/*
 * Opens DIR, the parent of a socket path, creating only its last component
 * (mode 0700, or 0755 with SCAF_RUNDIR_SHARED) when it is missing; a missing
 * parent of DIR is an error, never created. An existing DIR is accepted only
 * if it is a real directory (not a symlink), owned by this user or root, and
 * not writable by others unless sticky (like /tmp); with
 * SCAF_RUNDIR_PRIVATE it must be owned by this user and writable by nobody
 * else. The checks are made on the opened descriptor, so the directory cannot
 * be swapped between check and use.
 *
 * Returns a directory fd (O_CLOEXEC) for scaf_rundir_openat, or -1 with errno
 * set and a one-line reason (without the path) in why.
 */
int scaf_rundir_open(const char *dir, int flags, char *why, size_t whylen);

/*
 * Opens NAME inside the directory DIRFD with FLAGS | O_NOFOLLOW | O_CLOEXEC
 * (mode MODE when created). A symlink is refused, and so is an existing file
 * that is not a regular file of this user with a single link: a planted file
 * is never written to. Returns the fd, or -1 with errno set and a reason in why.
 */
int scaf_rundir_openat(int dirfd, const char *name, int flags, mode_t mode, char *why, size_t whylen);

/* Splits PATH into its directory (into dir; "." for a bare name) and returns a pointer to its last component. */
const char *scaf_rundir_split(const char *path, char *dir, size_t dirlen);

#endif
