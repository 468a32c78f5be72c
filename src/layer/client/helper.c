/* helper.c — the one thread the layer adds: sleeps on the page futex, applies CPU sets, reconnects. */
#include "helper.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/bound.h"
#include "../core/idlewatch.h"
#include "../core/page.h"
#include "../core/permit.h"
#include "../core/pool.h"
#include "../core/runtimes.h"
#include "../core/say.h"
#include "../estimate/estimate.h"
#include "conn.h"
#include "scaf/clock.h"
#include "stall.h"

/* How often the helper looks at the socket (daemon death) when no wake comes. */
#define TICK_MS 300
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
/* Joining a daemon that was not there at start-up: the same backoff, a slower cap (most never come). */
#define JOIN_MAX_MS 2000
/* While the daemon counts the process idle: sample its CPU this often, and send the WAKE once it burned over
 * half a context over the last IDLE_WINDOW_MS (core/idlewatch.h says why). */
#define IDLE_TICK_MS 20
#define IDLE_WINDOW_MS 200
#define IDLE_BUSY_FRAC 0.5
/* A sample a whole window old must still be held when the next one comes (sleeps can end early: a page write). */
static_assert(IDLE_WINDOW_MS / IDLE_TICK_MS + 2 <= SCAF_IDLEWATCH_SAMPLES, "the watch holds too few samples");

static _Atomic int helper_started;

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Applies `set` to every thread of this process. Returns how many threads took it. */
static int apply_all(const cpu_set_t *set)
{
    /* getdents64 on a stack buffer: no malloc, no stdio in the helper. */
    char buf[4096];
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int applied = 0;
    ssize_t n;

    if (fd < 0)
        return 0;
    while ((n = getdents64(fd, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; off < n;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            char *end;
            long tid = strtol(d->d_name, &end, 10);

            off += d->d_reclen;
            if (*end != 0 || tid <= 0)
                continue;
            /* ESRCH: the thread exited meanwhile; nothing to do. */
            if (sched_setaffinity((pid_t)tid, sizeof *set, set) == 0)
                applied++;
        }
    }
    close(fd);
    return applied;
}

/*
 * The daemon's CPU set, kept within the mask the program started with (a user
 * who pinned the program with taskset stays obeyed); when the two do not meet,
 * the daemon's set as given.
 */
static int cpuset_from_page(const uint64_t words[SCAF_CPUSET_WORDS], cpu_set_t *out)
{
    cpu_set_t inter;

    CPU_ZERO(out);
    for (int i = 0; i < SCAF_MAX_CPUS && i < CPU_SETSIZE; i++)
        if (words[i / 64] >> (i % 64) & 1u)
            CPU_SET(i, out);
    if (CPU_COUNT(out) == 0)
        return -1;
    CPU_AND(&inter, out, scaf_bound_affinity());
    if (CPU_COUNT(&inter) > 0)
        *out = inter;
    return 0;
}

/*
 * Applies the page's control. Under CPUSET it re-applies every tick, so threads
 * the program created since (and libgomp's pool) follow too. Back under
 * THREADS it restores the startup mask once.
 */
static void apply_control(struct scaf_page *p, int *applied)
{
    uint64_t words[SCAF_CPUSET_WORDS];
    uint32_t control;
    cpu_set_t set;

    if (scaf_page_read_control(p, &control, words) != 0)
        return;
    if (control == SCAF_CONTROL_CPUSET) {
        if (cpuset_from_page(words, &set) == 0) {
            int n = apply_all(&set);
            if (!*applied)
                scaf_layer_log("CPU-set control: %d CPUs applied to %d threads", CPU_COUNT(&set), n);
            *applied = 1;
        }
    } else if (*applied) {
        apply_all(scaf_bound_affinity());
        *applied = 0;
        scaf_layer_log("back to thread-count control: startup affinity restored");
    }
}

static void reconnect(void)
{
    unsigned delay = BACKOFF_MIN_MS;
    struct scaf_page *old = scaf_page_get();

    scaf_conn_drop();
    /* No daemon passes the turn any more: a team held for its gang's turn runs again. */
    if (old)
        scaf_page_gang_off(old);
    for (;;) {
        enum scaf_conn_result res = scaf_conn_reconnect();

        if (res == SCAF_CONN_OK) {
            scaf_layer_log("reconnected");
            return;
        }
        if (res == SCAF_CONN_REFUSED_VERSION) {
            /* A daemon of another protocol will not change its mind: keep the last allocation for good. */
            scaf_layer_log("new daemon speaks another protocol: giving up reconnecting");
            for (;;) {
                sleep_ms(TICK_MS);
                scaf_estimate_long_region_check(0);
            }
        }
        /* The estimator's watch (long regions, experiment bounds) keeps its pace meanwhile. */
        for (unsigned slept = 0; slept < delay; slept += TICK_MS) {
            sleep_ms(delay - slept < TICK_MS ? delay - slept : TICK_MS);
            scaf_estimate_long_region_check(0);
        }
        delay = delay * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : delay * 2;
    }
}

/*
 * The first connect found no daemon we could use: try again with backoff until
 * one answers, so that a program started during a daemon's restart does not
 * stay unmanaged for its whole life. The region path pays nothing for this: it
 * sees the page once published. A connect(2) every JOIN_MAX_MS at most.
 */
static void join(void)
{
    unsigned delay = BACKOFF_MIN_MS;

    while (scaf_conn_wants_join()) {
        sleep_ms(delay);
        if (scaf_conn_join() == SCAF_CONN_OK) {
            scaf_layer_log("joined a daemon that appeared after start-up");
            return;
        }
        delay = delay * 2 > JOIN_MAX_MS ? JOIN_MAX_MS : delay * 2;
    }
    /* Nothing left to wait for (another protocol): an idle thread costs nothing. */
    for (;;)
        sleep_ms(3600 * 1000);
}

/* Serial work without regions while idle (a pool worker's garbage collection) takes its share back at once. */
static void watch_idle(const struct scaf_page *p, struct scaf_idlewatch *w)
{
    uint32_t idle = scaf_page_idle(p);

    if (idle == 0 && w->period == 0)
        return;
    if (scaf_idlewatch_step(w, idle, scaf_clock_ns(CLOCK_MONOTONIC), scaf_clock_ns(CLOCK_PROCESS_CPUTIME_ID),
                            IDLE_WINDOW_MS * 1000000ull, IDLE_BUSY_FRAC)) {
        if (scaf_conn_wake(idle) < 0) {
            scaf_idlewatch_unsent(w); /* the next sample asks again */
            return;
        }
        scaf_layer_log("busy while idle: over half a CPU for %d ms without a region; WAKE sent", IDLE_WINDOW_MS);
    }
}

/* The helper's own OpenMP calls (a BLAS pool's count: MKL_Get_Max_Threads may ask omp_get_max_threads) are
 * the layer's, not the program's: the adapters ask scaf_helper_self. */
static _Thread_local int on_helper;

int scaf_helper_self(void)
{
    return on_helper;
}

static void *helper_main(void *arg)
{
    int applied = 0;
    struct scaf_idlewatch watch = {0};

    (void)arg;
    on_helper = 1;
    for (;;) {
        struct scaf_page *p = scaf_page_get();
        uint32_t seq;

        if (!p) {
            /*
             * Not connected. Either the first connect found no daemon we could
             * use (join: retry with backoff, so that a daemon restarting does
             * not leave the program unmanaged), or the helper started early
             * because an adapter watches for thread pools (a BLAS library that
             * Python loads long after start): the first pool found makes the
             * process a client, as the first region does for an OpenMP program.
             */
            int state = atomic_load(&scaf_conn_state);

            if (scaf_conn_wants_join())
                join();
            else if (state == SCAF_CONN_INERT)
                return NULL; /* disabled, or a daemon of another protocol: nothing left to do */
            else if ((scaf_pool_poll(NULL) > 0 || scaf_runtimes_bits()) && state == SCAF_CONN_UNTRIED)
                scaf_conn_first();
            else
                sleep_ms(TICK_MS);
            continue;
        }
        seq = scaf_page_seq(p);
        apply_control(p, &applied);
        /* Pools take the allocation here, between their calls: docs/layer.md says why that is safe. */
        scaf_pool_poll(p);
        /* Permits (oneTBB's arenas) are renegotiated here, from this thread only: core/permit.h. */
        scaf_permit_poll(p);
        scaf_page_sleep(p, seq, scaf_page_idle(p) ? IDLE_TICK_MS : TICK_MS);
        watch_idle(p, &watch);
        scaf_estimate_long_region_check(0);
        scaf_stall_check(scaf_clock_ns(CLOCK_MONOTONIC));
        if (scaf_conn_lost())
            reconnect();
    }
    return NULL;
}

int scaf_helper_start(void)
{
    sigset_t all, old;
    pthread_attr_t attr;
    pthread_t tid;
    int err;

    if (atomic_exchange(&helper_started, 1))
        return 0;
    /* The helper inherits a fully blocked mask: no program signal handler ever runs on it. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    err = pthread_create(&tid, &attr, helper_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        atomic_store(&helper_started, 0);
        errno = err;
        return -1;
    }
    pthread_setname_np(tid, "scaf-helper");
    return 0;
}

void scaf_helper_forget(void)
{
    atomic_store(&helper_started, 0);
}
