/* explicit.c — boosting rounds of short barrier-heavy regions, each opened with num_threads(n) for an n read once before them, like Cython's prange(num_threads=n). */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shape of scikit-learn's HistGradientBoosting as Cython compiles it:
 * the program reads n = omp_get_max_threads() once, then opens every region
 * with an explicit num_threads(n), thousands of short regions a second, each
 * ending (and some also interrupted) by a barrier. Time-slicing two such
 * programs on too few cores makes every barrier wait for a descheduled
 * thread. n is only ever passed to num_threads: the work inside is divided
 * by static worksharing loops, that is by the team the region really has, so
 * any team in any region gives the same bits.
 *
 * Each round fits one decision stump to integer gradients, as a boosting
 * round does: (A) gradients of the rows and their block sums, (B) one
 * histogram per feature, then the best split of each feature, (C) the
 * stump's update of every row's prediction. All sums are integers, and every
 * floating-point score is computed for one feature by one thread, so nothing
 * depends on the team. Rows are binned feature-major, as the histograms read
 * them. */

#define NFEAT 16
#define NBINS 32
#define BLOCK 1024
#define CHECK_EVERY 37
#define FUSE_EVERY 8 /* one round in this many runs (A) and (B) as one region each */

static const struct wl_spec spec = {
    .name = "explicit",
    .description = "many short barrier-heavy regions, each with num_threads(n) for an n read once "
                   "before them (Cython's prange): boosting rounds on integer gradients",
    .takes_until = 1,
};

struct best {
    double score; /* -1 when the feature has no split with rows on both sides */
    int bin;      /* rows with bin <= this go left */
};

struct stump {
    int feat, bin;
    int64_t left, right; /* the update of rows going left and right */
};

/* The gradient of row i in round r: target minus prediction, plus a small
 * per-round jitter so that the rounds keep choosing new splits instead of
 * settling into a fixed point. */
static inline int64_t grad(int64_t y, int64_t pred, int r, long i)
{
    const uint64_t z = wl_mix64(((uint64_t)r << 32) ^ (uint64_t)i ^ 0xe7b1ULL);
    return y - pred + (int64_t)(z & 255) - 128;
}

static int64_t block_sum(const int64_t *g, long blk, long m)
{
    const long hi = (blk + 1) * BLOCK < m ? (blk + 1) * BLOCK : m;
    int64_t s = 0;
    for (long i = blk * BLOCK; i < hi; i++)
        s += g[i];
    return s;
}

static void histogram(const uint8_t *xf, const int64_t *g, long m, int64_t *hg, int64_t *hn)
{
    for (int b = 0; b < NBINS; b++)
        hg[b] = hn[b] = 0;
    for (long i = 0; i < m; i++) {
        hg[xf[i]] += g[i];
        hn[xf[i]]++;
    }
}

/* The split that maximises GL²/NL + GR²/NR, the lowest bin on ties. */
static struct best best_split(const int64_t *hg, const int64_t *hn, int64_t gtot, long m)
{
    struct best best = {-1.0, 0};
    int64_t gl = 0, nl = 0;
    for (int b = 0; b < NBINS - 1; b++) {
        gl += hg[b];
        nl += hn[b];
        const int64_t gr = gtot - gl, nr = m - nl;
        if (nl == 0 || nr == 0)
            continue;
        const double s = (double)gl * (double)gl / (double)nl + (double)gr * (double)gr / (double)nr;
        if (s > best.score) {
            best.score = s;
            best.bin = b;
        }
    }
    return best;
}

/* The stump from the per-feature bests: the best feature (lowest on ties)
 * and half the mean gradient on each side. */
static struct stump choose(const struct best *best, const int64_t *hg, const int64_t *hn, int64_t gtot,
                           long m)
{
    struct stump st = {0, 0, 0, 0};
    double top = -1.0;
    for (int f = 0; f < NFEAT; f++)
        if (best[f].score > top) {
            top = best[f].score;
            st.feat = f;
            st.bin = best[f].bin;
        }
    if (top < 0.0)
        return st;
    int64_t gl = 0, nl = 0;
    for (int b = 0; b <= st.bin; b++) {
        gl += hg[st.feat * NBINS + b];
        nl += hn[st.feat * NBINS + b];
    }
    st.left = gl / (2 * nl);
    st.right = (gtot - gl) / (2 * (m - nl));
    return st;
}

static inline int64_t update(const struct stump *st, uint8_t bin)
{
    return bin <= st->bin ? st->left : st->right;
}

/* Serial recomputation of one round's gradients, histograms and bests from
 * the predictions before its update; returns the number of mismatches. */
static long check_round(int r, long m, const uint8_t *x, const int64_t *y, const int64_t *pred,
                        const int64_t *g, int64_t gtot, const int64_t *hg, const int64_t *hn,
                        const struct best *best)
{
    long bad = 0;
    for (long i = 0; i < m; i++)
        bad += g[i] != grad(y[i], pred[i], r, i);
    int64_t cg[NBINS], cn[NBINS];
    for (int f = 0; f < NFEAT; f++) {
        histogram(x + f * m, g, m, cg, cn);
        for (int b = 0; b < NBINS; b++)
            bad += cg[b] != hg[f * NBINS + b] || cn[b] != hn[f * NBINS + b];
        const struct best cb = best_split(cg, cn, gtot, m);
        bad += cb.score != best[f].score || cb.bin != best[f].bin;
    }
    return bad;
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const long m = 16384;
    const int rounds = WL_PICK(args.size, 300, 10000, 40000);
    const long nblocks = (m + BLOCK - 1) / BLOCK;

    /* The count read once, before any region, and passed to every region's
     * num_threads clause (Cython's prange(num_threads=n) with n from
     * scikit-learn's _openmp_effective_n_threads()). */
    const int nt = omp_get_max_threads();
    printf(" explicit: size %c, %ld rows, %d features, %d rounds, num_threads(%d) at every region\n",
           "SWA"[args.size], m, NFEAT, rounds, nt);

    uint8_t *x = malloc((size_t)(NFEAT * m));
    int64_t *y = malloc((size_t)m * sizeof *y);
    int64_t *pred = calloc((size_t)m, sizeof *pred);
    int64_t *g = malloc((size_t)m * sizeof *g);
    int64_t *gblk = malloc((size_t)nblocks * sizeof *gblk);
    int64_t *hg = malloc(NFEAT * NBINS * sizeof *hg);
    int64_t *hn = malloc(NFEAT * NBINS * sizeof *hn);
    struct best *best = malloc(NFEAT * sizeof *best);
    struct stump *stumps = malloc((size_t)rounds * sizeof *stumps);
    int64_t *expect = calloc((size_t)m, sizeof *expect);
    if (!x || !y || !pred || !g || !gblk || !hg || !hn || !best || !stumps || !expect) {
        fprintf(stderr, "explicit: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    for (long i = 0; i < m; i++) {
        int64_t t = 0;
        for (int f = 0; f < NFEAT; f++) {
            const uint8_t bin = (uint8_t)(wl_mix64((uint64_t)(f * m + i)) % NBINS);
            x[f * m + i] = bin;
            t += (int64_t)(f % 5 - 2) * bin * bin;
        }
        y[i] = 64 * t + (int64_t)(wl_mix64((uint64_t)i ^ 0x5eedULL) & 1023);
    }

    int ok = 1;
    long failed = 0, fused_rounds = 0, jobs = 0;
    uint64_t h = 0, first = 0;
    double elapsed = 0.0;
    /* --until: the whole boosting job again from its start, until the file exists; every job must
     * give the first one's checksum (the one printed, as without --until). */
    do {
        memset(pred, 0, (size_t)m * sizeof *pred);
        memset(expect, 0, (size_t)m * sizeof *expect);
        h = 0;
        fused_rounds = 0;
        for (int r = 0; r < rounds; r++) {
            const int fused = r % FUSE_EVERY == FUSE_EVERY - 1;
            fused_rounds += fused;
            double t0 = wl_clock_now();
            if (fused) {
                /* (A) Gradients, then block sums of them, in one region. The
                 * blocks do not map to the same threads as the rows, hence the
                 * barrier between the loops. */
    #pragma omp parallel num_threads(nt)
                {
                    wl_team_note();
    #pragma omp for schedule(static) nowait
                    for (long i = 0; i < m; i++)
                        g[i] = grad(y[i], pred[i], r, i);
    #pragma omp barrier
    #pragma omp for schedule(static) nowait
                    for (long blk = 0; blk < nblocks; blk++)
                        gblk[blk] = block_sum(g, blk, m);
                }
            } else {
    #pragma omp parallel for num_threads(nt) schedule(static)
                for (long i = 0; i < m; i++) {
                    if (i == 0)
                        wl_team_note();
                    g[i] = grad(y[i], pred[i], r, i);
                }
    #pragma omp parallel for num_threads(nt) schedule(static)
                for (long blk = 0; blk < nblocks; blk++) {
                    if (blk == 0)
                        wl_team_note();
                    gblk[blk] = block_sum(g, blk, m);
                }
            }
            int64_t gtot = 0;
            for (long blk = 0; blk < nblocks; blk++)
                gtot += gblk[blk];
            /* (B) A histogram per feature, then each feature's best split. */
            if (fused) {
                /* Two worksharing loops of one region (two prange loops in one
                 * `with nogil, parallel()` block in Cython). */
    #pragma omp parallel num_threads(nt)
                {
                    wl_team_note();
    #pragma omp for schedule(static)
                    for (int f = 0; f < NFEAT; f++)
                        histogram(x + f * m, g, m, hg + f * NBINS, hn + f * NBINS);
    #pragma omp for schedule(static) nowait
                    for (int f = 0; f < NFEAT; f++)
                        best[f] = best_split(hg + f * NBINS, hn + f * NBINS, gtot, m);
                }
            } else {
    #pragma omp parallel for num_threads(nt) schedule(static)
                for (int f = 0; f < NFEAT; f++) {
                    if (f == 0)
                        wl_team_note();
                    histogram(x + f * m, g, m, hg + f * NBINS, hn + f * NBINS);
                }
    #pragma omp parallel for num_threads(nt) schedule(static)
                for (int f = 0; f < NFEAT; f++) {
                    if (f == 0)
                        wl_team_note();
                    best[f] = best_split(hg + f * NBINS, hn + f * NBINS, gtot, m);
                }
            }
            const struct stump st = choose(best, hg, hn, gtot, m);
            elapsed += wl_clock_now() - t0;

            /* Cheap checks every round (integer invariants), a serial
             * recomputation of the round every CHECK_EVERY rounds and at the
             * last; neither is timed. */
            int64_t gsum = 0;
            for (long i = 0; i < m; i++)
                gsum += g[i];
            long bad = gsum != gtot;
            for (int f = 0; f < NFEAT; f++) {
                int64_t sg = 0, sn = 0;
                for (int b = 0; b < NBINS; b++) {
                    sg += hg[f * NBINS + b];
                    sn += hn[f * NBINS + b];
                }
                bad += sg != gtot || sn != m;
            }
            if (r % CHECK_EVERY == 0 || r == rounds - 1)
                bad += check_round(r, m, x, y, pred, g, gtot, hg, hn, best);
            if (bad) {
                ok = 0;
                if (failed++ < 5)
                    fprintf(stderr,
                            "explicit: round %d: %ld checks failed (gradients, their sum, histograms, "
                            "splits)\n",
                            r, bad);
            }

            t0 = wl_clock_now();
            /* (C) The stump's update of every prediction. */
    #pragma omp parallel for num_threads(nt) schedule(static)
            for (long i = 0; i < m; i++) {
                if (i == 0)
                    wl_team_note();
                pred[i] += update(&st, x[st.feat * m + i]);
            }
            elapsed += wl_clock_now() - t0;

            stumps[r] = st;
            h = wl_hash_u64(h, (uint64_t)gtot);
            h = wl_hash_u64(h, (uint64_t)st.feat << 8 | (uint64_t)st.bin);
            h = wl_hash_u64(h, (uint64_t)st.left);
            h = wl_hash_u64(h, (uint64_t)st.right);
        }
        if (failed)
            fprintf(stderr, "explicit: %ld of %d rounds wrong\n", failed, rounds);

        /* Every row's whole trajectory, serially from the stumps chosen: an
         * update skipped or applied twice in (C) shows here. */
        for (int r = 0; r < rounds; r++)
            for (long i = 0; i < m; i++)
                expect[i] += update(&stumps[r], x[stumps[r].feat * m + i]);
        long bad_rows = 0;
        for (long i = 0; i < m; i++)
            bad_rows += expect[i] != pred[i];
        if (bad_rows) {
            fprintf(stderr, "explicit: %ld of %ld rows differ from their serial trajectory\n", bad_rows, m);
            ok = 0;
        }
        h = wl_hash_u64s(h, (const uint64_t *)pred, (size_t)m);
    } while (wl_job_again(spec.name, args.until, &jobs, h, &first, &ok));

    wl_checksum_print(first);
    /* Five regions a round, three in a fused round. No rate here: every line
     * but the result line is the same in every run (scaf check compares them). */
    printf("rows=%ld rounds=%d regions=%ld\n", m, rounds, 5L * rounds - 2 * fused_rounds);
    free(x);
    free(y);
    free(pred);
    free(g);
    free(gblk);
    free(hg);
    free(hn);
    free(best);
    free(stumps);
    free(expect);
    return wl_result_print(spec.name, elapsed, ok);
}
