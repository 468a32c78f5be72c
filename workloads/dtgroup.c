/* dtgroup.c — data.table's shape: a count read once at start sizes per-thread buffers; group-by and order, with thread-numbered scratch inside a dynamic loop. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <omp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * R's data.table (src/openmp-utils.c, forder.c, gsumm.c), in its shape, not
 * its code. At start the program reads its count once into a global
 * (initDTthreads: omp_get_max_threads() at level 0); every region passes it
 * back, throttled, as num_threads(dt_threads(n)). Each round orders a keyed
 * column and sums a value column by group:
 *
 *  - order (forder): the rows are counted and scattered by the key's high
 *    byte in static loops over batches; then each high bucket is sorted by
 *    the low byte in an `ordered schedule(dynamic)` loop. A bucket's sort
 *    uses thread-numbered scratch (TMP + me * cap, counts + me * 256, sized
 *    by the count before the region and written before it is read in each
 *    iteration) and appends its group sizes to the thread's own buffer
 *    (push), which the same iteration copies out, in bucket order, under
 *    `ordered` and empties (flush). The thread numbers are read only in
 *    functions called from inside the loop's iterations, never elsewhere
 *    in the region, and that region never reads its team size.
 *  - group sums (gsumm's gforce): per-batch counts of the group's high
 *    half, then per-thread copies of those counts (tmpcounts + me *
 *    highSize, copied afresh in every iteration) to scatter the values;
 *    then one loop over the high halves adds the values into their groups.
 *    Static loops, whose inline schedule reads the team size.
 *
 * The thread-numbered buffers are scratch: nothing a thread leaves there
 * outlives the iteration that wrote it. So any team up to the count gives
 * the same bits, as data.table does: a smaller team only leaves some
 * threads' buffers unused. A team larger than the buffers (never from scaf,
 * which never exceeds the count the program saw; a test shim can make one)
 * would write past them, as data.table would: such a thread does nothing,
 * and verification fails saying so.
 *
 * Integer arithmetic only: the ordering, the group sizes and the sums are
 * the same for any team in any region. Verification (serial, every round):
 * the order is a permutation, sorted and stable; the group sizes are the
 * runs of equal keys along it; each group's sum equals a direct serial sum
 * by key.
 */

#define KEYS (1u << 16) /* keys are 16-bit: a high and a low byte, as forder's radix passes */
#define HIGH 256

static const struct wl_spec spec = {
    .name = "dtgroup",
    .description = "data.table's shape: a count read once at start sizes per-thread buffers, "
                   "numbered by thread only inside a dynamic loop's iterations (group-by and order)",
};

/* ---- the count, read once (initDTthreads, getDTthreads) ---- */

static int dt_count = 1;
static const int64_t dt_throttle = 1024;

static void dt_init_threads(void)
{
    int n = omp_get_max_threads();
    dt_count = n < 1 ? 1 : n;
}

/* throttle: one thread per dt_throttle items; else one per item (pre-chunked batches). */
static int dt_threads(int64_t n, int throttle)
{
    if (n < 1)
        return 1;
    int64_t ans = throttle ? 1 + (n - 1) / dt_throttle : n;
    return ans >= dt_count ? dt_count : (int)ans;
}

/* ---- one round's data and per-thread buffers ---- */

struct order_state {
    const uint16_t *key;
    uint32_t *o1;   /* rows ordered by the high byte (stable) */
    uint32_t *anso; /* rows ordered by the whole key (stable): the result */
    int nbuf;       /* per-thread buffers, sized before the regions from the count */
    int64_t cap;    /* the largest high bucket */
    uint32_t *tmp;  /* nbuf * cap: a bucket's rows by low byte (scratch) */
    uint32_t *cnt;  /* nbuf * 256: a bucket's counts by low byte (scratch) */
    int32_t *gs_thread; /* nbuf * 256: each thread's group sizes since its last flush */
    int64_t *gs_n;
    int32_t *gs;     /* group sizes in key order, flushed in bucket order */
    int64_t gs_len;
    _Atomic int over;    /* largest thread number seen beyond the buffers, plus one; 0 = none */
    _Atomic int overrun; /* a buffer's bounds were hit: two threads used one buffer */
};

/* Appends a bucket's group sizes to the thread's own buffer (forder's push()). A bucket has at most 256
 * groups and each iteration flushes what it pushed, so 256 a thread is enough for a correct run; the
 * bound check only keeps misnumbered threads (a test shim) from writing past it. */
static __attribute__((noinline)) void push(struct order_state *s, const int32_t *sizes, int64_t n)
{
    int me = omp_get_thread_num();

    if (s->gs_n[me] + n > HIGH) {
        atomic_store(&s->overrun, 1);
        return;
    }
    memcpy(s->gs_thread + (int64_t)me * HIGH + s->gs_n[me], sizes, (size_t)n * sizeof *sizes);
    s->gs_n[me] += n;
}

/* Under `ordered`: the thread's group sizes go to the result, in bucket order, and its buffer empties. */
static __attribute__((noinline)) void flush(struct order_state *s)
{
    int me = omp_get_thread_num();

    if (me >= s->nbuf)
        return;
    if (s->gs_len + s->gs_n[me] > KEYS) {
        atomic_store(&s->overrun, 1);
        return;
    }
    memcpy(s->gs + s->gs_len, s->gs_thread + (int64_t)me * HIGH, (size_t)s->gs_n[me] * sizeof *s->gs);
    s->gs_len += s->gs_n[me];
    s->gs_n[me] = 0;
}

/* One high bucket, rows [from, from + n) of o1, sorted by the low byte into anso (forder's radix_r). */
static __attribute__((noinline)) void sort_bucket(struct order_state *s, int64_t from, int64_t n)
{
    int me = omp_get_thread_num();
    int32_t sizes[HIGH];
    int64_t ngrp = 0;

    if (me >= s->nbuf) {
        int cur = atomic_load(&s->over);
        while (me + 1 > cur && !atomic_compare_exchange_weak(&s->over, &cur, me + 1))
            ;
        return;
    }
    uint32_t *my_tmp = s->tmp + (int64_t)me * s->cap;
    uint32_t *my_cnt = s->cnt + (int64_t)me * HIGH;
    const uint32_t *rows = s->o1 + from;

    memset(my_cnt, 0, HIGH * sizeof *my_cnt);
    for (int64_t i = 0; i < n; i++)
        my_cnt[s->key[rows[i]] & 0xff]++;
    for (uint32_t b = 0, cum = 0; b < HIGH; b++) {
        uint32_t c = my_cnt[b];
        if (c)
            sizes[ngrp++] = (int32_t)c;
        my_cnt[b] = cum;
        cum += c;
    }
    for (int64_t i = 0; i < n; i++) {
        uint32_t at = my_cnt[s->key[rows[i]] & 0xff]++;
        if (at < n)
            my_tmp[at] = rows[i];
        else
            atomic_store_explicit(&s->overrun, 1, memory_order_relaxed);
    }
    memcpy(s->anso + from, my_tmp, (size_t)n * sizeof *my_tmp);
    push(s, sizes, ngrp);
}

/* forder: the order of the rows by key, and the group sizes; returns 0 when memory ran out. */
static int dt_order(struct order_state *s, int64_t n, _Atomic int *entered)
{
    const int64_t nbatch = n / 2 < (int64_t)dt_threads(n, 1) * 2 ? n / 2 : (int64_t)dt_threads(n, 1) * 2;
    const int64_t bsize = (n - 1) / nbatch > 1 ? (n - 1) / nbatch : 1;
    const int64_t last = n - (nbatch - 1) * bsize;
    uint32_t *counts = calloc((size_t)(nbatch * HIGH), sizeof *counts);
    int64_t bucket_from[HIGH + 1];

    if (!counts)
        return 0;
#pragma omp parallel for num_threads(dt_threads(nbatch, 0))
    for (int64_t b = 0; b < nbatch; b++) {
        const int64_t how = b == nbatch - 1 ? last : bsize;
        uint32_t *my_counts = counts + b * HIGH;
        for (int64_t i = b * bsize; i < b * bsize + how; i++)
            my_counts[s->key[i] >> 8]++;
    }
    /* Bucket-major, then batch: each batch's rows of a bucket follow the earlier batches'. */
    int64_t cum = 0;
    s->cap = 0;
    for (int h = 0; h < HIGH; h++) {
        bucket_from[h] = cum;
        for (int64_t b = 0; b < nbatch; b++) {
            uint32_t c = counts[b * HIGH + h];
            counts[b * HIGH + h] = (uint32_t)cum;
            cum += c;
        }
        if (cum - bucket_from[h] > s->cap)
            s->cap = cum - bucket_from[h];
    }
    bucket_from[HIGH] = cum;
#pragma omp parallel for num_threads(dt_threads(nbatch, 0))
    for (int64_t b = 0; b < nbatch; b++) {
        const int64_t how = b == nbatch - 1 ? last : bsize;
        uint32_t *my_counts = counts + b * HIGH;
        for (int64_t i = b * bsize; i < b * bsize + how; i++)
            s->o1[my_counts[s->key[i] >> 8]++] = (uint32_t)i;
    }
    free(counts);

    /* The per-thread buffers, sized now from the count (forder: nth = getDTthreads(nrow, true)). */
    s->nbuf = dt_threads(n, 1);
    s->tmp = malloc((size_t)(s->nbuf * s->cap) * sizeof *s->tmp);
    s->cnt = malloc((size_t)s->nbuf * HIGH * sizeof *s->cnt);
    s->gs_thread = malloc((size_t)s->nbuf * HIGH * sizeof *s->gs_thread);
    s->gs_n = calloc((size_t)s->nbuf, sizeof *s->gs_n);
    s->gs_len = 0;
    if (!s->tmp || !s->cnt || !s->gs_thread || !s->gs_n)
        return 0;
#pragma omp parallel num_threads(dt_threads(HIGH, 0))
    {
        /* The team is counted here rather than with omp_get_num_threads(), which would be the
         * region reading its team size. */
        atomic_fetch_add_explicit(entered, 1, memory_order_relaxed);
#pragma omp for ordered schedule(dynamic)
        for (int h = 0; h < HIGH; h++) {
            sort_bucket(s, bucket_from[h], bucket_from[h + 1] - bucket_from[h]);
#pragma omp ordered
            flush(s);
        }
    }
    free(s->gs_thread);
    free(s->gs_n);
    free(s->tmp);
    free(s->cnt);
    return 1;
}

static int nbit(int64_t n)
{
    int b = 0;
    while (n) {
        n >>= 1;
        b++;
    }
    return b ? b : 1;
}

/*
 * gsumm's gforce sum: the groups' sums of v, groups numbered in key order.
 * `grp` (n), `high`, `low` (n), `gx` (n) are work arrays. Returns 0 when
 * memory ran out; *over and *overrun as in struct order_state.
 */
static int dt_gsum(const uint32_t *anso, const int32_t *gs, int64_t ngrp, const uint64_t *v, int64_t n,
                   int32_t *grp, uint16_t *high, uint16_t *low, uint64_t *gx, uint64_t *ans, _Atomic int *over,
                   _Atomic int *overrun)
{
    int64_t *first = malloc((size_t)ngrp * sizeof *first);
    if (!first)
        return 0;
    for (int64_t g = 0, cum = 0; g < ngrp; g++) {
        first[g] = cum;
        cum += gs[g];
    }
#pragma omp parallel for num_threads(dt_threads(ngrp, 0))
    for (int64_t g = 0; g < ngrp; g++)
        for (int64_t j = first[g]; j < first[g] + gs[g]; j++)
            grp[anso[j]] = (int32_t)g;
    free(first);

    const int shift = nbit(ngrp - 1) / 2;
    const int32_t mask = (1 << shift) - 1;
    const int64_t hsize = ((ngrp - 1) >> shift) + 1;
    const int64_t nbatch = (n + 1) / 2 < (int64_t)dt_threads(n, 1) * 2 ? (n + 1) / 2 : (int64_t)dt_threads(n, 1) * 2;
    const int64_t bsize = (n - 1) / nbatch > 1 ? (n - 1) / nbatch : 1;
    const int64_t last = n - (nbatch - 1) * bsize;
    const int ntmp = dt_threads(nbatch, 0);
    int32_t *counts = calloc((size_t)(nbatch * hsize), sizeof *counts);
    int32_t *tmpcounts = malloc((size_t)(ntmp * hsize) * sizeof *tmpcounts);
    if (!counts || !tmpcounts) {
        free(counts);
        free(tmpcounts);
        return 0;
    }
#pragma omp parallel for num_threads(ntmp)
    for (int64_t b = 0; b < nbatch; b++) {
        const int64_t how = b == nbatch - 1 ? last : bsize;
        int32_t *my_counts = counts + b * hsize;
        const int32_t *my_g = grp + b * bsize;
        uint16_t *my_high = high + b * bsize;
        for (int64_t i = 0; i < how; i++) {
            const int32_t w = my_g[i] >> shift;
            my_counts[w]++;
            my_high[i] = (uint16_t)w;
        }
        for (int64_t i = 0, cum = 0; i < hsize; i++) {
            int32_t c = my_counts[i];
            my_counts[i] = (int32_t)cum;
            cum += c;
        }
        const int me = omp_get_thread_num();
        if (me >= ntmp) {
            atomic_store(over, me + 1);
            continue;
        }
        int32_t *my_tmpcounts = tmpcounts + me * hsize;
        memcpy(my_tmpcounts, my_counts, (size_t)hsize * sizeof *my_tmpcounts);
        uint16_t *my_low = low + b * bsize;
        for (int64_t i = 0; i < how; i++) {
            const int32_t at = my_tmpcounts[my_g[i] >> shift]++;
            if (at >= 0 && at < how)
                my_low[at] = (uint16_t)(my_g[i] & mask);
            else
                atomic_store_explicit(overrun, 1, memory_order_relaxed);
        }
    }
    /* gather: the values into the same places as their groups' low halves. */
#pragma omp parallel for num_threads(ntmp)
    for (int64_t b = 0; b < nbatch; b++) {
        const int me = omp_get_thread_num();
        if (me >= ntmp) {
            atomic_store(over, me + 1);
            continue;
        }
        int32_t *my_tmpcounts = tmpcounts + me * hsize;
        memcpy(my_tmpcounts, counts + b * hsize, (size_t)hsize * sizeof *my_tmpcounts);
        const int64_t how = b == nbatch - 1 ? last : bsize;
        const uint16_t *my_high = high + b * bsize;
        uint64_t *my_gx = gx + b * bsize;
        for (int64_t i = 0; i < how; i++) {
            const int32_t at = my_tmpcounts[my_high[i]]++;
            if (at >= 0 && at < how)
                my_gx[at] = v[b * bsize + i];
            else
                atomic_store_explicit(overrun, 1, memory_order_relaxed);
        }
    }
    memset(ans, 0, (size_t)ngrp * sizeof *ans);
#pragma omp parallel for num_threads(dt_threads(hsize, 0))
    for (int64_t h = 0; h < hsize; h++) {
        for (int64_t b = 0; b < nbatch; b++) {
            /* Each batch's counts are where its high halves start; the last one ends with the batch. */
            const int32_t *my_counts = counts + b * hsize;
            const int64_t how = b == nbatch - 1 ? last : bsize;
            const int64_t from = my_counts[h], to = h == hsize - 1 ? how : my_counts[h + 1];
            const uint16_t *my_low = low + b * bsize;
            const uint64_t *my_gx = gx + b * bsize;
            for (int64_t k = from; k < to; k++)
                ans[(h << shift) | my_low[k]] += my_gx[k];
        }
    }
    free(counts);
    free(tmpcounts);
    return 1;
}

/* ---- the round's data and its serial check ---- */

static inline uint16_t key_of(int64_t i, int r)
{
    /* Skewed: the square of a uniform 16-bit value, so small keys hold many rows and some keys none. */
    uint64_t x = wl_mix64((uint64_t)i * 0x9e37u + ((uint64_t)r << 40)) & 0xffff;
    return (uint16_t)((x * x) >> 16);
}

static inline uint64_t value_of(int64_t i, int r)
{
    return wl_mix64(((uint64_t)r << 48) ^ (uint64_t)i ^ 0x5eedULL);
}

/* 1 when anso is the stable order of key, gs its groups and sums their sums; else prints why. */
static int check_round(int r, const uint16_t *key, const uint64_t *v, int64_t n, const uint32_t *anso,
                       const int32_t *gs, int64_t ngrp, const uint64_t *sums, uint8_t *seen,
                       uint64_t *by_key, int over, int overrun, int nbuf)
{
    char why[160] = "";

    memset(seen, 0, (size_t)n);
    for (int64_t j = 0; j < n && !why[0]; j++) {
        uint32_t a = anso[j];
        if (a >= n || seen[a])
            snprintf(why, sizeof why, "position %lld holds row %u, out of range or twice", (long long)j, a);
        else if (j && (key[anso[j - 1]] > key[a] || (key[anso[j - 1]] == key[a] && anso[j - 1] > a)))
            snprintf(why, sizeof why, "rows %u and %u out of order at position %lld", anso[j - 1], a,
                     (long long)j);
        else
            seen[a] = 1;
    }
    memset(by_key, 0, KEYS * sizeof *by_key);
    for (int64_t i = 0; i < n; i++)
        by_key[key[i]] += v[i];
    for (int64_t j = 0, g = 0; j < n && !why[0]; g++) {
        int64_t run = 1;
        while (j + run < n && key[anso[j + run]] == key[anso[j]])
            run++;
        if (g >= ngrp || gs[g] != run)
            snprintf(why, sizeof why, "group %lld has %lld rows, expected %lld", (long long)g,
                     g < ngrp ? (long long)gs[g] : -1LL, (long long)run);
        else if (sums[g] != by_key[key[anso[j]]])
            snprintf(why, sizeof why, "group %lld sums to %016llx, expected %016llx", (long long)g,
                     (unsigned long long)sums[g], (unsigned long long)by_key[key[anso[j]]]);
        j += run;
        if (j == n && g + 1 != ngrp && !why[0])
            snprintf(why, sizeof why, "%lld groups, expected %lld", (long long)ngrp, (long long)g + 1);
    }
    if (!why[0] && !overrun)
        return 1;
    if (!why[0])
        snprintf(why, sizeof why, "the results are right");
    if (over)
        fprintf(stderr, "dtgroup: round %d: %s: a team of %d exceeded the %d per-thread buffers sized "
                "from the count read at start\n", r, why, over, nbuf);
    else if (overrun)
        fprintf(stderr, "dtgroup: round %d: %s; threads overran a per-thread buffer (two threads numbered "
                "alike share one)\n", r, why);
    else
        fprintf(stderr, "dtgroup: round %d: %s\n", r, why);
    return 0;
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const int64_t n = WL_PICK(args.size, 1L << 18, 1L << 21, 1L << 22);
    const int rounds = (int)wl_scaled(&args, WL_PICK(args.size, 4, 80, 160), 1, 1);

    dt_init_threads();
    uint16_t *key = malloc((size_t)n * sizeof *key);
    uint64_t *v = malloc((size_t)n * sizeof *v), *gx = malloc((size_t)n * sizeof *gx);
    uint32_t *o1 = malloc((size_t)n * sizeof *o1), *anso = malloc((size_t)n * sizeof *anso);
    int32_t *gs = malloc(KEYS * sizeof *gs), *grp = malloc((size_t)n * sizeof *grp);
    uint16_t *high = malloc((size_t)n * sizeof *high), *low = malloc((size_t)n * sizeof *low);
    uint64_t *sums = malloc(KEYS * sizeof *sums), *by_key = malloc(KEYS * sizeof *by_key);
    uint8_t *seen = malloc((size_t)n);
    if (!key || !v || !gx || !o1 || !anso || !gs || !grp || !high || !low || !sums || !by_key || !seen) {
        fprintf(stderr, "dtgroup: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }

    static _Atomic int entered;
    int ok = 1;
    long failed = 0;
    uint64_t h = 0;
    double elapsed = 0.0;
    for (int r = 0; r < rounds && ok; r++) {
        for (int64_t i = 0; i < n; i++) {
            key[i] = key_of(i, r);
            v[i] = value_of(i, r);
        }
        struct order_state s = {.key = key, .o1 = o1, .anso = anso, .gs = gs};
        _Atomic int over_sum = 0;
        atomic_store_explicit(&entered, 0, memory_order_relaxed);

        double t0 = wl_clock_now();
        int done = dt_order(&s, n, &entered);
        int64_t ngrp = s.gs_len, rows_in_groups = 0;
        for (int64_t g = 0; g < ngrp; g++)
            rows_in_groups += gs[g];
        /* An order that went wrong (misnumbered threads, a team beyond the buffers) is not summed over:
         * its row numbers may be anything. The check below says what went wrong. */
        int sane = !atomic_load(&s.over) && !atomic_load(&s.overrun) && rows_in_groups == n;
        if (!sane)
            memset(sums, 0, KEYS * sizeof *sums);
        /* `done` says only whether the buffers could be allocated: an order that went wrong (no groups
         * at all, when a team beyond the buffers lost every row) is for the check below to name. A sane
         * order has groups: its groups hold all n rows. */
        done = done && (!sane || dt_gsum(anso, gs, ngrp, v, n, grp, high, low, gx, sums, &over_sum, &s.overrun));
        elapsed += wl_clock_now() - t0;
        wl_team_note_size(atomic_load_explicit(&entered, memory_order_relaxed));

        if (!done) {
            fprintf(stderr, "dtgroup: round %d: out of memory\n", r);
            ok = 0;
            break;
        }
        int over = atomic_load(&s.over) > atomic_load(&over_sum) ? atomic_load(&s.over) : atomic_load(&over_sum);
        if (!check_round(r, key, v, n, anso, gs, ngrp, sums, seen, by_key, over, atomic_load(&s.overrun),
                         s.nbuf)) {
            ok = 0;
            failed++;
        }
        h = wl_hash_u64(h, (uint64_t)ngrp);
        for (int64_t j = 0; j < n; j += 61)
            h = wl_hash_u64(h, anso[j]);
        for (int64_t g = 0; g < ngrp; g++)
            h = wl_hash_u64(h, ((uint64_t)gs[g] << 32) ^ sums[g]);
    }
    if (failed)
        fprintf(stderr, "dtgroup: a round ordered or summed wrongly; stopped there\n");

    wl_checksum_print(h);
    printf("rows=%lld rounds=%d count=%d\n", (long long)n, rounds, dt_count);
    free(key);
    free(v);
    free(gx);
    free(o1);
    free(anso);
    free(gs);
    free(grp);
    free(high);
    free(low);
    free(sums);
    free(by_key);
    free(seen);
    return wl_result_print(spec.name, elapsed, ok);
}
