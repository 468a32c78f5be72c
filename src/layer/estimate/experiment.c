/* experiment.c — serial experiments: fork, sandbox (seccomp, PDEATHSIG, time bound), report through a pipe, reap the exact pid. */
#include "experiment.h"

#include "perfctr.h"
#include "scaf/clock.h"
#include "scaf/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define EXP_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define EXP_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#define EXP_MAGIC 0x50584553u /* "SEXP" */
#define EXIT_NOSANDBOX 97     /* child: the kernel refused the filter; it ran nothing */

/* One fixed-size message (< PIPE_BUF, so written atomically). */
struct exp_msg {
    uint32_t magic;
    uint32_t complete;
    uint64_t cpu_ns;
    uint64_t wall_ns;
    uint64_t ins;
    uint64_t cyc;
    uint64_t utime_us; /* getrusage(RUSAGE_THREAD) split of cpu_ns */
    uint64_t stime_us;
};

static int in_child;
static void (*child_prepare)(void);

void scaf_experiment_set_child_prepare(void (*prepare)(void))
{
    child_prepare = prepare;
}

/* Children that reported or were killed but are not reaped yet. Only ever our exact pids. */
#define REAP_SLOTS 16
static pid_t reap_pending[REAP_SLOTS];

int scaf_experiment_in_child(void)
{
    return in_child;
}

const char *scaf_experiment_outcome_name(enum scaf_exp_outcome o)
{
    switch (o) {
    case SCAF_EXP_RUNNING: return "running";
    case SCAF_EXP_DONE: return "done";
    case SCAF_EXP_BLOCKED: return "blocked call";
    case SCAF_EXP_BOUND: return "time bound hit";
    case SCAF_EXP_FAILED: return "failed";
    case SCAF_EXP_NOSANDBOX: return "no seccomp";
    }
    return "?";
}

/* ------------------------------------------------------------------ child */

/* The child is single-threaded, so plain statics are its private state (the parent never reads them). */
static int child_fd = -1;
static uint64_t child_wall0, child_cpu0, child_ru0[2];
static struct scaf_perfctr child_pc = {-1, -1};

static _Noreturn void child_report(int complete)
{
    struct exp_msg m;

    memset(&m, 0, sizeof m);
    m.magic = EXP_MAGIC;
    m.complete = (uint32_t)complete;
    m.cpu_ns = scaf_clock_ns(CLOCK_THREAD_CPUTIME_ID) - child_cpu0;
    m.wall_ns = scaf_clock_ns(CLOCK_MONOTONIC) - child_wall0;
    {
        struct rusage ru;

        if (getrusage(RUSAGE_THREAD, &ru) == 0) {
            m.utime_us = (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec - child_ru0[0];
            m.stime_us = (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec - child_ru0[1];
        }
    }
    if (child_pc.leader >= 0 && scaf_perfctr_read(&child_pc, &m.ins, &m.cyc) != 0)
        m.ins = m.cyc = 0;
    /* Raw write and _exit: no stdio buffer inherited from the program is ever flushed here. */
    (void)!write(child_fd, &m, sizeof m);
    _exit(0);
}

/* Counters mode: the parent's region ended, the IPC so far is all we need. */
static void child_stop(int sig)
{
    (void)sig;
    child_report(0);
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

struct range {
    uintptr_t lo, hi;
    int readable;
};

struct shared_ranges {
    struct range r[MAX_SHARED];
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
    sr->r[sr->n++] = (struct range){m->lo, m->hi, m->perms[0] == 'r'};
    return 0;
}

/* 0, or -1 when a shared writable mapping could not be neutralised (the child must not run then). */
static int isolate_shared_mappings(void)
{
    struct shared_ranges sr = {.n = 0};
    struct range *rs = sr.r;
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
#ifdef EXP_AUDIT_ARCH
    struct prog p;
    struct sock_fprog fp;
    int na = (int)(sizeof advice_ok / sizeof advice_ok[0]);

    memset(&p, 0, sizeof p);
    ld(&p, offsetof(struct seccomp_data, arch));
    jeq(&p, EXP_AUDIT_ARCH, T_NEXT, T_KILL);
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

/*
 * Copy-on-write: the child pays a page copy for every page the region writes,
 * and so does the parent. That cost grows with the heap, like the fork itself
 * (page tables), so the bound grows with the time the fork took.
 */
/* Measured here: a region writing all of a 1 GiB heap pays 50-65x the fork time in
 * copy-on-write faults, more on a loaded machine; twice that keeps such a child
 * inside its bound. The bound is for stuck children, so generous costs nothing. */
#define COW_ALLOWANCE 128

int scaf_experiment_child_enter(pid_t parent)
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

int scaf_experiment_child_isolate(uint64_t bound_ns)
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

int scaf_experiment_child_filter(int write_fd, int read_fd)
{
    return install_filter(write_fd, read_fd);
}

uint64_t scaf_experiment_bound_ns(uint64_t bound_ns, uint64_t fork_t0)
{
    return bound_ns + COW_ALLOWANCE * (scaf_clock_ns(CLOCK_MONOTONIC) - fork_t0);
}

static _Noreturn void child_main(void (*fn)(void *), void *data, int rfd, int wfd, pid_t parent,
                                 const struct scaf_exp_config *cfg, uint64_t fork_t0)
{
    if (scaf_experiment_child_enter(parent) != 0)
        _exit(0);
    close(rfd);
    child_fd = wfd;
    if (cfg->counters) {
        struct sigaction st;
        sigset_t usr1;

        memset(&st, 0, sizeof st);
        st.sa_handler = child_stop;
        sigfillset(&st.sa_mask);
        sigaction(SIGUSR1, &st, NULL);
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        sigprocmask(SIG_UNBLOCK, &usr1, NULL);
        if (scaf_perfctr_open(&child_pc) != 0)
            child_pc.leader = child_pc.member = -1;
    }
    if (scaf_experiment_child_isolate(scaf_experiment_bound_ns(cfg->bound_ns, fork_t0)) != 0)
        _exit(EXIT_NOSANDBOX);
    if (scaf_experiment_child_filter(wfd, child_pc.leader) != 0)
        _exit(EXIT_NOSANDBOX); /* never run the region unconfined */

    {
        struct rusage ru;

        if (getrusage(RUSAGE_THREAD, &ru) == 0) {
            child_ru0[0] = (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec;
            child_ru0[1] = (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
        }
    }
    child_wall0 = scaf_clock_ns(CLOCK_MONOTONIC);
    child_cpu0 = scaf_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    if (child_pc.leader >= 0 && scaf_perfctr_start(&child_pc) != 0)
        child_pc.leader = -1; /* ioctl is blocked from here on; the open counter is simply unused */
    fn(data);
    child_report(1);
}

/* ----------------------------------------------------------------- parent */

static void reap_some(void)
{
    for (int i = 0; i < REAP_SLOTS; i++) {
        pid_t r;

        if (reap_pending[i] == 0)
            continue;
        r = waitpid(reap_pending[i], NULL, WNOHANG);
        if (r == reap_pending[i] || (r < 0 && errno == ECHILD))
            reap_pending[i] = 0;
    }
}

static void defer_reap(pid_t pid)
{
    for (int i = 0; i < REAP_SLOTS; i++) {
        if (reap_pending[i] == 0) {
            reap_pending[i] = pid;
            return;
        }
    }
    /* Full: the zombie stays until the program exits. Harmless, and never reaps a wrong pid. */
}

int scaf_experiment_start(struct scaf_experiment *e, void (*fn)(void *), void *data,
                          const struct scaf_exp_config *cfg, uint64_t now_ns)
{
    int p[2];
    pid_t parent = getpid(), pid;
    int saved;

    reap_some();
    e->pid = 0;
    e->fd = -1;
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    if (fcntl(p[0], F_SETFL, O_NONBLOCK) != 0)
        goto fail;
    pid = fork();
    if (pid < 0)
        goto fail;
    if (pid == 0)
        child_main(fn, data, p[0], p[1], parent, cfg, now_ns);
    close(p[1]);
    e->pid = pid;
    e->fd = p[0];
    e->start_ns = now_ns;
    e->fork_ns = scaf_clock_ns(CLOCK_MONOTONIC) - now_ns;
    /* The child's CPU-time bound should fire first; this wall-clock backstop is for a child that
     * blocks (a lock whose holder was not copied by fork) or is starved far beyond its share. */
    e->kill_ns = now_ns + 4 * (cfg->bound_ns + (COW_ALLOWANCE + 1) * e->fork_ns) + 1000000000ull;
    return 0;
fail:
    saved = errno;
    close(p[0]);
    close(p[1]);
    errno = saved;
    return -1;
}

/* 1 = a whole message read, 0 = nothing yet, -1 = EOF or garbage (no message will come). */
static int read_msg(int fd, struct scaf_exp_result *out)
{
    struct exp_msg m;
    ssize_t n = read(fd, &m, sizeof m);

    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    if (n != (ssize_t)sizeof m || m.magic != EXP_MAGIC)
        return -1;
    out->cpu_ns = m.cpu_ns;
    out->wall_ns = m.wall_ns;
    out->ins = m.ins;
    out->cyc = m.cyc;
    out->utime_us = m.utime_us;
    out->stime_us = m.stime_us;
    out->complete = m.complete != 0;
    return 1;
}

static enum scaf_exp_outcome finish(struct scaf_experiment *e, enum scaf_exp_outcome o, int reaped)
{
    if (!reaped)
        defer_reap(e->pid);
    close(e->fd);
    e->fd = -1;
    e->pid = 0;
    return o;
}

static enum scaf_exp_outcome classify(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status) == EXIT_NOSANDBOX ? SCAF_EXP_NOSANDBOX : SCAF_EXP_FAILED;
    if (WIFSIGNALED(status)) {
        switch (WTERMSIG(status)) {
        case SIGSYS: return SCAF_EXP_BLOCKED;
        case SIGPROF: return SCAF_EXP_BOUND;
        case SIGKILL: return SCAF_EXP_BOUND; /* ours at kill_ns, or PDEATHSIG (then nobody asks) */
        default: return SCAF_EXP_FAILED;
        }
    }
    return SCAF_EXP_FAILED;
}

enum scaf_exp_outcome scaf_experiment_poll(struct scaf_experiment *e, uint64_t now_ns, struct scaf_exp_result *out)
{
    int status = 0, m;
    pid_t r;

    reap_some();
    if (e->pid == 0)
        return SCAF_EXP_FAILED;
    m = read_msg(e->fd, out);
    if (m > 0)
        return finish(e, SCAF_EXP_DONE, 0);
    r = waitpid(e->pid, &status, WNOHANG);
    if (r == e->pid) {
        /* It may have written just before exiting, between our read and the wait. */
        if (read_msg(e->fd, out) > 0)
            return finish(e, SCAF_EXP_DONE, 1);
        return finish(e, classify(status), 1);
    }
    if (r < 0) {
        /* ECHILD: the program reaped it (a SIGCHLD handler, or SIG_IGN). Only the pipe can tell. */
        if (read_msg(e->fd, out) > 0)
            return finish(e, SCAF_EXP_DONE, 1);
        return finish(e, SCAF_EXP_FAILED, 1);
    }
    if (now_ns >= e->kill_ns) {
        /* Still alive and unreaped, so the pid is still this child: safe to signal. */
        kill(e->pid, SIGKILL);
        return finish(e, SCAF_EXP_BOUND, 0);
    }
    return SCAF_EXP_RUNNING;
}

/*
 * Nonzero while pid is our child and has not exited. Only then may we signal
 * it: an unreaped child's pid cannot be reused. WNOWAIT looks without reaping.
 */
static int still_running(pid_t pid)
{
    siginfo_t si;

    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0;
}

void scaf_experiment_stop_early(struct scaf_experiment *e)
{
    if (e->pid > 0 && still_running(e->pid))
        kill(e->pid, SIGUSR1);
}

void scaf_experiment_abort(struct scaf_experiment *e)
{
    if (e->pid <= 0)
        return;
    if (still_running(e->pid))
        kill(e->pid, SIGKILL);
    finish(e, SCAF_EXP_BOUND, 0);
}
