/* test_daemon_turn.c — the decide stage's one entry point (decide/turn.c): the same decision as its steps called one by one, one probe at a time in a program, the states it steps, and its errors. */
#include "../../src/daemon/collect/pageread.h"
#include "../../src/daemon/decide/idle.h"
#include "../../src/daemon/decide/mirror.h"
#include "../../src/daemon/decide/prepare.h"
#include "../../src/daemon/decide/referee.h"
#include "../../src/daemon/decide/rigid.h"
#include "../../src/daemon/decide/turn.h"
#include "scaf/policy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define N 4

/* What the daemon knows of its clients: pages, last allocations, and the states kept between turns. */
struct table {
    struct scaf_page_report rep[N];
    struct scaf_referee_alloc alloc[N];
    struct scaf_rigid rigid[N];
    struct scaf_client_state state[N];
    struct scaf_idle idle[N];
    struct scaf_memo_point memo[N][2];
};

/* Row by row: each client's page, and whether the turn has an allocation of it from before. */
struct row {
    const char *name;
    uint32_t available, cpus, n;
    bool gang;
    struct {
        uint32_t max_threads, verdict, fixed_team, eff_team, last_team, regions, runtime_team;
        double e;
        uint32_t nmemo; /* a remembered curve: (4, 0.9) and (8, 0.6) */
    } c[N];
};

static void fill(struct table *t, const struct row *r, struct scaf_decide_client *dc, uint64_t now)
{
    for (uint32_t i = 0; i < r->n; i++) {
        scaf_pageread_init(&t->rep[i], r->c[i].max_threads);
        t->rep[i].verdict = r->c[i].verdict;
        t->rep[i].fixed_team = r->c[i].fixed_team ? r->c[i].fixed_team : r->c[i].max_threads;
        t->rep[i].eff_team = r->c[i].eff_team;
        t->rep[i].efficiency = r->c[i].eff_team ? r->c[i].e : -1.0;
        t->rep[i].estimate = r->c[i].eff_team ? SCAF_ESTIMATE_MEASURED : SCAF_ESTIMATE_NONE;
        t->rep[i].last_team = r->c[i].last_team;
        t->rep[i].regions = r->c[i].regions;
        t->rep[i].runtime_team = r->c[i].runtime_team;
        t->memo[i][0] = (struct scaf_memo_point){4, 900000};
        t->memo[i][1] = (struct scaf_memo_point){8, 600000};
        dc[i] = (struct scaf_decide_client){
            .in = {.report = &t->rep[i], .max_threads = r->c[i].max_threads, .alloc = NULL, .uid = 1000,
                   .remembered = r->c[i].nmemo ? t->memo[i] : NULL, .nremembered = r->c[i].nmemo,
                   .prior = r->c[i].nmemo > 0, .cpu_ok = true, .cpu_ticks = now / 10000000u},
            .rigid = &t->rigid[i],
            .state = &t->state[i],
            .idle = &t->idle[i],
        };
    }
}

/* The entry point against the steps it is made of (prepare each client, then the referee): the same allocations,
 * the same states after, turn after turn. */
static void same_as_steps(void)
{
    static const struct row rows[] = {
        {"two malleable", 16, 16, 2, true, {{16, 0, 0, 8, 8, 5, 0, 0.9, 0}, {16, 0, 0, 8, 8, 5, 0, 0.5, 0}}},
        {"fixed pair that does not fit: gangs", 16, 16, 2, true,
         {{16, SCAF_VERDICT_FIXED, 16, 0, 16, 3, 0, 0, 0}, {16, SCAF_VERDICT_FIXED, 16, 0, 16, 3, 0, 0, 0}}},
        {"fixed beside malleable, gangs off", 16, 16, 2, false,
         {{16, SCAF_VERDICT_FIXED, 16, 0, 16, 3, 0, 0, 0}, {16, 0, 0, 4, 4, 9, 0, 0.8, 0}}},
        {"a remembered curve stands in", 32, 32, 3, true,
         {{32, 0, 0, 0, 0, 0, 0, 0, 2}, {32, 0, 0, 16, 16, 40, 0, 0.95, 0}, {32, 0, 0, 0, 0, 0, 0, 0, 0}}},
        {"a runtime's pool placed like a fixed team", 16, 16, 3, true,
         {{16, 0, 0, 0, 4, 2, 4, 0, 0}, {16, 0, 0, 8, 8, 5, 0, 0.7, 0}, {16, SCAF_VERDICT_FIXED, 8, 0, 8, 2, 0, 0, 0}}},
        {"foreign load", 10, 16, 4, true,
         {{16, 0, 0, 2, 2, 1, 0, 0.9, 0}, {16, 0, 0, 2, 2, 1, 0, 0.3, 0}, {16, 0, 0, 0, 0, 0, 0, 0, 0},
          {4, SCAF_VERDICT_FIXED, 4, 0, 4, 1, 0, 0, 0}}},
    };
    const struct scaf_policy *pol = scaf_policy_lookup("speedup");
    struct scaf_idle_rule rule = scaf_idle_rule_default(100);
    static struct table a, b;
    static struct scaf_referee_scratch sa, sb;
    int cpu[16];

    for (int i = 0; i < 16; i++)
        cpu[i] = i;
    for (size_t t = 0; t < sizeof rows / sizeof rows[0]; t++) {
        const struct row *r = &rows[t];
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        for (int k = 0; k < 6; k++) {
            uint64_t now = 1000000000ull + (uint64_t)k * 250000000ull;
            struct scaf_decide_client dc[N];
            struct scaf_referee_client pa[N], pb[N];
            struct scaf_referee_alloc oa[N], ob[N];
            struct scaf_decide_in in = {
                .turn = {.now_ns = now, .probe_interval_ns = 10000000000ull, .chunk = 1, .cpus = r->cpus,
                         .idle_rule = &rule},
                .available = r->available, .cpu_list = cpu, .cpu_list_len = 16, .gang = r->gang,
                .kernel_places = true, .nclients = r->n, .clients = dc,
            };
            struct scaf_referee_snapshot snap = {
                .available = r->available, .cpus = r->cpus, .chunk = 1, .nclients = r->n, .clients = pb,
                .cpu_list = cpu, .cpu_list_len = 16, .gang = r->gang, .kernel_places = true,
            };

            memset(oa, 0, sizeof oa); /* memcmp below: the padding too */
            memset(ob, 0, sizeof ob);
            fill(&a, r, dc, now);
            for (uint32_t i = 0; i < r->n; i++)
                dc[i].in.alloc = k ? &a.alloc[i] : NULL;
            CHECK(scaf_decide_turn(pol, &in, pa, &sa, oa) == 0, "%s: turn %d failed (%s)", r->name, k,
                  strerror(errno));
            fill(&b, r, dc, now);
            for (uint32_t i = 0; i < r->n; i++) {
                dc[i].in.alloc = k ? &b.alloc[i] : NULL;
                scaf_prepare_client(&dc[i].in, &b.rigid[i], &b.state[i], &b.idle[i], &in.turn, &pb[i]);
            }
            CHECK(scaf_referee_decide(pol, &snap, &sb, ob) == 0, "%s: steps failed", r->name);
            for (uint32_t i = 0; i < r->n; i++) {
                CHECK(memcmp(&oa[i], &ob[i], sizeof oa[i]) == 0, "%s, turn %d, client %u: threads %u/%u share %u/%u "
                      "gang %u/%u control %u/%u", r->name, k, i, oa[i].threads, ob[i].threads, oa[i].share,
                      ob[i].share, oa[i].gang_slot, ob[i].gang_slot, oa[i].control, ob[i].control);
                CHECK(pa[i].pol.eff_team == pb[i].pol.eff_team && pa[i].pol.efficiency == pb[i].pol.efficiency,
                      "%s, turn %d, client %u: prepared differently", r->name, k, i);
                a.alloc[i] = oa[i];
                b.alloc[i] = ob[i];
            }
            CHECK(memcmp(a.state, b.state, r->n * sizeof a.state[0]) == 0, "%s, turn %d: policy states differ",
                  r->name, k);
            CHECK(memcmp(a.idle, b.idle, r->n * sizeof a.idle[0]) == 0, "%s, turn %d: idle states differ", r->name, k);
        }
        if (t == 1)
            CHECK(a.alloc[0].gang_slot == 1 && a.alloc[1].gang_slot == 2, "%s: gangs %u %u", r->name,
                  a.alloc[0].gang_slot, a.alloc[1].gang_slot);
        if (t == 3)
            CHECK(a.alloc[0].threads >= 2, "%s: the remembered curve gave %u", r->name, a.alloc[0].threads);
        if (t == 4)
            CHECK(a.alloc[0].threads == 4, "%s: the pool's team is %u", r->name, a.alloc[0].threads);
    }
    scaf_referee_scratch_free(&sa);
    scaf_referee_scratch_free(&sb);
}

/*
 * A pool of three workers (program 5) and a job (a program of its own), each held at one thread on 4 contexts:
 * their up-probes come due in the same turn. The pool's are taken one at a time, each in turn (put off, not
 * dropped); the job's, another program's, alongside.
 */
static void one_probe_per_program(void)
{
    const struct scaf_policy *pol = scaf_policy_lookup("speedup");
    struct scaf_idle_rule rule = scaf_idle_rule_default(100);
    static struct table t;
    static struct scaf_referee_scratch s;
    struct row r = {"pool", 4, 4, 4, false,
                    {{4, 0, 0, 1, 1, 9, 0, 1.0, 0}, {4, 0, 0, 1, 1, 9, 0, 1.0, 0}, {4, 0, 0, 1, 1, 9, 0, 1.0, 0},
                     {4, 0, 0, 1, 1, 9, 0, 1.0, 0}}};
    uint32_t probed[N] = {0}, most = 0, together = 0;

    memset(&t, 0, sizeof t);
    for (int k = 0; k < 120; k++) {
        uint64_t now = 1000000000ull + (uint64_t)k * 250000000ull;
        struct scaf_decide_client dc[N];
        struct scaf_referee_client prep[N];
        struct scaf_referee_alloc out[N];
        struct scaf_decide_in in = {
            .turn = {.now_ns = now, .probe_interval_ns = 2000000000ull, .chunk = 1, .cpus = 4, .idle_rule = &rule},
            .available = 4, .nclients = 4, .clients = dc,
        };
        uint32_t pool = 0;

        fill(&t, &r, dc, now);
        for (uint32_t i = 0; i < 4; i++) {
            dc[i].in.group = i < 3 ? 5 : 0;
            /* Held at one thread: the allocation the page was last given, whatever the probe asked. */
            t.alloc[i] = (struct scaf_referee_alloc){.share = 1, .threads = 1, .malleable = true};
            dc[i].in.alloc = k ? &t.alloc[i] : NULL;
        }
        CHECK(scaf_decide_turn(pol, &in, prep, &s, out) == 0, "turn %d failed (%s)", k, strerror(errno));
        for (uint32_t i = 0; i < 4; i++) {
            if (!prep[i].pol.probe)
                continue;
            probed[i]++;
            pool += i < 3;
        }
        most = pool > most ? pool : most;
        together += pool && prep[3].pol.probe;
    }
    CHECK(most == 1, "the pool's workers were probed %u at a time", most);
    CHECK(probed[0] && probed[1] && probed[2], "each worker was probed in turn: %u %u %u", probed[0], probed[1],
          probed[2]);
    CHECK(together > 0, "the job, a program of its own, was probed alongside the pool");
    scaf_referee_scratch_free(&s);
}

/* Bad arguments: EINVAL, nothing stepped, out[] untouched. */
static void errors(void)
{
    const struct scaf_policy *pol = scaf_policy_lookup("equipartition");
    static struct table t;
    static struct scaf_referee_scratch s;
    struct scaf_decide_client dc[1];
    struct scaf_referee_client prep[1];
    struct scaf_referee_alloc out[1];
    struct row r = {"one", 4, 4, 1, true, {{4, 0, 0, 0, 0, 0, 0, 0, 0}}};
    struct scaf_decide_in in = {.turn = {.now_ns = 1, .chunk = 1, .cpus = 4}, .available = 4, .nclients = 1,
                                .clients = dc};

    memset(&t, 0, sizeof t);
    fill(&t, &r, dc, 1);
    memset(out, 0x5a, sizeof out);
    dc[0].state = NULL;
    errno = 0;
    CHECK(scaf_decide_turn(pol, &in, prep, &s, out) == -1 && errno == EINVAL, "a NULL state: EINVAL");
    CHECK(out[0].share == 0x5a5a5a5a && !t.idle[0].started, "a refused turn steps and writes nothing");
    dc[0].state = &t.state[0];
    errno = 0;
    CHECK(scaf_decide_turn(NULL, &in, prep, &s, out) == -1 && errno == EINVAL, "no policy: EINVAL");
    CHECK(scaf_decide_turn(pol, NULL, prep, &s, out) == -1 && errno == EINVAL, "no input: EINVAL");
    CHECK(scaf_decide_turn(pol, &in, prep, &s, out) == 0 && out[0].threads == 4, "one client: the machine");
    in.nclients = 0;
    CHECK(scaf_decide_turn(pol, &in, NULL, &s, NULL) == 0, "no client: nothing to do");
    scaf_referee_scratch_free(&s);
}

/* The sizes the simulator's ctypes mirror checks: every struct named, nothing else. */
static void sizes(void)
{
    CHECK(scaf_decide_struct_size(SCAF_DECIDE_STRUCT_PAGE_REPORT) == sizeof(struct scaf_page_report), "report");
    CHECK(scaf_decide_struct_size(SCAF_DECIDE_STRUCT_IN) == sizeof(struct scaf_decide_in), "decide_in");
    CHECK(scaf_decide_struct_size(SCAF_DECIDE_STRUCT_MEMO_POINT) == 8, "memo point");
    for (int w = 0; w < SCAF_DECIDE_STRUCT_COUNT; w++)
        CHECK(scaf_decide_struct_size(w) > 0, "struct %d has a size", w);
    CHECK(scaf_decide_struct_size(SCAF_DECIDE_STRUCT_COUNT) == 0 && scaf_decide_struct_size(-1) == 0,
          "no size for what is not named");
}

int main(void)
{
    same_as_steps();
    one_probe_per_program();
    errors();
    sizes();
    return check_exit("test_daemon_turn");
}
