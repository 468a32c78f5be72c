/* tpscratch.c — malleable line sweeps through threadprivate scratch that each region writes in full before reading it. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The pattern of Fortran codes that keep their work arrays in threadprivate
 * common blocks (NPB BT and SP solve each grid line through them): every
 * thread owns a few KB of threadprivate scratch, and for each line it is
 * given it first writes the scratch completely (a forward sweep along the
 * line), then reads it back (a backward sweep) to write the line's result
 * into shared memory at the line's own index. Nothing read from the scratch
 * outlives the line, let alone the region, so the program is correct for any
 * team, and for teams that change at every region, although it has
 * thread-local data and numbers its threads.
 *
 * Each iteration sweeps the rows of a into b, dealt round-robin over the team
 * each thread counts in the region (omp_get_thread_num() and
 * omp_get_num_threads()); then the columns of b back into a, in contiguous
 * ranges cut by the same two numbers; then digests every row of a through
 * the scratch in a combined dynamic parallel loop. All arithmetic is 64-bit
 * integer and every line is computed by one thread, so the bits never depend
 * on the team. The check recomputes a rotating fifth of the lines of every
 * sweep serially, through a scratch of its own, and compares them bit for
 * bit. */

#define N 512L       /* the grid is N x N; a constant, so that gcc can combine the digest loop */
#define SCRATCH N    /* 4 KB per thread: one line */
#define SAMPLE 5

static uint64_t scratch[SCRATCH];
#pragma omp threadprivate(scratch)

static const struct wl_spec spec = {
    .name = "tpscratch",
    .description = "malleable: threadprivate scratch written in full, then read, for every line of "
                   "a grid sweep; nothing in it outlives the region",
    .takes_until = 1,
};

static inline uint64_t rotl(uint64_t v, int r)
{
    return v << r | v >> (64 - r);
}

/* One line solve: a forward sweep writes all of s[0..len), then a backward
 * sweep reads it to produce out; every output depends on the whole line. */
static void sweep(const uint64_t *in, long si, uint64_t *out, long so, long len, uint64_t salt,
                  uint64_t *s)
{
    s[0] = wl_mix64(in[0] ^ salt);
    for (long k = 1; k < len; k++)
        s[k] = wl_mix64(s[k - 1] + in[k * si]);
    out[(len - 1) * so] = s[len - 1];
    for (long k = len - 2; k >= 0; k--)
        out[k * so] = s[k] ^ rotl(out[(k + 1) * so], 17);
}

/* A row's digest: the scratch is filled in full before being read from both ends. */
static uint64_t digest(const uint64_t *row, long len, uint64_t *s)
{
    for (long k = 0; k < len; k++)
        s[k] = row[k] * (uint64_t)(2 * k + 1);
    uint64_t d = 0;
    for (long k = 0; k < len; k++)
        d += s[k] * s[len - 1 - k] + (uint64_t)k;
    return d;
}

static uint64_t row_salt(int it, long j)
{
    return wl_mix64((uint64_t)it << 1) ^ (uint64_t)j;
}

static uint64_t col_salt(int it, long k)
{
    return wl_mix64((uint64_t)it << 1 | 1) ^ (uint64_t)k;
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const int iterations = (int)wl_scaled(&args, WL_PICK(args.size, 15, 600, 2400), 1, 1);

    uint64_t *a = malloc((size_t)(N * N) * sizeof *a);
    uint64_t *b = malloc((size_t)(N * N) * sizeof *b);
    uint64_t *dig = malloc((size_t)N * sizeof *dig);
    if (!a || !b || !dig) {
        fprintf(stderr, "tpscratch: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    int ok = 1;
    long failed = 0, jobs = 0;
    uint64_t h = 0, first = 0;
    double elapsed = 0.0;
    uint64_t mine[SCRATCH], line[SCRATCH]; /* the check's own scratch and result */
    /* --until: the whole job again from the same grid until the file exists; every job must give the
     * first one's checksum (the one printed, as without --until). */
    do {
        for (long i = 0; i < N * N; i++)
            a[i] = wl_mix64((uint64_t)i ^ 0x7c5ULL);
        h = 0;
        for (int it = 0; it < iterations; it++) {
            long bad_rows = 0, bad_cols = 0, bad_digs = 0;
            double t0 = wl_clock_now();
            /* (1) Rows of a into b, dealt round-robin over the team counted here. */
    #pragma omp parallel
            {
                const long tid = omp_get_thread_num(), nth = omp_get_num_threads();
                wl_team_note();
                for (long j = tid; j < N; j += nth)
                    sweep(a + j * N, 1, b + j * N, 1, N, row_salt(it, j), scratch);
            }
            elapsed += wl_clock_now() - t0;
            for (long j = (SAMPLE - it % SAMPLE) % SAMPLE; j < N; j += SAMPLE) {
                sweep(a + j * N, 1, line, 1, N, row_salt(it, j), mine);
                for (long k = 0; k < N; k++)
                    if (line[k] != b[j * N + k]) {
                        bad_rows++;
                        break;
                    }
            }

            t0 = wl_clock_now();
            /* (2) Columns of b back into a, in contiguous ranges cut by the team
             * counted here. */
    #pragma omp parallel
            {
                const long tid = omp_get_thread_num(), nth = omp_get_num_threads();
                wl_team_note();
                for (long k = N * tid / nth; k < N * (tid + 1) / nth; k++)
                    sweep(b + k, N, a + k, N, N, col_salt(it, k), scratch);
            }
            elapsed += wl_clock_now() - t0;
            for (long k = (SAMPLE - it % SAMPLE) % SAMPLE; k < N; k += SAMPLE) {
                sweep(b + k, N, line, 1, N, col_salt(it, k), mine);
                for (long j = 0; j < N; j++)
                    if (line[j] != a[j * N + k]) {
                        bad_cols++;
                        break;
                    }
            }

            t0 = wl_clock_now();
            /* (3) A digest of every row, as one combined parallel loop
             * (GOMP_parallel_loop_nonmonotonic_dynamic with gcc). */
    #pragma omp parallel for schedule(dynamic, 8)
            for (long j = 0; j < N; j++) {
                if (j == 0)
                    wl_team_note();
                dig[j] = digest(a + j * N, N, scratch);
            }
            elapsed += wl_clock_now() - t0;
            for (long j = (SAMPLE - it % SAMPLE) % SAMPLE; j < N; j += SAMPLE)
                bad_digs += dig[j] != digest(a + j * N, N, mine);

            if (bad_rows || bad_cols || bad_digs) {
                ok = 0;
                if (failed++ < 5)
                    fprintf(stderr,
                            "tpscratch: iteration %d: %ld rows, %ld columns and %ld digests of the "
                            "sample of 1 in %d wrong\n",
                            it, bad_rows, bad_cols, bad_digs, SAMPLE);
            }
            h = wl_hash_u64s(h, dig, (size_t)N);
        }
        h = wl_hash_u64s(h, a, (size_t)(N * N));
    } while (wl_job_again(spec.name, args.until, &jobs, h, &first, &ok));
    if (failed)
        fprintf(stderr, "tpscratch: %ld of %ld iterations wrong\n", failed, jobs * iterations);

    wl_checksum_print(first);
    printf("grid=%ldx%ld iterations=%d regions=%d scratch_bytes=%zu\n", N, N, iterations,
           3 * iterations, sizeof scratch);
    free(a);
    free(b);
    free(dig);
    return wl_result_print(spec.name, elapsed, ok);
}
