/* ep.c — long embarrassingly parallel regions drawing Gaussian pairs (like NPB EP). */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Uniform pairs come from a counter-based generator (a hash of the sample
 * number), accepted pairs become Gaussian deviates by the Marsaglia polar
 * method and are counted in square annuli, as NPB EP does. Results are
 * kept per block of samples, indexed by block, so the outcome never depends
 * on which thread ran what. */

#define BLOCK_SAMPLES 65536
#define NQ 10

static const struct wl_spec spec = {
    .name = "ep",
    .description = "long embarrassingly parallel regions (Gaussian pairs, like NPB EP), "
                   "a few per run; scales near-perfectly",
    .takes_until = 1,
};

struct block {
    uint64_t accepted;
    uint64_t q[NQ];
    double sx, sy;
};

static void block_run(uint64_t blk, struct block *out)
{
    struct block b = {0};
    const uint64_t base = blk * BLOCK_SAMPLES;
    for (uint64_t k = base; k < base + BLOCK_SAMPLES; k++) {
        const uint64_t r = wl_mix64(k);
        /* two 32-bit uniforms from one 64-bit draw */
        const double x = 2.0 * ((double)(r >> 32) * 0x1.0p-32) - 1.0;
        const double y = 2.0 * ((double)(r & 0xffffffffu) * 0x1.0p-32) - 1.0;
        const double t = x * x + y * y;
        if (t > 1.0 || t == 0.0)
            continue;
        const double f = sqrt(-2.0 * log(t) / t);
        const double gx = x * f, gy = y * f;
        const double l = fmax(fabs(gx), fabs(gy));
        int q = (int)l;
        if (q >= NQ)
            q = NQ - 1;
        b.q[q]++;
        b.accepted++;
        b.sx += gx;
        b.sy += gy;
    }
    *out = b;
}

/* Probability that max(|X|, |Y|) < l for independent standard normals. */
static double p_within(double l)
{
    const double e = erf(l / sqrt(2.0));
    return e * e;
}

/* Verification: (1) a sample of blocks is recomputed serially and must match
 * bit for bit; (2) the block totals must add up; (3) the acceptance rate and
 * the annulus counts must match their analytic probabilities within 6
 * standard deviations. A skipped or repeated block fails (1) or (3). */
static int verify(const struct block *blocks, uint64_t nblocks, const struct block *tot)
{
    int ok = 1;
    for (uint64_t blk = nblocks / 64 / 2; blk < nblocks; blk += 64) {
        struct block ref;
        block_run(blk, &ref);
        if (memcmp(&ref, &blocks[blk], sizeof ref) != 0) {
            fprintf(stderr, "ep: block %llu differs from its serial recomputation\n",
                    (unsigned long long)blk);
            ok = 0;
        }
    }
    uint64_t qsum = 0;
    for (int q = 0; q < NQ; q++)
        qsum += tot->q[q];
    if (qsum != tot->accepted) {
        fprintf(stderr, "ep: annulus counts do not add up to the accepted count\n");
        ok = 0;
    }
    /* The 32-bit grid excludes nothing that matters: P(accept) = pi/4. */
    const double n = (double)(nblocks * BLOCK_SAMPLES);
    const double pa = M_PI / 4.0;
    if (fabs((double)tot->accepted - n * pa) > 6.0 * sqrt(n * pa * (1 - pa))) {
        fprintf(stderr, "ep: acceptance count %llu is not near %.0f\n",
                (unsigned long long)tot->accepted, n * pa);
        ok = 0;
    }
    const double acc = (double)tot->accepted;
    for (int q = 0; q < 4; q++) {
        const double pq = p_within(q + 1) - p_within(q);
        if (fabs((double)tot->q[q] - acc * pq) > 6.0 * sqrt(acc * pq * (1 - pq)) + 1.0) {
            fprintf(stderr, "ep: annulus %d count %llu is not near %.0f\n", q,
                    (unsigned long long)tot->q[q], acc * pq);
            ok = 0;
        }
    }
    return ok;
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    /* Scaled in the blocks, not the batches: a faster machine shortens each region. */
    const uint64_t nbatches = WL_PICK(args.size, 4u, 16u, 512u);
    const uint64_t nblocks = (uint64_t)wl_scaled(&args, WL_PICK(args.size, 128, 4096, 131072), (long)nbatches, 1);
    struct block *blocks = calloc(nblocks, sizeof *blocks);
    if (!blocks) {
        fprintf(stderr, "ep: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }

    /* The work is cut into a few long regions rather than one: a program's
     * efficiency (and a new allocation) can only be taken at region boundaries,
     * and NPB EP-like codes in practice sit inside an outer time-step loop. */
    double t0 = wl_clock_now();
    uint64_t batch;
    /* Batches past nbatches (--until) run their batch's blocks again: same results, same checksum. */
    for (batch = 0; wl_round_runs(args.until, (long)batch, (long)nbatches); batch++) {
        const uint64_t b = batch % nbatches;
        const uint64_t lo = b * nblocks / nbatches, hi = (b + 1) * nblocks / nbatches;
#pragma omp parallel
        {
            wl_team_note();
            /* dynamic: a thread slowed by another program does not hold up the end */
#pragma omp for schedule(dynamic, 1)
            for (uint64_t blk = lo; blk < hi; blk++)
                block_run(blk, &blocks[blk]);
        }
    }
    double elapsed = wl_clock_now() - t0;

    struct block tot = {0};
    uint64_t h = 0;
    for (uint64_t blk = 0; blk < nblocks; blk++) {
        tot.accepted += blocks[blk].accepted;
        for (int q = 0; q < NQ; q++)
            tot.q[q] += blocks[blk].q[q];
        tot.sx += blocks[blk].sx;
        tot.sy += blocks[blk].sy;
    }
    h = wl_hash_u64(h, tot.accepted);
    for (int q = 0; q < NQ; q++)
        h = wl_hash_u64(h, tot.q[q]);
    h = wl_hash_double(wl_hash_double(h, tot.sx), tot.sy);
    const int ok = verify(blocks, nblocks, &tot);

    wl_checksum_print(h);
    printf("samples=%llu accepted=%llu sx=%.15e sy=%.15e\n",
           (unsigned long long)(nblocks * BLOCK_SAMPLES), (unsigned long long)tot.accepted,
           tot.sx, tot.sy);
    free(blocks);
    return wl_result_print(spec.name, elapsed, ok);
}
