/* loop.c — scafd's single-threaded epoll loop: handlers change state, one step per batch acts on it. */
#include "loop.h"
#include "clientrec.h"
#include "pipeline.h"
#include "say.h"
#include "scafd.h"
#include "apply/apply.h"
#include "collect/lookout.h"
#include "memory/keep.h"
#include "report/scoreboard.h"
#include "transport/session.h"
#include "scaf/procfs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* The loop's own epoll tags; connections' tags carry their top bit (transport/session.c). */
enum loop_tag {
    TAG_LISTEN = 1,
    TAG_SIGNAL,
    TAG_REFEREE,
    TAG_LOOKOUT,
    TAG_SCOREBOARD,
    TAG_IDLE,
    TAG_GANG,
    TAG_OWNER,
    TAG_MEMORY,
};

/*
 * S seconds as a timespec, S > 0. options.c keeps every option within its documented range; the clamp is
 * the backstop that keeps the conversion defined (a double beyond time_t is undefined behaviour) and
 * keeps a positive period from truncating to zero, which would make a periodic timer one-shot.
 */
static struct timespec to_timespec(double s)
{
    struct timespec ts;

    if (!(s >= 1e-9))
        s = 1e-9;
    if (s > 1e9)
        s = 1e9;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec > 999999999L)
        ts.tv_nsec = 999999999L;
    if (ts.tv_sec == 0 && ts.tv_nsec == 0)
        ts.tv_nsec = 1; /* zero would disarm */
    return ts;
}

/* First expiry after first_s (> 0), then every every_s; every_s == 0 is one-shot. */
static struct itimerspec period(double first_s, double every_s)
{
    struct itimerspec it = {0};

    it.it_value = to_timespec(first_s);
    if (every_s > 0)
        it.it_interval = to_timespec(every_s);
    return it;
}

/* A periodic timerfd in epoll under `tag`; every_s == 0 makes it one-shot and leaves it disarmed. */
static int add_timer(struct scafd *d, double every_s, uint64_t tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);

    if (fd < 0)
        return -1;
    if (every_s > 0) {
        struct itimerspec it = period(every_s, every_s);
        if (timerfd_settime(fd, 0, &it, NULL) < 0)
            goto fail;
    }
    if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        goto fail;
    return fd;
fail:
    close(fd);
    return -1;
}

/* Arms the --idle-exit timer (a full period) when there are no clients, disarms it otherwise. */
static void idle_update(struct scafd *d)
{
    struct itimerspec it = {0};

    if (d->idle_tfd < 0 || d->opt.idle_exit_s <= 0)
        return;
    if (d->nclients == 0)
        it = period(d->opt.idle_exit_s, 0);
    timerfd_settime(d->idle_tfd, 0, &it, NULL);
}

/* Out of descriptors: the listener leaves epoll, so a backlog that cannot be accepted cannot spin the loop. */
static void listen_pause(struct scafd *d)
{
    struct epoll_event ev = {.events = 0, .data.u64 = TAG_LISTEN};

    if (d->listen_paused)
        return;
    epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->listen_fd, &ev);
    d->listen_paused = true;
    d->paused_at = scaf_session_count(d);
}

/* Back in epoll once a connection has ended, or at the next lookout tick (another process may have
 * freed descriptors, for ENFILE); if there is still no room, the next accept pauses it again. */
static void listen_resume(struct scafd *d, bool tick)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_LISTEN};

    if (!d->listen_paused || (!tick && scaf_session_count(d) >= d->paused_at))
        return;
    epoll_ctl(d->epfd, EPOLL_CTL_MOD, d->listen_fd, &ev);
    d->listen_paused = false;
}

static void drain(int fd)
{
    uint64_t x;
    while (read(fd, &x, sizeof x) > 0) {
    }
}

static void on_signal(struct scafd *d)
{
    struct signalfd_siginfo si;

    while (read(d->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGUSR1) {
            d->policy_index = (d->policy_index + 1) % scaf_policy_count();
            d->policy = scaf_policy_at(d->policy_index);
            scaf_say("SIGUSR1: policy is now %s", d->policy->name);
            d->referee_due = true;
        } else {
            scaf_say("%s: exiting", strsignal((int)si.ssi_signo));
            d->stop = true;
        }
    }
}

/*
 * --exit-with: the process has ended. The daemon stays while clients remain: a job's programs are ended
 * with it (scancel), and their departures should still be seen, logged and handed back, in one turn.
 */
static void owner_ended(struct scafd *d)
{
    if (d->owner_gone)
        return;
    d->owner_gone = true;
    if (d->owner_fd >= 0) {
        /* A pidfd stays readable: out of epoll, or the level-triggered loop would spin on it. */
        epoll_ctl(d->epfd, EPOLL_CTL_DEL, d->owner_fd, NULL);
        close(d->owner_fd);
        d->owner_fd = -1;
    }
    if (d->nclients)
        scaf_say("process %d (--exit-with) has ended: exiting when its %u clients have left",
                 (int)d->opt.exit_with, d->nclients);
}

/* The end of a batch: --exit-with's process gone and nobody left to serve. */
static void owner_check(struct scafd *d)
{
    if (d->owner_gone && d->nclients == 0 && !d->stop) {
        scaf_say("process %d (--exit-with) has ended and no client is left: exiting", (int)d->opt.exit_with);
        d->stop = true;
    }
}

/* A pidfd for --exit-with, in epoll; without pidfd_open (Linux before 5.3) the lookout tick polls instead. */
static int owner_watch(struct scafd *d)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_OWNER};

    if (!d->opt.exit_with)
        return 0;
#ifdef SYS_pidfd_open
    d->owner_fd = (int)syscall(SYS_pidfd_open, d->opt.exit_with, 0);
#else
    errno = ENOSYS;
#endif
    if (d->owner_fd < 0) {
        if (errno == ESRCH)
            owner_ended(d);
        return 0;
    }
    /* pidfds are close-on-exec from birth. */
    if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->owner_fd, &ev) < 0)
        return -1;
    return 0;
}

/* Who is behind the foreign load: every process but the clients and their experiment children. */
static void name_foreign(struct scafd *d)
{
    pid_t *known;
    size_t n = 0;

    if (!d->foreign.on)
        return;
    known = malloc((2 * (size_t)d->nclients + 1) * sizeof *known);
    if (!known)
        return; /* the list keeps its last state */
    for (uint32_t i = 0; i < d->nclients; i++) {
        known[n++] = d->clients[i]->pid;
        if (d->clients[i]->report.experiment_pid > 0)
            known[n++] = d->clients[i]->report.experiment_pid;
    }
    scaf_foreign_sample(&d->foreign, known, n);
    free(known);
}

/* Once a second: what each client burned (experiment children from its last decoded report), then /proc/stat. */
static void on_lookout(struct scafd *d)
{
    uint64_t dclients = 0;

    for (uint32_t i = 0; i < d->nclients; i++) {
        struct scaf_client *c = d->clients[i];
        dclients += scaf_lookout_client_sample(&c->lookout, c->pid, c->report.experiment_pid);
    }
    /* Before the foreign list's own sample, which forgets the processes that ended. */
    scaf_lookout_sample(&d->lookout, &d->capacity, dclients, scaf_foreign_gone_cpu(&d->foreign),
                        d->opt.verbose > 0);
    name_foreign(d);
}

/*
 * The end of a batch, before sleeping again: the referee's turn, its log line
 * and the idle timer, in that order; then the replies that waited for them. A
 * WELCOME or status reply that cannot be sent drops its client, which is
 * another departure: its share goes back at once, in another round.
 */
static void step(struct scafd *d)
{
    do {
        bool members = d->members_changed;

        d->members_changed = false;
        scaf_pipeline_run(d, members);
        if (members)
            idle_update(d);
        scaf_session_send_welcomes(d);
        if (d->members_changed)
            continue; /* the status replies below must not show a share not yet handed back */
        scaf_session_send_status(d);
    } while (d->members_changed);
}

/* The -t table, built in memory and written without waiting: a stdout nobody reads must not stop the loop. */
static void scoreboard(struct scafd *d)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    if (!f)
        return;
    scaf_scoreboard_print(d->clients, d->nclients, f);
    if (fclose(f) == 0 && len > 0)
        (void)scaf_say_stdout(buf, len);
    free(buf);
}

/*
 * The memories that departures changed, each at most once a second, written by a child (memory/writer.c):
 * the loop never waits for the disk. The child's pidfd wakes the loop when it ends, to settle it and start
 * the next; the reap closes it, which takes it out of epoll. Without pidfds the next lookout tick looks.
 */
static void memory_flush(struct scafd *d)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_MEMORY};
    int fd;

    if (scaf_keep_flush(&d->keep, scaf_clock_s(CLOCK_MONOTONIC), false) > 0 &&
        (fd = scaf_keep_writer_fd(&d->keep)) >= 0 && epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        scaf_say("cannot watch the memory writer (%s): looked at each second instead", strerror(errno));
}

static void dispatch(struct scafd *d, const struct epoll_event *ev)
{
    switch (ev->data.u64) {
    case TAG_LISTEN:
        if (scaf_session_accept(d) == SCAF_CONN_ACCEPT_NO_FDS)
            listen_pause(d);
        break;
    case TAG_SIGNAL:
        on_signal(d);
        break;
    case TAG_REFEREE:
        /* The estimates on the pages change without any event: the referee runs at its rate too. */
        drain(d->referee_tfd);
        d->referee_due = true;
        break;
    case TAG_LOOKOUT:
        drain(d->lookout_tfd);
        on_lookout(d);
        memory_flush(d);
        scaf_session_reap_stalled(d, scaf_clock_s(CLOCK_MONOTONIC));
        listen_resume(d, true);
        if (d->opt.exit_with && d->owner_fd < 0 && kill(d->opt.exit_with, 0) < 0 && errno == ESRCH)
            owner_ended(d);
        break;
    case TAG_OWNER:
        owner_ended(d);
        break;
    case TAG_MEMORY:
        memory_flush(d);
        break;
    case TAG_SCOREBOARD:
        drain(d->score_tfd);
        scoreboard(d);
        break;
    case TAG_GANG:
        drain(d->gang_tfd);
        scaf_apply_gang_tick(d->clients, d->nclients, &d->gangs);
        break;
    case TAG_IDLE:
        drain(d->idle_tfd);
        if (d->nclients == 0) {
            scaf_say("no clients for %g s (--idle-exit): exiting", d->opt.idle_exit_s);
            d->stop = true;
        }
        break;
    default:
        scaf_session_event(d, ev->data.u64, ev->events);
        break;
    }
}

/*
 * Programs ended together (a job cancelled, a process group killed) close their sockets apart: a
 * process's descriptors close only once the kernel has torn down its memory, which for a large one
 * takes a tenth of a second or more, and one signalled a moment later has not even started. After a
 * batch in which a client left, the loop goes on dispatching events without a turn, for SETTLE_MAX_MS
 * at most, while
 *  - another client is on its way out (scaf_procfs_exiting: exiting, a zombie, or a fatal signal
 *    pending), or
 *  - a client was killed (conn.c's was_killed: it ended without the layer's farewell) less than
 *    KIN_GRACE_MS ago and another client of its session is still here. A job scheduler ends a job
 *    one kill() at a time (Slurm's proctrack walks the job's processes), and on a busy machine the
 *    first program can be gone before the second is signalled.
 * They leave in one turn, and the programs that stay get the CPUs in one step instead of one
 * departure at a time. A client that closes its socket or exits while the others run on costs
 * nothing; one killed alone delays the next turn by KIN_GRACE_MS when programs of its session stay.
 */
#define SETTLE_MAX_MS 1000
#define SETTLE_POLL_MS 5
#define KIN_GRACE_MS 500

static bool clients_exiting(const struct scafd *d)
{
    for (uint32_t i = 0; i < d->nclients; i++)
        if (scaf_procfs_exiting(d->clients[i]->pid) == 1)
            return true;
    return false;
}

static bool kin_awaited(const struct scafd *d, double now)
{
    if (d->killed_sid < 0 || now - d->killed_at >= KIN_GRACE_MS / 1000.0)
        return false;
    for (uint32_t i = 0; i < d->nclients; i++)
        if (d->clients[i]->sid == d->killed_sid)
            return true;
    return false;
}

static void settle(struct scafd *d, struct epoll_event *evs, int nevs, uint64_t before)
{
    double start = scaf_clock_s(CLOCK_MONOTONIC), now = start;

    if (d->departures == before)
        return;
    while (!d->stop && now - start < SETTLE_MAX_MS / 1000.0 && (clients_exiting(d) || kin_awaited(d, now))) {
        int n = epoll_wait(d->epfd, evs, nevs, SETTLE_POLL_MS);

        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n && !d->stop; i++)
            dispatch(d, &evs[i]);
        now = scaf_clock_s(CLOCK_MONOTONIC);
    }
    if (d->opt.verbose > 1 && now > start)
        scaf_say("departures settled in %.0f ms", (now - start) * 1e3);
}

void scaf_loop_signals(sigset_t *mask)
{
    sigemptyset(mask);
    sigaddset(mask, SIGTERM);
    sigaddset(mask, SIGINT);
    sigaddset(mask, SIGUSR1);
}

int scaf_loop_run(struct scafd *d)
{
    struct epoll_event ev, evs[64];
    sigset_t mask;
    int rc = 1;

    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (d->epfd < 0)
        goto fail;
    /* The signals are blocked (main) and read as events: no handler runs inside the loop's work. */
    scaf_loop_signals(&mask);
    d->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (d->sigfd < 0)
        goto fail;
    ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = TAG_SIGNAL};
    if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->sigfd, &ev) < 0)
        goto fail;
    ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = TAG_LISTEN};
    if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->listen_fd, &ev) < 0)
        goto fail;
    d->referee_tfd = add_timer(d, 1.0 / d->opt.rate_hz, TAG_REFEREE);
    d->lookout_tfd = add_timer(d, 1.0, TAG_LOOKOUT);
    if (d->referee_tfd < 0 || d->lookout_tfd < 0)
        goto fail;
    if (d->opt.scoreboard_s > 0 && (d->score_tfd = add_timer(d, d->opt.scoreboard_s, TAG_SCOREBOARD)) < 0)
        goto fail;
    if (d->opt.idle_exit_s > 0 && (d->idle_tfd = add_timer(d, 0, TAG_IDLE)) < 0)
        goto fail;
    if (d->opt.gang_quantum_s > 0 && (d->gang_tfd = add_timer(d, d->opt.gang_quantum_s, TAG_GANG)) < 0)
        goto fail;
    if (owner_watch(d) < 0)
        goto fail;
    idle_update(d);
    on_lookout(d); /* baseline; the first foreign estimate comes a second later */

    while (!d->stop) {
        int n = epoll_wait(d->epfd, evs, 64, -1);
        uint64_t before = d->departures;

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            goto fail;
        for (int i = 0; i < n && !d->stop; i++)
            dispatch(d, &evs[i]);
        settle(d, evs, 64, before);
        if (!d->stop)
            step(d);
        owner_check(d);
        listen_resume(d, false);
    }
    rc = 0;
fail:
    if (rc != 0)
        scaf_say("event loop failed: %s", strerror(errno));
    return rc;
}
