/* rundelay.c — the calling thread's run-queue delay from /proc/thread-self/schedstat, behind one narrow seam. */
#include "rundelay.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* -1: not opened yet; -2: failed, do not try again. Never closed: one per thread that starts regions. */
static _Thread_local int tl_fd = -1;

uint64_t scaf_rundelay_ns(void)
{
    char buf[96];
    ssize_t n;
    char *p, *end;
    unsigned long long v;

    if (tl_fd == -2)
        return UINT64_MAX;
    if (tl_fd == -1) {
        tl_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        if (tl_fd < 0) {
            tl_fd = -2;
            return UINT64_MAX;
        }
    }
    n = pread(tl_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        goto fail;
    buf[n] = '\0';
    /* "<cpu time ns> <run delay ns> <timeslices>" */
    (void)strtoull(buf, &p, 10);
    if (p == buf)
        goto fail;
    v = strtoull(p, &end, 10);
    if (end == p)
        goto fail;
    return (uint64_t)v;
fail:
    close(tl_fd);
    tl_fd = -2;
    return UINT64_MAX;
}
