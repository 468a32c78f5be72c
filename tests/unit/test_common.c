/* test_common.c — the shared /proc reader and clocks, against real files and real clocks. */
#include "scaf/clock.h"
#include "scaf/procfs.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static void test_read_file(void)
{
    char path[] = "/tmp/scaf-test-procfs-XXXXXX";
    char big[10000], buf[64];
    int fd = mkstemp(path);
    ssize_t n;

    if (fd < 0) {
        fail("mkstemp", strerror(errno));
        return;
    }
    memset(big, 'x', sizeof big);
    CHECK(write(fd, big, sizeof big) == (ssize_t)sizeof big, "write");
    close(fd);

    /* Truncated to len-1 and terminated. */
    n = scaf_procfs_read(path, buf, sizeof buf);
    CHECK(n == (ssize_t)sizeof buf - 1 && buf[sizeof buf - 1] == 0 && buf[0] == 'x', "truncated read: %zd", n);

    /* Larger than one read: read whole. */
    char *all = malloc(sizeof big + 1);
    n = scaf_procfs_read(path, all, sizeof big + 1);
    CHECK(n == (ssize_t)sizeof big && all[sizeof big] == 0, "whole read: %zd", n);
    free(all);

    CHECK(scaf_procfs_read(path, buf, 0) == -1 && errno == EINVAL, "len 0 is EINVAL");
    unlink(path);
    CHECK(scaf_procfs_read(path, buf, sizeof buf) == -1 && errno == ENOENT, "missing file is ENOENT");
}

static void test_read_pid(void)
{
    char self[64], byPid[64], stat[512];
    ssize_t a = scaf_procfs_read_pid(0, "comm", self, sizeof self);
    ssize_t b = scaf_procfs_read_pid(getpid(), "comm", byPid, sizeof byPid);

    /* The kernel's comm is the executable's name cut to 15 bytes; the newline is removed. */
    CHECK(a > 0 && strchr(self, '\n') == NULL, "self comm: %zd '%s'", a, self);
    CHECK(a == b && strcmp(self, byPid) == 0, "self and pid agree: '%s' '%s'", self, byPid);
    CHECK(strncmp(self, "test_common", 11) == 0, "comm is ours: '%s'", self);
    CHECK(scaf_procfs_read_pid(0, "stat", stat, sizeof stat) > 0 && atoi(stat) == getpid(), "stat starts with pid");

    char name[100];
    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = 0;
    CHECK(scaf_procfs_read_pid(0, name, stat, sizeof stat) == -1 && errno == ENAMETOOLONG, "long name");
}

/* Resident pages grow by what the process touches: 16 MiB written shows as at least 3/4 of its pages more. */
static void test_resident_pages(void)
{
    size_t len = 16u << 20;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), before = scaf_procfs_resident_pages(), after;
    volatile char *p = malloc(len);

    CHECK(p != NULL && before > 0, "resident pages read: %llu", (unsigned long long)before);
    if (!p)
        return;
    for (size_t i = 0; i < len; i += page)
        p[i] = 1;
    after = scaf_procfs_resident_pages();
    CHECK(after >= before + len / page * 3 / 4, "16 MiB touched: %llu pages, then %llu", (unsigned long long)before,
          (unsigned long long)after);
    free((void *)p);
}

static void on_term(int sig)
{
    (void)sig;
}

static void test_exiting(void)
{
    int status;
    pid_t child = fork();

    if (child == 0) {
        pause();
        _exit(0);
    }
    CHECK(child > 0, "fork");
    CHECK(scaf_procfs_exiting(getpid()) == 0, "this process runs on");
    CHECK(scaf_procfs_exiting(child) == 0, "a sleeping child runs on");
    kill(child, SIGKILL);
    /* Killed and not yet reaped: a zombie, or still tearing down; either way on its way out. */
    for (int i = 0; i < 1000 && scaf_procfs_exiting(child) == 0; i++)
        usleep(1000);
    CHECK(scaf_procfs_exiting(child) == 1, "a killed, unreaped child is exiting");
    CHECK(waitpid(child, &status, 0) == child, "reaped");
    CHECK(scaf_procfs_exiting(child) == 0, "a reaped child is gone, not exiting");
    CHECK(scaf_procfs_exiting(0) == -1 && errno == EINVAL, "pid 0 is EINVAL");

    /* Signalled and not yet run (stopped, so that it cannot run): a fatal signal pending is on its way
     * out; one it catches is not. */
    for (int caught = 0; caught < 2; caught++) {
        int st;
        pid_t c = fork();

        if (c == 0) {
            if (caught)
                signal(SIGTERM, on_term);
            raise(SIGSTOP);
            pause();
            _exit(0);
        }
        CHECK(c > 0 && waitpid(c, &st, WUNTRACED) == c && WIFSTOPPED(st), "child stopped");
        CHECK(scaf_procfs_exiting(c) == 0, "a stopped child runs on");
        kill(c, SIGTERM);
        CHECK(scaf_procfs_exiting(c) == !caught, "SIGTERM pending, %s: %d", caught ? "caught" : "default",
              scaf_procfs_exiting(c));
        kill(c, SIGKILL);
        waitpid(c, &st, 0);
    }

    /* Sessions, as getsid(2) tells them: a child's, and one that starts its own. A comm holding ") " and
     * spaces does not shift the fields. */
    {
        int p[2], st;
        pid_t c;
        char go;

        CHECK(scaf_procfs_session(getpid()) == getsid(0), "own session %d", (int)scaf_procfs_session(getpid()));
        CHECK(pipe(p) == 0, "pipe");
        c = fork();
        if (c == 0) {
            prctl(PR_SET_NAME, "a) b 1 2 3", 0, 0, 0);
            setsid();
            close(p[0]);
            if (write(p[1], "x", 1) != 1)
                _exit(1);
            pause();
            _exit(0);
        }
        close(p[1]);
        CHECK(c > 0 && read(p[0], &go, 1) == 1, "child in its own session");
        close(p[0]);
        CHECK(scaf_procfs_session(c) == c && getsid(c) == c, "a session leader's session: %d",
              (int)scaf_procfs_session(c));
        kill(c, SIGKILL);
        waitpid(c, &st, 0);
        CHECK(scaf_procfs_session(c) == -1 && errno == ENOENT, "a reaped child has no session");
        CHECK(scaf_procfs_session(0) == -1 && errno == EINVAL, "pid 0 is EINVAL");
    }
}

static void test_read_grow(void)
{
    char path[] = "/tmp/scaf-test-procfs-XXXXXX";
    char big[20000];
    char *buf = NULL;
    size_t cap = 0;
    int fd = mkstemp(path);
    ssize_t n;

    if (fd < 0) {
        fail("mkstemp", strerror(errno));
        return;
    }
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('a' + i % 26);
    CHECK(write(fd, big, sizeof big) == (ssize_t)sizeof big, "write");
    close(fd);

    /* Larger than the first buffer: grown until the whole file fits, contents intact. */
    n = scaf_procfs_read_grow(path, &buf, &cap);
    CHECK(n == (ssize_t)sizeof big && cap > sizeof big && buf[n] == 0 && memcmp(buf, big, sizeof big) == 0,
          "whole file: %zd bytes, cap %zu", n, cap);
    /* The buffer is kept: a second read of the same file does not grow it. */
    size_t before = cap;
    n = scaf_procfs_read_grow(path, &buf, &cap);
    CHECK(n == (ssize_t)sizeof big && cap == before, "reuse: %zd bytes, cap %zu", n, cap);

    /* A real /proc file, exactly as the lookout reads it. */
    n = scaf_procfs_read_grow("/proc/stat", &buf, &cap);
    CHECK(n > 0 && strncmp(buf, "cpu", 3) == 0 && (size_t)n == strlen(buf), "/proc/stat: %zd", n);

    unlink(path);
    CHECK(scaf_procfs_read_grow(path, &buf, &cap) == -1 && errno == ENOENT, "missing file is ENOENT");
    free(buf);

    /* Starting from nothing with an empty file. */
    buf = NULL;
    cap = 0;
    CHECK(scaf_procfs_read_grow("/dev/null", &buf, &cap) == 0 && buf && buf[0] == 0, "empty file");
    free(buf);
}

struct find_map {
    uintptr_t addr;
    struct scaf_map found;
    int hits, lines;
    uintptr_t last_lo;
    int ordered;
};

static int find_map(const struct scaf_map *m, void *arg)
{
    struct find_map *f = arg;

    f->lines++;
    f->ordered &= m->lo >= f->last_lo && m->hi > m->lo;
    f->last_lo = m->lo;
    if (f->addr >= m->lo && f->addr < m->hi) {
        f->found = *m;
        f->hits++;
    }
    return 0;
}

static int stop_at_two(const struct scaf_map *m, void *arg)
{
    (void)m;
    return ++*(int *)arg == 2 ? 7 : 0;
}

/* This process's own mappings: its stack and a heap block are private and writable. */
static void test_each_map(void)
{
    int local = 0, calls = 0;
    char *heap = malloc(64);
    struct find_map f = {.addr = (uintptr_t)&local, .ordered = 1};

    CHECK(scaf_procfs_each_map(find_map, &f) == 0, "walk the maps");
    CHECK(f.hits == 1 && strcmp(f.found.perms, "rw-p") == 0, "the stack: %d hits, perms %s", f.hits, f.found.perms);
    CHECK(f.lines > 5 && f.ordered, "%d lines, in address order: %d", f.lines, f.ordered);
    f = (struct find_map){.addr = (uintptr_t)heap, .ordered = 1};
    CHECK(scaf_procfs_each_map(find_map, &f) == 0 && f.hits == 1 && f.found.perms[1] == 'w', "a heap block");
    f = (struct find_map){.addr = (uintptr_t)(void *)test_each_map, .ordered = 1};
    CHECK(scaf_procfs_each_map(find_map, &f) == 0 && f.hits == 1 && f.found.perms[2] == 'x' &&
              f.found.perms[1] == '-',
          "code: %s", f.found.perms);
    CHECK(scaf_procfs_each_map(stop_at_two, &calls) == 7 && calls == 2, "a nonzero return stops the walk");
    free(heap);
}

static void test_clocks(void)
{
    uint64_t a = scaf_clock_ns(CLOCK_MONOTONIC), b = scaf_clock_ns(CLOCK_MONOTONIC);
    double w = scaf_clock_s(CLOCK_REALTIME);

    CHECK(a > 0 && b >= a, "monotonic: %llu %llu", (unsigned long long)a, (unsigned long long)b);
    CHECK(w > 1.6e9, "wall clock in seconds: %f", w); /* after 2020 */
    CHECK(scaf_clock_ns((clockid_t)-999) == 0 && scaf_clock_s((clockid_t)-999) == 0.0, "bad clock gives 0");
}

int main(void)
{
    test_read_file();
    test_read_pid();
    test_resident_pages();
    test_read_grow();
    test_exiting();
    test_each_map();
    test_clocks();
    return check_exit("test_common");
}
