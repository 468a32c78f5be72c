/* phases.c — a program that changes phase: critical-section bound first, embarrassingly parallel later. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* Phase 1 is crit's loop (a short private hash chain per item, then a long
 * update of a shared accumulator in one critical section): more threads only
 * add hand-offs. Phase 2 is independent hash chains summed per block, indexed
 * by block, in regions of about 50 ms at one thread: it scales. The line
 * "phase=scalable" is printed (and flushed) when phase 2 begins, so a test can
 * tell which phase an allocation belongs to. Both phases are integer
 * arithmetic, so the checksum is the same for any team sizes. */

#define ACC 1024
#define CHAIN 24
#define PER_ROUND 20000
#define BLOCKS 64
#define BLOCK_ITEMS 4096
#define CHAIN2 64

static const struct wl_spec spec = {
    .name = "phases",
    .description = "changes phase: critical-section bound first (like crit), then embarrassingly "
                   "parallel (independent hash chains)",
    .takes_until = 1,
    .takes_switch = 1,
};

static uint64_t chain(uint64_t item, int len)
{
    uint64_t v = item;
    for (int c = 0; c < len; c++)
        v = wl_mix64(v);
    return v | 1; /* never 0, so an item never stored is visible */
}

static uint64_t block_sum(uint64_t blk)
{
    uint64_t s = 0;
    for (uint64_t k = blk * BLOCK_ITEMS; k < (blk + 1) * BLOCK_ITEMS; k++)
        s += chain(k ^ 0x5851f42d4c957f2dull, CHAIN2);
    return s;
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const long rounds = wl_scaled(&args, WL_PICK(args.size, 4, 250, 1200), 1, 1); /* A: a first phase of 10 s and more, even on an idle machine */
    const long regions2 = wl_scaled(&args, WL_PICK(args.size, 2, 100, 1000), 1, 1);
    const long n = PER_ROUND * rounds;
    const uint64_t nblocks = (uint64_t)regions2 * BLOCKS;
    uint64_t *v = calloc((size_t)n, sizeof *v);
    uint64_t *bs = calloc((size_t)nblocks, sizeof *bs);
    if (!v || !bs) {
        fprintf(stderr, "phases: out of memory\n");
        free(v);
        free(bs);
        return wl_result_print(spec.name, 0.0, 0);
    }
    static uint64_t acc[ACC];
    long updates = 0;

    double t0 = wl_clock_now();
    long r;
    /* Rounds past `rounds` (--switch) store the items of round r % rounds again and add them again. */
    for (r = 0; wl_round_runs(args.phase_until, r, rounds); r++) {
        const long base = (r % rounds) * PER_ROUND;
#pragma omp parallel for schedule(static, 64)
        for (long i = base; i < base + PER_ROUND; i++) {
            const uint64_t x = chain((uint64_t)i, CHAIN);
            v[i] = x;
            if ((i & 255) == 0)
                wl_team_note();
#pragma omp critical(phases_acc)
            {
                for (int j = 0; j < ACC; j++)
                    acc[j] += x * (uint64_t)(j + 1);
                updates++;
            }
        }
    }
    printf("phase=scalable t_s=%.3f\n", wl_clock_now() - t0);
    fflush(stdout);
    long r2;
    /* Regions past `regions2` (--until) compute their region's blocks again: the same values. */
    for (r2 = 0; wl_round_runs(args.until, r2, regions2); r2++) {
        const uint64_t base = (uint64_t)(r2 % regions2) * BLOCKS;
#pragma omp parallel for schedule(dynamic, 1)
        for (uint64_t b = base; b < base + BLOCKS; b++) {
            bs[b] = block_sum(b);
            if ((b & 7) == 0)
                wl_team_note();
        }
    }
    double elapsed = wl_clock_now() - t0;

    /* Phase 1 as crit checks it: acc[j] = (j+1) * sum(v), every item stored and counted once,
     * a sample recomputed serially. Phase 2: no block left at 0 (a skipped one), and a sample
     * of blocks recomputed serially must match exactly. */
    const long laps = r / rounds, extra = r % rounds; /* each item added laps or laps + 1 times */
    uint64_t sum = 0, total = 0; /* total: the blocks' sum, printed beside the checksum */
    long missing = 0, wrong = 0, bad = 0, bad_blocks = 0;
    for (long i = 0; i < n; i++) {
        sum += v[i] * (uint64_t)(laps + (i < extra * PER_ROUND));
        missing += v[i] == 0;
    }
    for (long i = 7; i < n; i += 61)
        wrong += v[i] != chain((uint64_t)i, CHAIN);
    for (int j = 0; j < ACC; j++)
        bad += acc[j] != sum * (uint64_t)(j + 1);
    for (uint64_t b = 0; b < nblocks; b++) {
        total += bs[b];
        missing += bs[b] == 0;
    }
    for (uint64_t b = 3; b < nblocks; b += 29)
        bad_blocks += bs[b] != block_sum(b);
    const int ok = missing == 0 && wrong == 0 && bad == 0 && bad_blocks == 0 && updates == r * PER_ROUND;
    if (!ok)
        fprintf(stderr,
                "phases: %ld items or blocks missing, %ld sampled items wrong, %ld accumulator entries "
                "wrong, %ld sampled blocks wrong, %ld updates for %ld items\n",
                missing, wrong, bad, bad_blocks, updates, r * PER_ROUND);

    wl_checksum_print(wl_hash_u64s(wl_hash_u64s(0, acc, ACC), bs, (size_t)nblocks));
    printf("items=%ld rounds=%ld blocks=%llu total=%016llx\n", n, r, (unsigned long long)nblocks,
           (unsigned long long)total);
    free(v);
    free(bs);
    return wl_result_print(spec.name, elapsed, ok);
}
