/* procfs.c — one bounded, stdio-free reader for the small /proc files daemon and layer parse. */
#include "scaf/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Past this, a /proc file is not one scaf should be reading whole. */
#define PROCFS_GROW_MAX (64u << 20)

ssize_t scaf_procfs_read(const char *path, char *buf, size_t len)
{
    size_t got = 0;
    int fd;

    if (len == 0) {
        errno = EINVAL;
        return -1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* /proc files are generated per read(); loop so a file larger than one page still reads whole. */
    while (got < len - 1) {
        ssize_t n = read(fd, buf + got, len - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

ssize_t scaf_procfs_read_pid(pid_t pid, const char *name, char *buf, size_t len)
{
    char path[64];
    int k;
    ssize_t n;

    /* snprintf with %d and %s only: safe in the layer (no locale, no allocation in glibc for these). */
    if (pid > 0)
        k = snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    else
        k = snprintf(path, sizeof path, "/proc/self/%s", name);
    if (k < 0 || (size_t)k >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    n = scaf_procfs_read(path, buf, len);
    if (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    return n;
}

ssize_t scaf_procfs_read_grow(const char *path, char **buf, size_t *cap)
{
    size_t want = *buf && *cap >= 4096 ? *cap : 4096;
    ssize_t n;

    for (;;) {
        if (!*buf || want != *cap) {
            char *p = want <= PROCFS_GROW_MAX ? realloc(*buf, want) : NULL;
            if (!p) {
                errno = want <= PROCFS_GROW_MAX ? ENOMEM : EFBIG;
                n = -1;
                goto out;
            }
            *buf = p;
            *cap = want;
        }
        n = scaf_procfs_read(path, *buf, *cap);
        /* A full buffer may have cut the file: read it again, whole, into one twice the size. */
        if (n < 0 || (size_t)n < *cap - 1)
            goto out;
        want = *cap * 2;
    }
out:
    return n;
}
