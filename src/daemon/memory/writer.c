/* writer.c — a user's memory file written by a child process (as redis saves in the background), so that the daemon's loop never waits for the disk: an fsync on an NFS home directory can take seconds. */
#include "writer.h"
#include "../say.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The descriptor the child keeps for the state directory: the first after stdin, stdout and stderr. */
#define CHILD_DIRFD 3

/*
 * Every descriptor from `from` up closed, in the child. Read from /proc/self/fd rather than with close_range:
 * a seccomp filter that predates close_range (systemd's SystemCallFilter= before it knew the call) kills the
 * process that makes it. Without /proc, up to the descriptor limit.
 */
static void close_from(int from)
{
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *e;
    long max;

    if (dir) {
        int self = dirfd(dir);

        while ((e = readdir(dir)) != NULL) {
            char *end;
            long fd = strtol(e->d_name, &end, 10);

            if (*end == '\0' && end != e->d_name && fd >= from && fd != self)
                close((int)fd);
        }
        closedir(dir);
        return;
    }
    max = sysconf(_SC_OPEN_MAX);
    for (long fd = from; fd < (max > 0 ? max : 1024); fd++)
        close((int)fd);
}

static _Noreturn void child(int dirfd, const char *dir, const struct scaf_store *s, bool quiet,
                            const struct scaf_memfile_hooks *hooks)
{
    char why[256];

    if (dirfd != CHILD_DIRFD && dup2(dirfd, CHILD_DIRFD) < 0)
        _exit(1);
    close_from(CHILD_DIRFD + 1);
    if (scaf_memfile_save(CHILD_DIRFD, s->uid, s->recs, s->count, hooks, why, sizeof why) == 0)
        _exit(0);
    if (!quiet)
        scaf_say("memory of uid %u: cannot write it in %s: %s (tried again each second)", (unsigned)s->uid, dir, why);
    _exit(1);
}

int scaf_memwriter_start(struct scaf_memwriter *w, int dirfd, const char *dir, uint32_t index,
                         const struct scaf_store *s, bool quiet, const struct scaf_memfile_hooks *hooks)
{
    struct scaf_memfile_hooks h = hooks ? *hooks : (struct scaf_memfile_hooks){.kill_at = -1};
    pid_t pid;

    /* A test's crash in the middle of a write is the daemon's: the child takes it down too. */
    h.kill_also = getpid();
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0)
        child(dirfd, dir, s, quiet, &h);
    *w = (struct scaf_memwriter){.pid = pid, .fd = -1, .store = index, .changes = s->changes};
#ifdef SYS_pidfd_open
    w->fd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    return 0;
}

int scaf_memwriter_reap(struct scaf_memwriter *w, bool wait)
{
    int status = 0;
    pid_t got;

    if (w->pid == 0)
        return 0;
    do
        got = waitpid(w->pid, &status, wait ? 0 : WNOHANG);
    while (got < 0 && errno == EINTR);
    if (got == 0)
        return -1;
    if (w->fd >= 0)
        close(w->fd);
    *w = (struct scaf_memwriter){.fd = -1};
    /* ECHILD: reaped elsewhere, its status unknown; written again to be sure. */
    return got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
