/* say.c — scafd's stderr lines and stdout tables: one write each, never waiting for a reader that does not drain. */
#include "say.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * How lines leave (stdout's tables the same way). A log nobody reads must never stop the daemon serving, so
 * a line that does not fit now is dropped and counted. O_NONBLOCK on fd 2
 * itself would change the open file description scafd shares with whoever
 * started it (a shell's terminal), so a pipe or terminal is reopened through
 * /proc for a description of scafd's own; a socket (journald) takes
 * MSG_DONTWAIT; a regular file does not block for a reader and is written as is.
 */
enum say_mode { SAY_UNSET = 0, SAY_PLAIN, SAY_SOCKET, SAY_POLL };

struct say_stream {
    int std_fd; /* STDOUT_FILENO or STDERR_FILENO */
    enum say_mode mode;
    int fd;     /* where writes go: std_fd, or a non-blocking reopening of it */
    unsigned long long dropped;
};

static struct say_stream err_stream = {STDERR_FILENO, SAY_UNSET, STDERR_FILENO, 0};
static struct say_stream out_stream = {STDOUT_FILENO, SAY_UNSET, STDOUT_FILENO, 0};

static void setup(struct say_stream *st)
{
    struct stat sb;
    char path[32];

    st->mode = SAY_PLAIN;
    if (fstat(st->std_fd, &sb) < 0)
        return;
    if (S_ISSOCK(sb.st_mode)) {
        st->mode = SAY_SOCKET;
    } else if (S_ISFIFO(sb.st_mode) || S_ISCHR(sb.st_mode)) {
        int fd;
        snprintf(path, sizeof path, "/proc/self/fd/%d", st->std_fd);
        fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0)
            st->fd = fd;
        else
            st->mode = SAY_POLL; /* no /proc, or a pipe already without a reader: ask before each write */
    }
}

/* Whole, or dropped and counted (a pipe takes up to PIPE_BUF bytes whole or not at all; a longer
 * block may go out in part). Returns 0 when all of it went out. */
static int emit(struct say_stream *st, const char *buf, size_t len)
{
    struct pollfd p = {.fd = st->std_fd, .events = POLLOUT};
    ssize_t n;

    if (st->mode == SAY_UNSET)
        setup(st);
    if (st->mode == SAY_SOCKET)
        n = send(st->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    else if (st->mode == SAY_POLL && (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT)))
        n = -1;
    else
        n = write(st->fd, buf, len);
    if (n == (ssize_t)len)
        return 0;
    st->dropped++;
    return -1;
}

void scaf_say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n;

    memcpy(line, "scafd: ", 7);
    va_start(ap, fmt);
    n = vsnprintf(line + 7, sizeof line - 8, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    n += 7;
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    /* One write per line, so lines from a busy daemon never interleave mid-way. */
    (void)emit(&err_stream, line, (size_t)n);
}

unsigned long long scaf_say_dropped(void)
{
    return err_stream.dropped;
}

int scaf_say_stdout(const char *buf, size_t len)
{
    return emit(&out_stream, buf, len);
}
