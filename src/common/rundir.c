/* rundir.c — the one safe way to make or accept the directory a daemon's socket, lock and log live in. */
#include "scaf/rundir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *scaf_rundir_split(const char *path, char *dir, size_t dirlen)
{
    const char *slash = strrchr(path, '/');

    if (!slash) {
        snprintf(dir, dirlen, ".");
        return path;
    }
    if (slash == path)
        snprintf(dir, dirlen, "/");
    else
        snprintf(dir, dirlen, "%.*s", (int)(slash - path), path);
    return slash + 1;
}

/* Closes fd (when open), writes the reason and fails with err. */
__attribute__((format(printf, 5, 6))) static int refuse(int fd, int err, char *why, size_t whylen,
                                                        const char *fmt, ...)
{
    va_list ap;

    if (fd >= 0)
        close(fd);
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    errno = err;
    return -1;
}

int scaf_rundir_open(const char *dir, int flags, char *why, size_t whylen)
{
    uid_t me = geteuid();
    struct stat st;
    int fd;

    /* Only the last component: a missing parent (/run, $XDG_RUNTIME_DIR) is not ours to make. */
    if (mkdir(dir, flags & SCAF_RUNDIR_SHARED ? 0755 : 0700) < 0 && errno != EEXIST) {
        int err = errno;
        snprintf(why, whylen, "cannot create it: %s", strerror(err));
        errno = err;
        return -1;
    }
    /* O_NOFOLLOW on the last component: a symlinked directory is somebody else's choice of where we write. */
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        if (err == ELOOP || err == ENOTDIR) {
            struct stat l;
            if (lstat(dir, &l) == 0 && S_ISLNK(l.st_mode))
                return refuse(-1, ELOOP, why, whylen, "it is a symbolic link, not a directory");
            return refuse(-1, ENOTDIR, why, whylen, "it is not a directory");
        }
        snprintf(why, whylen, "cannot open it: %s", strerror(err));
        errno = err;
        return -1;
    }
    if (fstat(fd, &st) < 0) {
        int err = errno;
        close(fd);
        snprintf(why, whylen, "cannot stat it: %s", strerror(err));
        errno = err;
        return -1;
    }
    if (flags & SCAF_RUNDIR_PRIVATE) {
        if (st.st_uid != me)
            return refuse(fd, EPERM, why, whylen, "it belongs to uid %u, not to you (uid %u)", (unsigned)st.st_uid,
                          (unsigned)me);
        if (st.st_mode & (S_IWGRP | S_IWOTH))
            return refuse(fd, EPERM, why, whylen, "it is writable by other users (mode %03o)",
                          (unsigned)(st.st_mode & 0777));
        return fd;
    }
    if (st.st_uid != me && st.st_uid != 0)
        return refuse(fd, EPERM, why, whylen, "it belongs to uid %u, not to you (uid %u) or root", (unsigned)st.st_uid,
                      (unsigned)me);
    if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
        return refuse(fd, EPERM, why, whylen, "it is writable by every user and not sticky (mode %03o)",
                      (unsigned)(st.st_mode & 0777));
    return fd;
}

int scaf_rundir_openat(int dirfd, const char *name, int flags, mode_t mode, char *why, size_t whylen)
{
    struct stat st;
    int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);

    if (fd < 0) {
        int err = errno;
        if (err == ELOOP)
            snprintf(why, whylen, "%s is a symbolic link", name);
        else
            snprintf(why, whylen, "cannot open %s: %s", name, strerror(err));
        errno = err;
        return -1;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1) {
        close(fd);
        snprintf(why, whylen, "%s is not a plain file of yours (planted by someone else?)", name);
        errno = EPERM;
        return -1;
    }
    return fd;
}
