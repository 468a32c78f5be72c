/* say.c — scafd's stderr lines: one write per line, never waiting for a reader that does not drain. */
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
 * How lines leave. A log nobody reads must never stop the daemon serving, so
 * a line that does not fit now is dropped and counted. O_NONBLOCK on fd 2
 * itself would change the open file description scafd shares with whoever
 * started it (a shell's terminal), so a pipe or terminal is reopened through
 * /proc for a description of scafd's own; a socket (journald) takes
 * MSG_DONTWAIT; a regular file does not block for a reader and is written as is.
 */
enum say_mode { SAY_UNSET = 0, SAY_PLAIN, SAY_SOCKET, SAY_POLL };

static enum say_mode mode;
static int out_fd = STDERR_FILENO;
static unsigned long long dropped;

static void setup(void)
{
    struct stat st;

    mode = SAY_PLAIN;
    if (fstat(STDERR_FILENO, &st) < 0)
        return;
    if (S_ISSOCK(st.st_mode)) {
        mode = SAY_SOCKET;
    } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
        int fd = open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0)
            out_fd = fd;
        else
            mode = SAY_POLL; /* no /proc, or a pipe already without a reader: ask before each write */
    }
}

static void emit(const char *buf, size_t len)
{
    struct pollfd p = {.fd = STDERR_FILENO, .events = POLLOUT};
    ssize_t n;

    if (mode == SAY_UNSET)
        setup();
    /* Lines are below PIPE_BUF, so a pipe takes each whole or not at all. */
    if (mode == SAY_SOCKET)
        n = send(out_fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    else if (mode == SAY_POLL && (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT)))
        n = -1;
    else
        n = write(out_fd, buf, len);
    if (n != (ssize_t)len)
        dropped++;
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
    emit(line, (size_t)n);
}

unsigned long long scaf_say_dropped(void)
{
    return dropped;
}
