/* test_layer_baseline.c — when a call site's serial baseline is due, and when one may be taken while the program is alone, row by row. */
#include "../../src/layer/estimate/baseline.h"
#include "../../src/layer/estimate/estimate_math.h"

#include <math.h>
#include <string.h>

#include "check.h"

#define MS 1000000ull

/* The layer's numbers: a 10 s interval, so an alone baseline may lose at most 100 ms. */
#define BUDGET (100 * MS)

static const struct {
    const char *what;
    unsigned threads;      /* the team the instance would run */
    uint64_t par_ns;       /* the site's latest parallel instance */
    uint32_t par_threads;  /* and its team */
    uint64_t now, not_before;
    int ok;
    uint64_t cost;
    double mean_n, mean_ns; /* the mean of the site's parallel instances, at the same team */
} alone[] = {
    {"one thread: the instance is its own baseline, free", 1, 0, 0, 1000 * MS, 0, 1, 0, 0, 0},
    {"one thread, even before the next alone baseline is allowed", 1, 40 * MS, 2, 1000 * MS, 5000 * MS, 1, 0, 0, 0},
    {"no parallel instance timed yet: nothing to price it by", 2, 0, 0, 1000 * MS, 0, 0, 0, 0, 0},
    {"a critical section's 40 ms on 2 threads: 40 ms lost, within the budget", 2, 40 * MS, 2, 1000 * MS, 0, 1,
     40 * MS, 0, 0},
    {"the same, before the last one is repaid", 2, 40 * MS, 2, 1000 * MS, 1001 * MS, 0, 0, 0, 0},
    {"exactly the budget", 2, 100 * MS, 2, 1000 * MS, 0, 1, 100 * MS, 0, 0},
    {"a region of 10 ms on 16 threads: 150 ms lost, over the budget", 16, 10 * MS, 16, 1000 * MS, 0, 0, 0, 0, 0},
    {"a short region on 16 threads: 15 ms", 16, 1 * MS, 16, 1000 * MS, 0, 1, 15 * MS, 0, 0},
    {"the latest instance small, the mean 30 ms: priced at the mean", 2, 5 * MS, 2, 1000 * MS, 0, 1, 30 * MS,
     40.0, 30.0 * MS},
    {"the mean over the budget, though the latest fits", 2, 5 * MS, 2, 1000 * MS, 0, 0, 0, 40.0, 150.0 * MS},
};

static void alone_rows(void)
{
    for (size_t i = 0; i < sizeof alone / sizeof alone[0]; i++) {
        struct scaf_site s;
        uint64_t cost = 12345;
        int ok;

        memset(&s, 0, sizeof s);
        atomic_store(&s.par_ns, alone[i].par_ns);
        atomic_store(&s.par_threads, alone[i].par_threads);
        if (alone[i].mean_n > 0) {
            atomic_store(&s.mean_team, alone[i].par_threads);
            atomic_store(&s.mean_n, alone[i].mean_n);
            atomic_store(&s.mean_sum, alone[i].mean_n * alone[i].mean_ns);
        }
        ok = scaf_baseline_alone(&s, alone[i].threads, alone[i].now, alone[i].not_before, BUDGET, &cost);
        CHECK(!ok == !alone[i].ok, "%s: ok %d, want %d", alone[i].what, ok, alone[i].ok);
        if (ok)
            CHECK(cost == alone[i].cost, "%s: cost %llu, want %llu", alone[i].what, (unsigned long long)cost,
                  (unsigned long long)alone[i].cost);
    }
}

/* An instance number of the site keyed `key` that is (or is not) picked for an extra sample. */
static uint64_t instance_picked(uint64_t key, int picked)
{
    uint64_t i = 1;

    while (!scaf_samples_pick(key, i, 16) != !picked)
        i++;
    return i;
}

/* Due: none yet, or older than the interval; more: a picked instance while the mean is not yet known. Never
 * while one is taken or before the retry time. */
static void due_rows(void)
{
    enum { NONE = SCAF_BASELINE_NONE, DUE = SCAF_BASELINE_DUE, MORE = SCAF_BASELINE_MORE };
    static const struct {
        const char *what;
        uint64_t serial_ns, serial_at, next_try, now;
        uint32_t busy;
        double n;   /* samples behind the mean (all equal) */
        int picked; /* the instance is one the extra samples pick */
        int want;
    } rows[] = {
        {"none yet", 0, 0, 0, 5000 * MS, 0, 0, 1, DUE},
        {"none yet, at any instance", 0, 0, 0, 5000 * MS, 0, 0, 0, DUE},
        {"fresh and known (80 samples, 72 after 1 s)", 3 * MS, 4000 * MS, 0, 5000 * MS, 0, 80, 1, NONE},
        {"fresh, 3 samples, a picked instance", 3 * MS, 4000 * MS, 0, 5000 * MS, 0, 3, 1, MORE},
        {"fresh, 3 samples, another instance", 3 * MS, 4000 * MS, 0, 5000 * MS, 0, 3, 0, NONE},
        {"100 samples, faded by 8 s to 45", 3 * MS, 4000 * MS, 0, 12000 * MS, 0, 100, 1, MORE},
        {"older than the interval", 3 * MS, 4000 * MS, 0, 14000 * MS, 0, 100, 0, DUE},
        {"being taken", 0, 0, 0, 5000 * MS, 1, 0, 1, NONE},
        {"3 samples, being taken", 3 * MS, 4000 * MS, 0, 5000 * MS, 1, 3, 1, NONE},
        {"before the retry time", 0, 0, 6000 * MS, 5000 * MS, 0, 0, 1, NONE},
    };

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct scaf_site s;
        enum scaf_baseline_need got;

        memset(&s, 0, sizeof s);
        atomic_store(&s.key, (uintptr_t)0x7f0012345160ull);
        atomic_store(&s.instances, instance_picked(0x7f0012345160ull, rows[i].picked));
        atomic_store(&s.serial_ns, rows[i].serial_ns);
        atomic_store(&s.serial_at_ns, rows[i].serial_at);
        atomic_store(&s.serial_n, rows[i].n);
        atomic_store(&s.serial_sum, rows[i].n * (double)rows[i].serial_ns);
        atomic_store(&s.serial_sq, rows[i].n * (double)rows[i].serial_ns * (double)rows[i].serial_ns);
        atomic_store(&s.next_try_ns, rows[i].next_try);
        atomic_store(&s.busy, rows[i].busy);
        got = scaf_baseline_due(&s, rows[i].now, 10000 * MS);
        CHECK(got == (enum scaf_baseline_need)rows[i].want, "%s: need %d, want %d", rows[i].what, (int)got,
              rows[i].want);
    }
}

/* A spread that 200 samples pin down (coefficient of variation 0.93: 87 needed) no longer is once they have
 * faded to 81, 9 s later: the count fades, and the spread with it stays what it was. */
static void spread_rows(void)
{
    struct scaf_site s;
    enum scaf_baseline_need got;

    memset(&s, 0, sizeof s);
    atomic_store(&s.key, (uintptr_t)0x7f0012345160ull);
    for (int i = 0; i < 200; i++)
        scaf_baseline_set(&s, i % 2 ? 100 * 1000 : 2900 * 1000, 1000 * MS, 10000 * MS);
    atomic_store(&s.instances, instance_picked(0x7f0012345160ull, 1));
    got = scaf_baseline_due(&s, 1000 * MS, 10000 * MS);
    CHECK(got == SCAF_BASELINE_NONE, "200 samples, at once: need %d", (int)got);
    got = scaf_baseline_due(&s, 10000 * MS, 10000 * MS);
    CHECK(got == SCAF_BASELINE_MORE, "200 samples faded to 81: need %d", (int)got);
    atomic_store(&s.instances, instance_picked(0x7f0012345160ull, 0));
    got = scaf_baseline_due(&s, 10000 * MS, 10000 * MS);
    CHECK(got == SCAF_BASELINE_NONE, "the same at an instance not picked: need %d", (int)got);
}

/* The baseline is the faded mean of the samples; the other side, the faded mean of plain instances per team. */
static void mean_rows(void)
{
    struct scaf_site s;
    double m;

    memset(&s, 0, sizeof s);
    scaf_baseline_set(&s, 30 * 1000, 1000 * MS, 10000 * MS);
    CHECK(atomic_load(&s.serial_ns) == 30 * 1000, "one sample: %llu", (unsigned long long)atomic_load(&s.serial_ns));
    scaf_baseline_set(&s, 90 * 1000, 1000 * MS, 10000 * MS);
    CHECK(atomic_load(&s.serial_ns) == 60 * 1000, "two: %llu", (unsigned long long)atomic_load(&s.serial_ns));
    /* 10 s later the two count e^-1 each: (60000 x 2/e + 300000) / (2/e + 1). */
    scaf_baseline_set(&s, 300 * 1000, 11000 * MS, 10000 * MS);
    m = (60000.0 * 2.0 * exp(-1.0) + 300000.0) / (2.0 * exp(-1.0) + 1.0);
    CHECK(fabs((double)atomic_load(&s.serial_ns) - m) <= 1.0, "faded: %llu, want %.0f",
          (unsigned long long)atomic_load(&s.serial_ns), m);
    CHECK(atomic_load(&s.serial_at_ns) == 11000 * MS, "the latest sample's time");
    scaf_baseline_set(&s, 0, 11000 * MS, 10000 * MS);
    CHECK(atomic_load(&s.serial_ns) > 0, "a 0 ns sample still leaves a baseline");

    memset(&s, 0, sizeof s);
    m = scaf_baseline_observe(&s, 2, 1000, 1000 * MS, 10000 * MS);
    CHECK(m == 1000.0, "first instance: %g", m);
    m = scaf_baseline_observe(&s, 2, 3000, 1000 * MS, 10000 * MS);
    CHECK(m == 2000.0, "two at the same moment: %g", m);
    m = scaf_baseline_observe(&s, 2, 4000, 11000 * MS, 10000 * MS);
    CHECK(fabs(m - (4000.0 * exp(-1.0) + 4000.0) / (2.0 * exp(-1.0) + 1.0)) < 1e-6, "faded: %g", m);
    m = scaf_baseline_observe(&s, 3, 500, 11000 * MS, 10000 * MS);
    CHECK(m == 500.0, "a new team starts again: %g", m);
    /* Closely spaced instances fade by the series, continuous with exp() where it takes over. */
    memset(&s, 0, sizeof s);
    scaf_baseline_observe(&s, 2, 1000, 1000 * MS, 10000 * MS);
    m = scaf_baseline_observe(&s, 2, 2000, 1000 * MS + 50 * MS, 10000 * MS);
    CHECK(fabs(m - (1000.0 * exp(-0.005) + 2000.0) / (exp(-0.005) + 1.0)) < 1e-3, "series fade: %g", m);
}

int main(void)
{
    alone_rows();
    due_rows();
    mean_rows();
    spread_rows();
    return check_exit("test_layer_baseline");
}
