/* irregular.c — many tiny regions of tasks with irregular cost, shared out by dynamic scheduling. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* Task t of region k makes P(k,t) weighted passes over a small table, with
 * P between 1 and 64 from a hash: a static split would leave threads idle,
 * so the loop is dynamic. Its exact result is P(P+1)/2 times the table's
 * sum (mod 2^64), which makes the check one multiplication per task. */

#define TASKS 16
#define TABLE 256

static const struct wl_spec spec = {
    .name = "irregular",
    .description = "many tiny regions of irregular-cost tasks under dynamic scheduling",
};

static uint64_t table[TABLE];

static unsigned passes_of(uint64_t k, int t)
{
    const unsigned r = (unsigned)(wl_mix64(k * TASKS + (uint64_t)t) & 7);
    return 1 + r * r; /* 1..50, skewed: most tasks are cheap, a few dominate */
}

static uint64_t task(uint64_t k, int t)
{
    const unsigned np = passes_of(k, t);
    uint64_t s = 0;
    for (unsigned p = 0; p < np; p++)
        for (int x = 0; x < TABLE; x++)
            s += table[x] * (uint64_t)(p + 1);
    return s;
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const uint64_t regions = (uint64_t)wl_scaled(&args, WL_PICK(args.size, 1000, 100000, 400000), 1, 1);
    uint64_t *res = calloc(regions * TASKS, sizeof *res);
    if (!res) {
        fprintf(stderr, "irregular: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    uint64_t table_sum = 0;
    for (int x = 0; x < TABLE; x++) {
        table[x] = wl_mix64((uint64_t)x) >> 4;
        table_sum += table[x];
    }

    double t0 = wl_clock_now();
    for (uint64_t k = 0; k < regions; k++) {
#pragma omp parallel for schedule(dynamic, 1)
        for (int t = 0; t < TASKS; t++) {
            res[k * TASKS + (uint64_t)t] = task(k, t);
            wl_team_note();
        }
    }
    double elapsed = wl_clock_now() - t0;

    long bad = 0;
    uint64_t h = 0;
    for (uint64_t k = 0; k < regions; k++)
        for (int t = 0; t < TASKS; t++) {
            const uint64_t np = passes_of(k, t);
            bad += res[k * TASKS + (uint64_t)t] != np * (np + 1) / 2 * table_sum;
            h = wl_hash_u64(h, res[k * TASKS + (uint64_t)t]);
        }
    if (bad)
        fprintf(stderr, "irregular: %ld task results wrong\n", bad);

    wl_checksum_print(h);
    printf("regions=%llu tasks=%llu\n", (unsigned long long)regions,
           (unsigned long long)(regions * TASKS));
    free(res);
    return wl_result_print(spec.name, elapsed, bad == 0);
}
