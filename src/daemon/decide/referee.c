/* referee.c — the decision, pure: decoded client reports and the machine in, shares and CPU sets out. */
#include "referee.h"
#include "peruser.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * The policy over the malleable clients pc[0..nmall) (snap->clients[idx[k]]).
 * With per_user and more than one user among them, each user's part of
 * `rest` comes first (a user's demand: the contexts their clients could run)
 * and the policy runs once per user on that part, so whatever a user's
 * clients report moves contexts only between that user's own clients.
 */
static int run_policy(const struct scaf_policy *policy, const struct scaf_referee_snapshot *snap, uint32_t rest,
                      uint32_t chunk, uint32_t nmall, const struct scaf_policy_client *pc, const uint32_t *idx,
                      uint32_t *given, double *coef)
{
    struct scaf_policy_input in = {rest, chunk, nmall, pc, snap->min_gain};
    struct scaf_policy_client *sub = NULL;
    uint32_t *group = NULL, *demand = NULL, *count = NULL, *quota = NULL, *sgiven = NULL;
    uid_t *uid = NULL;
    double *scoef = NULL;
    uint32_t ngroups;
    int rc = -1;

    if (!snap->per_user || nmall < 2)
        return policy->decide(&in, given, coef);
    uid = calloc(nmall, sizeof *uid);
    group = calloc(nmall, sizeof *group);
    demand = calloc(nmall, sizeof *demand);
    count = calloc(nmall, sizeof *count);
    quota = calloc(nmall, sizeof *quota);
    sgiven = calloc(nmall, sizeof *sgiven);
    sub = calloc(nmall, sizeof *sub);
    scoef = calloc(nmall, sizeof *scoef);
    if (!uid || !group || !demand || !count || !quota || !sgiven || !sub || !scoef) {
        errno = ENOMEM;
        goto out;
    }
    for (uint32_t k = 0; k < nmall; k++)
        uid[k] = snap->clients[idx[k]].uid;
    ngroups = scaf_peruser_groups(uid, nmall, group);
    if (ngroups < 2) {
        rc = policy->decide(&in, given, coef);
        goto out;
    }
    for (uint32_t k = 0; k < nmall; k++) {
        uint32_t g = group[k], m = pc[k].max_threads < rest ? pc[k].max_threads : rest;
        demand[g] = demand[g] + m > rest ? rest : demand[g] + m;
        count[g]++;
    }
    scaf_peruser_quotas(rest, ngroups, demand, count, quota);
    for (uint32_t g = 0; g < ngroups; g++) {
        uint32_t n = 0;
        for (uint32_t k = 0; k < nmall; k++)
            if (group[k] == g)
                sub[n++] = pc[k];
        in = (struct scaf_policy_input){quota[g], chunk, n, sub, snap->min_gain};
        if (policy->decide(&in, sgiven, scoef) < 0)
            goto out;
        n = 0;
        for (uint32_t k = 0; k < nmall; k++)
            if (group[k] == g) {
                given[k] = sgiven[n];
                coef[k] = scoef[n++];
            }
    }
    rc = 0;
out:
    free(uid);
    free(group);
    free(demand);
    free(count);
    free(quota);
    free(sgiven);
    free(sub);
    free(scoef);
    return rc;
}

/* Whether the referee places a client like a fixed team: its team is fixed, or it runs one now
 * that the daemon did not choose (a clause, a first look, a long region). */
static bool placed_like_fixed(const struct scaf_referee_client *c)
{
    return !c->malleable || c->rigid_team >= 2;
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
 * one chunk per steered client, each gets a CPU set of exactly its team and
 * the policy divides the rest among the steered clients. When they do not fit
 * (or one team is larger than the machine), they run unconfined, as they would
 * without scaf, and each steered client keeps a share of what is left (at
 * least one chunk), so scaf never adds threads to an oversubscribed machine.
 * With gangs on, the teams that do not fit are packed (first fit, in arrival
 * order) into gangs that each fit the machine, and the gangs take turns.
 * Steered clients are never confined: their thread count is their share.
 */
int scaf_referee_decide(const struct scaf_policy *policy, const struct scaf_referee_snapshot *snap,
                        struct scaf_referee_alloc *out)
{
    uint32_t nclients = snap->nclients;
    struct scaf_policy_client *pc = NULL;
    uint32_t *given = NULL, *share = NULL, *idx = NULL; /* given: the policy's shares, before the clamp */
    uint64_t(*sets)[SCAF_CPUSET_WORDS] = NULL;
    double *coef = NULL;
    uint32_t available = snap->available ? snap->available : 1;
    uint32_t cpus = snap->cpus ? snap->cpus : available;
    uint32_t chunk = snap->chunk ? snap->chunk : 1;
    uint32_t nmall = 0, nfixed = 0, fixed_sum = 0, rest;
    bool placed, gangs, too_big = false;
    int rc = -1;

    if (nclients == 0)
        return 0;
    pc = calloc(nclients, sizeof *pc);
    given = calloc(nclients, sizeof *given);
    share = calloc(nclients, sizeof *share);
    idx = calloc(nclients, sizeof *idx);
    coef = calloc(nclients, sizeof *coef);
    sets = calloc(nclients, sizeof *sets);
    if (!pc || !given || !share || !idx || !coef || !sets) {
        errno = ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < nclients; i++) {
        const struct scaf_referee_client *c = &snap->clients[i];
        if (!placed_like_fixed(c)) {
            pc[nmall] = c->pol;
            if (pc[nmall].max_threads == 0)
                pc[nmall].max_threads = 1;
            idx[nmall++] = i;
        } else {
            uint32_t t = team_of(c);
            /* A team larger than the machine cannot have CPUs of its own: it runs unconfined. */
            too_big |= t > cpus;
            share[i] = t > cpus ? cpus : t;
            fixed_sum += share[i];
            nfixed++;
        }
    }
    placed = !too_big && fixed_sum + nmall * chunk <= available;
    /* Gangs: fixed teams and the steered clients take turns, so the steered ones, in theirs, have
     * the whole machine. Without gangs they share what the fixed teams leave. */
    gangs = !placed && snap->gang && nfixed > 0 && nfixed + (nmall > 0) >= 2;
    rest = gangs ? available : available > fixed_sum ? available - fixed_sum : 0;
    if (rest < nmall * chunk)
        rest = nmall * chunk; /* oversubscribed already: one chunk each, no more */
    if (nmall > 0) {
        if (run_policy(policy, snap, rest, chunk, nmall, pc, idx, given, coef) < 0)
            goto out;
        for (uint32_t k = 0; k < nmall; k++) {
            /* Never more than the program could have seen, never none: whatever the policy returned. */
            uint32_t s = given[k];
            share[idx[k]] = s < 1 ? 1 : s > pc[k].max_threads ? pc[k].max_threads : s;
        }
    }
    scaf_cpuset_layout(share, nclients, cpus, snap->cpu_list, snap->cpu_list_len, sets);
    if (gangs) {
        /* First fit, in arrival order: deterministic, and an arrival never reshuffles earlier gangs.
         * The steered clients, all together, are the last gang. */
        uint32_t ngangs = 0, load[SCAF_MAX_CPUS];
        for (uint32_t i = 0; i < nclients; i++) {
            uint32_t g = 0;
            out[i].gang_slot = 0;
            if (!placed_like_fixed(&snap->clients[i]))
                continue;
            while (g < ngangs && load[g] + share[i] > cpus)
                g++;
            if (g == ngangs) {
                if (ngangs == SCAF_MAX_CPUS)
                    continue;
                load[ngangs++] = 0;
            }
            load[g] += share[i];
            out[i].gang_slot = g + 1;
        }
        if (nmall > 0 && ngangs < SCAF_MAX_CPUS) {
            ngangs++;
            for (uint32_t i = 0; i < nclients; i++)
                if (!placed_like_fixed(&snap->clients[i]))
                    out[i].gang_slot = ngangs;
        }
        if (ngangs < 2)
            for (uint32_t i = 0; i < nclients; i++)
                out[i].gang_slot = 0;
    } else {
        for (uint32_t i = 0; i < nclients; i++)
            out[i].gang_slot = 0;
    }
    for (uint32_t i = 0, k = 0; i < nclients; i++) {
        const struct scaf_referee_client *c = &snap->clients[i];
        struct scaf_referee_alloc *a = &out[i];

        a->share = share[i];
        a->malleable = c->malleable != 0;
        a->rigid = c->malleable && c->rigid_team >= 2 ? c->rigid_team : 0;
        a->coef = 0.0;
        memcpy(a->cpuset, sets[i], sizeof a->cpuset);
        if (placed_like_fixed(c)) {
            /* Its team stands: placed on CPUs of its own, exactly its team, or left to the kernel. */
            a->threads = team_of(c);
            a->control = placed ? SCAF_CONTROL_CPUSET : SCAF_CONTROL_THREADS;
            if (!placed)
                memset(a->cpuset, 0, sizeof a->cpuset);
        } else {
            /* Steered by its thread count alone: its team never exceeds what it may use. */
            a->coef = coef[k++];
            a->threads = share[i];
            a->control = SCAF_CONTROL_THREADS;
        }
    }
    rc = 0;
out:
    free(pc);
    free(given);
    free(share);
    free(idx);
    free(coef);
    free(sets);
    return rc;
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
    out->pol.report_threads = report->eff_threads;
    out->pol.efficiency = report->efficiency;
    out->malleable = !fixed;
    out->fixed_team = report->fixed_team;
    out->long_region = report->long_region;
}
