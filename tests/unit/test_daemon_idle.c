/* test_daemon_idle.c — the idle rule (decide/idle.c) turn by turn as a table, and idle clients in the referee's decision. */
#include "../../src/daemon/decide/idle.h"
#include "../../src/daemon/decide/referee.h"

#include <string.h>

#include "check.h"

/*
 * One client over referee turns at 4 Hz (250 ms), clock ticks at 100 Hz, the
 * daemon's rule: 0.25 s quiet, spans of 0.2 s or more, 10% of one context + 1
 * tick (over half a context + 1 tick to be busy again while idle). Each row is one turn: what the turn saw and what the rule must say.
 */
struct turn {
    uint32_t ms;       /* the turn's time */
    uint32_t regions;  /* the page's count */
    int woke;
    int cpu_ok;        /* /proc showed the process */
    uint32_t ticks;    /* utime + stime */
    int idle;          /* expected */
    uint32_t epoch;    /* expected */
};

struct story {
    const char *name;
    struct turn t[16];
};

static const struct story stories[] = {
    {"a parent waiting on its pool: no region, no CPU: idle after one quiet span",
     {{0, 5, 0, 1, 100, 0, 0},
      {250, 5, 0, 1, 100, 1, 1},  /* quiet since 0 ms, the span 0-250 judged quiet */
      {500, 5, 0, 1, 101, 1, 1},  /* one tick in a span: within the slack */
      {750, 5, 0, 1, 101, 1, 1}}},
    {"regions moving: never idle",
     {{0, 1, 0, 1, 0, 0, 0}, {250, 9, 0, 1, 1, 0, 0}, {500, 20, 0, 1, 2, 0, 0}, {750, 31, 0, 1, 2, 0, 0},
      {1000, 44, 0, 1, 2, 0, 0}}},
    {"a serial phase (one thread busy, no region): never idle",
     {{0, 7, 0, 1, 0, 0, 0},
      {250, 7, 0, 1, 25, 0, 0},
      {500, 7, 0, 1, 50, 0, 0},
      {750, 7, 0, 1, 75, 0, 0},
      {1000, 7, 0, 1, 100, 0, 0}}},
    {"BLAS work while idle (CPU rises, no region): busy at once, idle again after a quiet span",
     {{0, 3, 0, 1, 10, 0, 0},
      {250, 3, 0, 1, 10, 1, 1},
      {500, 3, 0, 1, 10, 1, 1},
      {750, 3, 0, 1, 40, 0, 1},  /* 30 ticks in 250 ms */
      {1000, 3, 0, 1, 41, 1, 2}, /* a second idle period, a new epoch */
      {1250, 3, 0, 1, 41, 1, 2}}},
    {"a WAKE ends idleness before any region is counted",
     {{0, 2, 0, 1, 0, 0, 0}, {250, 2, 0, 1, 0, 1, 1}, {500, 2, 1, 1, 0, 0, 1}, {750, 3, 0, 1, 0, 0, 1},
      {1000, 3, 0, 1, 0, 1, 2}}},
    {"regions move while idle: busy at once",
     {{0, 2, 0, 1, 0, 0, 0}, {250, 2, 0, 1, 0, 1, 1}, {500, 3, 0, 1, 0, 0, 1}}},
    {"a process /proc cannot show is never idle",
     {{0, 2, 0, 0, 0, 0, 0}, {250, 2, 0, 0, 0, 0, 0}, {500, 2, 0, 0, 0, 0, 0}, {750, 2, 0, 0, 0, 0, 0},
      {1000, 2, 0, 0, 0, 0, 0}}},
    {"the last region runs on past the turn that counted it: its span is busy, idle a span later",
     {{0, 5, 0, 1, 0, 0, 0},
      {250, 6, 0, 1, 30, 0, 0}, /* the last region started */
      {500, 6, 0, 1, 45, 0, 0}, /* it ran on: busy */
      {750, 6, 0, 1, 45, 1, 1}}},
    {"light housekeeping (a heartbeat: 2 ticks a second) stays idle",
     {{0, 1, 0, 1, 0, 0, 0}, {250, 1, 0, 1, 0, 1, 1}, {500, 1, 0, 1, 1, 1, 1}, {750, 1, 0, 1, 1, 1, 1},
      {1000, 1, 0, 1, 2, 1, 1}, {1250, 1, 0, 1, 2, 1, 1}, {1500, 1, 0, 1, 3, 1, 1}}},
    {"a pool worker's bookkeeping after its last task (6 ticks in 250 ms, a garbage collection) stays idle",
     {{0, 5, 0, 1, 0, 0, 0},
      {250, 5, 0, 1, 0, 1, 1},
      {500, 5, 0, 1, 6, 1, 1},  /* 24% of a context: more than turns a busy client idle, less than wakes one */
      {750, 5, 0, 1, 6, 1, 1}}},
    {"the same CPU keeps a busy client busy: idle takes 10% at most, busy again takes over half",
     {{0, 5, 0, 1, 0, 0, 0}, {250, 5, 0, 1, 5, 0, 0}, {500, 5, 0, 1, 10, 0, 0}, {750, 5, 0, 1, 15, 0, 0}}},
    {"a serial phase after idleness (one thread busy, no region) takes the share back within a span",
     {{0, 5, 0, 1, 0, 0, 0}, {250, 5, 0, 1, 0, 1, 1}, {500, 5, 0, 1, 25, 0, 1}, {750, 5, 0, 1, 50, 0, 1}}},
    {"a fast --rate: spans under 0.2 s are judged when complete, or at once when already past",
     {{0, 1, 0, 1, 0, 0, 0},
      {100, 1, 0, 1, 0, 0, 0},  /* 100 ms: not judged yet */
      {200, 1, 0, 1, 2, 0, 0},  /* a quiet span, but quiet only 200 ms */
      {300, 1, 0, 1, 20, 0, 0}, /* 18 ticks in 100 ms: more than a whole span allows */
      {400, 1, 0, 1, 20, 0, 0},
      {500, 1, 0, 1, 20, 0, 0}, /* a quiet span judged, quiet 200 ms */
      {600, 1, 0, 1, 20, 1, 1}}},
};

static void idle_stories(void)
{
    struct scaf_idle_rule rule = scaf_idle_rule_default(100);

    CHECK(rule.window_ns == 250000000ull && rule.hz == 100 && rule.cpu_frac < rule.wake_frac, "the daemon's rule");
    for (size_t k = 0; k < sizeof stories / sizeof stories[0]; k++) {
        struct scaf_idle s;

        memset(&s, 0, sizeof s);
        for (size_t i = 0; i < 16; i++) {
            const struct turn *t = &stories[k].t[i];
            struct scaf_idle_obs o;
            bool idle;

            if (i > 0 && t->ms == 0)
                break;
            o = (struct scaf_idle_obs){.now_ns = (uint64_t)t->ms * 1000000ull + 1000000000ull,
                                       .regions = t->regions,
                                       .woke = t->woke != 0,
                                       .cpu_ok = t->cpu_ok != 0,
                                       .cpu_ticks = t->ticks};
            idle = scaf_idle_step(&s, &o, &rule);
            CHECK(idle == (t->idle != 0) && s.idle == idle, "%s: at %u ms idle %d, want %d", stories[k].name, t->ms,
                  idle, t->idle);
            CHECK(s.epoch == t->epoch, "%s: at %u ms epoch %u, want %u", stories[k].name, t->ms, s.epoch, t->epoch);
        }
    }
}

static struct scaf_referee_client client(uint32_t max_threads, int malleable, uint32_t fixed, int idle,
                                         uint32_t idle_team)
{
    struct scaf_referee_client c = {0};

    c.pol.max_threads = max_threads;
    c.pol.efficiency = -1;
    c.malleable = malleable != 0;
    c.fixed_team = fixed;
    c.idle = idle != 0;
    c.idle_epoch = idle ? 3 : 0;
    c.idle_team = idle_team;
    return c;
}

/* Idle clients hold nothing; their pages keep their team; the busy ones share the machine. */
static void referee_idle(void)
{
    static const struct {
        const char *name;
        uint32_t cpus, n;
        int malleable[4], idle[4];
        uint32_t fixed[4], idle_team[4];
        uint32_t uid[4];
        int per_user, gang;
        uint32_t want_share[4], want_threads[4];
    } cases[] = {
        {"an idle parent and an idle worker leave the machine to the busy worker", 2, 3, {1, 1, 1}, {1, 1, 0},
         {0, 0, 0}, {1, 1, 0}, {0, 0, 0}, 0, 1, {0, 0, 2}, {1, 1, 2}},
        {"two busy, one idle: halves, the idle keeps its team", 4, 3, {1, 1, 1}, {0, 1, 0}, {0, 0, 0},
         {0, 2, 0}, {0, 0, 0}, 0, 1, {2, 0, 2}, {2, 2, 2}},
        {"everyone idle: no share, teams kept", 4, 2, {1, 1}, {1, 1}, {0, 0}, {2, 2}, {0, 0}, 0, 1, {0, 0},
         {2, 2}},
        {"an idle fixed team is not placed, runs unconfined with its team", 2, 2, {0, 1}, {1, 0}, {2, 0},
         {0, 0}, {0, 0}, 0, 1, {0, 2}, {2, 2}},
        {"idle with no team yet: one thread", 4, 2, {1, 1}, {1, 0}, {0, 0}, {0, 0}, {0, 0}, 0, 1, {0, 4},
         {1, 4}},
        {"--shared: an idle user's client is in no user's demand", 4, 3, {1, 1, 1}, {1, 0, 0}, {0, 0, 0},
         {2, 0, 0}, {1000, 2000, 2000}, 1, 1, {0, 2, 2}, {2, 2, 2}},
        {"--shared: two users busy, one client of each idle", 4, 4, {1, 1, 1, 1}, {1, 0, 1, 0}, {0, 0, 0, 0},
         {1, 0, 1, 0}, {1000, 1000, 2000, 2000}, 1, 1, {0, 2, 0, 2}, {1, 2, 1, 2}},
        {"a fixed team and an idle one: the busy fixed team alone is placed, no gangs", 2, 3, {0, 0, 1},
         {0, 1, 0}, {2, 2, 0}, {0, 0, 0}, {0, 0, 0}, 0, 1, {2, 0, 2}, {2, 2, 2}},
    };
    const struct scaf_policy *pol = scaf_policy_lookup("equipartition");
    int cpu[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    struct scaf_referee_scratch scratch;

    memset(&scratch, 0, sizeof scratch);
    for (size_t t = 0; pol && t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_referee_client cl[4];
        struct scaf_referee_alloc out[4];
        struct scaf_referee_snapshot s;

        for (uint32_t i = 0; i < cases[t].n; i++) {
            cl[i] = client(8, cases[t].malleable[i], cases[t].fixed[i], cases[t].idle[i], cases[t].idle_team[i]);
            cl[i].uid = cases[t].uid[i];
        }
        s = (struct scaf_referee_snapshot){.available = cases[t].cpus, .cpus = cases[t].cpus, .chunk = 1,
                                           .nclients = cases[t].n, .clients = cl, .cpu_list = cpu,
                                           .cpu_list_len = cases[t].cpus, .gang = cases[t].gang != 0,
                                           .per_user = cases[t].per_user != 0};
        if (scaf_referee_decide(pol, &s, &scratch, out) != 0) {
            fail(cases[t].name, "decide failed");
            continue;
        }
        for (uint32_t i = 0; i < cases[t].n; i++) {
            CHECK(out[i].share == cases[t].want_share[i], "%s: client %u share %u, want %u", cases[t].name, i,
                  out[i].share, cases[t].want_share[i]);
            CHECK(out[i].threads == cases[t].want_threads[i], "%s: client %u threads %u, want %u", cases[t].name,
                  i, out[i].threads, cases[t].want_threads[i]);
            if (cases[t].idle[i]) {
                CHECK(out[i].idle == 3, "%s: client %u idle word %u", cases[t].name, i, out[i].idle);
                CHECK(out[i].control == SCAF_CONTROL_THREADS && out[i].cpuset[0] == 0 && out[i].gang_slot == 0,
                      "%s: idle client %u confined or in a gang", cases[t].name, i);
            } else {
                CHECK(out[i].idle == 0, "%s: busy client %u has idle word %u", cases[t].name, i, out[i].idle);
            }
        }
    }
    scaf_referee_scratch_free(&scratch);
}

int main(void)
{
    idle_stories();
    referee_idle();
    return check_exit("test_daemon_idle");
}
