/* supervise.c — the program as our child: signals passed on, its exit status returned shell-style (include/scaf/supervise.h), for scaf-run and, through libscaf_launch.so, the Python `scaf run`. */
#include "scaf/supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

/* Signals are 1..64 on Linux: the bits of a uint64_t. */
#define SIGNALS 64

static void waited_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaddset(set, forwarded[i]);
    sigaddset(set, SIGCHLD);
}

/*
 * The child between fork and exec: only async-signal-safe calls (the caller
 * may have threads: Python's `scaf run`). It dies with its supervisor, as it
 * would have if `scaf run` had exec'd it: a supervisor killed with SIGKILL
 * (a harness's kill(), the OOM killer) can pass nothing on, and the program
 * went on alone, steered by nobody's count and watched by nobody (a test
 * program left this way spun on a CPU for 30 minutes under later
 * measurements). Its own children are its business, as after an exec.
 * On failure the errno goes up the close-on-exec pipe.
 */
static void child_exec(const char *path, char *const *argv, char *const *envp, const sigset_t *child, pid_t parent,
                       int report)
{
    struct sigaction dflt = {.sa_handler = SIG_DFL};
    int err;

    /* Python ignores both; signals ignored otherwise stay ignored, as with exec. */
    sigaction(SIGPIPE, &dflt, NULL);
    sigaction(SIGXFSZ, &dflt, NULL);
    /* Set before the check: a parent gone in between would otherwise leave nobody to send the signal. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(125);
    sigprocmask(SIG_SETMASK, child, NULL);
    execve(path, argv, envp);
    err = errno;
    (void)!write(report, &err, sizeof err);
    _exit(127);
}

/* Starts PATH as our child; 0 and its pid, or an errno (what exec said, or fork's). */
static int start(const char *path, char *const *argv, char *const *envp, const sigset_t *child, pid_t *pid)
{
    int fds[2], err = 0;
    ssize_t n;
    pid_t me = getpid();

    if (pipe2(fds, O_CLOEXEC) != 0)
        return errno;
    *pid = fork();
    if (*pid == 0)
        child_exec(path, argv, envp, child, me, fds[1]);
    if (*pid < 0) {
        err = errno;
        goto out;
    }
    close(fds[1]);
    fds[1] = -1;
    /* End of file: the exec closed the pipe. Otherwise the child reports why it could not run and exits. */
    do
        n = read(fds[0], &err, sizeof err);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof err) {
        while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
            ;
    } else {
        err = 0;
    }
out:
    close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    return err;
}

/* Starts and waits with the waited signals already blocked; CHILD is the mask the program starts with. */
static int supervise(const char *path, char *const *argv, char *const *envp, const sigset_t *child)
{
    sigset_t waited;
    pid_t pid = -1;
    int err, status, rc = 125;

    waited_set(&waited);
    err = start(path, argv, envp, child, &pid);
    if (err) {
        if (err == ENOENT || err == ENOTDIR) {
            fprintf(stderr, "scaf: %s: %s\n", argv[0], strerror(err));
            rc = 127;
        } else {
            fprintf(stderr, "scaf: %s: cannot execute: %s\n", argv[0], strerror(err));
            rc = 126;
        }
        goto out;
    }
    for (;;) {
        siginfo_t info;

        if (sigwaitinfo(&waited, &info) < 0)
            continue;
        if (info.si_signo == SIGCHLD) {
            pid_t done = waitpid(pid, &status, WNOHANG);

            if (done == pid) {
                rc = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
                goto out;
            }
            continue;
        }
        /* The terminal's ^C, ^\ and hangup went to the whole foreground group, the program included. */
        if (info.si_code == SI_KERNEL && getpgid(pid) == getpgrp())
            continue;
        kill(pid, info.si_signo);
    }
out:
    return rc;
}

int scaf_run_supervise(const char *path, char *const *argv, char *const *envp)
{
    sigset_t waited, old;
    int rc;

    waited_set(&waited);
    /* Blocked first: a signal that comes before we wait stays pending instead of killing us and orphaning the
     * program. The child gets the mask we were given. */
    sigprocmask(SIG_BLOCK, &waited, &old);
    rc = supervise(path, argv, envp, &old);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

uint64_t scaf_run_supervise_signals(void)
{
    sigset_t waited;
    uint64_t bits = 0;

    waited_set(&waited);
    for (int n = 1; n <= SIGNALS; n++)
        if (sigismember(&waited, n) == 1)
            bits |= UINT64_C(1) << (n - 1);
    return bits;
}

int scaf_run_supervise_blocked(const char *path, char *const *argv, char *const *envp, uint64_t child_mask)
{
    sigset_t now, child;
    uint64_t waited = scaf_run_supervise_signals();
    int rc = -1;

    /* On Linux, sigprocmask is the calling thread's mask, as pthread_sigmask. */
    if (sigprocmask(SIG_BLOCK, NULL, &now) != 0)
        goto out;
    for (int n = 1; n <= SIGNALS; n++)
        if ((waited >> (n - 1) & 1) && sigismember(&now, n) != 1) {
            errno = EINVAL;
            goto out;
        }
    sigemptyset(&child);
    /* The C library's own signals (glibc's 32 and 33) are refused by sigaddset: they stay its own. */
    for (int n = 1; n <= SIGNALS; n++)
        if (child_mask >> (n - 1) & 1)
            sigaddset(&child, n);
    rc = supervise(path, argv, envp, &child);
out:
    return rc;
}
