/* fixed.c — non-malleable bucket sort that sizes per-thread state from omp_get_max_threads() (like NPB IS). */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* The pattern real programs use and scaf must survive: ask
 * omp_get_max_threads() before any region, size per-thread histograms by
 * it, pin the team with omp_set_num_threads(), then let thread t count its
 * static share of the keys in one region and scatter the same share in a
 * later region. A team larger than the histograms, or a team that changes
 * between the two regions, sorts wrongly, and the check below says so. */

static const struct wl_spec spec = {
    .name = "fixed",
    .description = "non-malleable counting sort with per-thread buckets sized by "
                   "omp_get_max_threads() before its regions (like NPB IS)",
    .takes_until = 1,
};

#define KEY_BITS 18 /* four 16-bit uniforms add up to less than 2^18 */
#define MAX_KEY (1u << KEY_BITS)
#define BUCKET_SHIFT 9
#define NBUCKETS ((int)(MAX_KEY >> BUCKET_SHIFT))

/* Thread t's static share of n keys for a team of nt. */
static void share(long n, int t, int nt, long *lo, long *hi)
{
    *lo = n * t / nt;
    *hi = n * (t + 1) / nt;
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const long n = WL_PICK(args.size, 1L << 20, 1L << 24, 1L << 24);
    const int iterations = (int)wl_scaled(&args, WL_PICK(args.size, 10, 80, 320), 1, 1);
    const int nt = omp_get_max_threads();
    omp_set_num_threads(nt);

    unsigned *key = malloc((size_t)n * sizeof *key);
    unsigned *sorted = malloc((size_t)n * sizeof *sorted);
    /* count[t][b]: keys of thread t's share in bucket b; then its offset. */
    long *count = calloc((size_t)nt * NBUCKETS, sizeof *count);
    if (!key || !sorted || !count) {
        fprintf(stderr, "fixed: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    /* A multiset fingerprint: the sum of a random 64-bit tag per key value
     * (cheaper per key than hashing, and as strong for random errors). */
    uint64_t *tag = malloc(MAX_KEY * sizeof *tag);
    if (!tag) {
        fprintf(stderr, "fixed: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    for (unsigned k = 0; k < MAX_KEY; k++)
        tag[k] = wl_mix64(k ^ 0x5bd1e995u);
    /* Sum of four uniforms, as NPB IS: keys pile up in the middle buckets. */
    uint64_t in_hash = 0;
    for (long i = 0; i < n; i++) {
        uint64_t r = wl_mix64((uint64_t)i);
        key[i] = (unsigned)((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) +
                            (r >> 48));
        in_hash += tag[key[i]];
    }

    int ok = 1, overflow = 0;
    uint64_t h = 0;
    double elapsed = 0.0;
    long it;
    for (it = 0; wl_round_runs(args.until, it, iterations); it++) {
        /* Like IS, each iteration perturbs two keys so no pass repeats another (--until's extra
         * iterations wrap around, keeping keys in range). */
        const long a = it % (n / 2), z = n - 1 - a;
        const unsigned kv = (unsigned)(it % MAX_KEY);
        in_hash -= tag[key[a]] + tag[key[z]];
        key[a] = kv;
        key[z] = MAX_KEY - 1 - kv;
        in_hash += tag[key[a]] + tag[key[z]];

        double t0 = wl_clock_now();
#pragma omp parallel
        {
            const int t = omp_get_thread_num();
            wl_team_note();
            if (t >= nt) {
                /* No histogram for this thread: its keys go uncounted. */
#pragma omp atomic write
                overflow = 1;
            } else {
                long lo, hi, *c = count + (size_t)t * NBUCKETS;
                share(n, t, omp_get_num_threads(), &lo, &hi);
                for (int b = 0; b < NBUCKETS; b++)
                    c[b] = 0;
                for (long i = lo; i < hi; i++)
                    c[key[i] >> BUCKET_SHIFT]++;
            }
        }
#pragma omp parallel
        {
            wl_team_note();
            /* Offsets, bucket-major then thread-major: a key's place
             * depends on which thread counted it. */
#pragma omp single
            {
                long off = 0;
                for (int b = 0; b < NBUCKETS; b++)
                    for (int t = 0; t < nt; t++) {
                        long c = count[(size_t)t * NBUCKETS + b];
                        count[(size_t)t * NBUCKETS + b] = off;
                        off += c;
                    }
            }
        }
#pragma omp parallel
        {
            const int t = omp_get_thread_num();
            wl_team_note();
            if (t < nt) {
                long lo, hi, *off = count + (size_t)t * NBUCKETS;
                share(n, t, omp_get_num_threads(), &lo, &hi);
                for (long i = lo; i < hi; i++) {
                    long dst = off[key[i] >> BUCKET_SHIFT]++;
                    if (dst >= 0 && dst < n)
                        sorted[dst] = key[i];
                }
            }
            /* Sort inside each bucket by counting, buckets shared dynamically. */
#pragma omp barrier
#pragma omp for schedule(dynamic, 8)
            for (int b = 0; b < NBUCKETS; b++) {
                long lo = b == 0 ? 0 : count[(size_t)(nt - 1) * NBUCKETS + b - 1];
                long hi = count[(size_t)(nt - 1) * NBUCKETS + b];
                unsigned hist[1u << BUCKET_SHIFT] = {0};
                if (lo < 0 || hi > n || lo > hi)
                    continue;
                for (long i = lo; i < hi; i++)
                    hist[sorted[i] & ((1u << BUCKET_SHIFT) - 1)]++;
                long o = lo;
                for (unsigned k = 0; k < (1u << BUCKET_SHIFT); k++)
                    for (unsigned c = 0; c < hist[k]; c++)
                        sorted[o++] = ((unsigned)b << BUCKET_SHIFT) | k;
            }
        }
        elapsed += wl_clock_now() - t0;

        /* Check: ascending order and the same multiset of keys (a sum of
         * hashed keys, kept incrementally for the input). Shared out by
         * libgomp's dynamic schedule, not by thread number, with exact
         * integer sums, so neither the team nor its size can bias it. */
        uint64_t out_hash = 0;
        long disorder = 0;
#pragma omp parallel for schedule(dynamic, 65536) reduction(+ : out_hash, disorder)
        for (long i = 0; i < n; i++) {
            out_hash += tag[sorted[i]];
            disorder += i > 0 && sorted[i - 1] > sorted[i];
        }
        if (disorder || out_hash != in_hash || overflow) {
            fprintf(stderr, "fixed: iteration %ld: %ld keys out of order%s%s\n", it, disorder,
                    out_hash != in_hash ? ", keys lost or duplicated" : "",
                    overflow ? ", a team was larger than omp_get_max_threads()" : "");
            ok = 0;
        }
        h = wl_hash_u64(h, out_hash);
        h = wl_hash_u64(h, sorted[n / 3]);
    }

    wl_checksum_print(h);
    printf("keys=%ld iterations=%ld buckets_for=%d\n", n, it, nt);
    free(key);
    free(sorted);
    free(count);
    free(tag);
    return wl_result_print(spec.name, elapsed, ok);
}
