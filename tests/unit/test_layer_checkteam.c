/* test_layer_checkteam.c — the seeded teams of scaf check (malleable/checkteam.c): fixed rows, range and replay over a sweep. */
#include "../../src/layer/malleable/checkteam.h"

#include <stdint.h>

#include "check.h"

static const struct {
    uint64_t seed, index;
    unsigned bound, team;
} rows[] = {
    /* Values of the formula as scaf check has always drawn them: a seed replays a run exactly. */
    {1, 0, 8, 5},
    {1, 1, 8, 2},
    {1, 2, 8, 2},
    {42, 0, 4, 4},
    {42, 7, 4, 2},
    {0, 0, 1, 1},
    {0, 3, 2, 2},
    {12345, 99, 64, 59},
    {UINT64_MAX, 5, 1024, 853},
};

int main(void)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        unsigned t = scaf_checkteam_pick(rows[i].seed, rows[i].index, rows[i].bound);
        CHECK(t == rows[i].team, "seed %llu index %llu bound %u: team %u, want %u", (unsigned long long)rows[i].seed,
              (unsigned long long)rows[i].index, rows[i].bound, t, rows[i].team);
    }
    /* Every team lies in 1..bound, the same seed and index give the same team, and a few hundred instances
     * reach every team of a small bound. */
    for (unsigned bound = 1; bound <= 16; bound++) {
        unsigned seen = 0;
        for (uint64_t i = 0; i < 400; i++) {
            unsigned t = scaf_checkteam_pick(7, i, bound);
            CHECK(t >= 1 && t <= bound, "bound %u index %llu: team %u out of range", bound, (unsigned long long)i, t);
            CHECK(t == scaf_checkteam_pick(7, i, bound), "bound %u index %llu: not reproducible", bound,
                  (unsigned long long)i);
            if (t >= 1 && t <= bound)
                seen |= 1u << (t - 1);
        }
        CHECK(seen == (1u << bound) - 1, "bound %u: teams seen 0x%x, want every one", bound, seen);
    }
    return check_exit("test_layer_checkteam");
}
