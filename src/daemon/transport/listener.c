/* listener.c — the daemon's Unix socket: parent directory, single-instance lock, stale socket recovery. */
#include "listener.h"
#include "../say.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Creates the socket's parent directory if missing (one level only: a missing /run is not ours to make). */
static int ensure_parent(const struct scaf_listener *l)
{
    char dir[SCAFD_SOCKPATH_MAX];
    char *slash;
    struct stat st;

    snprintf(dir, sizeof dir, "%s", l->path);
    slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0; /* relative name in the cwd, or directly under / */
    *slash = '\0';
    /* Per-user directories are private; a system-wide daemon's directory must be reachable by all. */
    if (mkdir(dir, l->shared ? 0755 : 0700) < 0 && errno != EEXIST) {
        scaf_say("cannot use socket path %s: cannot create directory %s: %s", l->path, dir, strerror(errno));
        return -1;
    }
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
        scaf_say("cannot use socket path %s: %s is not a directory", l->path, dir);
        return -1;
    }
    /* The default path lives in /tmp, where anyone could have made the directory first. */
    if (l->path_is_default && st.st_uid != getuid()) {
        scaf_say("cannot use socket path %s: directory %s belongs to uid %u, not to you (uid %u)", l->path,
                 dir, (unsigned)st.st_uid, (unsigned)getuid());
        return -1;
    }
    return 0;
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
    char lockpath[SCAFD_SOCKPATH_MAX + 8];
    const char *path = l->path;
    struct stat st;
    int fd = -1;

    /* Whoever passed the socket owns its path and its single instance (systemd's .socket unit). */
    if (l->inherited)
        return 0;
    if (ensure_parent(l) < 0)
        goto fail;

    /* Two `scaf run`s may auto-start daemons at the same moment: the lock lets exactly one win. */
    snprintf(lockpath, sizeof lockpath, "%s.lock", path);
    l->lockfd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (l->lockfd < 0) {
        scaf_say("cannot create lock file %s: %s", lockpath, strerror(errno));
        goto fail;
    }
    if (flock(l->lockfd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK)
            scaf_say("another scafd is already running on %s", path);
        else
            scaf_say("cannot lock %s: %s", lockpath, strerror(errno));
        goto fail;
    }

    if (lstat(path, &st) == 0) {
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
        if (unlink(path) < 0) {
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
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        scaf_say("cannot use socket path %s: bind: %s", path, strerror(errno));
        goto fail;
    }
    if (chmod(path, l->shared ? 0666 : 0600) < 0 || listen(fd, 128) < 0 || stat(path, &st) < 0) {
        scaf_say("cannot set up %s: %s", path, strerror(errno));
        unlink(path);
        goto fail;
    }
    l->dev = st.st_dev;
    l->ino = st.st_ino;
    l->fd = fd;
    return 0;
fail:
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
