/* loop.c — scafd's single-threaded epoll loop: listener, clients, referee/lookout/scoreboard/idle timers, signals. */
#include "daemon.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static struct itimerspec period(double first_s, double every_s)
{
    struct itimerspec it = {0};
    it.it_value.tv_sec = (time_t)first_s;
    it.it_value.tv_nsec = (long)((first_s - (double)(time_t)first_s) * 1e9);
    if (it.it_value.tv_sec == 0 && it.it_value.tv_nsec == 0)
        it.it_value.tv_nsec = 1; /* zero would disarm */
    it.it_interval.tv_sec = (time_t)every_s;
    it.it_interval.tv_nsec = (long)((every_s - (double)(time_t)every_s) * 1e9);
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

void scaf_loop_idle_update(struct scafd *d)
{
    struct itimerspec it = {0};

    if (d->idle_tfd < 0 || d->opt.idle_exit_s <= 0)
        return;
    if (d->nclients == 0)
        it = period(d->opt.idle_exit_s, 0);
    timerfd_settime(d->idle_tfd, 0, &it, NULL);
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
            scaf_referee_run(d);
        } else {
            scaf_say("%s: exiting", strsignal((int)si.ssi_signo));
            d->stop = true;
        }
    }
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
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGUSR1);
    d->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (d->sigfd < 0)
        goto fail;
    ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = SCAFD_TAG_SIGNAL};
    if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->sigfd, &ev) < 0)
        goto fail;
    ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = SCAFD_TAG_LISTEN};
    if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->lfd, &ev) < 0)
        goto fail;
    d->referee_tfd = add_timer(d, 1.0 / d->opt.rate_hz, SCAFD_TAG_REFEREE);
    d->lookout_tfd = add_timer(d, 1.0, SCAFD_TAG_LOOKOUT);
    if (d->referee_tfd < 0 || d->lookout_tfd < 0)
        goto fail;
    if (d->opt.scoreboard_s > 0 && (d->score_tfd = add_timer(d, d->opt.scoreboard_s, SCAFD_TAG_SCOREBOARD)) < 0)
        goto fail;
    if (d->opt.idle_exit_s > 0 && (d->idle_tfd = add_timer(d, 0, SCAFD_TAG_IDLE)) < 0)
        goto fail;
    if (d->opt.gang_quantum_s > 0 && (d->gang_tfd = add_timer(d, d->opt.gang_quantum_s, SCAFD_TAG_GANG)) < 0)
        goto fail;
    scaf_loop_idle_update(d);
    scaf_lookout_sample(d); /* baseline; the first foreign estimate comes a second later */

    while (!d->stop) {
        int n = epoll_wait(d->epfd, evs, 64, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            goto fail;
        for (int i = 0; i < n && !d->stop; i++) {
            uint64_t tag = evs[i].data.u64;
            struct scafd_conn *c;

            switch (tag) {
            case SCAFD_TAG_LISTEN:
                scaf_client_accept(d);
                break;
            case SCAFD_TAG_SIGNAL:
                on_signal(d);
                break;
            case SCAFD_TAG_REFEREE:
                drain(d->referee_tfd);
                scaf_referee_run(d);
                break;
            case SCAFD_TAG_LOOKOUT:
                drain(d->lookout_tfd);
                scaf_lookout_sample(d);
                scaf_client_reap_stalled(d, scaf_clock_s(CLOCK_MONOTONIC));
                break;
            case SCAFD_TAG_SCOREBOARD:
                drain(d->score_tfd);
                scaf_scoreboard_print(d, stdout);
                break;
            case SCAFD_TAG_GANG:
                drain(d->gang_tfd);
                scaf_referee_gang_tick(d);
                break;
            case SCAFD_TAG_IDLE:
                drain(d->idle_tfd);
                if (d->nclients == 0) {
                    scaf_say("no clients for %g s (--idle-exit): exiting", d->opt.idle_exit_s);
                    d->stop = true;
                }
                break;
            default:
                /* NULL: the connection was closed earlier in this batch (its slot may be reused). */
                c = scaf_client_from_tag(d, tag);
                if (c)
                    scaf_client_event(d, c, evs[i].events);
                break;
            }
        }
    }
    rc = 0;
fail:
    if (rc != 0)
        scaf_say("event loop failed: %s", strerror(errno));
    return rc;
}
