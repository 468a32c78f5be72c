/* crit.c — loop whose every iteration ends in a dominant critical section: efficiency falls as threads rise. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* Per item: a short private computation (a chain of hashes), then a long
 * update of a shared accumulator inside one critical section. Integer
 * additions commute, so the accumulator ends the same in any order. About
 * three quarters of the serial time is in the critical section, so two
 * threads gain little and more threads only add lock hand-offs and cache
 * line transfers. */

#define ACC 1024
#define CHAIN 24

static const struct wl_spec spec = {
    .name = "crit",
    .description = "a critical section dominates every iteration; efficiency falls as "
                   "threads rise",
    .takes_until = 1,
};

static uint64_t chain(uint64_t item)
{
    uint64_t v = item;
    for (int c = 0; c < CHAIN; c++)
        v = wl_mix64(v);
    return v | 1; /* never 0, so an item never stored is visible */
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const long per_round = 20000;
    const long rounds = wl_scaled(&args, WL_PICK(args.size, 10, 500, 2000), 1, 1);
    const long n = per_round * rounds;
    uint64_t *v = calloc((size_t)n, sizeof *v);
    if (!v) {
        fprintf(stderr, "crit: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    static uint64_t acc[ACC];
    long updates = 0;

    double t0 = wl_clock_now();
    long r;
    /* Rounds past `rounds` (--until) store the items of round r % rounds again and add them again. */
    for (r = 0; wl_round_runs(args.until, r, rounds); r++) {
        const long base = (r % rounds) * per_round;
#pragma omp parallel for schedule(static, 64)
        for (long i = base; i < base + per_round; i++) {
            const uint64_t x = chain((uint64_t)i);
            v[i] = x;
            if ((i & 255) == 0)
                wl_team_note();
#pragma omp critical(crit_acc)
            {
                for (int j = 0; j < ACC; j++)
                    acc[j] += x * (uint64_t)(j + 1);
                updates++;
            }
        }
    }
    double elapsed = wl_clock_now() - t0;

    /* acc[j] must be (j+1) * the sum of every item added, each item stored and
     * counted once per round that ran it; a sample of items is recomputed
     * serially. Without --until every round runs once: the sum of v. */
    const long laps = r / rounds, extra = r % rounds;
    uint64_t sum = 0;
    long missing = 0, wrong = 0, bad = 0;
    for (long i = 0; i < n; i++) {
        sum += v[i] * (uint64_t)(laps + (i < extra * per_round));
        missing += v[i] == 0;
    }
    for (long i = 7; i < n; i += 61)
        wrong += v[i] != chain((uint64_t)i);
    for (int j = 0; j < ACC; j++)
        bad += acc[j] != sum * (uint64_t)(j + 1);
    const int ok = missing == 0 && wrong == 0 && bad == 0 && updates == r * per_round;
    if (!ok)
        fprintf(stderr,
                "crit: %ld items missing, %ld sampled items wrong, %ld accumulator entries "
                "wrong, %ld updates for %ld items\n",
                missing, wrong, bad, updates, r * per_round);

    wl_checksum_print(wl_hash_u64s(0, acc, ACC));
    printf("items=%ld rounds=%ld\n", n, r);
    free(v);
    return wl_result_print(spec.name, elapsed, ok);
}
