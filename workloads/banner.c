/* banner.c — malleable kernel that prints omp_get_max_threads() in a banner, then adapts to each region's team. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* What almost every real OpenMP program does and what must not make a layer
 * fix its team: read omp_get_max_threads() once before any region and print
 * it ("Total threads = N", like NPB), then never use that number again. The
 * regions depend only on the team they actually get: worksharing loops with
 * exact reductions, per-block partial sums indexed by block, and a region
 * that reads omp_get_thread_num() and omp_get_num_threads() itself and deals
 * blocks out round-robin over the team it counted there. Any team, and any
 * change of team between regions, gives the same bits.
 *
 * Each element evolves on its own, a[i] <- g(f(a[i], it), i), so the check
 * is exact: every iteration, every a[i] against g(b[i], i), the reduction
 * against an exact sum and every block's partial against its recomputation
 * (a dynamic loop, never split by thread number); at the end, the whole
 * trajectory of every 61st element, recomputed serially from its start. */

#define BLOCK 4096
#define SAMPLE_STRIDE 61

static const struct wl_spec spec = {
    .name = "banner",
    .description = "malleable despite a start-up banner that prints omp_get_max_threads(): "
                   "worksharing and regions that split work by the team they read",
};

static inline uint64_t f_step(uint64_t a, uint64_t it)
{
    return wl_mix64(a ^ (it * 0xd1342543de82ef95ULL)) + wl_mix64(a + it);
}

static inline uint64_t g_step(uint64_t b, uint64_t i)
{
    return wl_mix64(b + i) ^ (b >> 1);
}

/* Sum of one block's elements as doubles in [0, 1), in index order. */
static double block_sum(const uint64_t *a, long lo, long hi)
{
    double s = 0.0;
    for (long i = lo; i < hi; i++)
        s += (double)(a[i] >> 11) * 0x1.0p-53;
    return s;
}

static uint64_t initial(long i)
{
    return wl_mix64((uint64_t)i ^ 0xba9e7ULL);
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const long n = WL_PICK(args.size, 1L << 16, 1L << 20, 1L << 21);
    const int iterations = (int)wl_scaled(&args, WL_PICK(args.size, 24, 800, 1600), 1, 1);
    const long nblocks = (n + BLOCK - 1) / BLOCK;

    /* The banner: level 0, before any region, printed and otherwise unused. */
    printf(" banner: size %c, %ld elements, %d iterations\n", "SWA"[args.size], n, iterations);
    printf(" Total threads = %d\n", omp_get_max_threads());

    uint64_t *a = malloc((size_t)n * sizeof *a);
    uint64_t *b = malloc((size_t)n * sizeof *b);
    double *bsum = malloc((size_t)nblocks * sizeof *bsum);
    if (!a || !b || !bsum) {
        fprintf(stderr, "banner: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    for (long i = 0; i < n; i++)
        a[i] = initial(i);

    int ok = 1;
    long failed = 0;
    uint64_t h = 0;
    double elapsed = 0.0;
    for (int it = 0; it < iterations; it++) {
        uint64_t s = 0;
        double t0 = wl_clock_now();
        /* (1) A worksharing loop with an exact integer reduction. */
#pragma omp parallel
        {
            wl_team_note();
#pragma omp for reduction(+ : s)
            for (long i = 0; i < n; i++) {
                b[i] = f_step(a[i], (uint64_t)it);
                s += b[i];
            }
        }
        /* (2) Work divided by the team this region reads, inside the region:
         * right for any team, since both numbers describe the same team. */
#pragma omp parallel
        {
            const long tid = omp_get_thread_num(), nth = omp_get_num_threads();
            wl_team_note();
            for (long blk = tid; blk < nblocks; blk += nth) {
                const long hi = (blk + 1) * BLOCK < n ? (blk + 1) * BLOCK : n;
                for (long i = blk * BLOCK; i < hi; i++)
                    a[i] = g_step(b[i], (uint64_t)i);
            }
        }
        /* (3) Floating-point partial sums indexed by block, added in order. */
#pragma omp parallel
        {
            wl_team_note();
#pragma omp for schedule(dynamic, 4)
            for (long blk = 0; blk < nblocks; blk++) {
                const long hi = (blk + 1) * BLOCK < n ? (blk + 1) * BLOCK : n;
                bsum[blk] = block_sum(a, blk * BLOCK, hi);
            }
        }
        double tot = 0.0;
        for (long blk = 0; blk < nblocks; blk++)
            tot += bsum[blk];
        elapsed += wl_clock_now() - t0;

        /* Check, shared out by libgomp's dynamic schedule with exact sums. */
        uint64_t sb = 0;
        long bad_a = 0, bad_blocks = 0;
#pragma omp parallel for schedule(dynamic, 4) reduction(+ : sb, bad_a, bad_blocks)
        for (long blk = 0; blk < nblocks; blk++) {
            const long hi = (blk + 1) * BLOCK < n ? (blk + 1) * BLOCK : n;
            for (long i = blk * BLOCK; i < hi; i++) {
                sb += b[i];
                bad_a += a[i] != g_step(b[i], (uint64_t)i);
            }
            bad_blocks += bsum[blk] != block_sum(a, blk * BLOCK, hi);
        }
        if (sb != s || bad_a || bad_blocks) {
            ok = 0;
            if (failed++ < 5)
                fprintf(stderr, "banner: iteration %d: %s, %ld elements and %ld block sums wrong\n",
                        it, sb != s ? "reduction wrong" : "reduction right", bad_a, bad_blocks);
        }
        h = wl_hash_u64(h, s);
        h = wl_hash_double(h, tot);
    }

    if (failed)
        fprintf(stderr, "banner: %ld of %d iterations wrong\n", failed, iterations);

    /* Whole trajectories of a sample of elements, serially from the start. */
    long bad_traj = 0;
    for (long i = 0; i < n; i += SAMPLE_STRIDE) {
        uint64_t v = initial(i);
        for (int it = 0; it < iterations; it++)
            v = g_step(f_step(v, (uint64_t)it), (uint64_t)i);
        bad_traj += v != a[i];
    }
    if (bad_traj) {
        fprintf(stderr, "banner: %ld of %ld sampled elements differ from their serial trajectory\n",
                bad_traj, (n + SAMPLE_STRIDE - 1) / SAMPLE_STRIDE);
        ok = 0;
    }
    h = wl_hash_u64s(h, a, (size_t)n);

    wl_checksum_print(h);
    printf("elements=%ld iterations=%d regions=%d\n", n, iterations, 4 * iterations);
    free(a);
    free(b);
    free(bsum);
    return wl_result_print(spec.name, elapsed, ok);
}
