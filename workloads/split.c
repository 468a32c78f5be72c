/* split.c — non-malleable: work cut into omp_get_max_threads() chunks before its regions, thread t takes chunk t. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* A hazard scaf must keep fixed: the program reads nt = omp_get_max_threads()
 * at level 0, cuts its array into nt chunks once, and in every region thread
 * t = omp_get_thread_num() processes chunk t. The region never asks how big
 * its team is (no omp_get_num_threads()), so a smaller team silently skips
 * chunks team..nt-1; a larger one leaves its extra threads idle, which is
 * harmless. Every region is one step of an element-wise recurrence, and
 * stamps each element with the iteration it reached: after each region an
 * exact count (a dynamic loop, never split by thread number) says whether
 * every element took that step, and which chunks did not. At the end the
 * whole trajectory of every 61st element is recomputed serially. The team
 * size is counted with an atomic increment, not omp_get_num_threads(), so
 * that the region's only team query is the thread number. */

#define SAMPLE_STRIDE 61

static const struct wl_spec spec = {
    .name = "split",
    .description = "non-malleable: work cut into omp_get_max_threads() chunks before its "
                   "regions, thread t takes chunk t (a smaller team skips chunks)",
};

static inline uint64_t step(uint64_t x, uint64_t i, uint64_t it)
{
    return wl_mix64(x ^ (it * 0xd1342543de82ef95ULL)) + wl_mix64(x + i);
}

static uint64_t initial(long i)
{
    return wl_mix64((uint64_t)i ^ 0x5911ULL);
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const long n = WL_PICK(args.size, 1L << 16, 1L << 20, 1L << 21);
    const int iterations = (int)wl_scaled(&args, WL_PICK(args.size, 60, 1400, 2800), 1, 1);
    /* The count read outside any region, and the cut it fixes for good. */
    const int nt = omp_get_max_threads();
    long *cut = malloc(((size_t)nt + 1) * sizeof *cut);
    uint64_t *x = malloc((size_t)n * sizeof *x);
    int *stamp = calloc((size_t)n, sizeof *stamp);
    if (!cut || !x || !stamp) {
        fprintf(stderr, "split: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    for (int t = 0; t <= nt; t++)
        cut[t] = n * t / nt;
    for (long i = 0; i < n; i++)
        x[i] = initial(i);

    static _Atomic int entered;
    int ok = 1;
    long failed = 0;
    double elapsed = 0.0;
    for (int it = 0; it < iterations; it++) {
        atomic_store_explicit(&entered, 0, memory_order_relaxed);
        double t0 = wl_clock_now();
#pragma omp parallel
        {
            const int t = omp_get_thread_num();
            atomic_fetch_add_explicit(&entered, 1, memory_order_relaxed);
            if (t < nt)
                for (long i = cut[t]; i < cut[t + 1]; i++) {
                    x[i] = step(x[i], (uint64_t)i, (uint64_t)it);
                    stamp[i] = it + 1;
                }
        }
        elapsed += wl_clock_now() - t0;
        const int team = atomic_load_explicit(&entered, memory_order_relaxed);
        wl_team_note_size(team);

        long missed = 0;
#pragma omp parallel for schedule(dynamic, 65536) reduction(+ : missed)
        for (long i = 0; i < n; i++)
            missed += stamp[i] != it + 1;
        if (missed) {
            ok = 0;
            if (failed++ < 5) {
                char which[128] = "";
                int len = 0;
                for (int c = 0; c < nt && len < (int)sizeof which - 12; c++)
                    if (cut[c] < cut[c + 1] && stamp[cut[c]] != it + 1)
                        len += snprintf(which + len, sizeof which - (size_t)len, " %d", c);
                fprintf(stderr,
                        "split: iteration %d: %ld of %ld elements not processed: a team of %d "
                        "ran work cut into %d chunks before the regions; chunk(s)%s skipped\n",
                        it, missed, n, team, nt, which);
            }
            /* Bring the stamps up to date so that the next check judges its own region. */
            for (long i = 0; i < n; i++)
                stamp[i] = it + 1;
        }
    }
    if (failed)
        fprintf(stderr, "split: %ld of %d regions skipped work\n", failed, iterations);

    /* Whole trajectories of a sample of elements, serially from the start. */
    long bad_traj = 0;
    for (long i = 0; i < n; i += SAMPLE_STRIDE) {
        uint64_t v = initial(i);
        for (int it = 0; it < iterations; it++)
            v = step(v, (uint64_t)i, (uint64_t)it);
        bad_traj += v != x[i];
    }
    if (bad_traj) {
        fprintf(stderr, "split: %ld of %ld sampled elements differ from their serial trajectory\n",
                bad_traj, (n + SAMPLE_STRIDE - 1) / SAMPLE_STRIDE);
        ok = 0;
    }

    wl_checksum_print(wl_hash_u64s(0, x, (size_t)n));
    printf("elements=%ld iterations=%d chunks=%d\n", n, iterations, nt);
    free(cut);
    free(x);
    free(stamp);
    return wl_result_print(spec.name, elapsed, ok);
}
