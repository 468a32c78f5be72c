/* partials.c — non-malleable: per-thread sum slots sized by omp_get_max_threads(), all summed after each region. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A hazard scaf must keep fixed: the program allocates one partial-sum slot
 * per thread, nt = omp_get_max_threads() of them, once, before any region.
 * In every region each thread sums its share of a worksharing loop and
 * stores it by assignment in part[omp_get_thread_num()]; after the region
 * the program adds up all nt slots. The region never asks how big its team
 * is, so when a team is smaller than nt the slots of the absent threads
 * still hold their partials from an earlier region, and the total is wrong
 * (a team larger than nt would drop the extra threads' partials). The loop
 * is dynamic on purpose: gcc's inline static schedule calls
 * omp_get_num_threads(), which would be the region asking its team size. The
 * team is counted with an atomic increment for the result line, for the
 * same reason. Region r sums (r+1)·v(i) + i over i < n with v(i) a hash of
 * i, so its exact total is (r+1)·V + n(n-1)/2 mod 2^64 with V = Σ v(i),
 * computed serially once: every region is checked exactly. */

#define CHUNK 4096

static const struct wl_spec spec = {
    .name = "partials",
    .description = "non-malleable: per-thread partial-sum slots sized by omp_get_max_threads() "
                   "before its regions, all summed after each (stale when a team shrinks)",
};

static inline uint64_t v_of(long i)
{
    return wl_mix64(wl_mix64((uint64_t)i) ^ 0x9a77ULL);
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const long n = WL_PICK(args.size, 1L << 18, 1L << 19, 1L << 20);
    const int regions = (int)wl_scaled(&args, WL_PICK(args.size, 50, 3400, 6800), 1, 1);
    /* The count read outside any region, and the slots it sizes for good. */
    const int nt = omp_get_max_threads();
    uint64_t *part = calloc((size_t)nt, sizeof *part);
    if (!part) {
        fprintf(stderr, "partials: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    uint64_t vsum = 0;
    for (long i = 0; i < n; i++)
        vsum += v_of(i);
    const uint64_t isum = (uint64_t)n * (uint64_t)(n - 1) / 2;

    static _Atomic int entered, dropped;
    int ok = 1;
    long failed = 0;
    uint64_t h = 0;
    double elapsed = 0.0;
    for (int r = 0; r < regions; r++) {
        const uint64_t k = (uint64_t)r + 1;
        atomic_store_explicit(&entered, 0, memory_order_relaxed);
        atomic_store_explicit(&dropped, 0, memory_order_relaxed);
        double t0 = wl_clock_now();
#pragma omp parallel
        {
            uint64_t local = 0;
            atomic_fetch_add_explicit(&entered, 1, memory_order_relaxed);
            /* The whole team is here before the loop, so every thread takes some
             * chunks and leaves a nonzero partial in its slot. */
#pragma omp barrier
#pragma omp for schedule(dynamic, CHUNK)
            for (long i = 0; i < n; i++)
                local += k * v_of(i) + (uint64_t)i;
            const int t = omp_get_thread_num();
            if (t < nt)
                part[t] = local;
            else
                atomic_store_explicit(&dropped, 1, memory_order_relaxed);
        }
        uint64_t total = 0;
        for (int t = 0; t < nt; t++)
            total += part[t];
        elapsed += wl_clock_now() - t0;
        const int team = atomic_load_explicit(&entered, memory_order_relaxed);
        wl_team_note_size(team);

        const uint64_t expected = k * vsum + isum;
        if (total != expected) {
            const char *why = team < nt ? "left slots holding an earlier region's partials"
                              : atomic_load(&dropped)
                                  ? "had threads beyond the slots, whose partials were dropped"
                                  : "wrote some slot twice";
            ok = 0;
            if (failed++ < 5)
                fprintf(stderr,
                        "partials: region %d: the %d slots sum to %016llx, expected %016llx: "
                        "a team of %d %s\n",
                        r, nt, (unsigned long long)total, (unsigned long long)expected, team, why);
        }
        h = wl_hash_u64(h, total);
    }
    if (failed)
        fprintf(stderr, "partials: %ld of %d regions summed wrongly\n", failed, regions);

    wl_checksum_print(h);
    printf("elements=%ld regions=%d slots=%d\n", n, regions, nt);
    free(part);
    return wl_result_print(spec.name, elapsed, ok);
}
