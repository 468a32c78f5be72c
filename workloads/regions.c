/* regions.c — many tiny parallel regions cycling through every libgomp region entry point, for overhead. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* Region k adds (k+1)*(i+1) to every a[i]. After K regions
 * a[i] = a0[i] + (i+1)*K(K+1)/2 (mod 2^64) whatever the schedule, so the
 * check is exact and costs one pass. The work is split into BLOCKS loop
 * iterations so that even a chunk-1 runtime schedule dispatches cheaply. */

#define M 32768
#define BLOCKS 64
#define BLOCK (M / BLOCKS)
#define FLAVOURS 10

static const struct wl_spec spec = {
    .name = "regions",
    .description = "microbenchmark: many tiny parallel regions through every GOMP_parallel* "
                   "entry point, for measuring per-region overhead",
};

static uint64_t a[M];

static inline void block_add(uint64_t k, int blk)
{
    const uint64_t c = k + 1;
    for (int i = blk * BLOCK; i < (blk + 1) * BLOCK; i++)
        a[i] += c * (uint64_t)(i + 1);
    wl_team_note();
}

/* One region of flavour k % FLAVOURS; returns 1 for a task-reduction region. */
static long region(uint64_t k)
{
    long tasks = 0;
    switch (k % FLAVOURS) {
    case 0: /* GOMP_parallel (static schedule inlined) */
#pragma omp parallel for schedule(static)
        for (int b = 0; b < BLOCKS; b++)
            block_add(k, b);
        break;
    case 1: /* GOMP_parallel_loop_nonmonotonic_dynamic */
#pragma omp parallel for schedule(dynamic, 4)
        for (int b = 0; b < BLOCKS; b++)
            block_add(k, b);
        break;
    case 2: /* GOMP_parallel_loop_dynamic */
#pragma omp parallel for schedule(monotonic : dynamic, 4)
        for (int b = 0; b < BLOCKS; b++)
            block_add(k, b);
        break;
    case 3: /* GOMP_parallel_loop_nonmonotonic_guided */
#pragma omp parallel for schedule(guided, 2)
        for (int b = 0; b < BLOCKS; b++)
            block_add(k, b);
        break;
    case 4: /* GOMP_parallel_loop_guided */
#pragma omp parallel for schedule(monotonic : guided, 2)
        for (int b = 0; b < BLOCKS; b++)
            block_add(k, b);
        break;
    case 5: /* GOMP_parallel_loop_maybe_nonmonotonic_runtime */
#pragma omp parallel for schedule(runtime)
        for (int b = 0; b < BLOCKS; b++)
            block_add(k, b);
        break;
    case 6: /* GOMP_parallel_loop_runtime */
#pragma omp parallel for schedule(monotonic : runtime)
        for (int b = 0; b < BLOCKS; b++)
            block_add(k, b);
        break;
    case 7: /* GOMP_parallel_loop_nonmonotonic_runtime */
#pragma omp parallel for schedule(nonmonotonic : runtime)
        for (int b = 0; b < BLOCKS; b++)
            block_add(k, b);
        break;
    case 8: /* GOMP_parallel_sections */
#pragma omp parallel sections
        {
#pragma omp section
            for (int b = 0; b < BLOCKS / 4; b++)
                block_add(k, b);
#pragma omp section
            for (int b = BLOCKS / 4; b < BLOCKS / 2; b++)
                block_add(k, b);
#pragma omp section
            for (int b = BLOCKS / 2; b < 3 * BLOCKS / 4; b++)
                block_add(k, b);
#pragma omp section
            for (int b = 3 * BLOCKS / 4; b < BLOCKS; b++)
                block_add(k, b);
        }
        break;
    default: /* GOMP_parallel_reductions (a task reduction) */
#pragma omp parallel reduction(task, + : tasks)
        {
#pragma omp for schedule(static)
            for (int b = 0; b < BLOCKS; b++)
                block_add(k, b);
#pragma omp single
            {
#pragma omp task in_reduction(+ : tasks)
                tasks++;
            }
        }
        break;
    }
    return tasks;
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const uint64_t K = (uint64_t)wl_scaled(&args, WL_PICK(args.size, 1000, 400000, 1600000), 1, 1);
    for (int i = 0; i < M; i++)
        a[i] = wl_mix64((uint64_t)i);

    long tasks = 0;
    double t0 = wl_clock_now();
    for (uint64_t k = 0; k < K; k++)
        tasks += region(k);
    double elapsed = wl_clock_now() - t0;

    long bad = 0;
    const uint64_t tri = K % 2 == 0 ? (K / 2) * (K + 1) : K * ((K + 1) / 2);
    for (int i = 0; i < M; i++)
        bad += a[i] != wl_mix64((uint64_t)i) + (uint64_t)(i + 1) * tri;
    const long want_tasks = (long)(K / FLAVOURS); /* flavour FLAVOURS-1 is the last in each cycle */
    if (bad || tasks != want_tasks)
        fprintf(stderr, "regions: %ld of %d elements wrong, %ld of %ld reduction tasks\n", bad,
                M, tasks, want_tasks);

    wl_checksum_print(wl_hash_u64s(0, a, M));
    printf("regions=%llu regions_per_s=%.0f\n", (unsigned long long)K, (double)K / elapsed);
    return wl_result_print(spec.name, elapsed, bad == 0 && tasks == want_tasks);
}
