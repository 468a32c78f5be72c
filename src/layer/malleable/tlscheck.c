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
#include "../estimate/experiment.h"
#include "scaf/clock.h"
#include "scaf/procfs.h"

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
#define EXIT_TRACK 96           /* a runner's own failure: not the region's */
#define MAX_RANGES 4096
#define MAX_PAGES (1u << 22)    /* 16 GiB written: beyond, the check gives up (unchecked) */
#define ALTSTACK (64u * 1024u)
#define MAX_SKIP 64

/* A runner's report: this header, then tls_len bytes, the scrambled block as the region left it. */
struct runner_msg {
    uint32_t magic;
    uint32_t complete; /* 1: the region returned and the pages were digested */
    uint64_t pages;
    uint64_t digest;
    uint64_t tls_len;
};

struct range {
    uintptr_t lo, hi;
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

/* A runner's tracking state, in a mapping of its own that is never write-protected. */
struct track {
    struct range prot[MAX_RANGES]; /* write-protected ranges, sorted */
    uint32_t nprot;
    struct range skip[MAX_SKIP];   /* bytes left out of the digest, sorted */
    uint32_t nskip;
    volatile uint32_t armed;
    uint32_t overflow;
    uint64_t npages;
    uintptr_t *pages;              /* MAX_PAGES entries, MAP_NORESERVE */
};

static struct track *TR;
static uintptr_t page_size;

/*
 * System calls the fault handler makes, inline: a call through the PLT could
 * need the dynamic linker, whose data is write-protected while a runner tracks.
 */
static long raw_syscall3(long nr, long a, long b, long c)
{
    long ret;
#if defined(__x86_64__)
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    ret = x0;
#else
    ret = syscall(nr, a, b, c);
#endif
    return ret;
}

static long raw_mprotect(uintptr_t addr, size_t len, int prot)
{
    return raw_syscall3(SYS_mprotect, (long)addr, (long)len, prot);
}

static _Noreturn void raw_exit(int status)
{
    for (;;)
        raw_syscall3(SYS_exit_group, status, 0, 0);
}

/* The first write to a protected page: remember the page, open it, let the store run again. */
static void on_write(int sig, siginfo_t *si, void *uc)
{
    uintptr_t a = (uintptr_t)si->si_addr, page = a & ~(page_size - 1);
    uint32_t lo = 0, hi = TR->nprot;

    (void)sig;
    (void)uc;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (TR->prot[mid].hi <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= TR->nprot || a < TR->prot[lo].lo)
        raw_exit(128 + SIGSEGV); /* a real fault of the region: it crashed */
    if (TR->armed) {
        if (TR->npages < MAX_PAGES)
            TR->pages[TR->npages++] = page;
        else
            TR->overflow = 1;
    }
    if (raw_mprotect(page, page_size, PROT_READ | PROT_WRITE) != 0)
        raw_exit(EXIT_TRACK);
}

struct tls_find {
    uintptr_t fn;
    uintptr_t lo, hi;       /* the TLS block of the object holding fn, in this thread */
    struct track *t;        /* every module's TLS block goes to t->skip */
    uintptr_t self_lo, self_hi; /* writable segments of the layer itself (not protected) */
    struct range self[8];
    int nself;
    uintptr_t self_addr;
};

static void add_skip(struct track *t, uintptr_t lo, uintptr_t hi)
{
    if (hi > lo && t->nskip < MAX_SKIP)
        t->skip[t->nskip++] = (struct range){lo, hi};
}

static int tls_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct tls_find *f = arg;
    int holds_fn = 0, holds_self = 0;
    uintptr_t tls_size = 0;

    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type == PT_TLS)
            tls_size = ph->p_memsz;
        if (ph->p_type == PT_LOAD && f->fn >= lo && f->fn < lo + ph->p_memsz)
            holds_fn = 1;
        if (ph->p_type == PT_LOAD && f->self_addr >= lo && f->self_addr < lo + ph->p_memsz)
            holds_self = 1;
    }
    if (holds_self)
        for (int i = 0; i < info->dlpi_phnum && f->nself < 8; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W))
                f->self[f->nself++] = (struct range){info->dlpi_addr + ph->p_vaddr,
                                                     info->dlpi_addr + ph->p_vaddr + ph->p_memsz};
        }
    if (info->dlpi_tls_data && tls_size) {
        uintptr_t lo = (uintptr_t)info->dlpi_tls_data;
        add_skip(f->t, lo, lo + tls_size);
        if (holds_fn) {
            f->lo = lo;
            f->hi = lo + tls_size;
        }
    }
    return 0;
}

static int push_prot(struct track *t, uintptr_t lo, uintptr_t hi)
{
    if (lo >= hi)
        return 0;
    if (t->nprot >= MAX_RANGES)
        return -1;
    t->prot[t->nprot++] = (struct range){lo, hi};
    return 0;
}

/* Appends [lo, hi) minus the holes (sorted, disjoint) to t->prot, in order. */
static int add_prot(struct track *t, uintptr_t lo, uintptr_t hi, const struct range *holes, int nholes)
{
    for (int i = 0; i < nholes && lo < hi; i++) {
        if (holes[i].hi <= lo || holes[i].lo >= hi)
            continue;
        if (holes[i].lo > lo && push_prot(t, lo, holes[i].lo) != 0)
            return -1;
        lo = holes[i].hi;
    }
    return push_prot(t, lo, hi);
}

struct collect {
    struct track *t;
    const struct range *holes;
    int nholes;
    uintptr_t sp, keep;
};

/*
 * Every private writable mapping, less the holes (the kernel lists them in order, so t->prot is
 * sorted too). The stack holding `sp` only from `keep` up: below are the layer's and this
 * runner's own frames.
 */
static int collect_one(const struct scaf_map *m, void *arg)
{
    struct collect *c = arg;
    uintptr_t lo = m->lo;

    if (m->perms[0] != 'r' || m->perms[1] != 'w' || m->perms[3] != 'p')
        return 0;
    if (c->sp >= m->lo && c->sp < m->hi) {
        if (c->keep < m->lo || c->keep >= m->hi)
            return 0;
        lo = c->keep & ~(page_size - 1);
    }
    return add_prot(c->t, lo, m->hi, c->holes, c->nholes) != 0;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static int in_skip(const struct track *t, uintptr_t a)
{
    for (uint32_t i = 0; i < t->nskip; i++)
        if (a >= t->skip[i].lo && a < t->skip[i].hi)
            return 1;
    return 0;
}

/* Heapsort: no allocation, nothing written outside the (unprotected) page list. */
static void sift(uintptr_t *v, size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        uintptr_t tmp;
        if (c >= n)
            return;
        if (c + 1 < n && v[c + 1] > v[c])
            c++;
        if (v[root] >= v[c])
            return;
        tmp = v[root];
        v[root] = v[c];
        v[c] = tmp;
        root = c;
    }
}

static void sort_pages(uintptr_t *v, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(v, i, n);
    for (size_t i = n; i-- > 1;) {
        uintptr_t tmp = v[0];
        v[0] = v[i];
        v[i] = tmp;
        sift(v, 0, i);
    }
}

/* The pages written, in address order, each with its words, less the skipped bytes. */
static uint64_t digest(struct track *t)
{
    uint64_t h = 0x243f6a8885a308d3ull;

    sort_pages(t->pages, t->npages);
    for (uint64_t i = 0; i < t->npages; i++) {
        const uint64_t *w = (const uint64_t *)t->pages[i];
        h = mix(h, t->pages[i]);
        for (uintptr_t k = 0; k < page_size / 8; k++)
            if (!in_skip(t, (uintptr_t)(w + k)))
                h = mix(h, w[k]);
    }
    return h;
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
    struct range holes[12];
    int nholes = 0;
    size_t track_len = sizeof(struct track) + ALTSTACK;
    struct sigaction sa;
    stack_t ss;
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0), keep = (uintptr_t)stack_keep;
    void *mem;

    if (scaf_experiment_child_enter(coordinator) != 0)
        _exit(EXIT_TRACK);
    page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (scaf_experiment_child_isolate(bound_ns) != 0)
        _exit(EXIT_TRACK);
    mem = mmap(NULL, track_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        _exit(EXIT_TRACK);
    TR = mem;
    TR->pages = mmap(NULL, (size_t)MAX_PAGES * sizeof(uintptr_t), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (TR->pages == MAP_FAILED)
        _exit(EXIT_TRACK);

    /* The thread-local blocks (and the thread's own descriptor after them) are the runners'
     * difference, not the region's effect; the layer's own data and the stack below the program's
     * frames are the layer's. */
    memset(&f, 0, sizeof f);
    f.fn = (uintptr_t)(void *)fn;
    f.t = TR;
    f.self_addr = (uintptr_t)(void *)&TR;
    dl_iterate_phdr(tls_cb, &f);
    if (f.hi <= f.lo)
        _exit(EXIT_TRACK); /* the block is not allocated in this thread (dynamic TLS): cannot scramble it */
    add_skip(TR, (uintptr_t)pthread_self(), (uintptr_t)pthread_self() + 4096);
    if (keep <= sp)
        _exit(EXIT_TRACK);
    add_skip(TR, keep & ~(page_size - 1), keep);
    /* The thread's descriptor: the kernel writes its rseq area there at every return to user space,
     * and a write it cannot make kills the process. Its pages stay open (the thread-local blocks
     * just below it are out of the digest anyway). */
    holes[nholes++] = (struct range){((uintptr_t)pthread_self() & ~(page_size - 1)) - page_size,
                                     ((uintptr_t)pthread_self() + 2 * page_size) & ~(page_size - 1)};
    /* This runner's own tracking memory and signal stack, and the page list. */
    holes[nholes++] = (struct range){(uintptr_t)mem, (uintptr_t)mem + ((track_len + page_size - 1) & ~(page_size - 1))};
    holes[nholes++] = (struct range){(uintptr_t)TR->pages, (uintptr_t)TR->pages + (size_t)MAX_PAGES * sizeof(uintptr_t)};
    /* Whole pages: the layer's segments share their edge pages with nothing that is the region's. */
    for (int i = 0; i < f.nself; i++)
        holes[nholes++] = (struct range){f.self[i].lo & ~(page_size - 1),
                                         (f.self[i].hi + page_size - 1) & ~(page_size - 1)};
    for (int i = 1; i < nholes; i++)
        for (int k = i; k > 0 && holes[k - 1].lo > holes[k].lo; k--) {
            struct range tmp = holes[k];
            holes[k] = holes[k - 1];
            holes[k - 1] = tmp;
        }
    {
        struct collect c = {TR, holes, nholes, sp, keep};
        if (scaf_procfs_each_map(collect_one, &c) != 0)
            _exit(EXIT_TRACK);
    }

    ss.ss_sp = (char *)mem + sizeof(struct track);
    ss.ss_size = ALTSTACK;
    ss.ss_flags = 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_write;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGSEGV, &sa, NULL) != 0)
        _exit(EXIT_TRACK);
    if (f.hi - f.lo > MAX_TLS_COMPARED)
        _exit(EXIT_TRACK);
    memset((void *)f.lo, POISON[which], f.hi - f.lo);
    if (scaf_experiment_child_filter(out, -1) != 0)
        _exit(EXIT_TRACK);
    TR->armed = 1;
    for (uint32_t i = 0; i < TR->nprot; i++)
        if (raw_mprotect(TR->prot[i].lo, TR->prot[i].hi - TR->prot[i].lo, PROT_READ) != 0)
            raw_exit(EXIT_TRACK);
    run(data);
    TR->armed = 0;
    if (TR->overflow)
        raw_exit(EXIT_TRACK);
    m.complete = 1;
    m.pages = TR->npages;
    m.digest = digest(TR);
    m.tls_len = f.hi - f.lo;
    if (write_all(out, &m, sizeof m) != 0 || write_all(out, (const void *)f.lo, f.hi - f.lo) != 0)
        raw_exit(EXIT_TRACK);
    raw_exit(0);
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

    if (scaf_experiment_child_enter(parent) != 0)
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
         * what the region found decided. A runner's own failure (EXIT_TRACK) decides nothing. */
        int bad = ok[0] ? 1 : 0;
        if (WIFSIGNALED(st[bad]) ? WTERMSIG(st[bad]) != SIGKILL
                                 : WIFEXITED(st[bad]) && WEXITSTATUS(st[bad]) == 128 + SIGSEGV)
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
    bound = scaf_experiment_bound_ns(scaf_settings.exp_max_ns, t0);
    if (pipe2(p, O_CLOEXEC) != 0 || fcntl(p[0], F_SETFL, O_NONBLOCK) != 0) {
        atomic_store(&site->tls_result, SCAF_TLS_UNCHECKED);
        pthread_mutex_unlock(&T.lock);
        errno = saved;
        return 0;
    }
    atomic_store(&site->tls_result, SCAF_TLS_RUNNING);
    pid = fork();
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
