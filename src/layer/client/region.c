/* region.c — an outermost region's entry and exit, for any runtime: gang turn, counters, verdict, team, estimator. */
#include "region.h"

#include <errno.h>

#include "../core/blascount.h"
#include "../core/blasobj.h"
#include "../core/permit.h"
#include "../core/say.h"
#include "../core/site.h"
#include "../core/team.h"
#include "../malleable/reason.h"
#include "../malleable/tlscheck.h"
#include "../sandbox/sandbox.h"
#include "client.h"
#include "stall.h"

static int (*runtime_level)(void);

void scaf_region_init(const struct scaf_runtime *rt)
{
    struct scaf_start_runtime st = {rt->level, rt->get_threads, rt->set_threads};

    runtime_level = rt->level;
    scaf_client_init(rt->max_threads, rt->unusable);
    scaf_start_init(&st);
}

/* The verdict wants this site's thread-local data checked before it runs: start the pair of runs. */
static void start_tls_check(struct scaf_region_rec *r, void (*fn)(void *), void *data, unsigned flags)
{
    void (*serial)(void *) = r->serial;
    void *sdata = r->serial_data;

    if (!serial && (flags & SCAF_REGION_FORKABLE)) {
        serial = r->run ? r->run : fn;
        sdata = data;
    }
    /* The program's own frames start above the wrapper's: the record lives in its frame. */
    (void)scaf_tlscheck_start(r->mall.site, fn, serial, sdata, r + 1);
}

/*
 * Whether a site's code is a BLAS library's (looked up once per site; the object's answer is cached in
 * core/blasobj.c, which also gives OpenBLAS's count to read). A full site table asks every time.
 */
static int library_site(struct scaf_site *site, void (*fn)(void *), const int **cpu_number)
{
    uint32_t f = site ? atomic_load_explicit(&site->flags, memory_order_relaxed) : 0;
    int kind;

    *cpu_number = NULL;
    if ((f & SCAF_SITE_LIB_CHECKED) && !(f & SCAF_SITE_LIBRARY))
        return 0;
    kind = scaf_blasobj_of((const void *)fn, cpu_number);
    if (site && !(f & SCAF_SITE_LIB_CHECKED)) {
        f = atomic_fetch_or_explicit(&site->flags, SCAF_SITE_LIB_CHECKED | (kind ? SCAF_SITE_LIBRARY : 0u),
                                     memory_order_relaxed);
        if (kind && !(f & SCAF_SITE_LIB_CHECKED) && scaf_layer_verbose) {
            char what[96];

            scaf_reason_describe((void *)fn, what, sizeof what);
            scaf_layer_log("region %s is %s's: it keeps the team it asks for, and %s follows the share between "
                           "calls",
                           what, scaf_blasobj_kind_name(kind), scaf_blasobj_kind_name(kind));
        }
    }
    return kind != SCAF_BLASOBJ_NONE;
}

/* Connected: the verdict says how the team is chosen, the estimator what it needs, team.c the number. */
unsigned scaf_region_begin_live(struct scaf_page *p, struct scaf_region_rec *r, void (*fn)(void *),
                                void *data, unsigned num_threads, unsigned flags)
{
    struct scaf_team_in in = {.live = 1, .num_threads = num_threads};
    struct scaf_site *site;
    struct scaf_team t;
    const int *cpu_number;
    int fresh = 0;
    uint32_t idle;

    if (__builtin_expect(scaf_sandbox_in_child(), 0)) {
        in.in_child = 1;
        return scaf_team_decide(&in).request;
    }
    if (runtime_level() != 0) {
        in.nested = 1;
        return scaf_team_decide(&in).request;
    }
    /* Connected before the program touched OpenMP (a BLAS pool's helper did): its first region is the touch. */
    scaf_start_touch(SCAF_TOUCH_REGION);
    if (__builtin_expect(scaf_page_gang_waiting(p), 0))
        scaf_page_wait_turn(p);
    /* Idle (the daemon gave its share away): say so once and run at once, with the team on the page. */
    idle = scaf_page_idle(p);
    if (__builtin_expect(idle != 0, 0))
        scaf_conn_wake(idle);
    scaf_page_count_region(p);
    r->live = 1;
    r->stall = -1;
    site = scaf_site_lookup(fn, &fresh);
    if (__builtin_expect(library_site(site, fn, &cpu_number), 0)) {
        /* A BLAS library's region keeps the team it asks for; the library follows the share through the count
         * it read before it split its work (core/blascount.h). No verdict, no estimator, no rigid team. */
        scaf_malleable_region_library(&r->mall, site, fn);
        in.mode = SCAF_TEAM_LIBRARY;
        in.bound = scaf_malleable_bound();
        in.lib_team = scaf_blascount_asked(cpu_number);
        t = scaf_team_decide(&in);
        goto decided;
    }
    /* Only for the thread that inserted it: the memory may start it settled. No cost per region. */
    if (__builtin_expect(fresh, 0))
        scaf_malleable_site_new(site, fn, p);
    if (scaf_malleable_region_begin(&r->mall, site, fn, num_threads, (flags & SCAF_REGION_STRICT) != 0, &in) ==
        SCAF_TEAM_STEER)
        in.page_threads = scaf_page_threads(p);
    else if (__builtin_expect(r->mall.check_due, 0))
        start_tls_check(r, fn, data, flags);
    t = scaf_team_decide(&in);
    if (in.mode == SCAF_TEAM_STEER) {
        /* The estimator sees the steered team and may ask for a mode; team.c has the last word. */
        in.est = scaf_estimate_begin(&r->est, site, fn, r->run, data, t.team, (flags & SCAF_REGION_FORKABLE) != 0);
        r->est_on = 1;
        if (in.est != SCAF_TEAM_EST_PLAIN)
            t = scaf_team_decide(&in);
        /* Fewer threads than the runtime would have given: the stall net watches it while it runs. */
        r->stall = (signed char)scaf_stall_begin(fn, site, t.team, num_threads ? num_threads : in.bound);
    }
decided:
    r->team = t.team;
    r->permit = r->team > 1 && atomic_load_explicit(&scaf_permit_any, memory_order_relaxed);
    if (r->permit)
        scaf_permit_note_region((int)r->team - 1);
    scaf_page_set_last_team(p, t.team);
    /* A clause other than the default, or a fixed team: a team the daemon must place, not shrink.
     * First looks are not reported: one instance each, and a steered client is never confined. */
    if (in.mode == SCAF_TEAM_KEEP)
        scaf_page_note_rigid(p, t.team);
    return t.request;
}

/* Not connected yet (or in a forked child): the adapter's initialisation, maybe a connect, then decide. */
unsigned scaf_region_begin_slow(struct scaf_region_rec *r, void (*fn)(void *), void *data,
                                unsigned num_threads, unsigned flags, void (*init)(void))
{
    struct scaf_page *p;
    int saved;

    init();
    saved = errno;

    if (scaf_sandbox_in_child()) {
        struct scaf_team_in in = {.in_child = 1, .num_threads = num_threads};
        return scaf_team_decide(&in).request;
    }
    /* The first region may be the program's first touch of OpenMP: a start team is decided before it opens. */
    if (runtime_level() == 0)
        scaf_start_touch(SCAF_TOUCH_REGION);
    p = scaf_page_get();
    if (!p && atomic_load(&scaf_conn_state) == SCAF_CONN_UNTRIED && runtime_level() == 0)
        p = scaf_client_connect();
    errno = saved;
    if (!p)
        return num_threads;
    return scaf_region_begin_live(p, r, fn, data, num_threads, flags);
}

void scaf_region_end_live(struct scaf_region_rec *r)
{
    scaf_stall_end(r->stall);
    if (r->permit)
        scaf_permit_note_region(1 - (int)r->team);
    scaf_malleable_region_end(&r->mall, r->team);
    if (r->est_on)
        scaf_estimate_end(&r->est);
}
