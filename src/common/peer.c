/* peer.c — whether the daemon at the other end of a connected Unix socket is one this user may trust. */
#include "scaf/peer.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "scaf/rundir.h"

/* Who the user trusts besides itself and root: a shared daemon's user, by name or uid. */
#define SCAF_PEER_USER_ENV "SCAF_DAEMON_USER"

/* Where system services' runtime directories live. */
#define SCAF_PEER_RUNDIR "/run"

/* DAEMON_USER as a uid: digits are a uid, anything else a user name. Returns 0, or -1 when unknown. */
static int configured_uid(const char *daemon_user, uid_t *out)
{
    char *end;
    unsigned long v;
    struct passwd pw, *res = NULL;
    char buf[1024];

    if (!daemon_user || !*daemon_user)
        return -1;
    errno = 0;
    v = strtoul(daemon_user, &end, 10);
    if (!errno && *end == 0 && daemon_user[0] != '-' && v <= (unsigned long)(uid_t)-2) {
        *out = (uid_t)v;
        return 0;
    }
    if (getpwnam_r(daemon_user, &pw, buf, sizeof buf, &res) != 0 || !res)
        return -1;
    *out = res->pw_uid;
    return 0;
}

/*
 * Whether SOCKPATH's directory belongs to uid and is an entry of /run (also reached as /var/run), which
 * only root can write: a directory a service manager made for a system service's own user. /run alone,
 * not any root-owned parent: /home is root's too, and a user's home must not vouch for that user.
 */
static int handed_by_root(const char *sockpath, uid_t uid)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)], parent[sizeof dir];
    struct stat d, p, run;

    scaf_rundir_split(sockpath, dir, sizeof dir);
    if (sockpath[0] != '/' || strcmp(dir, "/") == 0)
        return 0;
    scaf_rundir_split(dir, parent, sizeof parent);
    if (lstat(dir, &d) != 0 || !S_ISDIR(d.st_mode) || d.st_uid != uid || (d.st_mode & (S_IWGRP | S_IWOTH)))
        return 0;
    if (stat(parent, &p) != 0 || stat(SCAF_PEER_RUNDIR, &run) != 0 || p.st_dev != run.st_dev ||
        p.st_ino != run.st_ino)
        return 0;
    return p.st_uid == 0 && !(p.st_mode & (S_IWGRP | S_IWOTH));
}

int scaf_peer_trusted(int fd, const char *sockpath, const char *daemon_user, uid_t *peer_uid)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    uid_t cfg;

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return -1;
    *peer_uid = cred.uid;
    if (cred.uid == getuid() || cred.uid == 0)
        return 1;
    if (configured_uid(daemon_user, &cfg) == 0 && cred.uid == cfg)
        return 1;
    return handed_by_root(sockpath, cred.uid);
}

int scaf_peer_trusted_env(int fd, const char *sockpath, uid_t *peer_uid)
{
    return scaf_peer_trusted(fd, sockpath, getenv(SCAF_PEER_USER_ENV), peer_uid);
}

void scaf_peer_refusal(uid_t peer_uid, char *buf, size_t len)
{
    snprintf(buf, len, "runs as uid %u, not as you (uid %u), root or " SCAF_PEER_USER_ENV, (unsigned)peer_uid,
             (unsigned)getuid());
}
