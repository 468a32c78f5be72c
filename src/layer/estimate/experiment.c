/* experiment.c — serial experiments: fork a sandboxed child (sandbox/), report through a pipe, reap the exact pid. */
#include "experiment.h"

#include "../sandbox/sandbox.h"
#include "perfctr.h"
#include "scaf/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* Children that reported or were killed but are not reaped yet. Only ever our exact pids. */
#define REAP_SLOTS 16
static pid_t reap_pending[REAP_SLOTS];

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

static _Noreturn void child_main(void (*fn)(void *), void *data, int rfd, int wfd, pid_t parent,
                                 const struct scaf_exp_config *cfg, uint64_t fork_t0)
{
    if (scaf_sandbox_enter(parent) != 0)
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
    if (scaf_sandbox_isolate(scaf_sandbox_bound_ns(cfg->bound_ns, fork_t0)) != 0)
        _exit(EXIT_NOSANDBOX);
    if (scaf_sandbox_filter(wfd, child_pc.leader) != 0)
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
    pid = scaf_sandbox_fork();
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
    e->kill_ns = now_ns + 4 * (cfg->bound_ns + scaf_sandbox_cow_allowance_ns(e->fork_ns) + e->fork_ns) + 1000000000ull;
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
