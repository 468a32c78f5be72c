/* test_daemon_page.c — the one decoder of a client's page: clamps, verdicts and the efficiency seqlock, on real pages in memory. */
#include "../../src/daemon/collect/pageread.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

/* What the client wrote (and what HELLO said), and what the decoder must make of it. */
struct row {
    const char *name;
    uint32_t max_threads;
    bool hello_fixed;
    uint32_t flags, fixed_team, eff_team, ppm, estimate, client_seq, verdict, source;
    /* expected */
    enum scaf_page_read_result result;
    uint32_t want_fixed, want_eff_team, want_estimate, want_verdict, want_source;
    double want_efficiency;
    bool want_long;
};

static const struct row rows[] = {
    {"nothing written yet", 8, false, 0, 0, 0, 0, 0, 0, 0, 0,
     SCAF_PAGE_WHOLE, 8, 0, SCAF_ESTIMATE_NONE, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, -1.0, false},
    {"a measured report", 8, false, 0, 0, 4, 750000, SCAF_ESTIMATE_MEASURED, 2, 0, 0,
     SCAF_PAGE_WHOLE, 8, 4, SCAF_ESTIMATE_MEASURED, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, 0.75, false},
    {"an estimate the protocol does not know is none", 8, false, 0, 0, 4, 500000, 99, 0, 0, 0,
     SCAF_PAGE_WHOLE, 8, 4, SCAF_ESTIMATE_NONE, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, -1.0, false},
    {"ppm above 1e6 is 1.0", 8, false, 0, 0, 2, 5000000, SCAF_ESTIMATE_COUNTERS, 0, 0, 0,
     SCAF_PAGE_WHOLE, 8, 2, SCAF_ESTIMATE_COUNTERS, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, 1.0, false},
    {"ppm 0 is efficiency 0, not unknown", 8, false, 0, 0, 2, 0, SCAF_ESTIMATE_ASSUMED, 0, 0, 0,
     SCAF_PAGE_WHOLE, 8, 2, SCAF_ESTIMATE_ASSUMED, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, 0.0, false},
    {"eff_team above 1024 is none", 8, false, 0, 0, 5000, 500000, SCAF_ESTIMATE_MEASURED, 0, 0, 0,
     SCAF_PAGE_WHOLE, 8, 0, SCAF_ESTIMATE_MEASURED, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, 0.5, false},
    {"fixed_team 0 is max_threads", 6, false, 0, 0, 0, 0, 0, 0, 0, 0,
     SCAF_PAGE_WHOLE, 6, 0, SCAF_ESTIMATE_NONE, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, -1.0, false},
    {"fixed_team huge is 1024", 6, false, 0, 0xffffffffu, 0, 0, 0, 0, 0, 0,
     SCAF_PAGE_WHOLE, SCAF_MAX_CPUS, 0, SCAF_ESTIMATE_NONE, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, -1.0, false},
    {"fixed_team in range is kept", 6, false, 0, 3, 0, 0, 0, 0, 0, 0,
     SCAF_PAGE_WHOLE, 3, 0, SCAF_ESTIMATE_NONE, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, -1.0, false},
    {"bad verdict and source are undecided/default", 8, false, 0, 0, 0, 0, 0, 0, 7, 9,
     SCAF_PAGE_WHOLE, 8, 0, SCAF_ESTIMATE_NONE, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, -1.0, false},
    {"a fixed verdict from evidence", 8, false, 0, 0, 0, 0, 0, 0, SCAF_VERDICT_FIXED, SCAF_SOURCE_EVIDENCE,
     SCAF_PAGE_WHOLE, 8, 0, SCAF_ESTIMATE_NONE, SCAF_VERDICT_FIXED, SCAF_SOURCE_EVIDENCE, -1.0, false},
    {"HELLO's flag makes it fixed whatever the page says", 8, true, 0, 0, 0, 0, 0, 0, SCAF_VERDICT_MALLEABLE,
     SCAF_SOURCE_USER, SCAF_PAGE_WHOLE, 8, 0, SCAF_ESTIMATE_NONE, SCAF_VERDICT_FIXED, SCAF_SOURCE_USER, -1.0, false},
    {"the page flag makes it fixed", 8, false, SCAF_CLIENT_NONMALLEABLE, 4, 0, 0, 0, 0, SCAF_VERDICT_MALLEABLE, 0,
     SCAF_PAGE_WHOLE, 4, 0, SCAF_ESTIMATE_NONE, SCAF_VERDICT_FIXED, SCAF_SOURCE_DEFAULT, -1.0, false},
    {"long region flag", 8, false, SCAF_CLIENT_LONG_REGION | 0xf0000000u, 0, 0, 0, 0, 0, 0, 0,
     SCAF_PAGE_WHOLE, 8, 0, SCAF_ESTIMATE_NONE, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, -1.0, true},
    /* The efficiency seqlock: an odd client_seq means the client is writing; the last whole report stays
     * (eff 2, 0.5, measured: see page_with_last_good below). */
    {"odd client_seq keeps the last whole report", 8, false, 0, 0, 8, 100000, SCAF_ESTIMATE_COUNTERS, 7, 0, 0,
     SCAF_PAGE_TORN, 8, 2, SCAF_ESTIMATE_MEASURED, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, 0.5, false},
    {"scribbled all-ones client_seq keeps it too", 8, false, 0, 0, 8, 100000, 0xffffffffu, 0xffffffffu, 0, 0,
     SCAF_PAGE_TORN, 8, 2, SCAF_ESTIMATE_MEASURED, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, 0.5, false},
    {"even client_seq after the write: the new report", 8, false, 0, 0, 8, 100000, SCAF_ESTIMATE_COUNTERS, 8, 0, 0,
     SCAF_PAGE_WHOLE, 8, 8, SCAF_ESTIMATE_COUNTERS, SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_DEFAULT, 0.1, false},
};

static void write_row(struct scaf_page *pg, const struct row *r)
{
    memset(pg, 0, sizeof *pg);
    atomic_store(&pg->client_flags, r->flags);
    atomic_store(&pg->fixed_team, r->fixed_team);
    atomic_store(&pg->last_team, 5);
    atomic_store(&pg->eff_team, r->eff_team);
    atomic_store(&pg->efficiency_ppm, r->ppm);
    atomic_store(&pg->estimate, r->estimate);
    atomic_store(&pg->client_seq, r->client_seq);
    atomic_store(&pg->experiment_pid, 4242);
    atomic_store(&pg->regions, 12345);
    atomic_store(&pg->experiments, 7);
    atomic_store(&pg->verdict, r->verdict);
    atomic_store(&pg->verdict_source, r->source);
}

static void table(void)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *r = &rows[i];
        struct scaf_page pg;
        struct scaf_page_report rep;
        enum scaf_page_read_result res;

        /* The report a previous turn decoded whole. */
        scaf_pageread_init(&rep, r->max_threads);
        rep.eff_team = 2;
        rep.efficiency = 0.5;
        rep.estimate = SCAF_ESTIMATE_MEASURED;
        if (r->result == SCAF_PAGE_WHOLE)
            scaf_pageread_init(&rep, r->max_threads);
        write_row(&pg, r);
        res = scaf_pageread_report(&pg, r->max_threads, r->hello_fixed, &rep);
        CHECK(res == r->result, "%s: result %d, want %d", r->name, res, r->result);
        CHECK(rep.fixed_team == r->want_fixed, "%s: fixed_team %u, want %u", r->name, rep.fixed_team, r->want_fixed);
        CHECK(rep.eff_team == r->want_eff_team, "%s: eff_team %u, want %u", r->name, rep.eff_team,
              r->want_eff_team);
        CHECK(rep.estimate == r->want_estimate, "%s: estimate %u, want %u", r->name, rep.estimate, r->want_estimate);
        CHECK(fabs(rep.efficiency - r->want_efficiency) < 1e-9, "%s: efficiency %g, want %g", r->name,
              rep.efficiency, r->want_efficiency);
        CHECK(rep.verdict == r->want_verdict, "%s: verdict %u, want %u", r->name, rep.verdict, r->want_verdict);
        CHECK(rep.source == r->want_source, "%s: source %u, want %u", r->name, rep.source, r->want_source);
        CHECK(rep.long_region == r->want_long, "%s: long_region %d", r->name, rep.long_region);
        /* Single words outside the seqlock are read every time, torn report or not. */
        CHECK(rep.flags == r->flags && rep.last_team == 5 && rep.experiment_pid == 4242 && rep.regions == 12345 &&
                  rep.experiments == 7,
              "%s: plain fields", r->name);
    }
}

static void reason(void)
{
    struct scaf_page pg;
    struct scaf_page_report rep;

    memset(&pg, 0, sizeof pg);
    scaf_pageread_init(&rep, 4);
    snprintf(pg.reason, sizeof pg.reason, "omp_get_num_threads\tin\nsolve");
    scaf_pageread_report(&pg, 4, false, &rep);
    CHECK(strcmp(rep.reason, "omp_get_num_threads in solve") == 0, "control bytes become spaces: '%s'", rep.reason);

    memset(pg.reason, 'x', sizeof pg.reason); /* no NUL at all */
    scaf_pageread_report(&pg, 4, false, &rep);
    CHECK(strlen(rep.reason) == SCAF_REASON_MAX - 1, "unterminated reason is cut: %zu", strlen(rep.reason));

    atomic_store(&pg.reason_seq, 3); /* being rewritten */
    scaf_pageread_report(&pg, 4, false, &rep);
    CHECK(rep.reason[0] == 0, "a reason being rewritten reads as empty: '%s'", rep.reason);
}

/* A real second thread publishing two reports alternately, the way the layer does (odd while writing). */
struct writer {
    struct scaf_page *pg;
    atomic_bool stop;
    atomic_ulong rounds;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    static const uint32_t reports[2][3] = {{2, 500000, SCAF_ESTIMATE_MEASURED}, {4, 250000, SCAF_ESTIMATE_COUNTERS}};

    for (unsigned long k = 0; !atomic_load(&w->stop); k++) {
        const uint32_t *r = reports[k & 1];
        uint32_t s = atomic_load_explicit(&w->pg->client_seq, memory_order_relaxed);
        atomic_store_explicit(&w->pg->client_seq, s + 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&w->pg->eff_team, r[0], memory_order_relaxed);
        atomic_store_explicit(&w->pg->efficiency_ppm, r[1], memory_order_relaxed);
        atomic_store_explicit(&w->pg->estimate, r[2], memory_order_relaxed);
        atomic_store_explicit(&w->pg->client_seq, s + 2, memory_order_release);
        atomic_store(&w->rounds, k + 1);
    }
    return NULL;
}

static void concurrent_writer(void)
{
    static struct scaf_page pg;
    struct writer w = {.pg = &pg};
    struct scaf_page_report rep;
    pthread_t t;
    unsigned long mixed = 0, reads = 0;

    scaf_pageread_init(&rep, 8);
    if (pthread_create(&t, NULL, writer_main, &w) != 0) {
        fail("pthread_create", "no writer thread");
        return;
    }
    /* Every decoded report is one the client published whole, or the one before: never a mix. */
    while (reads < 200000 || atomic_load(&w.rounds) < 1000) {
        scaf_pageread_report(&pg, 8, false, &rep);
        reads++;
        bool none = rep.estimate == SCAF_ESTIMATE_NONE && rep.eff_team == 0 && rep.efficiency == -1.0;
        bool a = rep.eff_team == 2 && rep.efficiency == 0.5 && rep.estimate == SCAF_ESTIMATE_MEASURED;
        bool b = rep.eff_team == 4 && rep.efficiency == 0.25 && rep.estimate == SCAF_ESTIMATE_COUNTERS;
        if (!(none || a || b))
            mixed++;
    }
    atomic_store(&w.stop, true);
    pthread_join(t, NULL);
    CHECK(mixed == 0, "%lu of %lu reads mixed two reports", mixed, reads);
}

/* `wanted` (protocol 5): what the client can use now, 0 for no limit; more than the machine is the machine. */
static void wanted(void)
{
    static const struct {
        uint32_t written, want;
    } cases[] = {{0, 0}, {1, 1}, {3, 3}, {SCAF_MAX_CPUS, SCAF_MAX_CPUS}, {SCAF_MAX_CPUS + 1, SCAF_MAX_CPUS},
                 {0xffffffffu, SCAF_MAX_CPUS}};

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct scaf_page pg;
        struct scaf_page_report rep;

        memset(&pg, 0, sizeof pg);
        atomic_store(&pg.wanted, cases[i].written);
        scaf_pageread_init(&rep, 8);
        scaf_pageread_report(&pg, 8, false, &rep);
        CHECK(rep.wanted == cases[i].want, "wanted %u read as %u, want %u", cases[i].written, rep.wanted,
              cases[i].want);
    }
}

int main(void)
{
    table();
    wanted();
    reason();
    concurrent_writer();
    return check_exit("test_daemon_page");
}
