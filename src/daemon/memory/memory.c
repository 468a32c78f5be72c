/* memory.c — the daemon's memory of programs between runs: recalled onto a client's page at arrival, learned from it at departure, answered to MEMORY requests (docs/memory.md). */
#include "memory.h"
#include "keep.h"
#include "record.h"
#include "store.h"
#include "../client.h"
#include "../say.h"
#include "../scafd.h"
#include "../apply/pagewrite.h"
#include "../collect/foreign.h"
#include "../collect/pageread.h"
#include "scaf/clock.h"
#include "scaf/policy.h"
#include "scaf/procfs.h"

#include <math.h>
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

/*
 * Each client's peer time up to `now`: since the last count every client here
 * has run beside the running others. Called before the table changes and at
 * each referee turn before idleness is judged again (scaf_memory_turn), so
 * that a run's mean of other busy clients (docs/memory.md, "peers") weighs
 * each stretch by how long it lasted, with whom was idle over it.
 */
static void tally(struct scafd *d, double now)
{
    double dt = now - d->memory.tally_s;
    uint32_t n = 0;

    for (uint32_t i = 0; i < d->nclients; i++)
        n += running(d->clients[i]);
    if (n > 0 && dt > 0)
        for (uint32_t i = 0; i < d->nclients; i++)
            d->clients[i]->memo.peer_s += (double)(n - running(d->clients[i])) * dt;
    d->memory.tally_s = now;
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
                 (c->report.verdict == SCAF_VERDICT_UNDECIDED && c->memo.verdict == SCAF_VERDICT_FIXED);
    uint32_t team = c->report.started_with ? c->report.started_with : c->report.fixed_team;

    return fixed && team >= available;
}

/*
 * A start team's `busy`: the running clients besides `except` (NULL: all of
 * them) that will still run through much of a newcomer's run of `newcomer_s`
 * seconds starting now (scaf_start_outlasts; 0: not known, every one counts),
 * on `available` contexts. *ending (unless NULL) gets how many running ones
 * were left out as about to end.
 */
static uint32_t busy(const struct scafd *d, const struct scaf_client *except, uint32_t available, double newcomer_s,
                     uint32_t *ending)
{
    double now = scaf_clock_s(CLOCK_MONOTONIC);
    uint32_t n = 0, left = 0;

    for (uint32_t i = 0; i < d->nclients; i++) {
        const struct scaf_client *c = d->clients[i];

        if (c == except || !running(c))
            continue;
        if (scaf_start_outlasts(now - c->memo.arrived_s, c->memo.run_s, newcomer_s, holds_all(c, available)))
            n++;
        else
            left++;
    }
    if (ending)
        *ending = left;
    return n;
}

void scaf_memory_turn(struct scafd *d)
{
    tally(d, scaf_clock_s(CLOCK_MONOTONIC));
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

    for (uint32_t i = 0; i < cl->memo.npoints && i < SCAF_POINTS_MAX; i++) {
        cl->state.points.p[i] = cl->memo.points[i].team;
        cl->state.points.e[i] = cl->memo.points[i].efficiency_ppm / 1e6;
        cl->state.points.seen_ns[i] = now;
    }
    cl->memo.seeded_ns = now;
}

void scaf_memory_arrive(struct scafd *d, struct scaf_client *cl, uint64_t key)
{
    struct scaf_client_memory *mm = &cl->memo;
    struct scaf_page_recall pm = {0};
    struct scaf_memo_record *rec = NULL;
    struct scaf_memo_store *s;
    double now = scaf_clock_s(CLOCK_MONOTONIC);
    uint32_t peers = 0, available = scafd_available(d), others, ending;

    tally(d, now);
    memset(mm, 0, sizeof *mm);
    mm->key = key;
    mm->arrived_s = now;
    if (key && (s = scaf_memory_store(&d->memory, cl->uid))) {
        mm->kept = true;
        program_name(cl, mm->name, sizeof mm->name);
        rec = scaf_memo_store_find(s, key);
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
    others = busy(d, cl, available, mm->run_s, &ending);
    mm->start_team = scaf_start_team(available, others, peers, cl->max_threads);
    pm.start_team = mm->start_team;
    if (ending && d->opt.verbose)
        scaf_say("client %u (pid %d %s) starts with %u: %u running client%s expected to end early in its run of "
                 "%.1f s", cl->id, (int)cl->pid, cl->name, mm->start_team, ending, ending == 1 ? "" : "s", mm->run_s);
    scaf_page_write_memory(cl->page, &pm);
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
    if (!cl->memo.measured)
        return n;
    for (uint32_t i = 0; i < SCAF_POINTS_MAX && n < SCAF_MEMO_POINTS; i++) {
        uint32_t ppm = scaf_efficiency_to_ppm(cl->state.points.e[i]);
        bool seeded = cl->memo.seeded_ns && cl->state.points.seen_ns[i] == cl->memo.seeded_ns;

        if (cl->state.points.p[i] >= 2 && ppm > 0 && !seeded && !(now && cl->state.points.p[i] == last->eff_team))
            out[n++] = (struct scaf_memo_point){cl->state.points.p[i], ppm};
    }
    return n;
}

void scaf_memory_leave(struct scafd *d, struct scaf_client *cl)
{
    struct scaf_client_memory *mm = &cl->memo;
    struct scaf_site_memo raw[SCAF_MEMORY_SITES], sites[SCAF_MEMORY_SITES];
    struct scaf_memo_point points[SCAF_MEMO_POINTS];
    struct scaf_page_report rep = cl->report;
    struct scaf_memo_record *rec;
    struct scaf_memo_store *s;
    double now = scaf_clock_s(CLOCK_MONOTONIC), seconds;
    uint64_t evicted;
    uint32_t n;

    tally(d, now);
    if (!mm->kept || !cl->page || !(s = scaf_memory_store(&d->memory, cl->uid)))
        return;
    /* The page as it is now (the client is gone; its page is still ours to read), every field checked. */
    (void)scaf_page_read(cl->page, cl->max_threads, cl->hello_fixed, &rep);
    n = scaf_page_read_learned(cl->page, raw);
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
    rec = scaf_memo_store_add(s, mm->key, run.now_ns, d->memory.programs, &evicted);
    if (!rec) {
        scaf_say("memory of uid %u: out of memory: the run of client %u (%s) is not remembered", (unsigned)cl->uid,
                 cl->id, cl->name);
        return;
    }
    scaf_memo_learn(rec, &run);
    scaf_memo_store_changed(s);
    if (d->opt.verbose)
        scaf_say("client %u (pid %d %s) remembered as %s: %s (%s), %u runs, %u sites, %u points%s", cl->id,
                 (int)cl->pid, cl->name, rec->name, scaf_verdict_name(rec->verdict),
                 scaf_verdict_source_name(rec->source), rec->runs, rec->nsites, rec->npoints,
                 evicted ? ", the least recently seen program forgotten" : "");
}

void scaf_memory_answer(struct scafd *d, uid_t uid, const struct scaf_wire_memory *req,
                        struct scaf_wire_memory_reply *r)
{
    struct scaf_memo_store *s;
    struct scaf_memo_record *rec;
    uint64_t evicted;

    *r = (struct scaf_wire_memory_reply){.op = req->op, .status = SCAF_MEMORY_OFF};
    if (!d->memory.on) {
        /* No memory, but the share is no memory's: every runtime of a program about to start gets it. */
        if (req->op == SCAF_MEMORY_RECALL) {
            uint32_t available = scafd_available(d);

            r->start_team = scaf_start_team(available, busy(d, NULL, available, run_s(NULL), NULL), 0, req->max_threads);
        }
        return;
    }
    s = scaf_memory_store(&d->memory, uid);
    if (!s) {
        r->status = SCAF_MEMORY_FAILED;
        return;
    }
    switch (req->op) {
    case SCAF_MEMORY_RECALL:
        rec = scaf_memo_store_find(s, req->key);
        r->status = rec ? SCAF_MEMORY_OK : SCAF_MEMORY_UNKNOWN;
        if (rec) {
            r->runs = rec->runs;
            r->verdict = rec->verdict;
            r->source = rec->source;
        }
        {
            uint32_t available = scafd_available(d);

            r->start_team = scaf_start_team(available, busy(d, NULL, available, run_s(rec), NULL),
                                            rec ? scaf_memo_peers(rec) : 0, req->max_threads);
        }
        break;
    case SCAF_MEMORY_FORGET:
        r->forgotten = req->key ? scaf_memo_store_forget(s, req->key) : scaf_memo_store_forget_all(s);
        r->status = req->key && !r->forgotten ? SCAF_MEMORY_UNKNOWN : SCAF_MEMORY_OK;
        if (d->opt.verbose && r->forgotten)
            scaf_say("memory of uid %u: %u programs forgotten", (unsigned)uid, r->forgotten);
        break;
    case SCAF_MEMORY_REMEMBER:
        rec = scaf_memo_store_add(s, req->key, wall_ns(), d->memory.programs, &evicted);
        if (!rec) {
            r->status = SCAF_MEMORY_FAILED;
            break;
        }
        scaf_memo_remember(rec, req->verdict, req->name, wall_ns());
        scaf_memo_store_changed(s);
        r->status = SCAF_MEMORY_OK;
        if (d->opt.verbose)
            scaf_say("memory of uid %u: %s recorded %s by scaf check", (unsigned)uid, rec->name,
                     scaf_verdict_name(rec->verdict));
        break;
    default:
        r->status = SCAF_MEMORY_FAILED; /* the codec passes known ops only */
        break;
    }
}
