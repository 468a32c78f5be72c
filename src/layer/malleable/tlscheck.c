/* tlscheck.c — whether a region's effects depend on the thread-local data it finds: two sandboxed serial runs, one with that data scrambled, compared page by page. */
#include "tlscheck.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../core/say.h"
#include "../core/settings.h"
#include "../core/site.h"
#include "../core/verdict.h"
#include "../sandbox/sandbox.h"
#include "../sandbox/track.h"
#include "scaf/clock.h"

/*
 * Why this tells per-region scratch from state carried across regions
 * (docs/layer.md, "Thread-local data"): both children start from one frozen
 * copy of the process and run the same serial code, so they allocate, write
 * and compute the same, except through what the region reads of the
 * thread-local block of its object before writing it. Each child first fills
 * that block with its own pattern (the two differ in every bit). A region
 * that writes its thread-local scratch before reading it (NPB's threadprivate
 * work arrays) leaves the same pages behind in both, and the same values in
 * every byte of the block it wrote (the bytes it did not write still hold
 * each child's pattern). One that reads what an earlier region left there
 * (NPB IS's bucket pointers, a running sum) computes something else from the
 * two patterns, or crashes on one. Anything else that differs (a clock read,
 * the pid) also reads as "carried": the check errs towards a fixed team,
 * never towards a wrong result.
 */

#define MSG_MAGIC 0x4b434c54u   /* "TLCK" */
/* The two scrambles: complementary in every bit, so no byte reads the same under both. */
static const unsigned char POISON[2] = {0xa5, 0x5a};
#define MAX_TLS_COMPARED (64u << 20) /* a larger thread-local block is not compared: unchecked */

/* A runner's report: this header, then tls_len bytes, the scrambled block as the region left it. */
struct runner_msg {
    uint32_t magic;
    uint32_t complete; /* 1: the region returned and the pages were digested */
    uint64_t pages;
    uint64_t digest;
    uint64_t tls_len;
};

/* The parent's one running check. */
static struct {
    pthread_mutex_t lock;
    pid_t pid;
    int fd;
    struct scaf_site *site;
    uint64_t kill_ns;
} T = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/* ------------------------------------------------------------ a runner child */

struct tls_find {
    uintptr_t fn;
    uintptr_t lo, hi; /* the TLS block of the object holding fn, in this thread */
};

/* Finds fn's object's TLS block; every module's TLS block is left out of the digest. */
static int tls_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct tls_find *f = arg;
    int holds_fn = 0;
    uintptr_t tls_size = 0;

    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type == PT_TLS)
            tls_size = ph->p_memsz;
        if (ph->p_type == PT_LOAD && f->fn >= lo && f->fn < lo + ph->p_memsz)
            holds_fn = 1;
    }
    if (info->dlpi_tls_data && tls_size) {
        uintptr_t lo = (uintptr_t)info->dlpi_tls_data;
        scaf_track_skip(lo, lo + tls_size);
        if (holds_fn) {
            f->lo = lo;
            f->hi = lo + tls_size;
        }
    }
    return 0;
}

/* Writes all of buf to the result pipe (the only write the sandbox allows). */
static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static _Noreturn void runner(int which, int out, void (*fn)(void *), void (*run)(void *), void *data,
                             const void *stack_keep, pid_t coordinator, uint64_t bound_ns)
{
    struct runner_msg m = {.magic = MSG_MAGIC};
    struct tls_find f;
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);

    if (scaf_sandbox_enter(coordinator) != 0)
        _exit(SCAF_TRACK_EXIT_OWN);
    if (scaf_sandbox_isolate(bound_ns) != 0 || scaf_track_open() != 0)
        _exit(SCAF_TRACK_EXIT_OWN);

    /* The thread-local blocks (and the thread's own descriptor after them) are the runners'
     * difference, not the region's effect; the layer's own data and the stack below the program's
     * frames are the layer's (scaf_track_plan). */
    memset(&f, 0, sizeof f);
    f.fn = (uintptr_t)(void *)fn;
    dl_iterate_phdr(tls_cb, &f);
    if (f.hi <= f.lo)
        _exit(SCAF_TRACK_EXIT_OWN); /* the block is not allocated in this thread (dynamic TLS): cannot scramble it */
    scaf_track_skip((uintptr_t)pthread_self(), (uintptr_t)pthread_self() + 4096);
    if (scaf_track_plan(sp, (uintptr_t)stack_keep) != 0)
        _exit(SCAF_TRACK_EXIT_OWN);
    if (f.hi - f.lo > MAX_TLS_COMPARED)
        _exit(SCAF_TRACK_EXIT_OWN);
    memset((void *)f.lo, POISON[which], f.hi - f.lo);
    if (scaf_sandbox_filter(out, -1) != 0)
        _exit(SCAF_TRACK_EXIT_OWN);
    scaf_track_arm();
    run(data);
    if (scaf_track_finish(&m.pages, &m.digest) != 0)
        scaf_track_exit(SCAF_TRACK_EXIT_OWN);
    m.complete = 1;
    m.tls_len = f.hi - f.lo;
    if (write_all(out, &m, sizeof m) != 0 || write_all(out, (const void *)f.lo, f.hi - f.lo) != 0)
        scaf_track_exit(SCAF_TRACK_EXIT_OWN);
    scaf_track_exit(0);
}

/* ------------------------------------------------------- the coordinator child */

static pid_t fork_quiet(void)
{
    /* The coordinator is one frozen thread running only this file: no atfork handler of the
     * program's may run here (it could take a lock another thread held at the fork). */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return _Fork();
#else
    return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
}

/* Reads exactly len bytes before the deadline; 0, or -1 (EOF, error, late). */
static int read_all(int fd, void *buf, size_t len, uint64_t deadline)
{
    char *p = buf;

    while (len > 0) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        uint64_t now = scaf_clock_ns(CLOCK_MONOTONIC);
        ssize_t n;

        if (now >= deadline)
            return -1;
        if (poll(&pf, 1, (int)((deadline - now) / 1000000u) + 1) < 0 && errno != EINTR)
            return -1;
        if (!(pf.revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        n = read(fd, p, len);
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Whether every byte of the block is one the region wrote the same in both, or one it left alone. */
static int blocks_agree(const unsigned char *a, const unsigned char *b, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++)
        if (a[i] != b[i] && !(a[i] == POISON[0] && b[i] == POISON[1]))
            return 0;
    return 1;
}

static _Noreturn void coordinator(int out, void (*fn)(void *), void (*run)(void *), void *data,
                                  const void *stack_keep, pid_t parent, uint64_t bound_ns, uint64_t wall_ns)
{
    struct runner_msg got[2];
    unsigned char *block[2] = {NULL, NULL};
    int ok[2] = {0, 0}, st[2] = {0, 0}, fds[2] = {-1, -1};
    pid_t pids[2] = {0, 0};
    uint32_t result = SCAF_TLS_UNCHECKED;
    uint64_t deadline;

    if (scaf_sandbox_enter(parent) != 0)
        _exit(0);
    for (int i = 0; i < 2; i++) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0)
            goto report;
        pids[i] = fork_quiet();
        if (pids[i] < 0) {
            close(p[0]);
            close(p[1]);
            goto report;
        }
        if (pids[i] == 0) {
            close(p[0]);
            close(out);
            runner(i, p[1], fn, run, data, stack_keep, getppid(), bound_ns);
        }
        close(p[1]);
        fds[i] = p[0];
    }
    deadline = scaf_clock_ns(CLOCK_MONOTONIC) + wall_ns;
    for (int i = 0; i < 2; i++) {
        if (read_all(fds[i], &got[i], sizeof got[i], deadline) != 0 || got[i].magic != MSG_MAGIC ||
            !got[i].complete || got[i].tls_len > MAX_TLS_COMPARED)
            continue;
        block[i] = mmap(NULL, got[i].tls_len + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (block[i] == MAP_FAILED) {
            block[i] = NULL;
            continue;
        }
        ok[i] = read_all(fds[i], block[i], got[i].tls_len, deadline) == 0;
    }
    for (int i = 0; i < 2; i++) {
        if (!ok[i] && pids[i] > 0)
            kill(pids[i], SIGKILL);
        if (pids[i] > 0)
            waitpid(pids[i], &st[i], 0);
        if (fds[i] >= 0)
            close(fds[i]);
    }
    for (int i = 0; i < 2; i++) {
        if (ok[i])
            scaf_layer_log("thread-local data check: run %d: %llu pages written, digest %016llx", i,
                           (unsigned long long)got[i].pages, (unsigned long long)got[i].digest);
        else if (WIFSIGNALED(st[i]))
            scaf_layer_log("thread-local data check: run %d: signal %d", i, WTERMSIG(st[i]));
        else
            scaf_layer_log("thread-local data check: run %d: exit status %d", i, WEXITSTATUS(st[i]));
    }
    if (ok[0] && ok[1]) {
        result = got[0].digest == got[1].digest && got[0].pages == got[1].pages && got[0].tls_len == got[1].tls_len &&
                         blocks_agree(block[0], block[1], got[0].tls_len)
                     ? SCAF_TLS_SCRATCH
                     : SCAF_TLS_CARRIED;
    } else if (ok[0] != ok[1]) {
        /* One pattern ran to the end and the other crashed, or ran past the CPU time the first needed:
         * what the region found decided. A runner's own failure (SCAF_TRACK_EXIT_OWN) decides nothing. */
        int bad = ok[0] ? 1 : 0;
        if (WIFSIGNALED(st[bad]) ? WTERMSIG(st[bad]) != SIGKILL
                                 : WIFEXITED(st[bad]) && WEXITSTATUS(st[bad]) == SCAF_TRACK_EXIT_FAULT)
            result = SCAF_TLS_CARRIED;
    }
report:
    (void)!write(out, &result, sizeof result);
    _exit(0);
}

/* -------------------------------------------------------------------- parent */

static void finish_locked(uint32_t result)
{
    if (T.site)
        atomic_store(&T.site->tls_result, result);
    if (T.fd >= 0)
        close(T.fd);
    T.fd = -1;
    T.site = NULL;
    T.pid = 0;
}

int scaf_tlscheck_start(struct scaf_site *site, void (*fn)(void *), void (*run)(void *), void *data,
                        const void *stack_keep)
{
    uint64_t t0, bound;
    int p[2];
    pid_t pid;
    int saved = errno;

    if (!run || !scaf_settings.experiments || !scaf_settings.tls_check) {
        atomic_store(&site->tls_result, SCAF_TLS_UNCHECKED);
        return 0;
    }
    if (pthread_mutex_trylock(&T.lock) != 0)
        return 1;
    if (T.pid) {
        pthread_mutex_unlock(&T.lock);
        return 1;
    }
    t0 = scaf_clock_ns(CLOCK_MONOTONIC);
    bound = scaf_sandbox_bound_ns(scaf_settings.exp_max_ns, t0);
    if (pipe2(p, O_CLOEXEC) != 0 || fcntl(p[0], F_SETFL, O_NONBLOCK) != 0) {
        atomic_store(&site->tls_result, SCAF_TLS_UNCHECKED);
        pthread_mutex_unlock(&T.lock);
        errno = saved;
        return 0;
    }
    atomic_store(&site->tls_result, SCAF_TLS_RUNNING);
    pid = scaf_sandbox_fork();
    if (pid == 0) {
        close(p[0]);
        coordinator(p[1], fn, run, data, stack_keep, getppid(), bound, 4 * bound + 1000000000ull);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        atomic_store(&site->tls_result, SCAF_TLS_UNCHECKED);
    } else {
        T.pid = pid;
        T.fd = p[0];
        T.site = site;
        /* The coordinator's own wall-clock cap comes first; this one is for a coordinator that hangs. */
        T.kill_ns = t0 + 2 * (4 * bound + 1000000000ull);
        scaf_layer_log("checking a region's thread-local data (pid %d)", (int)pid);
    }
    pthread_mutex_unlock(&T.lock);
    errno = saved;
    return 0;
}

void scaf_tlscheck_poll(void)
{
    uint32_t result;
    int status, saved;
    pid_t r;

    if (!T.pid || pthread_mutex_trylock(&T.lock) != 0)
        return;
    saved = errno;
    if (T.pid && read(T.fd, &result, sizeof result) == (ssize_t)sizeof result) {
        waitpid(T.pid, &status, 0); /* it wrote its last word and exits now */
        if (result != SCAF_TLS_SCRATCH && result != SCAF_TLS_CARRIED)
            result = SCAF_TLS_UNCHECKED;
        scaf_layer_log("thread-local data check: %s", result == SCAF_TLS_SCRATCH   ? "per-region scratch"
                                                      : result == SCAF_TLS_CARRIED ? "carried across regions"
                                                                                   : "could not decide");
        finish_locked(result);
    } else if (T.pid && (r = waitpid(T.pid, &status, WNOHANG)) != 0) {
        /* Gone without a word (or reaped by the program: ECHILD). */
        finish_locked(SCAF_TLS_UNCHECKED);
    } else if (T.pid && scaf_clock_ns(CLOCK_MONOTONIC) >= T.kill_ns) {
        kill(T.pid, SIGKILL);
        waitpid(T.pid, &status, 0);
        finish_locked(SCAF_TLS_UNCHECKED);
    }
    errno = saved;
    pthread_mutex_unlock(&T.lock);
}
