/* procfs.c — one bounded, stdio-free reader for the small /proc files daemon and layer parse. */
#include "scaf/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Past this, a /proc file is not one scaf should be reading whole. */
#define PROCFS_GROW_MAX (64u << 20)

ssize_t scaf_procfs_read_fd(int fd, char *buf, size_t len)
{
    size_t got = 0;

    if (len == 0) {
        errno = EINVAL;
        return -1;
    }
    /* /proc files are generated per read(); loop so a file larger than one page still reads whole. */
    while (got < len - 1) {
        ssize_t n = read(fd, buf + got, len - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    return (ssize_t)got;
}

ssize_t scaf_procfs_read(const char *path, char *buf, size_t len)
{
    ssize_t got;
    int fd, saved;

    if (len == 0) {
        errno = EINVAL;
        return -1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    got = scaf_procfs_read_fd(fd, buf, len);
    saved = errno;
    close(fd);
    errno = saved;
    return got;
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

uint64_t scaf_procfs_resident_pages(void)
{
    char buf[128], *end;
    unsigned long long resident;

    if (scaf_procfs_read_pid(0, "statm", buf, sizeof buf) <= 0)
        return 0;
    (void)strtoull(buf, &end, 10); /* size */
    if (end == buf)
        return 0;
    resident = strtoull(end, NULL, 10);
    return (uint64_t)resident;
}

/* One "Name:\thex" line of /proc/PID/status as a signal mask; 0 when absent. */
static uint64_t sigmask_field(const char *status, const char *name)
{
    const char *p = strstr(status, name);

    return p ? strtoull(p + strlen(name), NULL, 16) : 0;
}

/* Signals whose default action ends the process (signal(7): Term and Core). */
static uint64_t fatal_by_default(void)
{
    static const int SIGS[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGILL,  SIGTRAP,   SIGABRT, SIGBUS,  SIGFPE,
                               SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM,   SIGTERM, SIGXCPU, SIGXFSZ,
                               SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSYS, SIGSTKFLT};
    uint64_t m = 0;

    for (size_t i = 0; i < sizeof SIGS / sizeof SIGS[0]; i++)
        m |= 1ull << (SIGS[i] - 1);
    return m;
}

/* The fields of /proc/PID/stat after the state letter that scaf reads, in their order (proc(5)). */
enum {
    STAT_PPID, STAT_PGRP, STAT_SESSION, STAT_TTY, STAT_TPGID, STAT_FLAGS, STAT_MINFLT, STAT_CMINFLT, STAT_MAJFLT,
    STAT_CMAJFLT, STAT_UTIME, STAT_STIME, STAT_CUTIME, STAT_CSTIME, STAT_PRIORITY, STAT_NICE, STAT_NUM_THREADS,
    STAT_ITREALVALUE, STAT_STARTTIME, STAT_NFIELDS
};

/*
 * /proc/PID/NAME (a stat file: "stat", or "task/TID/stat") split after its command: *state is the
 * state letter and fields[i] points at the field STAT_* i, ended by a space. comm may hold anything,
 * even ") ", so the split is at the last ')'. Returns 0, or -1 with errno (EPROTO: does not parse).
 */
static int stat_fields_of(pid_t pid, const char *name, char *buf, size_t len, char *state,
                          const char *fields[STAT_NFIELDS])
{
    char *p;

    if (scaf_procfs_read_pid(pid, name, buf, len) < 0)
        return -1;
    p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || !p[2]) {
        errno = EPROTO;
        return -1;
    }
    *state = p[2];
    p += 3;
    for (int field = 0; field < STAT_NFIELDS; field++) {
        if (*p != ' ') {
            errno = EPROTO;
            return -1;
        }
        fields[field] = ++p;
        p += strcspn(p, " ");
    }
    return 0;
}

static int stat_fields(pid_t pid, char *buf, size_t len, char *state, const char *fields[STAT_NFIELDS])
{
    return stat_fields_of(pid, "stat", buf, len, state, fields);
}

/* One decimal field of stat_fields(); -1 with EPROTO when it is not one. */
static long long stat_number(const char *field)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(field, &end, 10);
    if (errno || end == field || (*end != ' ' && *end != '\0')) {
        errno = EPROTO;
        return -1;
    }
    return v;
}

pid_t scaf_procfs_session(pid_t pid)
{
    char buf[2048], state;
    const char *f[STAT_NFIELDS];
    long long sid;

    if (pid <= 0) {
        errno = EINVAL;
        return -1;
    }
    if (stat_fields(pid, buf, sizeof buf, &state, f) < 0 || (sid = stat_number(f[STAT_SESSION])) < 0)
        return -1;
    return (pid_t)sid;
}

int scaf_procfs_parent(pid_t pid, pid_t *ppid, uint64_t *start)
{
    char buf[2048], state;
    const char *f[STAT_NFIELDS];
    long long pp, st;

    if (pid <= 0 || !ppid || !start) {
        errno = EINVAL;
        return -1;
    }
    if (stat_fields(pid, buf, sizeof buf, &state, f) < 0 || (pp = stat_number(f[STAT_PPID])) < 0 ||
        (st = stat_number(f[STAT_STARTTIME])) < 0)
        return -1;
    *ppid = (pid_t)pp;
    *start = (uint64_t)st;
    return 0;
}

int scaf_procfs_task_times(pid_t tid, uint64_t *user, uint64_t *sys, char *state)
{
    char buf[2048], name[48], st;
    const char *f[STAT_NFIELDS];
    long long u, k;

    if (tid <= 0) {
        errno = EINVAL;
        return -1;
    }
    snprintf(name, sizeof name, "task/%d/stat", (int)tid);
    if (stat_fields_of(0, name, buf, sizeof buf, &st, f) < 0 || (u = stat_number(f[STAT_UTIME])) < 0 ||
        (k = stat_number(f[STAT_STIME])) < 0)
        return -1;
    *user = (uint64_t)u;
    *sys = (uint64_t)k;
    if (state)
        *state = st;
    return 0;
}

int scaf_procfs_exiting(pid_t pid)
{
    enum { PF_EXITING = 0x4 }; /* include/linux/sched.h */
    char buf[2048], state;
    const char *f[STAT_NFIELDS];
    long long flags;
    uint64_t pending, fatal;

    if (pid <= 0) {
        errno = EINVAL;
        return -1;
    }
    if (stat_fields(pid, buf, sizeof buf, &state, f) < 0)
        return errno == ENOENT || errno == ESRCH ? 0 : -1;
    if (state == 'Z' || state == 'X')
        return 1;
    /* flags is unsigned in the kernel; its top bits are never set for a process. */
    if ((flags = stat_number(f[STAT_FLAGS])) < 0)
        return -1;
    if (flags & PF_EXITING)
        return 1;
    /* Signalled and not yet run: a pending SIGKILL, or a signal it neither blocks, ignores nor catches
     * whose default is to end it. It exits as soon as it is scheduled. */
    if (scaf_procfs_read_pid(pid, "status", buf, sizeof buf) < 0)
        return errno == ENOENT || errno == ESRCH ? 0 : -1;
    pending = sigmask_field(buf, "\nSigPnd:\t") | sigmask_field(buf, "\nShdPnd:\t");
    if (pending & (1ull << (SIGKILL - 1)))
        return 1;
    fatal = fatal_by_default() & ~sigmask_field(buf, "\nSigBlk:\t") & ~sigmask_field(buf, "\nSigIgn:\t") &
            ~sigmask_field(buf, "\nSigCgt:\t");
    return (pending & fatal) != 0;
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

static uintptr_t hex_field(const char **p)
{
    uintptr_t v = 0;

    for (;; (*p)++) {
        char c = **p;

        if (c >= '0' && c <= '9')
            v = v * 16 + (uintptr_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (uintptr_t)(c - 'a' + 10);
        else
            return v;
    }
}

/* "lo-hi perms ..." into *m; 0, or -1 for a line that is not one. */
static int map_line(const char *s, struct scaf_map *m)
{
    m->lo = hex_field(&s);
    if (*s++ != '-')
        return -1;
    m->hi = hex_field(&s);
    if (*s++ != ' ')
        return -1;
    for (int i = 0; i < 4; i++) {
        if (!s[i])
            return -1;
        m->perms[i] = s[i];
    }
    m->perms[4] = 0;
    return 0;
}

int scaf_procfs_each_map(int (*fn)(const struct scaf_map *map, void *arg), void *arg)
{
    char buf[4096], line[512];
    size_t ll = 0;
    ssize_t got;
    int rc = 0, saved, fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    while (rc == 0 && (got = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < got && rc == 0; i++) {
            struct scaf_map m;

            if (buf[i] != '\n') {
                if (ll + 1 < sizeof line)
                    line[ll++] = buf[i];
                continue;
            }
            line[ll] = 0;
            ll = 0;
            if (map_line(line, &m) == 0)
                rc = fn(&m, arg);
        }
    }
    saved = errno;
    close(fd);
    if (rc == 0 && got < 0) {
        errno = saved;
        return -1;
    }
    return rc;
}
