/* listener.c — the daemon's Unix socket: parent directory, single-instance lock, stale socket recovery. */
#include "listener.h"
#include "../say.h"
#include "scaf/rundir.h"
#include "scaf/sockpath.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens the socket's directory the one safe way (scaf/rundir.h): created 0700 (0755 shared), or accepted
 * only when it cannot be somebody else's. Returns the directory fd or -1 after saying why. */
static int open_dir(const struct scaf_listener *l, char *dir, size_t dirlen, const char **base)
{
    char why[160];
    int fd;

    *base = scaf_rundir_split(l->path, dir, dirlen);
    fd = scaf_rundir_open(dir, (l->path_is_default ? SCAF_RUNDIR_PRIVATE : 0) | (l->shared ? SCAF_RUNDIR_SHARED : 0),
                          why, sizeof why);
    if (fd < 0)
        scaf_say("cannot use socket path %s: directory %s: %s", l->path, dir, why);
    return fd;
}

/* What the lock file says about the daemon holding it, so that a second one can say who is there. */
static void write_owner(const struct scaf_listener *l)
{
    char buf[64];
    int n = snprintf(buf, sizeof buf, "pid %ld idle-exit %g\n", (long)getpid(), l->idle_exit_s);

    if (ftruncate(l->lockfd, 0) == 0 && n > 0)
        (void)!pwrite(l->lockfd, buf, (size_t)n, 0);
}

/* "another scafd is already running": which one, and whether it leaves by itself. */
static void say_taken(const struct scaf_listener *l)
{
    char buf[64] = {0};
    long pid = 0;
    double idle = 0;

    if (pread(l->lockfd, buf, sizeof buf - 1, 0) > 0 && sscanf(buf, "pid %ld idle-exit %lf", &pid, &idle) == 2 &&
        pid > 0) {
        if (idle > 0)
            scaf_say("another scafd (pid %ld) is already running on %s: an idle-exit daemon (as `scaf run` "
                     "starts), it exits %g s after its last client leaves",
                     pid, l->path, idle);
        else
            scaf_say("another scafd (pid %ld) is already running on %s; it runs until stopped (kill %ld)", pid,
                     l->path, pid);
        return;
    }
    scaf_say("another scafd is already running on %s", l->path);
}

/* 1 when a daemon answers on path, 0 when nothing listens there (stale), -1 on other errors. */
static int probe(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc;

    if (fd < 0)
        return -1;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    close(fd);
    if (rc == 0)
        return 1;
    return errno == ECONNREFUSED ? 0 : -1;
}

int scaf_listener_open(struct scaf_listener *l)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char dir[SCAF_SOCKPATH_MAX], lockname[SCAF_SOCKPATH_MAX + 8], why[160];
    const char *path = l->path, *base;
    struct stat st;
    mode_t old_umask;
    int fd = -1, dirfd, rc;

    /* Whoever passed the socket owns its path and its single instance (systemd's .socket unit). */
    if (l->inherited)
        return 0;
    dirfd = open_dir(l, dir, sizeof dir, &base);
    if (dirfd < 0)
        goto fail;

    /* Two `scaf run`s may auto-start daemons at the same moment: the lock lets exactly one win. */
    snprintf(lockname, sizeof lockname, "%s.lock", base);
    l->lockfd = scaf_rundir_openat(dirfd, lockname, O_RDWR | O_CREAT, 0600, why, sizeof why);
    if (l->lockfd < 0) {
        scaf_say("cannot use socket path %s: lock file: %s", path, why);
        goto fail;
    }
    if (flock(l->lockfd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK)
            say_taken(l);
        else
            scaf_say("cannot lock %s.lock: %s", path, strerror(errno));
        goto fail;
    }

    if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        int live;
        if (!S_ISSOCK(st.st_mode)) {
            /* Never delete something that is not ours to delete. */
            scaf_say("%s exists and is not a socket; remove it or choose another --socket", path);
            goto fail;
        }
        live = probe(path);
        if (live == 1) {
            scaf_say("another scafd is already serving %s", path);
            goto fail;
        }
        if (live < 0) {
            scaf_say("cannot check the existing socket %s: %s", path, strerror(errno));
            goto fail;
        }
        if (unlinkat(dirfd, base, 0) < 0) {
            scaf_say("cannot remove stale socket %s: %s", path, strerror(errno));
            goto fail;
        }
        if (l->verbose)
            scaf_say("removed stale socket %s", path);
    }

    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        scaf_say("socket: %s", strerror(errno));
        goto fail;
    }
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    /* The socket is born with its final mode: no chmod by path afterwards, which would follow a swapped link. */
    old_umask = umask(l->shared ? 0111 : 0177);
    rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old_umask);
    if (rc < 0) {
        scaf_say("cannot use socket path %s: bind: %s", path, strerror(errno));
        goto fail;
    }
    if (listen(fd, 128) < 0 || fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        scaf_say("cannot set up %s: %s", path, strerror(errno));
        unlinkat(dirfd, base, 0);
        goto fail;
    }
    write_owner(l);
    close(dirfd);
    l->dev = st.st_dev;
    l->ino = st.st_ino;
    l->fd = fd;
    return 0;
fail:
    if (dirfd >= 0)
        close(dirfd);
    if (fd >= 0)
        close(fd);
    if (l->lockfd >= 0)
        close(l->lockfd);
    l->lockfd = -1;
    return -1;
}

void scaf_listener_close(struct scaf_listener *l)
{
    struct stat st;

    if (l->fd < 0)
        return;
    if (l->inherited) {
        /* The path stays: the socket's owner listens on it still and starts us again. */
        close(l->fd);
        l->fd = -1;
        return;
    }
    /* Someone may have replaced the path since; only remove the socket we bound. */
    if (stat(l->path, &st) == 0 && st.st_dev == l->dev && st.st_ino == l->ino)
        unlink(l->path);
    close(l->fd);
    l->fd = -1;
    if (l->lockfd >= 0)
        close(l->lockfd);
    l->lockfd = -1;
}
