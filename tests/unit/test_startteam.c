/* test_startteam.c — the start-team rule as a table: the share a static split gives a program arriving now. */
#include "scaf/policy.h"

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

int main(void)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct row *r = &rows[i];
        uint32_t got = scaf_start_team(r->available, r->busy, r->peers, r->bound);
        CHECK(got == r->want, "%s: scaf_start_team(%u, %u, %u, %u) = %u, want %u", r->why, r->available, r->busy,
              r->peers, r->bound, got, r->want);
    }
    return check_exit("test_startteam");
}
