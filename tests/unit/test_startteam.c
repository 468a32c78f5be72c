/* test_startteam.c — the start-team rule as a table: the share a static split gives a program arriving now. */
#include "scaf/policy.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "check.h"

struct row {
    const char *why;
    uint32_t available, busy, peers, bound;
    uint32_t want;
};

static const struct row rows[] = {
    {"alone, nothing remembered: the whole machine", 16, 0, 0, 16, 16},
    {"alone, bounded by what it could see", 16, 0, 0, 8, 8},
    {"one other client now: half", 16, 1, 0, 16, 8},
    {"three others now: a quarter", 16, 3, 0, 16, 4},
    {"floor, not round: 16 / 3", 16, 2, 0, 16, 5},
    {"alone now, but it usually runs beside one other", 16, 0, 1, 16, 8},
    {"the larger of busy and peers counts, not their sum", 16, 1, 3, 16, 4},
    {"busy larger than peers", 16, 3, 1, 16, 4},
    {"more programs than contexts: one each", 4, 7, 0, 4, 1},
    {"peers more than contexts: still one", 2, 0, 9, 2, 1},
    {"nothing available reads as one context", 0, 0, 0, 8, 1},
    {"a bound of 0 is no bound", 12, 1, 0, 0, 6},
    {"a bound of 1 is one thread", 64, 0, 0, 1, 1},
    {"the build machine: 2 contexts, one other", 2, 1, 0, 2, 1},
    {"busy at its most does not wrap to a division by zero", 8, UINT32_MAX, 0, 8, 1},
    {"peers at its most does not wrap either", 8, 0, UINT32_MAX, 8, 1},
    {"the largest machine alone", 1024, 0, 0, 1024, 1024},
};

/* scaf_start_outlasts: whether a client running now counts in a newcomer's start team. */
struct outlast_row {
    const char *why;
    double elapsed_s, expect_s, newcomer_s;
    bool held, want;
};

static const struct outlast_row outlast_rows[] = {
    {"nothing remembered of the running client: it counts", 1.0, 0.0, 10.0, true, true},
    {"nothing remembered of the newcomer: it counts", 1.0, 2.0, 0.0, true, true},
    {"just arrived, as long as the newcomer: it counts", 0.0, 10.0, 10.0, true, true},
    {"0.38 s left of a 1.28 s run on every context, the newcomer's 1.15 s: ends early in it", 0.9, 1.28, 1.15,
     true, false},
    {"the same, but it leaves the newcomer its share: not early enough", 0.9, 1.28, 1.15, false, true},
    {"holding every context, left exactly half the newcomer's run: ends early", 5.0, 10.0, 10.0, true, false},
    {"holding every context, a little more than half left: it counts", 4.9, 10.0, 10.0, true, true},
    {"leaving room, left exactly a quarter: ends early", 7.5, 10.0, 10.0, false, false},
    {"leaving room, a little more than a quarter left: it counts", 7.4, 10.0, 10.0, false, true},
    {"a long one, much longer newcomer: ends early", 0.0, 1000.0, 10000.0, false, false},
    {"past its usual end, within half again: ends now", 14.0, 10.0, 10.0, false, false},
    {"at half again its usual run: still ending", 15.0, 10.0, 10.0, true, false},
    {"past half again its usual run: not like its runs, it counts", 15.1, 10.0, 10.0, true, true},
    {"negative times are unknown", 1.0, -3.0, 10.0, true, true},
    {"a NaN elapsed counts", NAN, 10.0, 10.0, true, true},
    {"an infinite newcomer counts", 1.0, 2.0, INFINITY, true, true},
};

int main(void)
{
    for (size_t i = 0; i < sizeof outlast_rows / sizeof outlast_rows[0]; i++) {
        const struct outlast_row *r = &outlast_rows[i];
        bool got = scaf_start_outlasts(r->elapsed_s, r->expect_s, r->newcomer_s, r->held);
        CHECK(got == r->want, "%s: scaf_start_outlasts(%g, %g, %g, %d) = %d", r->why, r->elapsed_s, r->expect_s,
              r->newcomer_s, r->held, got);
    }
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *r = &rows[i];
        uint32_t got = scaf_start_team(r->available, r->busy, r->peers, r->bound);
        CHECK(got == r->want, "%s: scaf_start_team(%u, %u, %u, %u) = %u, want %u", r->why, r->available, r->busy,
              r->peers, r->bound, got, r->want);
    }
    return check_exit("test_startteam");
}
