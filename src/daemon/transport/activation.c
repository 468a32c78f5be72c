/* activation.c — socket activation: take over the listening socket passed as fd 3 under the LISTEN_FDS protocol. */
#include "activation.h"
#include "../say.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The protocol's first passed descriptor (SD_LISTEN_FDS_START in sd-daemon.h). */
#define LISTEN_FDS_START 3

/* A decimal number that fills the whole string, or -1. */
static long whole_number(const char *s)
{
    char *end;
    long v;

    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || v < 0)
        return -1;
    return v;
}

enum scaf_activation scaf_activation_take(int *fd, char *path, size_t len)
{
    long pid = whole_number(getenv("LISTEN_PID"));
    long n = whole_number(getenv("LISTEN_FDS"));
    enum scaf_activation rc = SCAF_ACTIVATION_BAD;
    struct sockaddr_un sa;
    socklen_t salen = sizeof sa;
    int type = 0, listening = 0, flags;
    size_t plen;
    socklen_t optlen = sizeof type;

    /* Variables meant for another process (a parent that did not unset them) are not ours. */
    if (pid < 0 || n < 0 || (pid_t)pid != getpid()) {
        rc = SCAF_ACTIVATION_NONE;
        goto out;
    }
    if (n == 0) {
        rc = SCAF_ACTIVATION_NONE;
        goto out;
    }
    if (n != 1) {
        scaf_say("socket activation passed %ld sockets; scafd serves exactly one (one ListenStream= in the .socket unit)", n);
        goto out;
    }
    if (getsockopt(LISTEN_FDS_START, SOL_SOCKET, SO_TYPE, &type, &optlen) < 0) {
        scaf_say("socket activation: fd %d is not a socket: %s", LISTEN_FDS_START, strerror(errno));
        goto out;
    }
    optlen = sizeof listening;
    if (type != SOCK_STREAM || getsockopt(LISTEN_FDS_START, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) < 0 ||
        !listening) {
        scaf_say("socket activation: fd %d is not a listening stream socket (use ListenStream= with Accept=no)",
                 LISTEN_FDS_START);
        goto out;
    }
    memset(&sa, 0, sizeof sa);
    if (getsockname(LISTEN_FDS_START, (struct sockaddr *)&sa, &salen) < 0 || sa.sun_family != AF_UNIX ||
        salen <= offsetof(struct sockaddr_un, sun_path) || sa.sun_path[0] == '\0') {
        scaf_say("socket activation: fd %d is not a Unix socket bound to a path", LISTEN_FDS_START);
        goto out;
    }
    plen = strnlen(sa.sun_path, (size_t)salen - offsetof(struct sockaddr_un, sun_path));
    if (plen >= len) {
        scaf_say("socket activation: the socket's path is too long");
        goto out;
    }
    /* The loop accepts until EAGAIN; the daemon execs nothing, but a leaked fd would hold the socket. */
    flags = fcntl(LISTEN_FDS_START, F_GETFL);
    if (flags < 0 || fcntl(LISTEN_FDS_START, F_SETFL, flags | O_NONBLOCK) < 0 ||
        fcntl(LISTEN_FDS_START, F_SETFD, FD_CLOEXEC) < 0) {
        scaf_say("socket activation: cannot set up fd %d: %s", LISTEN_FDS_START, strerror(errno));
        goto out;
    }
    memcpy(path, sa.sun_path, plen);
    path[plen] = '\0';
    *fd = LISTEN_FDS_START;
    rc = SCAF_ACTIVATION_OK;
out:
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    return rc;
}
