/* sockio.c — blocking, timeout-bounded I/O on a Unix stream socket to the daemon (include/scaf/sockio.h). */
#include "scaf/sockio.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

int scaf_sockio_dial(const char *path, int timeout_ms)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    int fd, err;

    if (strlen(path) >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(addr.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    while (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        if (errno == EINTR)
            continue;
        err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* Moves all LEN bytes in one direction: send (no SIGPIPE) or recv; EINTR retried, EOF and timeouts fail. */
static int all(int fd, char *p, size_t len, int out)
{
    while (len > 0) {
        ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int scaf_sockio_send_all(int fd, const void *buf, size_t len)
{
    return all(fd, (char *)(uintptr_t)buf, len, 1); /* only read: send() takes it const */
}

int scaf_sockio_recv_all(int fd, void *buf, size_t len)
{
    return all(fd, buf, len, 0);
}
