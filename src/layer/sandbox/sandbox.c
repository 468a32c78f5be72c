/* sandbox.c — a freshly forked child made a sandboxed one: dies with its parent, signals reset, shared memory made private or read-only, a CPU-time bound, seccomp. */
#include "sandbox.h"

#include "scaf/clock.h"
#include "scaf/procfs.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

static int in_child;
/* Set on the forking thread around fork(): the only thread a child has, so the child reads 1. */
static _Thread_local int forking;
/*
 * How many threads are inside scaf_sandbox_fork now. Every region asks
 * scaf_sandbox_in_child, twice, and a thread-local of a shared library costs a
 * call to __tls_get_addr each time (about 40 instructions with the call); this
 * plain load spares it except while a fork is under way. The forking thread
 * raises it before it sets `forking`, so its child (a copy of that thread
 * alone) reads both set; another thread that reads it raised reads its own
 * `forking`, which is 0, and is answered as before.
 */
static _Atomic int forks_under_way;
static void (*child_prepare)(void);

void scaf_sandbox_set_child_prepare(void (*prepare)(void))
{
    child_prepare = prepare;
}

int scaf_sandbox_in_child(void)
{
    return in_child || (atomic_load_explicit(&forks_under_way, memory_order_relaxed) && forking);
}

pid_t scaf_sandbox_fork(void)
{
    pid_t pid;

    atomic_fetch_add_explicit(&forks_under_way, 1, memory_order_relaxed);
    forking = 1;
    pid = fork();
    if (pid == 0)
        in_child = 1;
    forking = 0;
    atomic_fetch_sub_explicit(&forks_under_way, 1, memory_order_relaxed);
    return pid;
}

/*
 * Writable MAP_SHARED mappings are the one way to change the world that
 * seccomp cannot see: a plain store. The daemon's page is one (and the region
 * wrappers may write to it during nested regions), the program may have
 * others. Small ones become private copies, so stores still work but stay in
 * the child; large ones become read-only, so a store ends the experiment
 * (SIGSEGV) instead of reaching the file or the other process.
 */
#define PRIVATIZE_MAX (1u << 20)
#define MAX_SHARED 128

/* One writable shared mapping of /proc/self/maps, and whether it may be read. */
struct shared_map {
    uintptr_t lo, hi;
    int readable;
};

struct shared_ranges {
    struct shared_map r[MAX_SHARED];
    int n;
};

/* Keeps the shared writable mappings (a full list ends the walk: the child must not run then). */
static int keep_shared(const struct scaf_map *m, void *arg)
{
    struct shared_ranges *sr = arg;

    if (m->perms[1] != 'w' || m->perms[3] != 's')
        return 0;
    if (sr->n >= MAX_SHARED)
        return 1;
    sr->r[sr->n++] = (struct shared_map){m->lo, m->hi, m->perms[0] == 'r'};
    return 0;
}

/* 0, or -1 when a shared writable mapping could not be neutralised (the child must not run then). */
static int isolate_shared_mappings(void)
{
    struct shared_ranges sr = {.n = 0};
    struct shared_map *rs = sr.r;
    int n;

    /* Collect first, change later: /proc/self/maps is generated while we read it. */
    if (scaf_procfs_each_map(keep_shared, &sr) != 0)
        return -1;
    n = sr.n;
    for (int i = 0; i < n; i++) {
        size_t len = rs[i].hi - rs[i].lo;
        void *addr = (void *)rs[i].lo;
        void *copy;

        if (rs[i].readable && len <= PRIVATIZE_MAX) {
            copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (copy == MAP_FAILED)
                return -1;
            memcpy(copy, addr, len);
            /* mremap over the shared mapping: the address now holds a private copy, atomically. */
            if (mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, addr) == MAP_FAILED)
                return -1;
        } else if (mprotect(addr, len, PROT_READ) != 0 && mprotect(addr, len, PROT_NONE) != 0) {
            return -1;
        }
    }
    return 0;
}

/* --- the seccomp filter, built with symbolic jump targets --- */

#define ARG_LO(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i))) /* little-endian low word */
#define T_NEXT 0
#define T_ALLOW 1000
#define T_KILL 1001

struct prog {
    struct sock_filter f[96];
    int jt[96], jf[96]; /* T_ALLOW, T_KILL, or a relative skip */
    int n;
    int overflow;
};

static void emit(struct prog *p, uint16_t code, uint32_t k, int jt, int jf)
{
    if (p->n >= (int)(sizeof p->f / sizeof p->f[0])) {
        p->overflow = 1; /* cannot happen with the fixed list below; resolve() then fails closed */
        return;
    }
    p->f[p->n] = (struct sock_filter)BPF_STMT(code, k);
    p->jt[p->n] = jt;
    p->jf[p->n] = jf;
    p->n++;
}

static void ld(struct prog *p, uint32_t off)
{
    emit(p, BPF_LD | BPF_W | BPF_ABS, off, 0, 0);
}

static void jeq(struct prog *p, uint32_t k, int jt, int jf)
{
    emit(p, BPF_JMP | BPF_JEQ | BPF_K, k, jt, jf);
}

/* Appends the two return statements and turns symbolic targets into offsets. */
static int resolve(struct prog *p)
{
    int allow, kill;

    if (p->overflow || p->n + 2 > (int)(sizeof p->f / sizeof p->f[0]))
        return -1;
    allow = p->n;
    emit(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
    kill = p->n;
    emit(p, BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS, 0, 0);
    for (int i = 0; i < allow; i++) {
        if (BPF_CLASS(p->f[i].code) != BPF_JMP)
            continue;
        int t[2] = {p->jt[i], p->jf[i]};
        for (int k = 0; k < 2; k++) {
            int off = t[k] == T_ALLOW ? allow - i - 1 : t[k] == T_KILL ? kill - i - 1 : t[k];
            if (off < 0 || off > 255)
                return -1;
            if (k == 0)
                p->f[i].jt = (uint8_t)off;
            else
                p->f[i].jf = (uint8_t)off;
        }
    }
    return 0;
}

/* Syscalls a computation needs and that change nothing outside the child. */
static const int allowed[] = {
    SYS_brk, SYS_munmap, SYS_mremap, SYS_mprotect, SYS_futex, SYS_clock_gettime, SYS_gettimeofday,
    SYS_clock_getres, SYS_clock_nanosleep, SYS_nanosleep, SYS_sched_yield, SYS_getpid, SYS_gettid,
    SYS_getppid, SYS_rt_sigprocmask, SYS_rt_sigreturn, SYS_exit, SYS_exit_group, SYS_sched_getaffinity,
    SYS_getcpu, SYS_getrusage, SYS_restart_syscall,
#ifdef SYS_time
    SYS_time,
#endif
};

/* madvise advice that only concerns the child's own memory (MADV_REMOVE punches holes in files). */
static const int advice_ok[] = {MADV_NORMAL, MADV_RANDOM,     MADV_SEQUENTIAL, MADV_WILLNEED, MADV_DONTNEED,
                                MADV_FREE,   MADV_HUGEPAGE,   MADV_NOHUGEPAGE, MADV_DONTDUMP, MADV_DODUMP};

static int install_filter(int write_fd, int read_fd)
{
#ifdef SANDBOX_AUDIT_ARCH
    struct prog p;
    struct sock_fprog fp;
    int na = (int)(sizeof advice_ok / sizeof advice_ok[0]);

    memset(&p, 0, sizeof p);
    ld(&p, offsetof(struct seccomp_data, arch));
    jeq(&p, SANDBOX_AUDIT_ARCH, T_NEXT, T_KILL);
    ld(&p, offsetof(struct seccomp_data, nr));
#ifdef __x86_64__
    emit(&p, BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /* __X32_SYSCALL_BIT */, T_KILL, T_NEXT);
#endif
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        jeq(&p, (uint32_t)allowed[i], T_ALLOW, T_NEXT);
    /* write: only the result pipe. */
    jeq(&p, SYS_write, T_NEXT, 2);
    ld(&p, ARG_LO(0));
    jeq(&p, (uint32_t)write_fd, T_ALLOW, T_KILL);
    /* read: only the counter group, when counting. */
    if (read_fd >= 0) {
        jeq(&p, SYS_read, T_NEXT, 2);
        ld(&p, ARG_LO(0));
        jeq(&p, (uint32_t)read_fd, T_ALLOW, T_KILL);
    }
    /* mmap: never MAP_SHARED (a shared file mapping is a write to the file). */
    jeq(&p, SYS_mmap, T_NEXT, 2);
    ld(&p, ARG_LO(3));
    emit(&p, BPF_JMP | BPF_JSET | BPF_K, MAP_SHARED, T_KILL, T_ALLOW);
    jeq(&p, SYS_madvise, T_NEXT, T_KILL);
    ld(&p, ARG_LO(2));
    for (int i = 0; i < na; i++)
        jeq(&p, (uint32_t)advice_ok[i], T_ALLOW, T_NEXT);
    emit(&p, BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS, 0, 0);
    if (resolve(&p) != 0) {
        errno = E2BIG;
        return -1;
    }
    fp.len = (unsigned short)p.n;
    fp.filter = p.f;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp, 0, 0);
#else
    (void)write_fd;
    (void)read_fd;
    errno = ENOSYS;
    return -1;
#endif
}

int scaf_sandbox_enter(pid_t parent)
{
    static const int sync_sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS, SIGABRT, SIGTRAP, SIGPROF};
    struct sigaction dfl;
    sigset_t mask;
    struct rlimit no_core = {0, 0};

    in_child = 1;
    if (child_prepare)
        child_prepare();
    /* Die with the parent; if it is already gone, we were orphaned before this line: stop now. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        return -1;
    /* The program's handlers must not run here; its async signals are the parent's business. */
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigfillset(&mask);
    for (size_t i = 0; i < sizeof sync_sigs / sizeof sync_sigs[0]; i++) {
        sigaction(sync_sigs[i], &dfl, NULL);
        sigdelset(&mask, sync_sigs[i]);
    }
    sigprocmask(SIG_SETMASK, &mask, NULL);
    /* A killed child must not leave a core file (SIGSYS and SIGSEGV dump by default). */
    setrlimit(RLIMIT_CORE, &no_core);
    prctl(PR_SET_DUMPABLE, 0);
    return 0;
}

int scaf_sandbox_isolate(uint64_t bound_ns)
{
    struct itimerval it;

    if (isolate_shared_mappings() != 0)
        return -1;
    memset(&it, 0, sizeof it);
    it.it_value.tv_sec = (time_t)(bound_ns / 1000000000ull);
    it.it_value.tv_usec = (suseconds_t)(bound_ns % 1000000000ull / 1000);
    if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
        it.it_value.tv_usec = 1000;
    /* CPU time, not wall time: a child starved by a loaded machine is not over its bound. A child
     * blocked without using CPU is the parent's to kill. */
    return setitimer(ITIMER_PROF, &it, NULL);
}

int scaf_sandbox_filter(int write_fd, int read_fd)
{
    return install_filter(write_fd, read_fd);
}

uint64_t scaf_sandbox_cow_allowance_ns(uint64_t fork_ns)
{
    uint64_t by_fork = SCAF_SANDBOX_COW_ALLOWANCE * fork_ns;
    uint64_t by_pages = SCAF_SANDBOX_COW_PAGE_NS * scaf_procfs_resident_pages();

    return by_fork > by_pages ? by_fork : by_pages;
}

uint64_t scaf_sandbox_bound_ns(uint64_t bound_ns, uint64_t fork_t0)
{
    return bound_ns + scaf_sandbox_cow_allowance_ns(scaf_clock_ns(CLOCK_MONOTONIC) - fork_t0);
}
