/* referee.c — the decision, pure: decoded client reports and the machine in, shares and CPU sets out. */
#include "referee.h"
#include "peruser.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The snapshot's numbers as every step reads them: never 0. */
static uint32_t available_of(const struct scaf_referee_snapshot *snap)
{
    return snap->available ? snap->available : 1;
}

static uint32_t cpus_of(const struct scaf_referee_snapshot *snap)
{
    return snap->cpus ? snap->cpus : available_of(snap);
}

static uint32_t chunk_of(const struct scaf_referee_snapshot *snap)
{
    return snap->chunk ? snap->chunk : 1;
}

/* Grows one array of the scratch to n entries; on failure the array is left as it was. */
#define GROW(field)                                                                                                \
    do {                                                                                                           \
        void *q_ = realloc(s->field, (size_t)n * sizeof *s->field);                                               \
        if (!q_)                                                                                                   \
            goto fail;                                                                                             \
        s->field = q_;                                                                                             \
    } while (0)

int scaf_referee_scratch_reserve(struct scaf_referee_scratch *s, uint32_t n)
{
    if (n <= s->size)
        return 0;
    /* size changes last: after a failure some arrays are larger than size, none smaller. */
    GROW(pc);
    GROW(idx);
    GROW(pshare);
    GROW(coef);
    GROW(share);
    GROW(sets);
    GROW(slot);
    GROW(uid);
    GROW(group);
    GROW(demand);
    GROW(count);
    GROW(quota);
    GROW(sub_share);
    GROW(sub);
    GROW(sub_coef);
    s->size = n;
    return 0;
fail:
    errno = ENOMEM;
    return -1;
}

#undef GROW

void scaf_referee_scratch_free(struct scaf_referee_scratch *s)
{
    free(s->pc);
    free(s->idx);
    free(s->pshare);
    free(s->coef);
    free(s->share);
    free(s->sets);
    free(s->slot);
    free(s->uid);
    free(s->group);
    free(s->demand);
    free(s->count);
    free(s->quota);
    free(s->sub_share);
    free(s->sub);
    free(s->sub_coef);
    memset(s, 0, sizeof *s);
}

/* Whether the referee places a client like a fixed team: its team is fixed, or it runs one now
 * that the daemon did not choose (a clause, a first look, a long region). An idle client is neither
 * placed nor steered: it runs nothing. */
static bool placed_like_fixed(const struct scaf_referee_client *c)
{
    return !c->idle && (!c->malleable || c->rigid_team >= 2);
}

/* Whether a client takes turns when there are gangs: busy, and it has opened a region (referee.h, regionless). */
static bool takes_turns(const struct scaf_referee_client *c)
{
    return !c->idle && !c->regionless;
}

/* The team such a client runs. */
static uint32_t team_of(const struct scaf_referee_client *c)
{
    if (!c->malleable)
        return c->rigid_team > c->fixed_team ? c->rigid_team : c->fixed_team ? c->fixed_team : 1;
    return c->rigid_team;
}

/*
 * Never squeeze (docs/daemon.md, "Teams scaf does not choose"): no client is
 * confined to fewer CPUs than the team it runs, because a spin-synchronised
 * team squeezed onto fewer CPUs waits a scheduler slice at every hand-off.
 * Fixed teams, and for as long as they run them, the teams of malleable
 * clients that the daemon did not choose (a num_threads other than the
 * default, a first look, a long region), come first. When they all fit beside
 * one chunk per steered client, each gets a CPU set of exactly its team (or,
 * with snap->kernel_places, runs where the kernel puts it, as under a static
 * split) and the policy divides the rest among the steered clients. When they do not fit
 * (or one team is larger than the machine), they run unconfined, as they would
 * without scaf, and each steered client keeps a share of what is left (at
 * least one chunk), so scaf never adds threads to an oversubscribed machine.
 * With gangs on, fixed teams and the steered clients take turns instead, so
 * the steered ones, in theirs, have the whole machine.
 */
void scaf_referee_partition(const struct scaf_referee_snapshot *snap, struct scaf_policy_client *pc, uint32_t *idx,
                            uint32_t *share, struct scaf_referee_parts *parts)
{
    uint32_t available = available_of(snap), cpus = cpus_of(snap), chunk = chunk_of(snap), fixed_turns = 0;
    bool too_big = false, steered_turn = false;

    memset(parts, 0, sizeof *parts);
    for (uint32_t i = 0; i < snap->nclients; i++) {
        const struct scaf_referee_client *c = &snap->clients[i];

        if (c->idle) {
            share[i] = 0; /* holds nothing: its contexts go to the busy clients */
        } else if (!placed_like_fixed(c)) {
            pc[parts->nmall] = c->pol;
            if (pc[parts->nmall].max_threads == 0)
                pc[parts->nmall].max_threads = 1;
            idx[parts->nmall++] = i;
            steered_turn |= takes_turns(c);
        } else {
            uint32_t t = team_of(c);
            /* A team larger than the machine cannot have CPUs of its own: it runs unconfined. */
            too_big |= t > cpus;
            share[i] = t > cpus ? cpus : t;
            parts->fixed_sum += share[i];
            parts->nfixed++;
            fixed_turns += takes_turns(c);
        }
    }
    parts->fits = !too_big && parts->fixed_sum + parts->nmall * chunk <= available;
    parts->placed = parts->fits && !snap->kernel_places;
    /* Turns need two that would take them: a client that has opened no region takes none (its work runs
     * whatever the turn), so beside one fixed team it leaves that team unconfined, with a chunk to itself. */
    parts->gangs = !parts->fits && snap->gang && fixed_turns > 0 && fixed_turns + steered_turn >= 2;
    parts->rest = parts->gangs                  ? available
                  : available > parts->fixed_sum ? available - parts->fixed_sum
                                                 : 0;
    if (parts->rest < parts->nmall * chunk)
        parts->rest = parts->nmall * chunk; /* oversubscribed already: one chunk each, no more */
}

/*
 * With per_user and more than one user among the steered clients, each
 * user's part of `rest` comes first (a user's demand: the contexts their
 * clients could run) and the policy runs once per user on that part, so
 * whatever a user's clients report moves contexts only between that user's
 * own clients. Fills s->pshare and s->coef for pc[0..nmall).
 */
static int run_policy(const struct scaf_policy *policy, const struct scaf_referee_snapshot *snap, uint32_t rest,
                      uint32_t nmall, struct scaf_referee_scratch *s)
{
    uint32_t chunk = chunk_of(snap);
    struct scaf_policy_input in = {rest, chunk, nmall, s->pc, snap->min_gain};
    uint32_t ngroups;

    if (!snap->per_user || nmall < 2)
        return policy->decide(&in, s->pshare, s->coef);
    for (uint32_t k = 0; k < nmall; k++)
        s->uid[k] = snap->clients[s->idx[k]].uid;
    ngroups = scaf_peruser_groups(s->uid, nmall, s->group);
    if (ngroups < 2)
        return policy->decide(&in, s->pshare, s->coef);
    memset(s->demand, 0, ngroups * sizeof *s->demand);
    memset(s->count, 0, ngroups * sizeof *s->count);
    for (uint32_t k = 0; k < nmall; k++) {
        uint32_t g = s->group[k], m = s->pc[k].max_threads < rest ? s->pc[k].max_threads : rest;
        s->demand[g] = s->demand[g] + m > rest ? rest : s->demand[g] + m;
        s->count[g]++;
    }
    scaf_peruser_quotas(rest, ngroups, s->demand, s->count, s->quota);
    for (uint32_t g = 0; g < ngroups; g++) {
        uint32_t n = 0;
        for (uint32_t k = 0; k < nmall; k++)
            if (s->group[k] == g)
                s->sub[n++] = s->pc[k];
        in = (struct scaf_policy_input){s->quota[g], chunk, n, s->sub, snap->min_gain};
        if (policy->decide(&in, s->sub_share, s->sub_coef) < 0)
            return -1;
        n = 0;
        for (uint32_t k = 0; k < nmall; k++)
            if (s->group[k] == g) {
                s->pshare[k] = s->sub_share[n];
                s->coef[k] = s->sub_coef[n++];
            }
    }
    return 0;
}

int scaf_referee_policy(const struct scaf_policy *policy, const struct scaf_referee_snapshot *snap,
                        const struct scaf_referee_parts *parts, struct scaf_referee_scratch *s, uint32_t *share)
{
    if (parts->nmall == 0)
        return 0;
    if (run_policy(policy, snap, parts->rest, parts->nmall, s) < 0)
        return -1;
    for (uint32_t k = 0; k < parts->nmall; k++) {
        /* Never more than the program could have seen, never none: whatever the policy returned. */
        uint32_t v = s->pshare[k];
        share[s->idx[k]] = v < 1 ? 1 : v > s->pc[k].max_threads ? s->pc[k].max_threads : v;
    }
    return 0;
}

void scaf_cpuset_layout(const uint32_t *share, uint32_t nclients, uint32_t cpus, const int *cpu_list, uint32_t len,
                        uint64_t (*sets)[SCAF_CPUSET_WORDS])
{
    uint32_t v = 0; /* next virtual context */

    for (uint32_t i = 0; i < nclients; i++) {
        memset(sets[i], 0, sizeof sets[i]);
        for (uint32_t k = 0; k < share[i] && cpus > 0 && len > 0; k++) {
            /* Virtual contexts beyond cpus (more clients than contexts) wrap: those clients share CPUs. */
            int real = cpu_list[((v + k) % cpus) % len];
            if (real >= 0 && real < SCAF_MAX_CPUS)
                sets[i][real / 64] |= 1ull << (real % 64);
        }
        if (cpus > 0)
            v = (v + share[i]) % cpus;
    }
}

/* First fit, in client order: deterministic, and an arrival never reshuffles earlier gangs. */
uint32_t scaf_referee_gangs(const struct scaf_referee_snapshot *snap, const uint32_t *share, uint32_t *slot)
{
    uint32_t cpus = cpus_of(snap), ngangs = 0, load[SCAF_MAX_CPUS];
    bool steered = false;

    for (uint32_t i = 0; i < snap->nclients; i++) {
        uint32_t g = 0;

        slot[i] = 0;
        if (!takes_turns(&snap->clients[i]))
            continue; /* in no gang: its next region must not wait for a turn */
        if (!placed_like_fixed(&snap->clients[i])) {
            steered = true;
            continue;
        }
        while (g < ngangs && load[g] + share[i] > cpus)
            g++;
        if (g == ngangs) {
            if (ngangs == SCAF_MAX_CPUS)
                continue;
            load[ngangs++] = 0;
        }
        load[g] += share[i];
        slot[i] = g + 1;
    }
    if (steered && ngangs < SCAF_MAX_CPUS) {
        ngangs++;
        for (uint32_t i = 0; i < snap->nclients; i++)
            if (takes_turns(&snap->clients[i]) && !placed_like_fixed(&snap->clients[i]))
                slot[i] = ngangs;
    }
    if (ngangs < 2) {
        for (uint32_t i = 0; i < snap->nclients; i++)
            slot[i] = 0;
        return 0;
    }
    return ngangs;
}

/* The allocations from the steps' results. Steered clients are never confined: their thread count is
 * their share. */
static void fill_allocs(const struct scaf_referee_snapshot *snap, const struct scaf_referee_parts *parts,
                        const struct scaf_referee_scratch *s, struct scaf_referee_alloc *out)
{
    for (uint32_t i = 0, k = 0; i < snap->nclients; i++) {
        const struct scaf_referee_client *c = &snap->clients[i];
        struct scaf_referee_alloc *a = &out[i];

        a->share = s->share[i];
        a->malleable = c->malleable != 0;
        a->rigid = c->malleable && c->rigid_team >= 2 ? c->rigid_team : 0;
        a->gang_slot = parts->gangs ? s->slot[i] : 0;
        a->coef = 0.0;
        a->idle = c->idle ? (c->idle_epoch ? c->idle_epoch : 1) : 0;
        memcpy(a->cpuset, s->sets[i], sizeof a->cpuset);
        if (c->idle) {
            /* Never confined, never waiting: its next region runs at once with the team it had (a
             * fixed team its own), and the WAKE it sends then gets it placed or steered again. */
            a->threads = !c->malleable ? team_of(c) : c->idle_team ? c->idle_team : 1;
            a->control = SCAF_CONTROL_THREADS;
            a->rigid = 0;
            memset(a->cpuset, 0, sizeof a->cpuset);
        } else if (placed_like_fixed(c)) {
            /* Its team stands: placed on CPUs of its own, exactly its team, or left to the kernel. */
            a->threads = team_of(c);
            a->control = parts->placed ? SCAF_CONTROL_CPUSET : SCAF_CONTROL_THREADS;
            if (!parts->placed)
                memset(a->cpuset, 0, sizeof a->cpuset);
        } else {
            /* Steered by its thread count alone: its team never exceeds what it may use. */
            a->coef = s->coef[k++];
            a->threads = s->share[i];
            a->control = SCAF_CONTROL_THREADS;
        }
    }
}

int scaf_referee_decide(const struct scaf_policy *policy, const struct scaf_referee_snapshot *snap,
                        struct scaf_referee_scratch *scratch, struct scaf_referee_alloc *out)
{
    struct scaf_referee_parts parts;

    if (snap->nclients == 0)
        return 0;
    if (scaf_referee_scratch_reserve(scratch, snap->nclients) < 0)
        return -1;
    scaf_referee_partition(snap, scratch->pc, scratch->idx, scratch->share, &parts);
    if (scaf_referee_policy(policy, snap, &parts, scratch, scratch->share) < 0)
        return -1;
    scaf_cpuset_layout(scratch->share, snap->nclients, cpus_of(snap), snap->cpu_list, snap->cpu_list_len,
                       scratch->sets);
    if (parts.gangs)
        scaf_referee_gangs(snap, scratch->share, scratch->slot);
    fill_allocs(snap, &parts, scratch, out);
    return 0;
}

void scaf_referee_collect(const struct scaf_page_report *report, uint32_t max_threads,
                          const struct scaf_referee_alloc *prev, struct scaf_referee_client *out)
{
    bool fixed = report->verdict == SCAF_VERDICT_FIXED;

    memset(out, 0, sizeof *out);
    /* A fixed team gains nothing from more CPUs than it has threads. */
    out->pol.max_threads = fixed && report->fixed_team < max_threads ? report->fixed_team : max_threads;
    /* A client that says it can use fewer threads now (idle oneTBB permits) leaves the rest to others. */
    if (report->wanted > 0 && report->wanted < out->pol.max_threads)
        out->pol.max_threads = report->wanted;
    out->pol.prev = prev ? prev->share : 0;
    /* The policy re-uses last round's model when a client has no new point (p' = 1). */
    out->pol.prev_coef = prev ? prev->coef : 0.0;
    out->pol.eff_team = report->eff_team;
    out->pol.efficiency = report->efficiency;
    out->malleable = !fixed;
    out->fixed_team = report->fixed_team;
    out->long_region = report->long_region;
    out->idle_team = prev ? prev->threads : 0;
}
