/* supervise.c — the program as our child: signals passed on, its exit status returned shell-style (include/scaf/supervise.h), for scaf-run and, through libscaf_launch.so, the Python `scaf run`. */
#include "scaf/supervise.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
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

/* Spawns and waits with the waited signals already blocked; CHILD is the mask the program starts with. */
static int supervise(const char *path, char *const *argv, char *const *envp, const sigset_t *child)
{
    sigset_t waited, dflt;
    posix_spawnattr_t attr;
    pid_t pid;
    int err, status, rc = 125;

    waited_set(&waited);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    sigaddset(&dflt, SIGXFSZ);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, child);
    posix_spawnattr_setsigdefault(&attr, &dflt);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    err = posix_spawn(&pid, path, NULL, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
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
