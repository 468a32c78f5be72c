/* test_layer_baseline.c — when a call site's serial baseline is due, and when one may be taken while the program is alone, row by row. */
#include "../../src/layer/estimate/baseline.h"

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
} alone[] = {
    {"one thread: the instance is its own baseline, free", 1, 0, 0, 1000 * MS, 0, 1, 0},
    {"one thread, even before the next alone baseline is allowed", 1, 40 * MS, 2, 1000 * MS, 5000 * MS, 1, 0},
    {"no parallel instance timed yet: nothing to price it by", 2, 0, 0, 1000 * MS, 0, 0, 0},
    {"a critical section's 40 ms on 2 threads: 40 ms lost, within the budget", 2, 40 * MS, 2, 1000 * MS, 0, 1,
     40 * MS},
    {"the same, before the last one is repaid", 2, 40 * MS, 2, 1000 * MS, 1001 * MS, 0, 0},
    {"exactly the budget", 2, 100 * MS, 2, 1000 * MS, 0, 1, 100 * MS},
    {"a region of 10 ms on 16 threads: 150 ms lost, over the budget", 16, 10 * MS, 16, 1000 * MS, 0, 0, 0},
    {"a short region on 16 threads: 15 ms", 16, 1 * MS, 16, 1000 * MS, 0, 1, 15 * MS},
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
        ok = scaf_baseline_alone(&s, alone[i].threads, alone[i].now, alone[i].not_before, BUDGET, &cost);
        CHECK(!ok == !alone[i].ok, "%s: ok %d, want %d", alone[i].what, ok, alone[i].ok);
        if (ok)
            CHECK(cost == alone[i].cost, "%s: cost %llu, want %llu", alone[i].what, (unsigned long long)cost,
                  (unsigned long long)alone[i].cost);
    }
}

/* Due: none yet, or older than the interval; never while one is taken or before the retry time. */
static void due_rows(void)
{
    static const struct {
        const char *what;
        uint64_t serial_ns, serial_at, next_try, now;
        uint32_t busy;
        int due;
    } rows[] = {
        {"none yet", 0, 0, 0, 5000 * MS, 0, 1},
        {"fresh", 3 * MS, 4000 * MS, 0, 5000 * MS, 0, 0},
        {"older than the interval", 3 * MS, 4000 * MS, 0, 14000 * MS, 0, 1},
        {"being taken", 0, 0, 0, 5000 * MS, 1, 0},
        {"before the retry time", 0, 0, 6000 * MS, 5000 * MS, 0, 0},
    };

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct scaf_site s;
        int due;

        memset(&s, 0, sizeof s);
        atomic_store(&s.serial_ns, rows[i].serial_ns);
        atomic_store(&s.serial_at_ns, rows[i].serial_at);
        atomic_store(&s.next_try_ns, rows[i].next_try);
        atomic_store(&s.busy, rows[i].busy);
        due = scaf_baseline_due(&s, rows[i].now, 10000 * MS);
        CHECK(!due == !rows[i].due, "%s: due %d, want %d", rows[i].what, due, rows[i].due);
    }
}

int main(void)
{
    alone_rows();
    due_rows();
    return check_exit("test_layer_baseline");
}
