/* pageread.c — the client half of the shared page, decoded: the only code that reads what a client wrote there. */
#include "pageread.h"

#include <string.h>

#include "scaf/startenv.h"

/* A seqlock read that keeps finding the writer busy gives up: the daemon never waits for a client. */
#define PAGE_READ_TRIES 3

void scaf_pageread_init(struct scaf_page_report *r, uint32_t max_threads)
{
    memset(r, 0, sizeof *r);
    r->fixed_team = max_threads;
    r->efficiency = -1.0;
    r->estimate = SCAF_ESTIMATE_NONE;
}

/* The efficiency report under client_seq; false when every try met a writer. */
static bool read_efficiency(const struct scaf_page *pg, struct scaf_page_report *r)
{
    for (int tries = 0; tries < PAGE_READ_TRIES; tries++) {
        uint32_t s0 = atomic_load_explicit(&pg->client_seq, memory_order_acquire);
        uint32_t eff_team, ppm, estimate;

        if (s0 & 1)
            continue;
        eff_team = atomic_load_explicit(&pg->eff_team, memory_order_relaxed);
        ppm = atomic_load_explicit(&pg->efficiency_ppm, memory_order_relaxed);
        estimate = atomic_load_explicit(&pg->estimate, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&pg->client_seq, memory_order_relaxed) != s0)
            continue;
        if (estimate > SCAF_ESTIMATE_COUNTERS)
            estimate = SCAF_ESTIMATE_NONE;
        r->eff_team = eff_team > SCAF_MAX_CPUS ? 0 : eff_team;
        r->estimate = estimate;
        r->efficiency = estimate == SCAF_ESTIMATE_NONE ? -1.0 : scaf_efficiency_from_ppm(ppm);
        return true;
    }
    return false;
}

/* The reason under reason_seq; empty when every try met a writer. */
static void read_reason(const struct scaf_page *pg, char *out)
{
    for (int tries = 0; tries < PAGE_READ_TRIES; tries++) {
        uint32_t s0 = atomic_load_explicit(&pg->reason_seq, memory_order_acquire);
        if (s0 & 1)
            continue;
        memcpy(out, pg->reason, SCAF_REASON_MAX);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&pg->reason_seq, memory_order_relaxed) == s0) {
            out[SCAF_REASON_MAX - 1] = 0;
            /* Client text: keep it printable so logs and JSON stay one line. */
            for (char *p = out; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                    *p = ' ';
            return;
        }
    }
    out[0] = 0;
}

enum scaf_page_read_result scaf_pageread_report(const struct scaf_page *pg, uint32_t max_threads, bool hello_fixed,
                                          struct scaf_page_report *r)
{
    uint32_t flags = atomic_load_explicit(&pg->client_flags, memory_order_relaxed);
    uint32_t fixed = atomic_load_explicit(&pg->fixed_team, memory_order_relaxed);
    uint32_t verdict = atomic_load_explicit(&pg->verdict, memory_order_acquire);
    uint32_t source = atomic_load_explicit(&pg->verdict_source, memory_order_relaxed);
    bool whole = read_efficiency(pg, r);

    r->flags = flags;
    r->long_region = (flags & SCAF_CLIENT_LONG_REGION) != 0;
    if (fixed == 0)
        fixed = max_threads; /* announced at HELLO, team not reported yet */
    r->fixed_team = fixed > SCAF_MAX_CPUS ? SCAF_MAX_CPUS : fixed;
    r->last_team = atomic_load_explicit(&pg->last_team, memory_order_relaxed);
    if (r->last_team > SCAF_MAX_CPUS)
        r->last_team = SCAF_MAX_CPUS; /* a long region's team is placed: no team exceeds the machine limit */
    r->rigid_team = atomic_load_explicit(&pg->rigid_team, memory_order_relaxed);
    if (r->rigid_team > SCAF_MAX_CPUS)
        r->rigid_team = SCAF_MAX_CPUS; /* the page is untrusted: a huge team is the machine */
    r->rigid_regions = atomic_load_explicit(&pg->rigid_regions, memory_order_relaxed);
    r->wanted = atomic_load_explicit(&pg->wanted, memory_order_relaxed);
    if (r->wanted > SCAF_MAX_CPUS)
        r->wanted = SCAF_MAX_CPUS; /* the page is untrusted: more than the machine is no limit at all */
    r->experiment_pid = atomic_load_explicit(&pg->experiment_pid, memory_order_relaxed);
    r->regions = atomic_load_explicit(&pg->regions, memory_order_relaxed);
    r->experiments = atomic_load_explicit(&pg->experiments, memory_order_relaxed);
    if (verdict > SCAF_VERDICT_FIXED)
        verdict = SCAF_VERDICT_UNDECIDED;
    /* The other signals count too: a client that said so at HELLO or set the flag is fixed. */
    if (hello_fixed || (flags & SCAF_CLIENT_NONMALLEABLE))
        verdict = SCAF_VERDICT_FIXED;
    r->verdict = verdict;
    r->source = source > SCAF_SOURCE_CHECK ? SCAF_SOURCE_DEFAULT : source;
    r->started_with = atomic_load_explicit(&pg->started_with, memory_order_relaxed);
    if (r->started_with > max_threads)
        r->started_with = max_threads; /* the page is untrusted: never more than the program could have seen */
    r->runtimes = atomic_load_explicit(&pg->runtimes, memory_order_relaxed) & ((1u << SCAF_RT_COUNT) - 1u);
    r->runtime_team = atomic_load_explicit(&pg->runtime_team, memory_order_relaxed);
    r->runtimes_follow = atomic_load_explicit(&pg->runtimes_follow, memory_order_relaxed) & r->runtimes;
    if (r->runtime_team > max_threads)
        r->runtime_team = max_threads; /* untrusted: no pool larger than the count the program could see */
    read_reason(pg, r->reason);
    return whole ? SCAF_PAGE_WHOLE : SCAF_PAGE_TORN;
}

uint32_t scaf_pageread_learned(const struct scaf_page *pg, struct scaf_site_memo out[SCAF_MEMORY_SITES])
{
    uint32_t n = atomic_load_explicit(&pg->learned_sites, memory_order_acquire);

    if (n > SCAF_MEMORY_SITES)
        n = SCAF_MEMORY_SITES; /* the page is untrusted: a count beyond the array is the array */
    memcpy(out, pg->learned, n * sizeof out[0]);
    return n;
}

const char *scaf_pageread_verdict_name(uint32_t v)
{
    return v == SCAF_VERDICT_FIXED ? "fixed" : v == SCAF_VERDICT_MALLEABLE ? "malleable" : "undecided";
}

const char *scaf_pageread_source_name(uint32_t s)
{
    static const char *const names[] = {"default", "evidence", "user", "rules", "check"};
    return s < sizeof names / sizeof names[0] ? names[s] : "default";
}

const char *scaf_pageread_estimate_name(uint32_t e)
{
    switch (e) {
    case SCAF_ESTIMATE_ASSUMED:
        return "assumed";
    case SCAF_ESTIMATE_MEASURED:
        return "measured";
    case SCAF_ESTIMATE_COUNTERS:
        return "counters";
    default:
        return "none";
    }
}
