/* test_supervise.c — the child's supervisor with real programs: exit statuses shell-style, 126 and 127 with their lines, a signal passed on, the program gone with a supervisor killed by SIGKILL, the mask and dispositions the program starts with, and the blocked variant's refusal when the caller did not block. */
#include "scaf/supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

extern char **environ;

/* What a supervised run returned, its errno, and what it wrote to the captured descriptor. */
struct captured {
    int rc, err;
    char out[4096];
};

/* Runs the supervisor (the blocked variant with CHILD when BLOCKED) with descriptor FD sent to a file. */
static struct captured run_captured(int fd, const char *path, char *const *argv, int blocked, uint64_t child)
{
    char name[] = "/tmp/scaf-test-supervise-XXXXXX";
    struct captured c = {.rc = -2};
    int tmp = mkstemp(name), saved = dup(fd);
    ssize_t n;

    if (tmp < 0 || saved < 0) {
        fail("capture", "mkstemp or dup");
        return c;
    }
    unlink(name);
    fflush(NULL);
    dup2(tmp, fd);
    errno = 0;
    c.rc = blocked ? scaf_run_supervise_blocked(path, argv, environ, child) : scaf_run_supervise(path, argv, environ);
    c.err = errno;
    fflush(NULL);
    dup2(saved, fd);
    close(saved);
    n = pread(tmp, c.out, sizeof c.out - 1, 0);
    c.out[n > 0 ? n : 0] = '\0';
    close(tmp);
    return c;
}

/* The hexadecimal mask of /proc/PID/status's line FIELD ("SigBlk") in TEXT; ~0 when it is not there. */
static uint64_t status_mask(const char *text, const char *field)
{
    const char *p = strstr(text, field);

    return p ? strtoull(p + strlen(field) + 1, NULL, 16) : ~UINT64_C(0);
}

#define BIT(sig) (UINT64_C(1) << ((sig) - 1))

static void statuses(void)
{
    const struct {
        const char *name, *script;
        int want;
    } cases[] = {
        {"exit 0", "exit 0", 0},
        {"exit 7", "exit 7", 7},
        {"killed by SIGKILL", "kill -KILL $$", 128 + SIGKILL},
        {"killed by SIGTERM", "kill -TERM $$", 128 + SIGTERM},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        char *argv[] = {"sh", "-c", (char *)cases[t].script, NULL};
        int rc = scaf_run_supervise("/bin/sh", argv, environ);

        CHECK(rc == cases[t].want, "%s: %d, want %d", cases[t].name, rc, cases[t].want);
    }
}

static void cannot_start(void)
{
    char dir[] = "/tmp/scaf-test-supervise-dir-XXXXXX", file[sizeof dir + 16];
    struct captured c;

    char *missing[] = {"no-such-prog", NULL};
    c = run_captured(2, "/nonexistent/no-such-prog", missing, 0, 0);
    CHECK(c.rc == 127 && strcmp(c.out, "scaf: no-such-prog: No such file or directory\n") == 0, "missing: %d '%s'",
          c.rc, c.out);

    if (!mkdtemp(dir)) {
        fail("mkdtemp", strerror(errno));
        return;
    }
    snprintf(file, sizeof file, "%s/script", dir);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        (void)!write(fd, "#!/bin/sh\necho hi\n", 18);
        close(fd);
    }
    char *script[] = {file, NULL};
    c = run_captured(2, file, script, 0, 0);
    CHECK(c.rc == 126 && strstr(c.out, ": cannot execute: Permission denied\n"), "not executable: %d '%s'", c.rc,
          c.out);
    unlink(file);
    rmdir(dir);
}

/* A signal sent to the supervisor reaches the program: the program asks for it itself, so no timing is involved. */
static void forwards(void)
{
    char *argv[] = {"sh", "-c", "kill -TERM $PPID; exec sleep 60", NULL};
    int rc = scaf_run_supervise("/bin/sh", argv, environ);

    CHECK(rc == 128 + SIGTERM, "SIGTERM to the supervisor ended the program: %d", rc);
}

/*
 * A supervisor killed with SIGKILL passes nothing on; the program goes with
 * it, as it would have if the supervisor had exec'd it. The program holds a
 * pipe's write end: its pid comes through the pipe once it runs, and the end
 * of file once it is gone. No timing: the deadline only turns a program left
 * behind into a failure instead of a hang.
 */
static void dies_with_supervisor(void)
{
    int fds[2];
    pid_t sup;
    char line[32] = "";
    ssize_t n;
    struct pollfd pfd;

    if (pipe(fds) != 0) {
        fail("pipe", strerror(errno));
        return;
    }
    sup = fork();
    if (sup == 0) {
        char script[64];
        char *argv[] = {"sh", "-c", script, NULL};

        close(fds[0]);
        snprintf(script, sizeof script, "echo $$ >&%d; exec sleep 600", fds[1]);
        _exit(scaf_run_supervise("/bin/sh", argv, environ) == 0 ? 0 : 1);
    }
    close(fds[1]);
    if (sup < 0) {
        fail("fork", strerror(errno));
        close(fds[0]);
        return;
    }
    n = read(fds[0], line, sizeof line - 1);
    CHECK(n > 0 && atoi(line) > 0, "the program's pid came through the pipe: '%s'", line);
    kill(sup, SIGKILL);
    waitpid(sup, NULL, 0);
    pfd = (struct pollfd){.fd = fds[0], .events = POLLIN};
    CHECK(poll(&pfd, 1, 60000) == 1 && read(fds[0], line, sizeof line) == 0,
          "the program (pid %d) is gone with its supervisor", atoi(line));
    if (n > 0 && atoi(line) > 0)
        kill(atoi(line), SIGKILL); /* left behind by a failure: not for the next test to meet */
    close(fds[0]);
}

/* The program starts with the caller's mask (not the supervisor's), SIGPIPE at its default, other ignored
 * signals still ignored. */
static void starts_with(void)
{
    char *argv[] = {"cat", "/proc/self/status", NULL};
    sigset_t ttin, waited, before;
    uint64_t want_blocked = BIT(SIGTTIN), bits = scaf_run_supervise_signals();
    struct captured c;

    CHECK(bits == (BIT(SIGINT) | BIT(SIGTERM) | BIT(SIGHUP) | BIT(SIGQUIT) | BIT(SIGUSR1) | BIT(SIGUSR2) |
                   BIT(SIGCHLD)),
          "the waited signals: %#llx", (unsigned long long)bits);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGWINCH, SIG_IGN);
    sigemptyset(&ttin);
    sigaddset(&ttin, SIGTTIN);
    sigprocmask(SIG_BLOCK, &ttin, &before);

    c = run_captured(1, "/bin/cat", argv, 0, 0);
    CHECK(c.rc == 0 && status_mask(c.out, "SigBlk:") == want_blocked, "scaf_run_supervise: mask %#llx",
          (unsigned long long)status_mask(c.out, "SigBlk:"));
    CHECK(!(status_mask(c.out, "SigIgn:") & BIT(SIGPIPE)) && (status_mask(c.out, "SigIgn:") & BIT(SIGWINCH)),
          "scaf_run_supervise: ignored %#llx", (unsigned long long)status_mask(c.out, "SigIgn:"));

    /* The blocked variant refuses a caller that did not block them, and starts nothing. */
    c = run_captured(1, "/bin/cat", argv, 1, want_blocked);
    CHECK(c.rc == -1 && c.err == EINVAL && c.out[0] == '\0', "blocked, unblocked caller: %d %s", c.rc,
          strerror(c.err));

    sigemptyset(&waited);
    for (int n = 1; n <= 64; n++)
        if (bits & BIT(n))
            sigaddset(&waited, n);
    sigprocmask(SIG_BLOCK, &waited, NULL);
    c = run_captured(1, "/bin/cat", argv, 1, want_blocked | BIT(SIGUSR1));
    CHECK(c.rc == 0 && status_mask(c.out, "SigBlk:") == (want_blocked | BIT(SIGUSR1)), "blocked: mask %#llx",
          (unsigned long long)status_mask(c.out, "SigBlk:"));
    CHECK(!(status_mask(c.out, "SigIgn:") & BIT(SIGPIPE)), "blocked: ignored %#llx",
          (unsigned long long)status_mask(c.out, "SigIgn:"));
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    CHECK(sigismember(&now, SIGCHLD) == 1 && sigismember(&now, SIGINT) == 1, "blocked: the caller's mask kept");

    sigprocmask(SIG_SETMASK, &before, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGWINCH, SIG_DFL);
}

int main(void)
{
    statuses();
    cannot_start();
    forwards();
    dies_with_supervisor();
    starts_with();
    return check_exit("test_supervise");
}
