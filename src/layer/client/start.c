/* start.c — a program's first touch of the OpenMP API: connects when a start team could apply, then starts the program with its share (common/startrule.c decides) or says why not. */
#include "start.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/bound.h"
#include "../core/page.h"
#include "../core/say.h"
#include "../core/settings.h"
#include "scaf/startrule.h"
#include "../malleable/malleable.h"
#include "../malleable/reason.h"
#include "../sandbox/sandbox.h"
#include "client.h"
#include "conn.h"
#include "scaf/proto.h"

_Atomic int scaf_start_pending;

/* The team a program started with and keeps; 0 until then, or when it was not started so. */
static _Atomic unsigned kept_start;

/* One decision: a second thread touching the API meanwhile waits for it. */
static struct {
    pthread_mutex_t lock;
    struct scaf_start_runtime rt;
    int user_count;         /* OMP_NUM_THREADS was set, and not by scaf run */
    unsigned scaf_run_team; /* SCAF_START_TEAM, when it is this process's */
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void atfork_prepare(void)
{
    pthread_mutex_lock(&S.lock);
}

static void atfork_release(void)
{
    pthread_mutex_unlock(&S.lock);
}

/*
 * scaf run's count is the program's only: the process scaf run started, through every exec it makes (Rscript
 * execs R, a shell its last command), whose parent is still the scaf run named by SCAF_START_PARENT. A process
 * that program starts sees OMP_NUM_THREADS=T as any user's, and the variables go from its environment. Without
 * SCAF_START_PARENT, the first process that loads the layer takes the count.
 */
static unsigned scaf_run_team(void)
{
    unsigned team = scaf_settings.start_team, parent = scaf_settings.start_parent;

    if (!team)
        return 0;
    if (parent && (pid_t)parent == getppid())
        return team;
    unsetenv("SCAF_START_TEAM");
    unsetenv("SCAF_START_PARENT");
    if (parent) {
        scaf_layer_log("SCAF_START_TEAM=%u is for the child of process %u, not this one: OMP_NUM_THREADS is as "
                       "the user's", team, parent);
        return 0;
    }
    return team;
}

void scaf_start_init(const struct scaf_start_runtime *rt)
{
    const char *omp = getenv("OMP_NUM_THREADS");
    unsigned scaf_run = scaf_run_team();
    int could;

    S.rt = *rt;
    S.scaf_run_team = scaf_run;
    S.user_count = omp && omp[0] && !scaf_run;
    could = scaf_settings.memory && !scaf_settings.disable && rt->level && rt->get_threads && rt->set_threads &&
            atomic_load(&scaf_conn_state) != SCAF_CONN_INERT &&
            (scaf_run || (!S.user_count && !scaf_settings.check && scaf_settings.malleable != 1 &&
                          scaf_bound_threads() > 1));
    /* A child never inherits the lock held by a thread it does not have. Registered after the connection's
     * handlers, so that fork takes this lock first, as a touch does before it connects. */
    pthread_atfork(atfork_prepare, atfork_release, atfork_release);
    atomic_store(&scaf_start_pending, could);
}

/* The user's word as the decision reads it; the reason text of a fixed one into `user`. */
static void user_word(struct scaf_start_in *in, uint32_t *source, char *user, size_t len)
{
    uint32_t verdict = 0;

    *source = scaf_malleable_user_word(&verdict, user, len);
    in->user_malleable = *source != 0 && verdict != SCAF_VERDICT_FIXED;
    in->user_fixed = *source != 0 && verdict == SCAF_VERDICT_FIXED;
}

/* The contexts a start team is a share of: the daemon's N, else the CPUs the program could use. */
static unsigned contexts(const struct scaf_page_memory *m)
{
    if (m->cpus)
        return m->cpus;
    return (unsigned)CPU_COUNT(scaf_bound_affinity());
}

static void apply(const struct scaf_start *r, const struct scaf_start_in *in, const struct scaf_page_memory *m,
                  uint32_t user_source, const char *user)
{
    char reason[SCAF_REASON_MAX], count[16];
    uint32_t source;
    int fixed = r->keep != SCAF_KEEP_NONE;

    if (r->why == SCAF_START_APPLY) {
        /* nthreads-var of this thread, as OMP_NUM_THREADS would have set it; the variable itself for code that
         * reads it (data.table does when its package loads); the bound, so that no team and no HELLO exceed it. */
        S.rt.set_threads((int)r->team);
        snprintf(count, sizeof count, "%u", r->team);
        if (setenv("OMP_NUM_THREADS", count, 1) != 0)
            scaf_layer_log("start team: OMP_NUM_THREADS not set: %s", strerror(errno));
        scaf_bound_start(r->team);
    }
    source = r->keep == SCAF_KEEP_USER      ? user_source
             : r->keep == SCAF_KEEP_CHECKED ? (uint32_t)SCAF_SOURCE_CHECK
                                            : (uint32_t)SCAF_SOURCE_EVIDENCE;
    scaf_reason_started(r->team, contexts(m), r->keep, m->runs, user, reason, sizeof reason);
    scaf_malleable_start(r->team, fixed, source, reason);
    if (fixed)
        atomic_store_explicit(&kept_start, r->team, memory_order_relaxed);
    scaf_layer_log("%s %u of %u (the program's count was %u)",
                   r->why == SCAF_START_APPLY ? "started with" : "scaf run started it with", r->team, contexts(m),
                   in->nthreads);
}

int scaf_start_procs(int procs)
{
    unsigned team = atomic_load_explicit(&kept_start, memory_order_relaxed);

    return team && procs > 0 && (unsigned)procs > team ? (int)team : procs;
}

void scaf_start_touch_slow(int how)
{
    struct scaf_start_in in = {0};
    struct scaf_page_memory m = {0};
    struct scaf_start r;
    struct scaf_page *page;
    char user[SCAF_REASON_MAX] = "";
    uint32_t user_source = 0;
    int saved = errno;

    /* An experiment's or a TLS check's child runs one region and never speaks to the daemon. */
    if (scaf_sandbox_in_child())
        return;
    pthread_mutex_lock(&S.lock);
    if (!atomic_load(&scaf_start_pending))
        goto out;
    in.level = S.rt.level();
    /* Inside a region: the first touch at the outermost level decides. */
    if (in.level != 0)
        goto out;
    in.scaf_run_team = S.scaf_run_team;
    scaf_malleable_count_seen(&in.read, &in.set);
    in.set |= how == SCAF_TOUCH_SET;
    in.user_count = S.user_count;
    in.nthreads = (unsigned)S.rt.get_threads();
    user_word(&in, &user_source, user, sizeof user);
    r = scaf_start_decide(&in);
    if (r.why == SCAF_START_ASK) {
        /* The page decides: connect now (it reads the rules files first), as the first region would have. */
        page = scaf_page_get();
        if (!page && atomic_load(&scaf_conn_state) == SCAF_CONN_UNTRIED)
            page = scaf_client_connect();
        if (page)
            scaf_page_read_memory(page, &m);
        in.asked = 1;
        in.start_team = m.start_team;
        in.memory_runs = m.runs;
        in.memory_verdict = m.verdict;
        in.memory_source = m.source;
        user_word(&in, &user_source, user, sizeof user);
        r = scaf_start_decide(&in);
    }
    if (r.why == SCAF_START_APPLY || r.why == SCAF_START_SCAF_RUN)
        apply(&r, &in, &m, user_source, user);
    else
        scaf_layer_log("starts with its own count (%u): %s", in.nthreads, scaf_start_why_text(r.why));
    atomic_store(&scaf_start_pending, 0);
out:
    pthread_mutex_unlock(&S.lock);
    errno = saved;
}
