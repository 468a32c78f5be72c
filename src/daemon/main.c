/* main.c — scafd's start-up and exit: the command line read (options.c), each part set up in order, the loop run, everything closed, the exit status. */
#include "loop.h"
#include "clients.h"
#include "options.h"
#include "pipeline.h"
#include "say.h"
#include "scafd.h"
#include "collect/capacity.h"
#include "collect/lookout.h"
#include "memory/keep.h"
#include "report/alloclog.h"
#include "transport/session.h"
#include "transport/activation.h"
#include "transport/listener.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Exit status: 0 clean exit (signal, --idle-exit, --help), 1 runtime failure, 2 bad command line. */
enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Room for the client table's descriptors: the soft limit is often 1024. Returns the limit now, 0 if unknown. */
static unsigned long raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 0;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur == RLIM_INFINITY ? 0 : (unsigned long)rl.rlim_cur;
}

/* Every descriptor closed, so that teardown can tell what was opened. */
static void unopened(struct scafd *d, struct scaf_listener *listener)
{
    d->sigfd = d->epfd = d->spare_fd = -1;
    d->killed_sid = -1;
    d->listen_fd = listener->fd = listener->lockfd = -1;
    d->referee_tfd = d->lookout_tfd = d->score_tfd = d->idle_tfd = d->gang_tfd = d->owner_fd = -1;
    d->keep.dirfd = -1;
}

/* The machine as this process may use it, and what follows from it. Returns -1 with the reason said, and nothing open. */
static int take_machine(struct scafd *d)
{
    /* Checked before the socket is taken: a daemon tied to a process that is already gone would serve nobody. */
    if (d->opt.exit_with && kill(d->opt.exit_with, 0) < 0 && errno == ESRCH) {
        scaf_say("--exit-with %d: no such process", (int)d->opt.exit_with);
        return -1;
    }
    /* For tests only: read /proc/self/cgroup, mountinfo and the cgroup files under a fake root. */
    if (scaf_capacity_detect(&d->capacity, d->opt.cpus, getenv("SCAFD_TEST_CGROUP_ROOT")) < 0) {
        scaf_say("cannot read this process's CPU affinity: %s", strerror(errno));
        return -1;
    }
    d->chunk = d->opt.chunk ? d->opt.chunk : d->capacity.smt;
    scaf_lookout_init(&d->lookout, d->opt.lookout, d->capacity.cpus);
    if (scaf_foreign_init(&d->foreign, d->opt.lookout, d->opt.socket) < 0)
        scaf_say("out of memory for the list of foreign processes: foreign load is counted, not named");
    d->fd_limit = raise_nofile();
    /* Given up for a moment when descriptors run out, to accept and close a peer (transport/session.c). */
    d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return 0;
}

/* The socket: passed by socket activation, or bound here. Returns -1 with the reason said. */
static int take_socket(struct scafd *d, struct scaf_listener *listener)
{
    switch (scaf_activation_take(&listener->fd, d->opt.socket, sizeof d->opt.socket)) {
    case SCAF_ACTIVATION_NONE:
        break;
    case SCAF_ACTIVATION_OK:
        listener->inherited = true;
        break;
    case SCAF_ACTIVATION_BAD:
        return -1;
    }
    listener->path = d->opt.socket;
    listener->path_is_default = d->opt.socket_is_default;
    listener->shared = d->opt.shared;
    listener->verbose = d->opt.verbose;
    listener->idle_exit_s = d->opt.idle_exit_s;
    if (scaf_listener_open(listener) < 0)
        return -1;
    d->listen_fd = listener->fd;
    return 0;
}

/* The one line that says what this daemon serves and how. */
static void say_serving(const struct scafd *d, const struct scaf_listener *listener)
{
    char quota[700] = "";

    if (d->capacity.quota)
        snprintf(quota, sizeof quota, ", cgroup v%d quota %u from %s", d->capacity.cgroup_version,
                 d->capacity.quota, d->capacity.quota_file);
    else if (d->capacity.cgroup_version)
        snprintf(quota, sizeof quota, ", cgroup v%d: no quota", d->capacity.cgroup_version);
    scaf_say("serving %s%s%s%s: policy %s, %u contexts (%u CPUs in affinity%s%s), chunk %u, lookout %s, memory %s%s",
             d->opt.socket, listener->inherited ? " (passed by socket activation)" : "",
             d->opt.job ? " for job " : "", d->opt.job ? d->opt.job : "", d->policy->name, d->capacity.cpus,
             d->capacity.cpu_list_len, quota, d->opt.cpus ? ", --cpus override" : "", d->chunk,
             d->opt.lookout ? "on" : "off", d->keep.on ? "in " : "off", d->keep.on ? d->keep.dir : "");
}

/* Everything that was opened, closed; safe on a daemon that stopped part way through its start. */
static void teardown(struct scafd *d, struct scaf_listener *listener)
{
    int fds[] = {d->spare_fd, d->sigfd, d->epfd, d->referee_tfd, d->lookout_tfd, d->score_tfd, d->idle_tfd,
                 d->gang_tfd, d->owner_fd};

    /* What the last departures taught is written before the daemon goes (SIGTERM, --idle-exit, --exit-with). */
    scaf_keep_close(&d->keep);
    scaf_listener_close(listener);
    scaf_clients_free(d);
    scaf_session_table_free(d);
    scaf_pipeline_free(d);
    scaf_alloclog_close(&d->log);
    scaf_lookout_free(&d->lookout);
    scaf_foreign_free(&d->foreign);
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

int main(int argc, char **argv)
{
    struct scafd d = {0};
    struct scaf_listener listener = {0};
    sigset_t mask;
    int rc = EXIT_RUNTIME;

    unopened(&d, &listener);
    switch (scaf_options_parse(&d, argc, argv)) {
    case SCAF_OPTIONS_RUN:
        break;
    case SCAF_OPTIONS_DONE:
        return 0;
    case SCAF_OPTIONS_USAGE:
        return EXIT_USAGE;
    case SCAF_OPTIONS_BAD_SOCKET:
        return EXIT_RUNTIME;
    }
    if (take_machine(&d) < 0)
        return EXIT_RUNTIME; /* nothing is open yet */

    /* Blocked before anything else exists: they are read through a signalfd in the loop. */
    scaf_loop_signals(&mask);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (scaf_clients_init(&d) < 0 || scaf_session_table_init(&d) < 0 || scaf_pipeline_init(&d) < 0) {
        scaf_say("out of memory for %u clients", d.opt.max_clients);
        goto out;
    }
    if (scaf_alloclog_open(&d.log, d.opt.log_path) < 0 || take_socket(&d, &listener) < 0)
        goto out;
    /* After the socket: a daemon that cannot serve says that alone, not where it would have remembered. */
    if (scaf_keep_open(&d.keep, &d.opt.memory) < 0)
        goto out;
    d.recall = (struct scaf_recall){.keep = &d.keep, .verbose = d.opt.verbose};
    say_serving(&d, &listener);
    rc = scaf_loop_run(&d);
out:
    teardown(&d, &listener);
    return rc;
}
