/* test_daemon_referee.c — the referee's pure half: each step (partition, policy, layout, gangs) and decide() on explicit snapshots. */
#include "../../src/daemon/decide/clamp.h"
#include "../../src/daemon/decide/peruser.h"
#include "../../src/daemon/decide/referee.h"
#include "../../src/daemon/decide/rigid.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

/* One scratch for every decide() below, as the daemon keeps one: it grows with the largest snapshot. */
static struct scaf_referee_scratch scratch;

/* The set as a bit mask of CPUs 0..63 (enough for these tables). */
static uint64_t mask(const uint64_t *set)
{
    for (int w = 1; w < SCAF_CPUSET_WORDS; w++)
        if (set[w])
            return ~0ull; /* never expected here */
    return set[0];
}

static void layout(void)
{
    static const struct {
        const char *name;
        uint32_t cpus, nclients, cpu_list_len;
        uint32_t share[6];
        int cpu[8];
        uint64_t want[6];
    } cases[] = {
        {"two halves", 4, 2, 4, {2, 2}, {0, 1, 2, 3}, {0x3, 0xc}},
        {"uneven", 4, 3, 4, {2, 1, 1}, {0, 1, 2, 3}, {0x3, 0x4, 0x8}},
        {"--cpus 4 on 2 CPUs", 4, 3, 2, {2, 1, 1}, {0, 1}, {0x3, 0x1, 0x2}},
        {"virtual > real, big shares", 8, 2, 4, {4, 4}, {0, 1, 2, 3}, {0xf, 0xf}},
        {"affinity list not from 0", 4, 2, 2, {1, 3}, {4, 6}, {0x10, 0x50}},
        {"more clients than contexts wrap", 2, 3, 2, {1, 1, 1}, {0, 1}, {0x1, 0x2, 0x1}},
        {"share 0 gets nothing", 4, 2, 4, {0, 4}, {0, 1, 2, 3}, {0x0, 0xf}},
        {"CPU past 63", 2, 1, 2, {2}, {1, 65}, {0x2}},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        uint64_t sets[6][SCAF_CPUSET_WORDS];
        memset(sets, 0xAB, sizeof sets); /* layout must clear what it does not set */
        scaf_cpuset_layout(cases[t].share, cases[t].nclients, cases[t].cpus, cases[t].cpu, cases[t].cpu_list_len, sets);
        for (uint32_t i = 0; i < cases[t].nclients; i++)
            CHECK(sets[i][0] == cases[t].want[i], "%s: client %u got %#llx, want %#llx", cases[t].name, i,
                  (unsigned long long)sets[i][0], (unsigned long long)cases[t].want[i]);
        if (t == 7)
            CHECK(sets[0][1] == 0x2, "CPU 65 in word 1: %#llx", (unsigned long long)sets[0][1]);
    }
}

static struct scaf_referee_client mk(uint32_t max_threads, int malleable, uint32_t fixed, bool long_region)
{
    struct scaf_referee_client c = {0};
    c.pol.max_threads = max_threads;
    c.pol.efficiency = -1;
    c.malleable = malleable;
    c.fixed_team = fixed;
    c.long_region = long_region;
    return c;
}

static void decide_equipartition(void)
{
    const struct scaf_policy *eq = scaf_policy_lookup("equipartition");
    int cpu[] = {0, 1};
    struct scaf_referee_client cl[3] = {mk(8, 1, 0, false), mk(8, 0, 2, false), mk(8, 1, 0, true)};
    struct scaf_referee_client copy[3];
    struct scaf_referee_alloc out[3], again[3];
    struct scaf_referee_snapshot s = {.available = 4, .cpus = 4, .chunk = 1, .nclients = 3, .clients = cl,
                                      .cpu_list = cpu, .cpu_list_len = 2};

    CHECK(eq != NULL, "equipartition registered");
    if (!eq)
        return;
    memcpy(copy, cl, sizeof cl);
    CHECK(scaf_referee_decide(eq, &s, &scratch, out) == 0, "decide");
    CHECK(memcmp(copy, cl, sizeof cl) == 0, "decide must not modify its snapshot");
    CHECK(out[0].share + out[1].share + out[2].share == 4, "shares sum to available");
    /* malleable: threads follow the share */
    CHECK(out[0].threads == out[0].share && out[0].control == SCAF_CONTROL_THREADS, "malleable: %u/%u ctl %u",
          out[0].threads, out[0].share, out[0].control);
    /* not malleable: its fixed team, placed on a CPU set of its own size */
    CHECK(out[1].threads == 2 && out[1].share == 2 && out[1].control == SCAF_CONTROL_CPUSET, "fixed: threads %u ctl %u", out[1].threads,
          out[1].control);
    /* a long region of one thread (rigid_team 0, decide/rigid.c): steered as ever, never confined */
    CHECK(out[2].threads == out[2].share && out[2].control == SCAF_CONTROL_THREADS, "long region: ctl %u",
          out[2].control);
    for (int i = 0; i < 3; i++)
        CHECK(mask(out[i].cpuset) != 0 && (mask(out[i].cpuset) & ~0x3ull) == 0, "client %d cpuset %#llx", i,
              (unsigned long long)mask(out[i].cpuset));

    /* Deterministic: the same snapshot gives the same answer. */
    CHECK(scaf_referee_decide(eq, &s, &scratch, again) == 0, "decide again");
    for (int i = 0; i < 3; i++)
        CHECK(out[i].share == again[i].share && out[i].threads == again[i].threads &&
                  out[i].control == again[i].control && out[i].coef == again[i].coef &&
                  memcmp(out[i].cpuset, again[i].cpuset, sizeof out[i].cpuset) == 0,
              "deterministic (client %d)", i);

    /* No clients: nothing to do, nothing written. */
    s.nclients = 0;
    CHECK(scaf_referee_decide(eq, &s, &scratch, out) == 0, "empty snapshot");
}

static void decide_more_clients_than_contexts(void)
{
    const struct scaf_policy *eq = scaf_policy_lookup("equipartition");
    int cpu[] = {0, 1};
    struct scaf_referee_client cl[6];
    struct scaf_referee_alloc out[6];
    struct scaf_referee_snapshot s = {.available = 2, .cpus = 4, .chunk = 1, .nclients = 6, .clients = cl,
                                      .cpu_list = cpu, .cpu_list_len = 2};

    for (int i = 0; i < 6; i++)
        cl[i] = mk(4, 1, 0, false);
    CHECK(scaf_referee_decide(eq, &s, &scratch, out) == 0, "decide");
    for (int i = 0; i < 6; i++)
        CHECK(out[i].threads == 1 && mask(out[i].cpuset) != 0, "client %d: %u threads", i, out[i].threads);
}

/* Policies under test: misbehaving ones, to check the clamps the referee adds. */
static int wild(const struct scaf_policy_input *in, uint32_t *share, double *coef)
{
    for (uint32_t i = 0; i < in->nclients; i++) {
        share[i] = i % 2 ? 0 : 5000; /* zero, and far past any max_threads */
        coef[i] = 1.5;
    }
    return 0;
}

static int failing(const struct scaf_policy_input *in, uint32_t *share, double *coef)
{
    (void)in, (void)share, (void)coef;
    errno = EINVAL;
    return -1;
}

static void decide_clamps(void)
{
    const struct scaf_policy wp = {"wild", "test", wild, 0}, fp = {"failing", "test", failing, 0};
    int cpu[] = {0, 1, 2, 3};
    struct scaf_referee_client cl[2] = {mk(3, 1, 0, false), mk(8, 1, 0, false)};
    struct scaf_referee_alloc out[2];
    struct scaf_referee_snapshot s = {.available = 4, .cpus = 4, .chunk = 1, .nclients = 2, .clients = cl,
                                      .cpu_list = cpu, .cpu_list_len = 4};

    CHECK(scaf_referee_decide(&wp, &s, &scratch, out) == 0, "wild decide");
    CHECK(out[0].threads == 3, "bounded by max_threads: %u", out[0].threads);
    CHECK(out[1].threads == 1, "never zero: %u", out[1].threads);
    CHECK(out[0].coef == 1.5, "coef passed through");
    errno = 0;
    CHECK(scaf_referee_decide(&fp, &s, &scratch, out) == -1 && errno == EINVAL, "policy failure reported");
}

/* The partition step: which clients are steered, what the fixed teams take, placed or gangs, the rest. */
static void step_partition(void)
{
    static const struct {
        const char *name;
        uint32_t available, cpus, chunk, nclients;
        bool gang;
        int malleable[4];
        uint32_t fixed[4], rigid[4];
        uint32_t want_nmall, want_nfixed, want_fixed_sum, want_rest;
        bool want_placed, want_gangs;
        uint32_t want_share[4]; /* fixed teams only; steered clients are left as they were (99) */
        uint32_t want_idx[4];
    } cases[] = {
        {"all steered", 8, 8, 1, 2, false, {1, 1}, {0, 0}, {0, 0}, 2, 0, 0, 8, true, false, {99, 99}, {0, 1}},
        {"a fixed pair placed", 8, 8, 1, 2, false, {1, 0}, {0, 2}, {0, 0}, 1, 1, 2, 6, true, false, {99, 2}, {0}},
        {"a rigid team placed like a fixed one", 8, 8, 1, 2, false, {1, 1}, {0, 0}, {0, 3}, 1, 1, 3, 5, true, false,
         {99, 3}, {0}},
        {"too big: unconfined, capped at cpus", 4, 4, 1, 2, false, {0, 1}, {6, 0}, {0, 0}, 1, 1, 4, 1, false, false,
         {4, 99}, {1}},
        {"does not fit beside one chunk each", 4, 4, 2, 2, false, {0, 1}, {3, 0}, {0, 0}, 1, 1, 3, 2, false, false,
         {3, 99}, {1}},
        {"gangs: the steered get the whole machine", 4, 4, 1, 3, true, {0, 0, 1}, {4, 4, 0}, {0, 0, 0}, 1, 2, 8, 4,
         false, true, {4, 4, 99}, {2}},
        {"one fixed team alone: no gangs", 2, 2, 1, 1, true, {0}, {4}, {0}, 0, 1, 2, 0, false, false, {2}, {0}},
        {"zero available reads as 1", 0, 0, 0, 1, false, {1}, {0}, {0}, 1, 0, 0, 1, true, false, {99}, {0}},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_referee_client cl[4];
        struct scaf_policy_client pc[4];
        struct scaf_referee_parts parts;
        uint32_t idx[4], share[4] = {99, 99, 99, 99};
        struct scaf_referee_snapshot s = {.available = cases[t].available, .cpus = cases[t].cpus,
                                          .chunk = cases[t].chunk, .nclients = cases[t].nclients, .clients = cl,
                                          .gang = cases[t].gang};

        for (uint32_t i = 0; i < cases[t].nclients; i++) {
            cl[i] = mk(i == 0 ? 0 : 8, cases[t].malleable[i], cases[t].fixed[i], false);
            cl[i].rigid_team = cases[t].rigid[i];
        }
        scaf_referee_partition(&s, pc, idx, share, &parts);
        CHECK(parts.nmall == cases[t].want_nmall && parts.nfixed == cases[t].want_nfixed &&
                  parts.fixed_sum == cases[t].want_fixed_sum && parts.rest == cases[t].want_rest &&
                  parts.placed == cases[t].want_placed && parts.gangs == cases[t].want_gangs,
              "%s: nmall %u nfixed %u fixed_sum %u rest %u placed %d gangs %d", cases[t].name, parts.nmall,
              parts.nfixed, parts.fixed_sum, parts.rest, parts.placed, parts.gangs);
        for (uint32_t i = 0; i < cases[t].nclients; i++)
            CHECK(share[i] == cases[t].want_share[i], "%s: client %u share %u, want %u", cases[t].name, i, share[i],
                  cases[t].want_share[i]);
        for (uint32_t k = 0; k < parts.nmall && k < cases[t].want_nmall; k++) {
            CHECK(idx[k] == cases[t].want_idx[k], "%s: idx[%u] %u", cases[t].name, k, idx[k]);
            CHECK(pc[k].max_threads >= 1, "%s: a bound of 0 reads as 1", cases[t].name);
        }
    }
}

/* The policy step: the policy's answer clamped to [1, max_threads], per user when asked. */
static void step_policy(void)
{
    static const struct {
        const char *name;
        const char *policy; /* NULL: the wild policy (shares 0 and 1000) */
        uint32_t rest, nmall;
        bool per_user;
        uint32_t max[4];
        uid_t uid[4];
        uint32_t want[4];
    } cases[] = {
        {"equal shares", "equipartition", 8, 2, false, {8, 8}, {1, 1}, {4, 4}},
        {"a bound leaves the rest to the other", "equipartition", 8, 2, false, {2, 8}, {1, 1}, {2, 6}},
        {"per user: each user half, then their own clients", "equipartition", 8, 3, true, {8, 8, 8}, {1, 1, 2},
         {2, 2, 4}},
        {"per user with one user: as without", "equipartition", 8, 3, true, {8, 8, 8}, {1, 1, 1}, {3, 3, 2}},
        {"wild answers clamped", NULL, 8, 2, false, {4, 4}, {1, 1}, {4, 1}},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_referee_client cl[4];
        struct scaf_referee_parts parts = {.nmall = cases[t].nmall, .rest = cases[t].rest};
        struct scaf_policy wp = {"wild", "", wild, 0};
        const struct scaf_policy *pol = cases[t].policy ? scaf_policy_lookup(cases[t].policy) : &wp;
        uint32_t share[4] = {0};
        struct scaf_referee_snapshot s = {.available = cases[t].rest, .cpus = cases[t].rest, .chunk = 1,
                                          .nclients = cases[t].nmall, .clients = cl, .per_user = cases[t].per_user};

        CHECK(scaf_referee_scratch_reserve(&scratch, cases[t].nmall) == 0, "reserve");
        for (uint32_t k = 0; k < cases[t].nmall; k++) {
            cl[k] = mk(cases[t].max[k], 1, 0, false);
            cl[k].uid = cases[t].uid[k];
            scratch.pc[k] = cl[k].pol;
            scratch.idx[k] = k;
        }
        CHECK(pol && scaf_referee_policy(pol, &s, &parts, &scratch, share) == 0, "%s: policy", cases[t].name);
        for (uint32_t k = 0; k < cases[t].nmall; k++)
            CHECK(share[k] == cases[t].want[k], "%s: client %u share %u, want %u", cases[t].name, k, share[k],
                  cases[t].want[k]);
    }
}

/* Gang packing: first fit in client order, the steered clients together last, fewer than two gangs none. */
static void step_gangs(void)
{
    static const struct {
        const char *name;
        uint32_t cpus, nclients;
        int malleable[5];
        uint32_t fixed[5], share[5];
        uint32_t want_n, want_slot[5];
    } cases[] = {
        {"two that do not fit together", 4, 2, {0, 0}, {4, 4}, {4, 4}, 2, {1, 2}},
        {"first fit goes back to an earlier gang", 4, 3, {0, 0, 0}, {3, 2, 1}, {3, 2, 1}, 2, {1, 2, 1}},
        {"steered clients are the last gang", 4, 3, {0, 1, 1}, {4, 0, 0}, {4, 2, 2}, 2, {1, 2, 2}},
        {"one gang is no gang", 4, 2, {0, 0}, {2, 2}, {2, 2}, 0, {0, 0}},
        {"steered only: no gang", 4, 2, {1, 1}, {0, 0}, {2, 2}, 0, {0, 0}},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_referee_client cl[5];
        uint32_t slot[5], n;
        struct scaf_referee_snapshot s = {.available = cases[t].cpus, .cpus = cases[t].cpus, .chunk = 1,
                                          .nclients = cases[t].nclients, .clients = cl, .gang = true};

        for (uint32_t i = 0; i < cases[t].nclients; i++)
            cl[i] = mk(8, cases[t].malleable[i], cases[t].fixed[i], false);
        memset(slot, 0xAB, sizeof slot);
        n = scaf_referee_gangs(&s, cases[t].share, slot);
        CHECK(n == cases[t].want_n, "%s: %u gangs, want %u", cases[t].name, n, cases[t].want_n);
        for (uint32_t i = 0; i < cases[t].nclients; i++)
            CHECK(slot[i] == cases[t].want_slot[i], "%s: client %u gang %u, want %u", cases[t].name, i, slot[i],
                  cases[t].want_slot[i]);
    }
}

/* The scratch grows only when the client table does, and keeps its arrays otherwise. */
static void scratch_growth(void)
{
    struct scaf_referee_scratch s = {0};
    static const struct {
        uint32_t n, want_size;
        bool want_same; /* the arrays were kept */
    } steps[] = {{4, 4, false}, {2, 4, true}, {4, 4, true}, {16, 16, false}, {1, 16, true}};

    for (size_t t = 0; t < sizeof steps / sizeof steps[0]; t++) {
        uint32_t *before = s.share;
        CHECK(scaf_referee_scratch_reserve(&s, steps[t].n) == 0, "reserve %u", steps[t].n);
        CHECK(s.size == steps[t].want_size, "reserve %u: size %u, want %u", steps[t].n, s.size, steps[t].want_size);
        if (steps[t].want_same)
            CHECK(s.share == before, "reserve %u within size kept the arrays", steps[t].n);
    }
    scaf_referee_scratch_free(&s);
    CHECK(s.size == 0 && s.share == NULL, "free resets");
}

/* Fixed teams are never squeezed: placed on CPU sets of their own size, or left unconfined; with --placement kernel,
 * teams that fit are left to the kernel too, with the same shares. */
static void decide_fixed_teams(void)
{
    static const struct {
        const char *name;
        uint32_t cpus, available, nclients;
        bool kernel; /* --placement kernel */
        int malleable[4];
        uint32_t fixed[4];
        uint32_t want_share[4];
        uint32_t want_control[4]; /* SCAF_CONTROL_* */
        uint32_t want_cpus[4];    /* CPUs in the set */
    } cases[] = {
        {"fixed fits beside two malleable", 4, 4, 3, false, {0, 1, 1}, {2, 0, 0}, {2, 1, 1}, {1, 0, 0}, {2, 1, 1}},
        {"fixed too big to leave each malleable one", 4, 4, 3, false, {0, 1, 1}, {3, 0, 0}, {3, 1, 1}, {0, 0, 0},
         {0, 1, 1}},
        {"two fixed pairs on 2 contexts: unconfined", 2, 2, 2, false, {0, 0}, {2, 2}, {2, 2}, {0, 0}, {0, 0}},
        {"two fixed pairs on 4 contexts: disjoint sets", 4, 4, 2, false, {0, 0}, {2, 2}, {2, 2}, {1, 1}, {2, 2}},
        {"a team larger than the machine runs unconfined", 4, 4, 1, false, {0}, {8}, {4}, {0}, {0}},
        {"foreign load never squeezes a fixed team", 2, 1, 1, false, {0}, {2}, {2}, {0}, {0}},
        {"fixed and malleable on 2: malleable keeps one", 2, 2, 2, false, {0, 1}, {2, 0}, {2, 1}, {0, 0}, {0, 1}},
        {"--placement kernel: a fixed team that fits is left to the kernel, same share", 4, 4, 3, true, {0, 1, 1},
         {2, 0, 0}, {2, 1, 1}, {0, 0, 0}, {0, 1, 1}},
        {"--placement kernel: two fixed pairs on 4 contexts, no sets, no turns", 4, 4, 2, true, {0, 0}, {2, 2},
         {2, 2}, {0, 0}, {0, 0}},
        {"--placement kernel: teams that do not fit are as ever", 4, 4, 3, true, {0, 1, 1}, {3, 0, 0}, {3, 1, 1},
         {0, 0, 0}, {0, 1, 1}},
    };
    const struct scaf_policy *eq = scaf_policy_lookup("equipartition");
    int cpu[] = {0, 1, 2, 3};

    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_referee_client cl[4];
        struct scaf_referee_alloc out[4];
        struct scaf_referee_snapshot s = {.available = cases[t].available, .cpus = cases[t].cpus, .chunk = 1,
                                          .nclients = cases[t].nclients, .clients = cl, .cpu_list = cpu,
                                          .cpu_list_len = cases[t].cpus, .kernel_places = cases[t].kernel};
        uint64_t seen = 0;

        for (uint32_t i = 0; i < cases[t].nclients; i++)
            cl[i] = mk(8, cases[t].malleable[i], cases[t].fixed[i], false);
        CHECK(scaf_referee_decide(eq, &s, &scratch, out) == 0, "%s: decide", cases[t].name);
        for (uint32_t i = 0; i < cases[t].nclients; i++) {
            CHECK(out[i].share == cases[t].want_share[i], "%s: client %u share %u, want %u", cases[t].name, i,
                  out[i].share, cases[t].want_share[i]);
            CHECK(out[i].control == cases[t].want_control[i], "%s: client %u control %u, want %u", cases[t].name,
                  i, out[i].control, cases[t].want_control[i]);
            if (!cases[t].malleable[i]) {
                CHECK(out[i].threads == cases[t].fixed[i], "%s: fixed team kept (%u)", cases[t].name,
                      out[i].threads);
                CHECK((uint32_t)__builtin_popcountll(mask(out[i].cpuset)) == cases[t].want_cpus[i],
                      "%s: client %u has %d CPUs, want %u", cases[t].name, i,
                      __builtin_popcountll(mask(out[i].cpuset)), cases[t].want_cpus[i]);
                /* Placed fixed teams never share a CPU with anyone. */
                if (out[i].control == SCAF_CONTROL_CPUSET) {
                    CHECK((seen & mask(out[i].cpuset)) == 0, "%s: client %u overlaps", cases[t].name, i);
                    seen |= mask(out[i].cpuset);
                }
            }
        }
    }
}

/* Fixed teams that do not fit take turns in gangs that each fit, first fit in arrival order. */
static void decide_gangs(void)
{
    static const struct {
        const char *name;
        uint32_t cpus, nclients;
        bool gang;
        int malleable[4];
        uint32_t fixed[4];
        uint32_t want_slot[4];
        bool kernel; /* --placement kernel */
    } cases[] = {
        {"two pairs on 2 contexts take turns", 2, 2, true, {0, 0}, {2, 2}, {1, 2}, false},
        {"gangs off: unconfined side by side", 2, 2, false, {0, 0}, {2, 2}, {0, 0}, false},
        {"two pairs share a gang, the quad has its own", 4, 3, true, {0, 0, 0}, {2, 2, 4}, {1, 1, 2}, false},
        {"placed teams need no turns", 4, 2, true, {0, 0}, {2, 2}, {0, 0}, false},
        {"a fixed team and a malleable one take turns", 2, 2, true, {0, 1}, {2, 0}, {1, 2}, false},
        {"the malleable clients are one gang, the last", 2, 4, true, {0, 1, 0, 1}, {2, 0, 2, 0}, {1, 3, 2, 3}, false},
        {"a fixed team alone needs no turns", 2, 1, true, {0}, {4}, {0}, false},
        {"teams left to the kernel because they fit need no turns either", 4, 2, true, {0, 0}, {2, 2}, {0, 0}, true},
        {"with --placement kernel, teams that do not fit still take turns", 2, 2, true, {0, 0}, {2, 2}, {1, 2}, true},
    };
    const struct scaf_policy *eq = scaf_policy_lookup("equipartition");
    int cpu[] = {0, 1, 2, 3};

    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_referee_client cl[4];
        struct scaf_referee_alloc out[4];
        struct scaf_referee_snapshot s = {.available = cases[t].cpus, .cpus = cases[t].cpus, .chunk = 1,
                                          .nclients = cases[t].nclients, .clients = cl, .cpu_list = cpu,
                                          .cpu_list_len = cases[t].cpus, .gang = cases[t].gang,
                                          .kernel_places = cases[t].kernel};

        for (uint32_t i = 0; i < cases[t].nclients; i++)
            cl[i] = mk(8, cases[t].malleable[i], cases[t].fixed[i], false);
        CHECK(scaf_referee_decide(eq, &s, &scratch, out) == 0, "%s: decide", cases[t].name);
        for (uint32_t i = 0; i < cases[t].nclients; i++) {
            CHECK(out[i].gang_slot == cases[t].want_slot[i], "%s: client %u gang %u, want %u", cases[t].name, i,
                  out[i].gang_slot, cases[t].want_slot[i]);
            if (!cases[t].malleable[i])
                CHECK(out[i].threads == cases[t].fixed[i], "%s: team kept", cases[t].name);
        }
    }
}

/* A client that has opened no region (a program's start, BLAS or oneTBB work) takes no turn: a turn holds
 * only regions, so one of its own would hold the others for nothing. */
static void decide_regionless(void)
{
    static const struct {
        const char *name;
        uint32_t cpus, nclients;
        int malleable[3], regionless[3];
        uint32_t fixed[3];
        uint32_t want_slot[3], want_threads[3];
    } cases[] = {
        {"a newcomer in its start beside a team that fills: no turns, a chunk", 2, 2, {0, 1}, {0, 1}, {2, 0},
         {0, 0}, {2, 1}},
        {"after its first region: turns, the whole machine in its own", 2, 2, {0, 1}, {0, 0}, {2, 0}, {1, 2},
         {2, 2}},
        {"a newcomer started with a fixed team of 1: no turns either", 2, 2, {0, 0}, {0, 1}, {2, 1}, {0, 0},
         {2, 1}},
        {"two teams that take turns, the newcomer in no gang", 2, 3, {0, 0, 1}, {0, 0, 1}, {2, 2, 0}, {1, 2, 0},
         {2, 2, 2}},
        {"the fixed team in its start, the steered one running: no turns", 2, 2, {0, 1}, {1, 0}, {2, 0}, {0, 0},
         {2, 1}},
    };
    const struct scaf_policy *eq = scaf_policy_lookup("equipartition");
    int cpu[] = {0, 1};

    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_referee_client cl[3];
        struct scaf_referee_alloc out[3];
        struct scaf_referee_snapshot s = {.available = cases[t].cpus, .cpus = cases[t].cpus, .chunk = 1,
                                          .nclients = cases[t].nclients, .clients = cl, .cpu_list = cpu,
                                          .cpu_list_len = cases[t].cpus, .gang = true, .kernel_places = true};

        for (uint32_t i = 0; i < cases[t].nclients; i++) {
            cl[i] = mk(8, cases[t].malleable[i], cases[t].fixed[i], false);
            cl[i].regionless = cases[t].regionless[i] != 0;
        }
        CHECK(scaf_referee_decide(eq, &s, &scratch, out) == 0, "%s: decide", cases[t].name);
        for (uint32_t i = 0; i < cases[t].nclients; i++)
            CHECK(out[i].gang_slot == cases[t].want_slot[i] && out[i].threads == cases[t].want_threads[i] &&
                      out[i].control == SCAF_CONTROL_THREADS,
                  "%s: client %u gang %u threads %u control %u, want gang %u threads %u", cases[t].name, i,
                  out[i].gang_slot, out[i].threads, out[i].control, cases[t].want_slot[i],
                  cases[t].want_threads[i]);
    }
}

/* Teams the daemon did not choose (a clause, a first look, a long region) are placed like fixed ones. */
static void decide_rigid(void)
{
    static const struct {
        const char *name;
        uint32_t cpus, nclients;
        bool gang;
        int malleable[4];
        uint32_t fixed[4], rigid[4];
        uint32_t want_threads[4], want_control[4], want_cpus[4], want_slot[4];
    } cases[] = {
        {"a clause of 2 beside a steered client on 4", 4, 2, false, {1, 1}, {0, 0}, {2, 0}, {2, 2}, {1, 0}, {2, 0},
         {0, 0}},
        {"a rigid team of 1 is no team", 4, 2, false, {1, 1}, {0, 0}, {1, 0}, {2, 2}, {0, 0}, {0, 0}, {0, 0}},
        {"two first looks at 2 on 2, gangs off: unconfined", 2, 2, false, {1, 1}, {0, 0}, {2, 2}, {2, 2}, {0, 0},
         {0, 0}, {0, 0}},
        {"two first looks at 2 on 2: turns", 2, 2, true, {1, 1}, {0, 0}, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 2}},
        {"a first look at 2 beside a steered one on 2: turns", 2, 2, true, {1, 1}, {0, 0}, {2, 0}, {2, 2}, {0, 0},
         {0, 0}, {1, 2}},
        {"a rigid team larger than the machine: unconfined", 4, 2, false, {1, 1}, {0, 0}, {8, 0}, {8, 1}, {0, 0},
         {0, 0}, {0, 0}},
        {"a long region at 3 beside a steered one on 4", 4, 2, false, {1, 1}, {0, 0}, {3, 0}, {3, 1}, {1, 0},
         {3, 0}, {0, 0}},
        {"a fixed team's clause larger than its team counts", 8, 2, false, {0, 1}, {2, 0}, {4, 0}, {4, 4}, {1, 0},
         {4, 0}, {0, 0}},
    };
    const struct scaf_policy *eq = scaf_policy_lookup("equipartition");
    int cpu[] = {0, 1, 2, 3, 4, 5, 6, 7};

    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_referee_client cl[4];
        struct scaf_referee_alloc out[4];
        struct scaf_referee_snapshot s = {.available = cases[t].cpus, .cpus = cases[t].cpus, .chunk = 1,
                                          .nclients = cases[t].nclients, .clients = cl, .cpu_list = cpu,
                                          .cpu_list_len = cases[t].cpus, .gang = cases[t].gang};

        for (uint32_t i = 0; i < cases[t].nclients; i++) {
            cl[i] = mk(8, cases[t].malleable[i], cases[t].fixed[i], false);
            cl[i].rigid_team = cases[t].rigid[i];
        }
        CHECK(scaf_referee_decide(eq, &s, &scratch, out) == 0, "%s: decide", cases[t].name);
        for (uint32_t i = 0; i < cases[t].nclients; i++) {
            /* A steered client's set is where it would run (status shows it), never applied. */
            bool steered = cases[t].malleable[i] && cases[t].rigid[i] < 2;
            CHECK(out[i].threads == cases[t].want_threads[i] && out[i].control == cases[t].want_control[i] &&
                      (steered || (uint32_t)__builtin_popcountll(mask(out[i].cpuset)) == cases[t].want_cpus[i]) &&
                      out[i].gang_slot == cases[t].want_slot[i],
                  "%s: client %u threads %u control %u cpus %d gang %u", cases[t].name, i, out[i].threads,
                  out[i].control, __builtin_popcountll(mask(out[i].cpuset)), out[i].gang_slot);
            CHECK(out[i].malleable == (cases[t].malleable[i] != 0), "%s: the verdict shown is the program's",
                  cases[t].name);
        }
    }
}

/*
 * The invariant, on random snapshots: a client confined to a CPU set has at least as many CPUs as
 * the team it runs (its fixed or rigid team, or its thread count), confined teams never share a
 * CPU, and a client steered by its thread count is never confined.
 */
static uint32_t rnd(uint64_t *x, uint32_t m)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*x >> 33) % m;
}

static void never_squeeze(void)
{
    const char *names[] = {"equipartition", "speedup", "consumption"};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int cpu[16];

    for (int i = 0; i < 16; i++)
        cpu[i] = i;
    for (int round = 0; round < 6000; round++) {
        const struct scaf_policy *pol = scaf_policy_lookup(names[round % 3]);
        struct scaf_referee_client cl[6];
        struct scaf_referee_alloc out[6];
        uint32_t n, cpus;
        struct scaf_referee_snapshot s;
        uint64_t seen = 0;

        cpus = 1 + rnd(&x, 16);
        n = 1 + rnd(&x, 6);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t maxt = 1 + rnd(&x, 20), mall = rnd(&x, 3) != 0, fixed = 1 + rnd(&x, 12), lr = rnd(&x, 4) == 0;
            cl[i] = mk(maxt, (int)mall, fixed, lr);
            cl[i].rigid_team = rnd(&x, 3) == 0 ? rnd(&x, 12) : 0;
            /* Idle clients (decide/idle.h) among them: never confined, in no gang. */
            cl[i].idle = rnd(&x, 4) == 0;
            cl[i].idle_epoch = cl[i].idle ? 1 + rnd(&x, 5) : 0;
            cl[i].idle_team = rnd(&x, 9);
            cl[i].pol.efficiency = rnd(&x, 2) ? -1.0 : (double)(1 + rnd(&x, 100)) / 100.0;
            cl[i].pol.eff_team = cl[i].pol.efficiency > 0 ? 1 + rnd(&x, cl[i].pol.max_threads) : 0;
        }
        {
            uint32_t avail = 1 + rnd(&x, cpus), gang = rnd(&x, 2);
            s = (struct scaf_referee_snapshot){.available = avail, .cpus = cpus, .chunk = 1, .nclients = n,
                                               .clients = cl, .cpu_list = cpu, .cpu_list_len = cpus, .gang = gang != 0};
        }
        if (!pol || scaf_referee_decide(pol, &s, &scratch, out) != 0) {
            fail("never squeeze", "decide failed");
            return;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t team = !cl[i].malleable ? (cl[i].rigid_team > cl[i].fixed_team ? cl[i].rigid_team : cl[i].fixed_team)
                            : cl[i].rigid_team >= 2 && !cl[i].idle ? cl[i].rigid_team
                                                                    : out[i].threads;
            int got = __builtin_popcountll(mask(out[i].cpuset));

            CHECK(out[i].threads >= 1, "round %d client %u: no threads", round, i);
            if (out[i].control == SCAF_CONTROL_CPUSET) {
                CHECK((uint32_t)got >= team, "round %d client %u: team %u confined to %d CPUs", round, i, team, got);
                CHECK((seen & mask(out[i].cpuset)) == 0, "round %d client %u: confined sets overlap", round, i);
                seen |= mask(out[i].cpuset);
            }
            if (cl[i].malleable && cl[i].rigid_team < 2)
                CHECK(out[i].control == SCAF_CONTROL_THREADS, "round %d client %u: a steered client confined", round,
                      i);
            if (cl[i].idle)
                CHECK(out[i].control == SCAF_CONTROL_THREADS && out[i].share == 0 && out[i].gang_slot == 0 &&
                          out[i].idle != 0,
                      "round %d client %u: an idle client confined, given a share or put in a gang", round, i);
        }
    }
}

/* The team a client runs that the daemon did not choose, over referee turns (decide/rigid.c). */
static void rigid_steps(void)
{
    static const struct {
        const char *name;
        uint64_t now_s10; /* tenths of a second */
        uint32_t regions, team;
        bool long_region;
        uint32_t last_team, want;
    } steps[] = {
        {"nothing yet", 0, 0, 0, false, 0, 0},
        {"a first look at 4", 1, 1, 4, false, 4, 4},
        {"steered regions since: still held", 5, 1, 4, false, 2, 4},
        {"held 2 s after the last such region", 20, 1, 4, false, 2, 4},
        {"then released", 22, 1, 4, false, 2, 0},
        {"a clause of 3 again", 23, 7, 3, false, 3, 3},
        {"a clause of 2 while 3 is held: the largest counts", 24, 9, 2, false, 2, 3},
        {"the hold restarts from the latest", 45, 9, 2, false, 2, 0},
        {"a long region of 2", 46, 9, 2, true, 2, 2},
        {"a long region of one thread is none", 47, 9, 2, true, 1, 0},
        {"a clause of one thread is none", 48, 10, 1, false, 1, 0},
        {"the counter wraps", 49, 0, 5, false, 1, 5},
    };
    struct scaf_rigid r = {0};

    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        uint32_t got = scaf_rigid_step(&r, steps[i].now_s10 * 100000000ull, steps[i].regions, steps[i].team,
                                       steps[i].long_region, steps[i].last_team);
        CHECK(got == steps[i].want, "rigid %s: %u, want %u", steps[i].name, got, steps[i].want);
    }
}

/* A decoded report as the decision sees it: the bound, the previous share, the fixed team. */
static void collect(void)
{
    static const struct {
        const char *name;
        uint32_t max_threads, verdict, fixed_team, estimate;
        double efficiency;
        bool has_prev;
        uint32_t want_max, want_prev;
        int want_malleable;
    } cases[] = {
        {"new malleable client", 8, SCAF_VERDICT_UNDECIDED, 8, SCAF_ESTIMATE_NONE, -1.0, false, 8, 0, 1},
        {"measured, with a previous share", 8, SCAF_VERDICT_MALLEABLE, 8, SCAF_ESTIMATE_MEASURED, 0.7, true, 8, 3, 1},
        {"a counters estimate passes through", 8, SCAF_VERDICT_MALLEABLE, 8, SCAF_ESTIMATE_COUNTERS, 0.7, true, 8, 3, 1},
        {"an assumed estimate passes through", 8, SCAF_VERDICT_MALLEABLE, 8, SCAF_ESTIMATE_ASSUMED, 0.7, true, 8, 3, 1},
        {"fixed team smaller than the bound caps it", 8, SCAF_VERDICT_FIXED, 3, SCAF_ESTIMATE_NONE, -1.0, false, 3, 0,
         0},
        {"fixed team larger than the bound does not raise it", 4, SCAF_VERDICT_FIXED, 16, SCAF_ESTIMATE_NONE, -1.0,
         false, 4, 0, 0},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_page_report rep;
        struct scaf_referee_alloc prev = {.share = 3, .coef = 1.5};
        struct scaf_referee_client out;

        scaf_pageread_init(&rep, cases[t].max_threads);
        rep.verdict = cases[t].verdict;
        rep.fixed_team = cases[t].fixed_team;
        rep.estimate = cases[t].estimate;
        rep.efficiency = cases[t].efficiency;
        rep.eff_team = 2;
        rep.long_region = t == 1;
        scaf_referee_collect(&rep, cases[t].max_threads, cases[t].has_prev ? &prev : NULL, &out);
        CHECK(out.pol.max_threads == cases[t].want_max, "%s: max_threads %u", cases[t].name, out.pol.max_threads);
        CHECK(out.pol.prev == cases[t].want_prev, "%s: prev %u", cases[t].name, out.pol.prev);
        CHECK(out.pol.prev_coef == (cases[t].has_prev ? 1.5 : 0.0), "%s: prev_coef %g", cases[t].name,
              out.pol.prev_coef);
        CHECK(out.malleable == cases[t].want_malleable, "%s: malleable %d", cases[t].name, out.malleable);
        CHECK(out.pol.efficiency == cases[t].efficiency && out.pol.eff_team == 2, "%s: report", cases[t].name);
        CHECK(out.fixed_team == cases[t].fixed_team && out.long_region == (t == 1), "%s: team, long region",
              cases[t].name);
    }
    /* `wanted` (idle oneTBB permits) lowers the cap, never raises it; 0 is no limit. */
    static const struct {
        uint32_t max_threads, verdict, fixed_team, wanted, want_max;
    } wants[] = {
        {8, SCAF_VERDICT_UNDECIDED, 8, 0, 8},
        {8, SCAF_VERDICT_UNDECIDED, 8, 1, 1},
        {8, SCAF_VERDICT_MALLEABLE, 8, 3, 3},
        {4, SCAF_VERDICT_MALLEABLE, 4, 9, 4},
        {8, SCAF_VERDICT_FIXED, 3, 2, 2},
        {8, SCAF_VERDICT_FIXED, 3, 5, 3},
    };
    for (size_t t = 0; t < sizeof wants / sizeof wants[0]; t++) {
        struct scaf_page_report rep;
        struct scaf_referee_client out;

        scaf_pageread_init(&rep, wants[t].max_threads);
        rep.verdict = wants[t].verdict;
        rep.fixed_team = wants[t].fixed_team;
        rep.wanted = wants[t].wanted;
        scaf_referee_collect(&rep, wants[t].max_threads, NULL, &out);
        CHECK(out.pol.max_threads == wants[t].want_max, "wanted %u of %u: max_threads %u, want %u", wants[t].wanted,
              wants[t].max_threads, out.pol.max_threads, wants[t].want_max);
    }
}

/* What a report may claim: p' at most max_threads (a fixed team's team) and cpus; nothing else changes. */
static void clamp(void)
{
    static const struct {
        const char *name;
        uint32_t max_threads, cpus, report, want;
    } cases[] = {
        {"honest, below both", 8, 16, 4, 4},
        {"at max_threads", 8, 16, 8, 8},
        {"liar past max_threads", 8, 16, 1024, 8},
        {"liar past cpus", 1024, 64, 1024, 64},
        {"max_threads past cpus, report within", 32, 8, 6, 6},
        {"no report stays none", 8, 8, 0, 0},
        {"cpus unknown: max_threads only", 4, 0, 9, 4},
        {"max_threads 0 read as 1", 0, 8, 3, 1},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_referee_client c = mk(cases[t].max_threads, 1, 0, false), before;
        c.pol.eff_team = cases[t].report;
        c.pol.efficiency = 1.0;
        c.pol.prev = 3;
        before = c;
        scaf_referee_clamp(&c, cases[t].cpus);
        CHECK(c.pol.eff_team == cases[t].want, "%s: p' %u, want %u", cases[t].name, c.pol.eff_team,
              cases[t].want);
        before.pol.eff_team = c.pol.eff_team;
        CHECK(memcmp(&before, &c, sizeof c) == 0, "%s: only p' may change", cases[t].name);
    }
}

static void peruser_groups(void)
{
    uid_t uid[] = {1000, 1001, 1000, 0, 1001, 1000};
    uint32_t group[6], want[] = {0, 1, 0, 2, 1, 0};

    CHECK(scaf_peruser_groups(uid, 6, group) == 3, "three users");
    CHECK(memcmp(group, want, sizeof want) == 0, "numbered in order of first appearance");
    CHECK(scaf_peruser_groups(uid, 0, group) == 0, "no clients, no users");
}

static void peruser_quotas(void)
{
    static const struct {
        const char *name;
        uint32_t total, ngroups, demand[4], floor_[4], want[4];
    } cases[] = {
        {"two hungry users split evenly", 8, 2, {8, 8}, {1, 1}, {4, 4}},
        {"odd total: first user gets the extra context", 9, 2, {9, 9}, {1, 1}, {5, 4}},
        {"a user who can use less gives the rest away", 8, 2, {2, 8}, {1, 1}, {2, 6}},
        {"three users, one small", 12, 3, {12, 1, 12}, {1, 1, 1}, {6, 1, 5}},
        {"demand below total: everyone satisfied", 16, 2, {3, 4}, {1, 1}, {3, 4}},
        {"many clients of one user: one thread each beats the level", 4, 2, {4, 4}, {3, 1}, {3, 2}},
        {"fewer contexts than users", 1, 3, {4, 4, 4}, {1, 1, 1}, {1, 1, 1}},
        {"one user", 8, 1, {8}, {2}, {8}},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        uint32_t q[4] = {0};
        char got[64], want[64];
        scaf_peruser_quotas(cases[t].total, cases[t].ngroups, cases[t].demand, cases[t].floor_, q);
        fmt(got, sizeof got, q, cases[t].ngroups);
        fmt(want, sizeof want, cases[t].want, cases[t].ngroups);
        CHECK(memcmp(q, cases[t].want, cases[t].ngroups * sizeof q[0]) == 0, "%s: got %s, want %s", cases[t].name,
              got, want);
    }
}

/* The speedup policy's shares for these clients, after the cap stage, as the daemon runs it. */
static void speedup_shares(struct scaf_referee_client *cl, uint32_t n, uint32_t cpus, bool per_user, uint32_t *share)
{
    const struct scaf_policy *sp = scaf_policy_lookup("speedup");
    struct scaf_referee_alloc out[8];
    int cpu[64];
    struct scaf_referee_snapshot s = {.available = cpus, .cpus = cpus, .chunk = 1, .nclients = n, .clients = cl,
                                      .cpu_list = cpu, .cpu_list_len = cpus, .per_user = per_user};

    for (uint32_t i = 0; i < cpus; i++)
        cpu[i] = (int)i;
    for (uint32_t i = 0; i < n; i++)
        scaf_referee_clamp(&cl[i], cpus);
    CHECK(sp && scaf_referee_decide(sp, &s, &scratch, out) == 0, "speedup decide");
    for (uint32_t i = 0; i < n; i++)
        share[i] = out[i].share;
}

static struct scaf_referee_client reporting(uid_t uid, uint32_t max_threads, double e, uint32_t at)
{
    struct scaf_referee_client c = mk(max_threads, 1, 0, false);
    c.uid = uid;
    c.pol.efficiency = e;
    c.pol.eff_team = at;
    return c;
}

/* One honest and one lying client: the lie is worth no more than the best honest claim of the same size,
 * and with per-user shares it takes nothing from another user. */
static void liar(void)
{
    static const uint32_t sizes[] = {3, 8, 16, 64};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        uint32_t n = sizes[t], lie[2], best[2], fair[2];
        struct scaf_referee_client a[2] = {reporting(1001, n, 1.0, 1024), reporting(1002, n, 0.5, n)};
        struct scaf_referee_client b[2] = {reporting(1001, n, 1.0, n), reporting(1002, n, 0.5, n)};
        struct scaf_referee_client c[2] = {reporting(1001, n, 1.0, 1024), reporting(1002, n, 0.5, n)};

        speedup_shares(a, 2, n, false, lie);
        speedup_shares(b, 2, n, false, best);
        speedup_shares(c, 2, n, true, fair);
        CHECK(lie[0] == best[0] && lie[1] == best[1], "N=%u: a lie of 1024 threads got %u/%u, perfect honesty %u/%u",
              n, lie[0], lie[1], best[0], best[1]);
        CHECK(fair[0] <= (n + 1) / 2 && fair[1] >= n / 2, "N=%u, per user: liar %u, honest %u", n, fair[0], fair[1]);
        CHECK(fair[0] + fair[1] == n, "N=%u, per user: every context used (%u + %u)", n, fair[0], fair[1]);
    }
}

/* Per user: one user's clients together get that user's part, however many there are. */
static void per_user_many_clients(void)
{
    struct scaf_referee_client cl[4] = {reporting(1001, 8, 0.9, 4), reporting(1001, 8, 0.9, 4),
                                        reporting(1001, 8, 0.9, 4), reporting(1002, 8, 0.9, 4)};
    struct scaf_referee_client one[2] = {reporting(1001, 8, 0.9, 4), reporting(1001, 8, 0.5, 4)};
    uint32_t share[4], solo[2], plain[2];

    speedup_shares(cl, 4, 8, true, share);
    CHECK(share[0] + share[1] + share[2] == 4 && share[3] == 4, "user A's three clients %u+%u+%u, user B's one %u",
          share[0], share[1], share[2], share[3]);
    /* One user alone: per-user changes nothing. */
    speedup_shares(one, 2, 8, true, solo);
    one[0] = reporting(1001, 8, 0.9, 4);
    one[1] = reporting(1001, 8, 0.5, 4);
    speedup_shares(one, 2, 8, false, plain);
    CHECK(solo[0] == plain[0] && solo[1] == plain[1], "one user: %u/%u per user, %u/%u without", solo[0], solo[1],
          plain[0], plain[1]);
}

int main(void)
{
    clamp();
    peruser_groups();
    peruser_quotas();
    liar();
    per_user_many_clients();
    collect();
    decide_fixed_teams();
    decide_gangs();
    decide_regionless();
    decide_rigid();
    never_squeeze();
    rigid_steps();
    layout();
    decide_equipartition();
    decide_more_clients_than_contexts();
    decide_clamps();
    step_partition();
    step_policy();
    step_gangs();
    scratch_growth();
    scaf_referee_scratch_free(&scratch);
    return check_exit("test_daemon_referee");
}
