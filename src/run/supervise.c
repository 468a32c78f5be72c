/* supervise.c — the program as our child: signals passed on, its exit status returned shell-style (commands/run.py's supervise, in C). */
#include "supervise.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

int scaf_run_supervise(const char *path, char *const *argv, char *const *envp)
{
    sigset_t waited, old, dflt;
    posix_spawnattr_t attr;
    pid_t pid;
    int err, status, rc = 125;

    sigemptyset(&waited);
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaddset(&waited, forwarded[i]);
    sigaddset(&waited, SIGCHLD);
    /* Blocked first: a signal that comes before we wait stays pending instead of killing us and orphaning the
     * program. The child gets the mask we were given. */
    sigprocmask(SIG_BLOCK, &waited, &old);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    sigaddset(&dflt, SIGXFSZ);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &old);
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
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}
