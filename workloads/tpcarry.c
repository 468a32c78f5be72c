/* tpcarry.c — non-malleable: threadprivate partial sums computed in one region and combined by the team of a later region. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A hazard scaf must keep fixed, the way NPB IS keeps its threadprivate
 * bucket pointers: in one region each thread sums its static share of the
 * data (cut by omp_get_thread_num() and omp_get_num_threads(), read in that
 * region) into a threadprivate variable; a later region, another outlined
 * function, has each of its threads add its threadprivate partial into a
 * shared total under `critical`. OpenMP keeps threadprivate values from one
 * region to the next only when both have the same team, so when the second
 * team is smaller some partials are never added, and when it is larger its
 * extra threads add whatever an earlier region left in theirs. The regions
 * read their team size themselves, like a program that divides its work
 * correctly, so the only evidence of the hazard is the thread-local data.
 *
 * Round r sums (r+1)·v(i) + i over i < n with v(i) a hash of i: the exact
 * total is (r+1)·V + n(n-1)/2 mod 2^64 with V = Σ v(i) computed serially once,
 * so every round is checked, whatever the teams. */

/* Not zero: a thread that never ran region (1) starts from this value (libgomp
 * may end the threads a smaller team leaves out, and start new ones when a
 * team grows again), so a team that grows between the regions is wrong too,
 * rather than right by the accident of a new thread's partial reading 0. */
static uint64_t partial = 0x7ca77a7e5eedULL;
#pragma omp threadprivate(partial)

static const struct wl_spec spec = {
    .name = "tpcarry",
    .description = "non-malleable: threadprivate partial sums from one region, combined by a later "
                   "region's team (wrong when the team changes between them)",
    .takes_until = 1,
};

static inline uint64_t v_of(long i)
{
    return wl_mix64(wl_mix64((uint64_t)i) ^ 0x7ca77ULL);
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const long n = WL_PICK(args.size, 1L << 18, 1L << 19, 1L << 20);
    const int rounds = (int)wl_scaled(&args, WL_PICK(args.size, 40, 2000, 4000), 1, 1);
    uint64_t vsum = 0;
    for (long i = 0; i < n; i++)
        vsum += v_of(i);
    const uint64_t isum = (uint64_t)n * (uint64_t)(n - 1) / 2;

    /* The team of each of a round's two regions, as the regions counted it. */
    static _Atomic int team_sum, team_add;
    int ok = 1;
    long failed = 0;
    uint64_t h = 0;
    double elapsed = 0.0;
    long r;
    for (r = 0; wl_round_runs(args.until, r, rounds); r++) {
        const uint64_t k = (uint64_t)r + 1;
        uint64_t total = 0;
        double t0 = wl_clock_now();
        /* (1) Each thread's static share into its threadprivate partial. */
#pragma omp parallel
        {
            const long tid = omp_get_thread_num(), nth = omp_get_num_threads();
            uint64_t local = 0;
            wl_team_note();
            if (tid == 0)
                atomic_store_explicit(&team_sum, (int)nth, memory_order_relaxed);
            for (long i = n * tid / nth; i < n * (tid + 1) / nth; i++)
                local += k * v_of(i) + (uint64_t)i;
            partial = local;
        }
        /* (2) Another region: each of its threads adds the partial it kept. */
#pragma omp parallel
        {
            wl_team_note();
            if (omp_get_thread_num() == 0)
                atomic_store_explicit(&team_add, omp_get_num_threads(), memory_order_relaxed);
#pragma omp critical(tpcarry_total)
            total += partial;
        }
        elapsed += wl_clock_now() - t0;

        const uint64_t expected = k * vsum + isum;
        if (total != expected) {
            const int ts = atomic_load_explicit(&team_sum, memory_order_relaxed);
            const int ta = atomic_load_explicit(&team_add, memory_order_relaxed);
            ok = 0;
            if (failed++ < 5) {
                if (ts != ta)
                    fprintf(stderr,
                            "tpcarry: round %ld: total %016llx, expected %016llx: threadprivate "
                            "partials computed by a team of %d were combined by a team of %d\n",
                            r, (unsigned long long)total, (unsigned long long)expected, ts, ta);
                else
                    fprintf(stderr,
                            "tpcarry: round %ld: total %016llx, expected %016llx, with a team of "
                            "%d in both regions\n",
                            r, (unsigned long long)total, (unsigned long long)expected, ts);
            }
        }
        if (r < rounds)
            h = wl_hash_u64(h, total);
    }
    if (failed)
        fprintf(stderr, "tpcarry: %ld of %ld rounds summed wrongly\n", failed, r);

    wl_checksum_print(h);
    printf("elements=%ld rounds=%ld regions=%ld\n", n, r, 2 * r);
    return wl_result_print(spec.name, elapsed, ok);
}
