/* transpose.c — repeated blocked out-of-place transposes of a large matrix: all-to-all traffic. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* Every transpose reads rows that other threads wrote as columns, the
 * shared-memory analogue of an all-to-all exchange. Each pass also adds 1,
 * so after an even number of passes A[i][j] = A0[i][j] + passes exactly,
 * and a lost or repeated tile shows. */

#define TILE 64

static const struct wl_spec spec = {
    .name = "transpose",
    .description = "blocked out-of-place matrix transposes: all-to-all memory traffic "
                   "between threads",
};

static uint64_t a0(long i, long j)
{
    return wl_mix64(((uint64_t)i << 32) | (uint64_t)j);
}

/* dst = src^T + 1; tiles shared out by the runtime schedule (OMP_SCHEDULE). */
static void transpose(uint64_t *restrict dst, const uint64_t *restrict src, long n)
{
    const long tiles = n / TILE;
#pragma omp parallel for schedule(runtime)
    for (long t = 0; t < tiles * tiles; t++) {
        const long bi = (t / tiles) * TILE, bj = (t % tiles) * TILE;
        for (long i = bi; i < bi + TILE; i++)
            for (long j = bj; j < bj + TILE; j++)
                dst[j * n + i] = src[i * n + j] + 1;
        if ((t & 63) == 0)
            wl_team_note();
    }
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const long n = WL_PICK(args.size, 1024, 4096, 4096); /* a multiple of TILE */
    const int passes = (int)wl_scaled(&args, WL_PICK(args.size, 20, 60, 240), 2, 2); /* even */
    uint64_t *a = malloc((size_t)(n * n) * sizeof *a), *b = malloc((size_t)(n * n) * sizeof *b);
    if (!a || !b) {
        fprintf(stderr, "transpose: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) {
            a[i * n + j] = a0(i, j);
            b[i * n + j] = 0;
        }

    double t0 = wl_clock_now();
    for (int p = 0; p < passes; p += 2) {
        transpose(b, a, n);
        transpose(a, b, n);
    }
    double elapsed = wl_clock_now() - t0;

    /* a is A0 + passes, b (one pass earlier) is A0^T + passes - 1. */
    long bad = 0;
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) {
            const uint64_t v = a0(i, j);
            bad += a[i * n + j] != v + (uint64_t)passes;
            bad += b[j * n + i] != v + (uint64_t)passes - 1;
        }
    if (bad)
        fprintf(stderr, "transpose: %ld elements wrong\n", bad);

    wl_checksum_print(wl_hash_u64s(wl_hash_u64s(0, a, (size_t)(n * n)), b, (size_t)(n * n)));
    printf("n=%ld passes=%d\n", n, passes);
    free(a);
    free(b);
    return wl_result_print(spec.name, elapsed, bad == 0);
}
