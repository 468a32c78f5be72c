/* referee.c — the allocation pipeline: collect client pages -> decide (pure policy call) -> apply to pages. */
#include "daemon.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void scaf_cpuset_layout(const uint32_t *share, uint32_t nclients, uint32_t n, const int *cpu, uint32_t ncpu,
                        uint64_t (*sets)[SCAF_CPUSET_WORDS])
{
    uint32_t v = 0; /* next virtual context */

    for (uint32_t i = 0; i < nclients; i++) {
        memset(sets[i], 0, sizeof sets[i]);
        for (uint32_t k = 0; k < share[i] && n > 0 && ncpu > 0; k++) {
            /* Virtual contexts beyond N (more clients than contexts) wrap: those clients share CPUs. */
            int real = cpu[((v + k) % n) % ncpu];
            if (real >= 0 && real < SCAF_MAX_CPUS)
                sets[i][real / 64] |= 1ull << (real % 64);
        }
        if (n > 0)
            v = (v + share[i]) % n;
    }
}

/*
 * Fixed teams first (docs/daemon.md, "Fixed teams"): a fixed team is never
 * given fewer CPUs than it has threads, because a spin-synchronised team
 * squeezed onto fewer CPUs waits a scheduler slice at every hand-off. When
 * the fixed teams fit beside one chunk per malleable client, each gets a CPU
 * set of its own size and the policy divides the rest among the malleable
 * clients. When they do not fit, fixed teams run unconfined, as they would
 * without scaf, and each malleable client keeps a share of what is left
 * (at least one chunk), so scaf never adds threads to an oversubscribed
 * machine. With gangs on, fixed teams that do not fit are packed (first fit,
 * in arrival order) into gangs that each fit the machine, and the gangs take
 * turns.
 */
int scaf_referee_decide(const struct scaf_policy *policy, const struct scaf_referee_snapshot *snap,
                        struct scaf_referee_alloc *out)
{
    uint32_t n = snap->nclients;
    struct scaf_policy_client *pc = NULL;
    uint32_t *threads = NULL, *share = NULL, *idx = NULL;
    uint64_t(*sets)[SCAF_CPUSET_WORDS] = NULL;
    double *coef = NULL;
    struct scaf_policy_input in;
    uint32_t avail = snap->available ? snap->available : 1;
    uint32_t nctx = snap->n ? snap->n : avail;
    uint32_t chunk = snap->chunk ? snap->chunk : 1;
    uint32_t nmall = 0, nfixed = 0, fixed_sum = 0, rest;
    bool placed, gangs;
    int rc = -1;

    if (n == 0)
        return 0;
    pc = calloc(n, sizeof *pc);
    threads = calloc(n, sizeof *threads);
    share = calloc(n, sizeof *share);
    idx = calloc(n, sizeof *idx);
    coef = calloc(n, sizeof *coef);
    sets = calloc(n, sizeof *sets);
    if (!pc || !threads || !share || !idx || !coef || !sets) {
        errno = ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct scaf_referee_client *c = &snap->clients[i];
        if (c->pol.malleable) {
            pc[nmall] = c->pol;
            if (pc[nmall].max_threads == 0)
                pc[nmall].max_threads = 1;
            idx[nmall++] = i;
        } else {
            uint32_t t = c->fixed_team ? c->fixed_team : 1;
            share[i] = t > nctx ? nctx : t;
            fixed_sum += share[i];
            nfixed++;
        }
    }
    placed = fixed_sum + nmall * chunk <= avail;
    /* Gangs: fixed teams and the malleable clients take turns, so the malleable ones, in theirs,
     * have the whole machine. Without gangs they share what the fixed teams leave. */
    gangs = !placed && snap->gang && nfixed > 0 && nfixed + (nmall > 0) >= 2;
    rest = gangs ? avail : avail > fixed_sum ? avail - fixed_sum : 0;
    if (rest < nmall * chunk)
        rest = nmall * chunk; /* oversubscribed already: one chunk each, no more */
    if (nmall > 0) {
        in = (struct scaf_policy_input){rest, chunk, nmall, pc};
        if (policy->decide(&in, threads, coef) < 0)
            goto out;
        for (uint32_t k = 0; k < nmall; k++) {
            /* Never more than the program could have seen, never none: whatever the policy returned. */
            uint32_t s = threads[k];
            share[idx[k]] = s < 1 ? 1 : s > pc[k].max_threads ? pc[k].max_threads : s;
        }
    }
    scaf_cpuset_layout(share, n, nctx, snap->cpu, snap->ncpu, sets);
    if (gangs) {
        /* First fit, in arrival order: deterministic, and an arrival never reshuffles earlier gangs.
         * The malleable clients, all together, are the last gang. */
        uint32_t ngangs = 0, load[SCAF_MAX_CPUS];
        for (uint32_t i = 0; i < n; i++) {
            uint32_t g = 0;
            out[i].gang_slot = 0;
            if (snap->clients[i].pol.malleable)
                continue;
            while (g < ngangs && load[g] + share[i] > nctx)
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
            for (uint32_t i = 0; i < n; i++)
                if (snap->clients[i].pol.malleable)
                    out[i].gang_slot = ngangs;
        }
        if (ngangs < 2)
            for (uint32_t i = 0; i < n; i++)
                out[i].gang_slot = 0;
    } else {
        for (uint32_t i = 0; i < n; i++)
            out[i].gang_slot = 0;
    }
    for (uint32_t i = 0, k = 0; i < n; i++) {
        const struct scaf_referee_client *c = &snap->clients[i];
        struct scaf_referee_alloc *a = &out[i];

        a->share = share[i];
        a->malleable = c->pol.malleable != 0;
        a->coef = 0.0;
        memcpy(a->cpuset, sets[i], sizeof a->cpuset);
        if (!c->pol.malleable) {
            /* Its team size is fixed: placed on CPUs of its own, or left to the kernel. */
            a->threads = c->fixed_team ? c->fixed_team : 1;
            a->control = placed ? SCAF_CONTROL_CPUSET : SCAF_CONTROL_THREADS;
            if (!placed)
                memset(a->cpuset, 0, sizeof a->cpuset);
        } else {
            a->coef = coef[k++];
            a->threads = share[i];
            a->control = c->long_region ? SCAF_CONTROL_CPUSET : SCAF_CONTROL_THREADS;
        }
    }
    rc = 0;
out:
    free(pc);
    free(threads);
    free(share);
    free(idx);
    free(coef);
    free(sets);
    return rc;
}

static int by_id(const void *a, const void *b, void *arg)
{
    const struct scafd *d = arg;
    uint32_t x = d->conns[*(const uint32_t *)a].id, y = d->conns[*(const uint32_t *)b].id;
    return (x > y) - (x < y);
}

/* Reads one page into a snapshot entry. Every field is client-written and so untrusted. */
static void collect(const struct scafd_conn *c, struct scaf_referee_client *r)
{
    struct scaf_page *pg = c->page;
    uint32_t flags = atomic_load_explicit(&pg->client_flags, memory_order_relaxed);
    uint32_t fixed = atomic_load_explicit(&pg->fixed_team, memory_order_relaxed);
    uint32_t eff_threads = atomic_load_explicit(&pg->eff_threads, memory_order_relaxed);
    uint32_t ppm = atomic_load_explicit(&pg->efficiency_ppm, memory_order_relaxed);
    uint32_t est = atomic_load_explicit(&pg->estimate, memory_order_relaxed);
    struct scaf_page_verdict v;
    bool nonmalleable;

    scaf_page_verdict_read(pg, c->hello_nonmalleable, &v);
    nonmalleable = v.verdict == SCAF_VERDICT_FIXED;

    if (est > SCAF_ESTIMATE_COUNTERS)
        est = SCAF_ESTIMATE_NONE;
    if (fixed == 0)
        fixed = c->max_threads; /* announced at HELLO, team not reported yet */
    if (fixed > SCAF_MAX_CPUS)
        fixed = SCAF_MAX_CPUS;
    memset(r, 0, sizeof *r);
    /* A fixed team gains nothing from more CPUs than it has threads. */
    r->pol.max_threads = nonmalleable && fixed < c->max_threads ? fixed : c->max_threads;
    r->pol.prev = c->applied ? c->alloc.share : 0;
    /* The policy re-uses last round's model when a client has no new point (p' = 1). */
    r->pol.prev_coef = c->applied ? c->alloc.coef : 0.0;
    r->pol.report_threads = eff_threads > SCAF_MAX_CPUS ? 0 : eff_threads;
    r->pol.efficiency = est == SCAF_ESTIMATE_NONE ? -1.0 : ppm / 1e6;
    r->pol.measured = est >= SCAF_ESTIMATE_MEASURED;
    r->pol.malleable = !nonmalleable;
    r->fixed_team = fixed;
    r->long_region = (flags & SCAF_CLIENT_LONG_REGION) != 0;
}

static bool same_alloc(const struct scaf_referee_alloc *a, const struct scaf_referee_alloc *b)
{
    return a->threads == b->threads && a->control == b->control && a->malleable == b->malleable &&
           a->gang_slot == b->gang_slot && memcmp(a->cpuset, b->cpuset, sizeof a->cpuset) == 0;
}

/* Seqlock write of the daemon half of the page, then wake the client's helper thread. */
static void page_write(struct scaf_page *pg, const struct scaf_referee_alloc *a, uint32_t nclients, uint32_t n)
{
    uint32_t s = atomic_load_explicit(&pg->seq, memory_order_relaxed);

    s += s & 1; /* the client can scribble on seq; only its own reads suffer, but keep our parity sane */
    atomic_store_explicit(&pg->seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&pg->threads, a->threads, memory_order_relaxed);
    atomic_store_explicit(&pg->control, a->control, memory_order_relaxed);
    atomic_store_explicit(&pg->cpus, n, memory_order_relaxed);
    atomic_store_explicit(&pg->nclients, nclients, memory_order_relaxed);
    for (int w = 0; w < SCAF_CPUSET_WORDS; w++)
        atomic_store_explicit(&pg->cpuset[w], a->cpuset[w], memory_order_relaxed);
    atomic_store_explicit(&pg->seq, s + 2, memory_order_release);
    /* Shared futex (no FUTEX_PRIVATE_FLAG): the waiter is another process mapping the same memfd. */
    syscall(SYS_futex, &pg->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static uint32_t gang_state(const struct scafd *d, uint32_t slot)
{
    if (slot == 0 || d->gang_slots < 2)
        return SCAF_GANG_OFF;
    return slot - 1 == d->gang_turn ? SCAF_GANG_RUN : SCAF_GANG_WAIT;
}

/* One word, outside the seqlock: the layer reads it alone at a region entry and waits on it. */
static void gang_write(struct scaf_page *pg, uint32_t state)
{
    if (atomic_load_explicit(&pg->gang, memory_order_relaxed) == state)
        return;
    atomic_store_explicit(&pg->gang, state, memory_order_release);
    syscall(SYS_futex, &pg->gang, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void scaf_referee_gang_tick(struct scafd *d)
{
    if (d->gang_slots < 2)
        return;
    d->gang_turn = (d->gang_turn + 1) % d->gang_slots;
    for (uint32_t i = 0; i < d->nconns; i++) {
        struct scafd_conn *c = &d->conns[i];
        if (c->state == SCAFD_CONN_CLIENT && c->applied)
            gang_write(c->page, gang_state(d, c->alloc.gang_slot));
    }
}

void scaf_referee_run(struct scafd *d)
{
    struct scaf_referee_snapshot snap;
    uint32_t k = 0;
    bool changed = d->membership_changed;

    /* collect */
    for (uint32_t i = 0; i < d->nconns; i++)
        if (d->conns[i].state == SCAFD_CONN_CLIENT)
            d->order[k++] = i;
    qsort_r(d->order, k, sizeof d->order[0], by_id, d);
    for (uint32_t i = 0; i < k; i++)
        collect(&d->conns[d->order[i]], &d->rclients[i]);
    snap = (struct scaf_referee_snapshot){
        .available = d->available,
        .n = d->cap.n,
        .chunk = d->chunk,
        .nclients = k,
        .clients = d->rclients,
        .cpu = d->cap.cpu,
        .ncpu = d->cap.ncpu,
        .gang = d->opt.gang_quantum_s > 0,
    };

    /* decide */
    if (scaf_referee_decide(d->policy, &snap, d->rallocs) < 0) {
        scaf_say("policy %s failed (%s); allocations unchanged", d->policy->name, strerror(errno));
        return;
    }

    /* apply */
    d->gang_slots = 0;
    for (uint32_t i = 0; i < k; i++)
        if (d->rallocs[i].gang_slot > d->gang_slots)
            d->gang_slots = d->rallocs[i].gang_slot;
    if (d->gang_slots < 2)
        d->gang_slots = 0;
    if (d->gang_turn >= d->gang_slots)
        d->gang_turn = 0;
    for (uint32_t i = 0; i < k; i++) {
        struct scafd_conn *c = &d->conns[d->order[i]];
        const struct scaf_referee_alloc *a = &d->rallocs[i];
        bool differs = !c->applied || !same_alloc(&c->alloc, a);

        if (differs || c->page_nclients != k)
            page_write(c->page, a, k, d->cap.n);
        changed |= differs;
        c->alloc = *a;
        c->applied = true;
        c->page_nclients = k;
        gang_write(c->page, gang_state(d, a->gang_slot));
    }
    d->membership_changed = false;
    if (changed) {
        scaf_log_write(d);
        if (d->opt.verbose) {
            struct scaf_buf b = {0};
            scaf_buf_printf(&b, "allocation (%s, %u available):", d->policy->name, d->available);
            for (uint32_t i = 0; i < k; i++) {
                const struct scafd_conn *c = &d->conns[d->order[i]];
                scaf_buf_printf(&b, " %s[%d]=%u%s", c->name, (int)c->pid, c->alloc.threads,
                                c->alloc.control == SCAF_CONTROL_CPUSET ? "(cpuset)" : "");
            }
            if (k == 0)
                scaf_buf_printf(&b, " no clients");
            if (!b.failed)
                scaf_say("%s", b.p);
            scaf_buf_free(&b);
        }
    }
}
