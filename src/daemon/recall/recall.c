/* recall.c — the recall step: a client's program recalled onto its page at arrival, its run learned from the page at departure, MEMORY requests answered, the remembered curve handed to decide and shown by status (docs/memory.md). */
#include "recall.h"
#include "../clientrec.h"
#include "../say.h"
#include "../apply/pagewrite.h"
#include "../collect/foreign.h"
#include "../collect/pageread.h"
#include "../memory/keep.h"
#include "../memory/memo.h"
#include "../memory/store.h"
#include "scaf/clock.h"
#include "scaf/policy.h"
#include "scaf/procfs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int64_t wall_ns(void)
{
    return (int64_t)scaf_clock_ns(CLOCK_REALTIME);
}

/* Whether a client counts as running now: idle ones (decide/idle.c) hold nothing and are nobody's peer. */
static bool running(const struct scaf_client *c)
{
    return !c->idle.idle;
}

/* Whether a running client of program `group` is in the list. */
static bool program_runs(struct scaf_client *const *clients, uint32_t nclients, uint32_t group)
{
    for (uint32_t i = 0; i < nclients; i++)
        if (running(clients[i]) && clients[i]->group == group)
            return true;
    return false;
}

/*
 * Each client's peer time up to `now`: since the last count every client here
 * has run beside the running others. Called before the table changes and at
 * each referee turn before idleness is judged again (scaf_recall_turn), so
 * that a run's mean of other busy clients (docs/memory.md, "peers") weighs
 * each stretch by how long it lasted, with whom was idle over it.
 */
static void tally(struct scaf_recall *rc, struct scaf_client *const *clients, uint32_t nclients, double now)
{
    double dt = now - rc->tally_s;
    uint32_t programs = 0;

    if (dt > 0) {
        /* The running programs, each counted once however many of its clients run (docs/policy.md, "Programs,
         * not processes"): a pool's eight workers are one peer, as a static split counts them. */
        for (uint32_t i = 0; i < nclients; i++)
            programs += running(clients[i]) && !program_runs(clients, i, clients[i]->group);
        for (uint32_t i = 0; i < nclients && programs > 0; i++)
            clients[i]->recall.peer_s += (double)(programs - program_runs(clients, nclients, clients[i]->group)) * dt;
    }
    rc->tally_s = now;
}

/* A record's run time in seconds (0: not known). */
static double run_s(const struct scaf_memo_record *rec)
{
    return rec ? rec->run_ms / 1e3 : 0.0;
}

/*
 * Whether a client keeps a team that holds every available context: fixed by
 * its page (or by its memory, while the page has not decided), and its team
 * (the one it started with, else the one it reported, else its max_threads)
 * at least `available`.
 */
static bool holds_all(const struct scaf_client *c, uint32_t available)
{
    bool fixed = c->report.verdict == SCAF_VERDICT_FIXED ||
                 (c->report.verdict == SCAF_VERDICT_UNDECIDED && c->recall.verdict == SCAF_VERDICT_FIXED);
    uint32_t team = c->report.started_with ? c->report.started_with : c->report.fixed_team;

    return fixed && team >= available;
}

/* Whether c counts for a newcomer's start team: another client, running, that will run through much of it. */
static bool counts(const struct scaf_client *c, const struct scaf_client *newcomer, uint32_t available,
                   double newcomer_s, double now)
{
    return c != newcomer && running(c) &&
           scaf_start_outlasts(now - c->recall.arrived_s, c->recall.run_s, newcomer_s, holds_all(c, available));
}

/*
 * A start team's `busy`: the running programs besides the program of
 * `except` (NULL: all of them) that will still run through much of a
 * newcomer's run of `newcomer_s` seconds starting now (scaf_start_outlasts;
 * 0: not known, every one counts), on `available` contexts; a program counts
 * once, for any of its clients that does. *siblings (unless NULL) gets the
 * running clients of except's own program that count (its pool's other
 * workers), which split its program's share with it; *ending (unless NULL)
 * how many running clients were left out as about to end.
 */
static uint32_t busy(struct scaf_client *const *clients, uint32_t nclients, const struct scaf_client *except,
                     uint32_t available, double newcomer_s, uint32_t *siblings, uint32_t *ending)
{
    double now = scaf_clock_s(CLOCK_MONOTONIC);
    uint32_t n = 0, left = 0, kin = 0;

    for (uint32_t i = 0; i < nclients; i++) {
        const struct scaf_client *c = clients[i];
        bool first = true;

        if (!counts(c, except, available, newcomer_s, now)) {
            left += c != except && running(c);
            continue;
        }
        if (except && c->group == except->group) {
            kin++;
            continue;
        }
        /* A program counts once: for the first of its clients that counts. */
        for (uint32_t j = 0; first && j < i; j++)
            first = clients[j]->group != c->group || !counts(clients[j], except, available, newcomer_s, now);
        n += first;
    }
    if (siblings)
        *siblings = kin;
    if (ending)
        *ending = left;
    return n;
}

void scaf_recall_turn(struct scaf_recall *rc, struct scaf_client *const *clients, uint32_t n)
{
    tally(rc, clients, n, scaf_clock_s(CLOCK_MONOTONIC));
}

/* How status names the program: exe and script basenames from /proc/PID/cmdline (collect/foreign.c's rule). */
static void program_name(const struct scaf_client *cl, char *out, size_t len)
{
    char cmdline[512];
    ssize_t n = scaf_procfs_read_pid(cl->pid, "cmdline", cmdline, sizeof cmdline);

    if (n > 0)
        scaf_foreign_cmd(cmdline, (size_t)n, out, len);
    if (n <= 0 || !out[0])
        snprintf(out, len, "%s", cl->name);
}

/* The remembered curve seeds the points the policy state keeps, so a first measured report finds them. */
static void seed_points(struct scaf_client *cl)
{
    uint64_t now = scaf_clock_ns(CLOCK_MONOTONIC);

    for (uint32_t i = 0; i < cl->recall.npoints && i < SCAF_POINTS_MAX; i++) {
        cl->state.points.p[i] = cl->recall.points[i].team;
        cl->state.points.e[i] = cl->recall.points[i].efficiency_ppm / 1e6;
        cl->state.points.seen_ns[i] = now;
    }
    cl->recall.seeded_ns = now;
}

void scaf_recall_arrive(struct scaf_recall *rc, struct scaf_client *const *clients, uint32_t n, uint32_t available,
                        struct scaf_client *cl, uint64_t key)
{
    struct scaf_recall_client *mm = &cl->recall;
    struct scaf_page_recall pm = {0};
    struct scaf_memo_record *rec = NULL;
    struct scaf_store *s;
    double now = scaf_clock_s(CLOCK_MONOTONIC);
    uint32_t peers = 0, others, ending, kin;

    tally(rc, clients, n, now);
    memset(mm, 0, sizeof *mm);
    mm->key = key;
    mm->arrived_s = now;
    if (key && (s = scaf_keep_store(rc->keep, cl->uid))) {
        mm->kept = true;
        program_name(cl, mm->name, sizeof mm->name);
        rec = scaf_store_find(s, key);
    }
    if (rec) {
        /* Seen now: a program that runs is the last to be evicted (the file learns it at the next write). */
        int64_t t = wall_ns();
        if (t > rec->last_seen_ns)
            rec->last_seen_ns = t;
        mm->runs = rec->runs;
        mm->verdict = rec->verdict;
        mm->source = rec->source;
        mm->npoints = rec->npoints;
        memcpy(mm->points, rec->points, sizeof mm->points);
        peers = scaf_memo_peers(rec);
        mm->run_s = run_s(rec);
        pm = (struct scaf_page_recall){
            .runs = rec->runs, .verdict = rec->verdict, .source = rec->source,
            .nsites = rec->nsites, .sites = rec->sites,
        };
        seed_points(cl);
    }
    /* Every client gets its share at arrival; the layer applies it when the program keeps its team. */
    others = busy(clients, n, cl, available, mm->run_s, &kin, &ending);
    /* Its program's share, split with the clients of its program already running (a static split's count for
     * a pool, divided between its workers). */
    mm->start_team = scaf_start_team(available / (1 + kin), others, peers, cl->max_threads);
    pm.start_team = mm->start_team;
    if (ending && rc->verbose)
        scaf_say("client %u (pid %d %s) starts with %u: %u running client%s expected to end early in its run of "
                 "%.1f s", cl->id, (int)cl->pid, cl->name, mm->start_team, ending, ending == 1 ? "" : "s", mm->run_s);
    scaf_pagewrite_memory(cl->page, &pm);
}

/*
 * The points of the curve measured in this run: its last report as the page
 * says it now (a short run may leave before a turn has seen it), then the
 * points the policy state kept at other team sizes, less the ones the memory
 * seeded that this run did not measure again (a point measured again has a
 * later time). None when it measured nothing. Writing a seeded point back
 * kept a curve that said "does not scale" beside the run's wider point that
 * said otherwise, and the seeded one, at the larger team, stood in again.
 */
static uint32_t measured_points(const struct scaf_client *cl, const struct scaf_page_report *last,
                                struct scaf_memo_point *out)
{
    bool now = last->estimate >= SCAF_ESTIMATE_MEASURED && last->eff_team >= 2 && last->efficiency > 0;
    uint32_t n = 0;

    if (now)
        out[n++] = (struct scaf_memo_point){last->eff_team, scaf_efficiency_to_ppm(last->efficiency)};
    if (!cl->recall.measured)
        return n;
    for (uint32_t i = 0; i < SCAF_POINTS_MAX && n < SCAF_MEMO_POINTS; i++) {
        uint32_t ppm = scaf_efficiency_to_ppm(cl->state.points.e[i]);
        bool seeded = cl->recall.seeded_ns && cl->state.points.seen_ns[i] == cl->recall.seeded_ns;

        if (cl->state.points.p[i] >= 2 && ppm > 0 && !seeded && !(now && cl->state.points.p[i] == last->eff_team))
            out[n++] = (struct scaf_memo_point){cl->state.points.p[i], ppm};
    }
    return n;
}

void scaf_recall_leave(struct scaf_recall *rc, struct scaf_client *const *clients, uint32_t nclients,
                       struct scaf_client *cl)
{
    struct scaf_recall_client *mm = &cl->recall;
    struct scaf_site_memo raw[SCAF_MEMORY_SITES], sites[SCAF_MEMORY_SITES];
    struct scaf_memo_point points[SCAF_MEMO_POINTS];
    struct scaf_page_report rep = cl->report;
    struct scaf_memo_record *rec;
    struct scaf_store *s;
    double now = scaf_clock_s(CLOCK_MONOTONIC), seconds;
    uint64_t evicted;
    uint32_t n;

    tally(rc, clients, nclients, now);
    if (!mm->kept || !cl->page || !(s = scaf_keep_store(rc->keep, cl->uid)))
        return;
    /* The page as it is now (the client is gone; its page is still ours to read), every field checked. */
    (void)scaf_pageread_report(cl->page, cl->max_threads, cl->hello_fixed, &rep);
    n = scaf_pageread_learned(cl->page, raw);
    seconds = now - mm->arrived_s;
    struct scaf_memo_run run = {
        .now_ns = wall_ns(),
        .verdict = rep.verdict,
        .source = rep.source,
        .reason = rep.reason,
        .name = mm->name,
        .sites = sites,
        .nsites = scaf_memo_sites_clean(sites, raw, n),
        .points = points,
        .npoints = measured_points(cl, &rep, points),
        .peers = seconds > 0 ? mm->peer_s / seconds : 0.0,
        .seconds = seconds,
    };
    rec = scaf_store_add(s, mm->key, run.now_ns, rc->keep->programs, &evicted);
    if (!rec) {
        scaf_say("memory of uid %u: out of memory: the run of client %u (%s) is not remembered", (unsigned)cl->uid,
                 cl->id, cl->name);
        return;
    }
    scaf_memo_learn(rec, &run);
    scaf_store_changed(s);
    if (rc->verbose)
        scaf_say("client %u (pid %d %s) remembered as %s: %s (%s), %u runs, %u sites, %u points%s", cl->id,
                 (int)cl->pid, cl->name, rec->name, scaf_pageread_verdict_name(rec->verdict),
                 scaf_pageread_source_name(rec->source), rec->runs, rec->nsites, rec->npoints,
                 evicted ? ", the least recently seen program forgotten" : "");
}

void scaf_recall_answer(struct scaf_recall *rc, struct scaf_client *const *clients, uint32_t n, uint32_t available,
                        uid_t uid, const struct scaf_wire_memory *req, struct scaf_wire_memory_reply *r)
{
    struct scaf_store *s;
    struct scaf_memo_record *rec;
    uint64_t evicted;

    *r = (struct scaf_wire_memory_reply){.op = req->op, .status = SCAF_MEMORY_OFF};
    if (!rc->keep->on) {
        /* No memory, but the share is no memory's: every runtime of a program about to start gets it. */
        if (req->op == SCAF_MEMORY_RECALL)
            r->start_team = scaf_start_team(available, busy(clients, n, NULL, available, run_s(NULL), NULL, NULL), 0,
                                            req->max_threads);
        return;
    }
    s = scaf_keep_store(rc->keep, uid);
    if (!s) {
        r->status = SCAF_MEMORY_FAILED;
        return;
    }
    switch (req->op) {
    case SCAF_MEMORY_RECALL:
        rec = scaf_store_find(s, req->key);
        r->status = rec ? SCAF_MEMORY_OK : SCAF_MEMORY_UNKNOWN;
        if (rec) {
            r->runs = rec->runs;
            r->verdict = rec->verdict;
            r->source = rec->source;
        }
        r->start_team = scaf_start_team(available, busy(clients, n, NULL, available, run_s(rec), NULL, NULL),
                                        rec ? scaf_memo_peers(rec) : 0, req->max_threads);
        break;
    case SCAF_MEMORY_FORGET:
        r->forgotten = req->key ? scaf_store_forget(s, req->key) : scaf_store_forget_all(s);
        r->status = req->key && !r->forgotten ? SCAF_MEMORY_UNKNOWN : SCAF_MEMORY_OK;
        if (rc->verbose && r->forgotten)
            scaf_say("memory of uid %u: %u programs forgotten", (unsigned)uid, r->forgotten);
        break;
    case SCAF_MEMORY_REMEMBER:
        rec = scaf_store_add(s, req->key, wall_ns(), rc->keep->programs, &evicted);
        if (!rec) {
            r->status = SCAF_MEMORY_FAILED;
            break;
        }
        scaf_memo_remember(rec, req->verdict, req->name, wall_ns());
        scaf_store_changed(s);
        r->status = SCAF_MEMORY_OK;
        if (rc->verbose)
            scaf_say("memory of uid %u: %s recorded %s by scaf check", (unsigned)uid, rec->name,
                     scaf_pageread_verdict_name(rec->verdict));
        break;
    default:
        r->status = SCAF_MEMORY_FAILED; /* the codec passes known ops only */
        break;
    }
}

/* Whether the remembered curve stands in: it has points, and no report of this run was measured yet. */
static bool stands_in(const struct scaf_recall_client *m)
{
    return !m->measured && m->npoints > 0;
}

struct scaf_recall_curve scaf_recall_curve(struct scaf_client *c)
{
    struct scaf_recall_client *m = &c->recall;

    /* The remembered curve stands in until the first measured report, then never again. */
    if (c->report.estimate >= SCAF_ESTIMATE_MEASURED)
        m->measured = true;
    if (c->report.estimate >= SCAF_ESTIMATE_MEASURED && c->report.eff_team >= 2)
        m->measured_wide = true;
    return (struct scaf_recall_curve){
        .points = stands_in(m) ? m->points : NULL,
        .npoints = stands_in(m) ? m->npoints : 0,
        .prior = m->npoints > 0 && !m->measured_wide,
    };
}

void scaf_recall_stood_in(struct scaf_client *c, uint32_t team, double efficiency)
{
    struct scaf_recall_client *m = &c->recall;

    m->standin_team = stands_in(m) ? team : 0;
    m->standin_e = stands_in(m) ? efficiency : 0.0;
}

struct scaf_recall_view scaf_recall_view(const struct scaf_client *c)
{
    const struct scaf_recall_client *m = &c->recall;
    /* A report measured since the last turn ends the stand-in now, before decide has seen it. */
    bool standin = m->standin_team > 0 && !m->measured && c->report.estimate < SCAF_ESTIMATE_MEASURED;

    return (struct scaf_recall_view){
        .standin = standin,
        .eff_team = standin ? m->standin_team : 0,
        .efficiency = standin ? m->standin_e : 0.0,
        .runs = m->runs,
        .verdict = m->verdict,
        .source = m->source,
        .run_s = m->run_s,
        .start_team = m->start_team,
    };
}
