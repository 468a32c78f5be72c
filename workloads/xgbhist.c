/* xgbhist.c — non-malleable: XGBoost's hist shape, blocks of rows cut by a count read once at start, per-thread histograms merged by a thread map made for that count. */
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
 * XGBoost's `hist` tree method (src/common/threading_utils.h, hist_util.h,
 * src/tree/hist/histogram.h), in its shape, not its code. The count is read
 * once at start (OmpGetNumThreads: omp_get_max_threads() at level 0) and
 * passed to every region as num_threads(nt). Each boosting round fits one
 * regression tree, level by level, to integer gradients:
 *
 *  - gradients in a dynamic loop (ParallelFor, Sched::Dyn), and their total
 *    through per-thread slots zeroed before a static loop and added after it
 *    (common::Reduce): both right for any team;
 *  - the histograms of a level's nodes (the smaller child of each split; the
 *    sibling is its parent minus it) over a space of (node, block of rows):
 *    ParallelFor2d cuts the blocks into nt contiguous ranges and gives range t
 *    to the thread numbered t, read in the region, which never reads its team
 *    size. Before the region the per-thread histogram buffers are matched to
 *    the nodes each range touches (ParallelGHistBuilder::MatchThreadsToNodes
 *    for nt threads); each thread fills its own, and the reduction, another
 *    ParallelFor2d, adds every thread's buffer into the node's histogram;
 *  - split search per (node, feature) in a static loop, the partition of the
 *    rows and the leaves' update in dynamic loops.
 *
 * A team smaller than nt skips the ranges of the missing threads: the
 * histograms lose rows, and the reduction loses bins too. That is what
 * verification catches, naming the teams. A larger team leaves its extra
 * threads without a range (harmless).
 *
 * Integer gradients and counts, and split gains computed per feature by one
 * thread from exact sums: the same bits for any team that does all the work.
 * Verification: at every level every node's histogram holds exactly its rows
 * and their gradient sum in every feature (a serial sum over its rows); every
 * 16th round and the last, every built histogram is recomputed serially bin
 * by bin; at the end every row's prediction is recomputed from the trees.
 */

#define FEATURES 16
#define BINS 32
#define HBINS (FEATURES * BINS)
#define DEPTH 4
#define NODES (1 << (DEPTH + 1)) /* heap order: node k has children 2k+1, 2k+2 */
#define GRAIN 256                /* rows per block of the (node, rows) space */
#define BIN_GRAIN 64             /* bins per block of the reduction's space */

static const struct wl_spec spec = {
    .name = "xgbhist",
    .description = "non-malleable: XGBoost's hist shape, blocks of rows cut by a count read once at start, "
                   "per-thread histograms merged by a thread map made for that count",
};

struct bin {
    int64_t g; /* gradient sum */
    int64_t n; /* row count */
};

/* A 2D space: block k covers rows [begin, end) of the node numbered first[k] in the set. */
struct space {
    int64_t nblocks;
    int *first;
    int64_t *begin, *end;
};

/* ParallelGHistBuilder: per (thread, node) histograms, for nt threads. */
struct builder {
    int nt, nodes;
    struct bin **target;  /* nodes: the node's own histogram */
    struct bin *pool;     /* the extra buffers */
    int *hist_of;         /* nt * nodes: -1 the target, -2 not this thread's node, else a pool index */
    int *used;            /* nt * nodes */
};

static int nt;
static _Atomic int entered;
static int team_min, team_max; /* of the ParallelFor2d regions since reset */

/* Counted with an atomic increment: omp_get_num_threads() would be the region reading its team size. */
static void note_team(void)
{
    int t = atomic_load_explicit(&entered, memory_order_relaxed);
    if (team_min == 0 || t < team_min)
        team_min = t;
    if (t > team_max)
        team_max = t;
}

/* ParallelFor2d: thread t takes blocks [t * chunk, (t + 1) * chunk), chunk cut for nt threads. */
#define PARALLEL_FOR_2D(sp, k, ...)                                                           \
    do {                                                                                      \
        atomic_store_explicit(&entered, 0, memory_order_relaxed);                             \
        _Pragma("omp parallel num_threads(nt)")                                               \
        {                                                                                     \
            atomic_fetch_add_explicit(&entered, 1, memory_order_relaxed);                     \
            const int tid = omp_get_thread_num();                                             \
            const int64_t chunk_ = (sp)->nblocks / nt + ((sp)->nblocks % nt != 0);            \
            const int64_t end_ = (tid + 1) * chunk_ < (sp)->nblocks ? (tid + 1) * chunk_ : (sp)->nblocks; \
            for (int64_t k = tid * chunk_; k < end_; k++) {                                   \
                __VA_ARGS__                                                                   \
            }                                                                                 \
        }                                                                                     \
        note_team();                                                                          \
    } while (0)

static void match_threads_to_nodes(struct builder *b, const struct space *sp)
{
    const int64_t chunk = sp->nblocks / b->nt + (sp->nblocks % b->nt != 0);
    int extra = 0;

    for (int t = 0; t < b->nt; t++)
        for (int nd = 0; nd < b->nodes; nd++)
            b->hist_of[t * b->nodes + nd] = -2;
    for (int t = 0; t < b->nt; t++) {
        int64_t lo = chunk * t, hi = lo + chunk < sp->nblocks ? lo + chunk : sp->nblocks;
        if (lo >= sp->nblocks)
            continue;
        for (int nd = sp->first[lo]; nd <= sp->first[hi - 1]; nd++)
            b->hist_of[t * b->nodes + nd] = 0;
    }
    /* The first thread of each node writes the node's own histogram, the others a buffer each. */
    for (int nd = 0; nd < b->nodes; nd++) {
        int firsts = 1;
        for (int t = 0; t < b->nt; t++)
            if (b->hist_of[t * b->nodes + nd] == 0) {
                b->hist_of[t * b->nodes + nd] = firsts ? -1 : extra++;
                firsts = 0;
            }
    }
    memset(b->used, 0, (size_t)(b->nt * b->nodes) * sizeof *b->used);
}

static struct bin *initialized_hist(struct builder *b, int tid, int nd, _Atomic int *foreign)
{
    int idx = b->hist_of[tid * b->nodes + nd];
    if (idx == -2) {
        atomic_store(foreign, 1);
        return NULL;
    }
    struct bin *h = idx == -1 ? b->target[nd] : b->pool + (int64_t)idx * HBINS;
    if (!b->used[tid * b->nodes + nd]) {
        memset(h, 0, HBINS * sizeof *h);
        b->used[tid * b->nodes + nd] = 1;
    }
    return h;
}

/* A blocked space over the rows of `count` nodes (segments [seg_lo, seg_hi) of the row order). */
static void make_space(struct space *sp, int count, const int64_t *seg_lo, const int64_t *seg_hi, int64_t grain)
{
    sp->nblocks = 0;
    for (int s = 0; s < count; s++)
        for (int64_t r = seg_lo[s]; r < seg_hi[s]; r += grain) {
            sp->first[sp->nblocks] = s;
            sp->begin[sp->nblocks] = r;
            sp->end[sp->nblocks] = r + grain < seg_hi[s] ? r + grain : seg_hi[s];
            sp->nblocks++;
        }
}

/* One tree, as an array in heap order: feature -1 is a leaf. */
struct tree {
    int feature[NODES];
    int bin[NODES]; /* rows with bin <= this go left */
    int64_t leaf[NODES];
};

static inline uint8_t bin_of(int64_t i, int f)
{
    return (uint8_t)(wl_mix64((uint64_t)i * FEATURES + (uint64_t)f + 0x6b1dULL) % BINS);
}

static inline int64_t label_of(const uint8_t *x, int64_t i)
{
    const uint8_t *r = x + i * FEATURES;
    int64_t noise = (int64_t)(wl_mix64((uint64_t)i ^ 0x10b5ULL) % 65) - 32;
    return 64 * ((int64_t)r[0] - 16) + 40 * ((int64_t)r[3] - 16) * (r[5] > 20) - 24 * (int64_t)r[7] + noise;
}

/* The serial histogram of rows [lo, hi) of `rows`. */
static void serial_hist(const uint8_t *x, const int64_t *g, const uint32_t *rows, int64_t lo, int64_t hi,
                        struct bin *h)
{
    memset(h, 0, HBINS * sizeof *h);
    for (int64_t j = lo; j < hi; j++) {
        const uint8_t *r = x + (int64_t)rows[j] * FEATURES;
        for (int f = 0; f < FEATURES; f++) {
            h[f * BINS + r[f]].g += g[rows[j]];
            h[f * BINS + r[f]].n++;
        }
    }
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const int64_t n = WL_PICK(args.size, 1L << 14, 1L << 17, 1L << 18);
    const int rounds = (int)wl_scaled(&args, WL_PICK(args.size, 12, 400, 800), 1, 1);

    int got = omp_get_max_threads();
    nt = got < 1 ? 1 : got;

    uint8_t *x = malloc((size_t)n * FEATURES);
    int64_t *y = malloc((size_t)n * sizeof *y), *pred = calloc((size_t)n, sizeof *pred);
    int64_t *g = malloc((size_t)n * sizeof *g), *tloc = malloc((size_t)nt * sizeof *tloc);
    uint32_t *rows = malloc((size_t)n * sizeof *rows), *tmp_rows = malloc((size_t)n * sizeof *tmp_rows);
    struct tree *trees = calloc((size_t)rounds, sizeof *trees);
    struct bin *hist = malloc((size_t)NODES * HBINS * sizeof *hist), *check = malloc(HBINS * sizeof *check);
    const int64_t maxblocks = n / GRAIN + NODES + (int64_t)NODES * HBINS / BIN_GRAIN;
    struct space sp = {.first = malloc((size_t)maxblocks * sizeof(int)),
                       .begin = malloc((size_t)maxblocks * sizeof(int64_t)),
                       .end = malloc((size_t)maxblocks * sizeof(int64_t))};
    struct builder bld = {.nt = nt, .target = malloc(NODES * sizeof(struct bin *)),
                          .pool = malloc((size_t)nt * NODES * HBINS * sizeof(struct bin)),
                          .hist_of = malloc((size_t)nt * NODES * sizeof(int)),
                          .used = malloc((size_t)nt * NODES * sizeof(int))};
    if (!x || !y || !pred || !g || !tloc || !rows || !tmp_rows || !trees || !hist || !check || !sp.first ||
        !sp.begin || !sp.end || !bld.target || !bld.pool || !bld.hist_of || !bld.used) {
        fprintf(stderr, "xgbhist: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    for (int64_t i = 0; i < n; i++)
        for (int f = 0; f < FEATURES; f++)
            x[i * FEATURES + f] = bin_of(i, f);
    for (int64_t i = 0; i < n; i++)
        y[i] = label_of(x, i);

    int ok = 1;
    long bad_levels = 0;
    uint64_t h = 0;
    double elapsed = 0.0;
    _Atomic int foreign = 0;
    for (int r = 0; r < rounds; r++) {
        struct tree *tr = &trees[r];
        int64_t lo[NODES] = {0}, hi[NODES] = {0}, gsum0 = 0;
        team_min = team_max = 0;
        double t0 = wl_clock_now();
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1024)
        for (int64_t i = 0; i < n; i++)
            g[i] = pred[i] - y[i];
        for (int t = 0; t < nt; t++)
            tloc[t] = 0;
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t i = 0; i < n; i++) {
            const int t = omp_get_thread_num();
            if (t < nt)
                tloc[t] += g[i];
        }
        for (int t = 0; t < nt; t++)
            gsum0 += tloc[t];
#pragma omp parallel for num_threads(nt) schedule(dynamic, 4096)
        for (int64_t i = 0; i < n; i++)
            rows[i] = (uint32_t)i;
        hi[0] = n;
        for (int k = 0; k < NODES; k++)
            tr->feature[k] = -1;

        for (int level = 0; level < DEPTH; level++) {
            const int first = (1 << level) - 1, count = 1 << level;
            int build[NODES / 2], sub[NODES / 2], nbuild = 0, nsub = 0;
            int64_t blo[NODES / 2], bhi[NODES / 2];

            /* The root, then the smaller child of every split; its sibling is parent minus it. */
            for (int k = first; k < first + count; k++) {
                if (hi[k] <= lo[k])
                    continue;
                if (k == 0) {
                    build[nbuild++] = k;
                    continue;
                }
                const int sib = k % 2 ? k + 1 : k - 1;
                const int64_t nk = hi[k] - lo[k], ns = hi[sib] - lo[sib];
                if (nk < ns || (nk == ns && k % 2)) {
                    build[nbuild++] = k;
                } else {
                    sub[nsub++] = k;
                }
            }
            for (int s = 0; s < nbuild; s++) {
                blo[s] = lo[build[s]];
                bhi[s] = hi[build[s]];
                bld.target[s] = hist + (int64_t)build[s] * HBINS;
            }
            bld.nodes = nbuild;
            make_space(&sp, nbuild, blo, bhi, GRAIN);
            match_threads_to_nodes(&bld, &sp);
            PARALLEL_FOR_2D(&sp, k, {
                struct bin *hh = initialized_hist(&bld, tid, sp.first[k], &foreign);
                if (!hh)
                    continue;
                for (int64_t j = sp.begin[k]; j < sp.end[k]; j++) {
                    const uint8_t *row = x + (int64_t)rows[j] * FEATURES;
                    const int64_t gj = g[rows[j]];
                    for (int f = 0; f < FEATURES; f++) {
                        hh[f * BINS + row[f]].g += gj;
                        hh[f * BINS + row[f]].n++;
                    }
                }
            });
            /* SyncHistogram: every thread's buffer into its node's histogram, over (node, bins). */
            {
                int64_t zlo[NODES / 2], zhi[NODES / 2];
                for (int s = 0; s < nbuild; s++) {
                    zlo[s] = 0;
                    zhi[s] = HBINS;
                }
                make_space(&sp, nbuild, zlo, zhi, BIN_GRAIN);
            }
            PARALLEL_FOR_2D(&sp, k, {
                const int s = sp.first[k];
                struct bin *dst = bld.target[s];
                int updated = 0;
                for (int t = 0; t < bld.nt; t++) {
                    if (!bld.used[t * bld.nodes + s])
                        continue;
                    updated = 1;
                    const int idx = bld.hist_of[t * bld.nodes + s];
                    const struct bin *src = idx == -1 ? dst : bld.pool + (int64_t)idx * HBINS;
                    if (src != dst)
                        for (int64_t b = sp.begin[k]; b < sp.end[k]; b++) {
                            dst[b].g += src[b].g;
                            dst[b].n += src[b].n;
                        }
                }
                if (!updated)
                    memset(dst + sp.begin[k], 0, (size_t)(sp.end[k] - sp.begin[k]) * sizeof *dst);
            });
            /* The subtraction trick, over (node, bins) again. */
            if (nsub) {
                int64_t zlo[NODES / 2], zhi[NODES / 2];
                for (int s = 0; s < nsub; s++) {
                    zlo[s] = 0;
                    zhi[s] = HBINS;
                }
                make_space(&sp, nsub, zlo, zhi, BIN_GRAIN);
                PARALLEL_FOR_2D(&sp, k, {
                    const int node = sub[sp.first[k]];
                    const int sib = node % 2 ? node + 1 : node - 1, parent = (node - 1) / 2;
                    struct bin *d = hist + (int64_t)node * HBINS;
                    const struct bin *p = hist + (int64_t)parent * HBINS, *o = hist + (int64_t)sib * HBINS;
                    for (int64_t b = sp.begin[k]; b < sp.end[k]; b++) {
                        d[b].g = p[b].g - o[b].g;
                        d[b].n = p[b].n - o[b].n;
                    }
                });
            }
            /* Untimed check: every node of the level holds its rows and their gradients in every feature. */
            elapsed += wl_clock_now() - t0;
            for (int k = first; k < first + count; k++) {
                int64_t want_g = 0, want_n = hi[k] - lo[k];
                if (want_n <= 0)
                    continue;
                for (int64_t j = lo[k]; j < hi[k]; j++)
                    want_g += g[rows[j]];
                if (k == 0 && gsum0 != want_g) {
                    ok = 0;
                    fprintf(stderr, "xgbhist: round %d: the %d per-thread slots sum to %lld, expected %lld\n", r, nt,
                            (long long)gsum0, (long long)want_g);
                }
                for (int f = 0; f < FEATURES; f++) {
                    int64_t has_g = 0, has_n = 0;
                    for (int b = 0; b < BINS; b++) {
                        has_g += hist[(int64_t)k * HBINS + f * BINS + b].g;
                        has_n += hist[(int64_t)k * HBINS + f * BINS + b].n;
                    }
                    if (has_g == want_g && has_n == want_n)
                        continue;
                    ok = 0;
                    if (bad_levels++ < 5) {
                        if (team_min < nt)
                            fprintf(stderr, "xgbhist: round %d, level %d: node %d's histogram of feature %d holds "
                                    "%lld of %lld rows: a team of %d ran blocks cut for %d threads before the "
                                    "regions; the blocks of thread(s) %d%s%.0d were skipped\n", r, level, k, f,
                                    (long long)has_n, (long long)want_n, team_min, nt, team_min,
                                    team_min < nt - 1 ? " to " : "", team_min < nt - 1 ? nt - 1 : 0);
                        else
                            fprintf(stderr, "xgbhist: round %d, level %d: node %d's histogram of feature %d holds "
                                    "%lld of %lld rows, with teams of %d to %d\n", r, level, k, f,
                                    (long long)has_n, (long long)want_n, team_min, team_max);
                    }
                    f = FEATURES;
                }
            }
            if ((r % 16 == 0 || r == rounds - 1) && ok)
                for (int s = 0; s < nbuild && ok; s++) {
                    serial_hist(x, g, rows, blo[s], bhi[s], check);
                    if (memcmp(check, hist + (int64_t)build[s] * HBINS, HBINS * sizeof *check) != 0) {
                        ok = 0;
                        fprintf(stderr, "xgbhist: round %d, level %d: node %d's histogram differs from its serial "
                                "recomputation\n", r, level, build[s]);
                    }
                }
            t0 = wl_clock_now();

            /* Split search: the best bin of each (node, feature), each by one thread; then serially. */
            double best_gain[NODES / 2][FEATURES];
            int best_bin[NODES / 2][FEATURES];
#pragma omp parallel for num_threads(nt) schedule(static)
            for (int q = 0; q < count * FEATURES; q++) {
                const int k = first + q / FEATURES, f = q % FEATURES;
                const struct bin *hf = hist + (int64_t)k * HBINS + f * BINS;
                int64_t tg = 0, tn = 0, lg = 0, ln = 0;
                best_gain[q / FEATURES][f] = 0.0;
                best_bin[q / FEATURES][f] = -1;
                if (hi[k] - lo[k] < 2)
                    continue;
                for (int b = 0; b < BINS; b++) {
                    tg += hf[b].g;
                    tn += hf[b].n;
                }
                for (int b = 0; b + 1 < BINS; b++) {
                    lg += hf[b].g;
                    ln += hf[b].n;
                    if (ln == 0 || ln == tn)
                        continue;
                    const double gain = (double)lg * (double)lg / (double)ln +
                                        (double)(tg - lg) * (double)(tg - lg) / (double)(tn - ln) -
                                        (double)tg * (double)tg / (double)tn;
                    if (gain > best_gain[q / FEATURES][f]) {
                        best_gain[q / FEATURES][f] = gain;
                        best_bin[q / FEATURES][f] = b;
                    }
                }
            }
            for (int k = first; k < first + count; k++) {
                double bg = 0.0;
                for (int f = 0; f < FEATURES; f++)
                    if (best_bin[k - first][f] >= 0 && best_gain[k - first][f] > bg) {
                        bg = best_gain[k - first][f];
                        tr->feature[k] = f;
                        tr->bin[k] = best_bin[k - first][f];
                    }
            }
            /* Partition each split node's rows, stable: left (bin <= split) first. */
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
            for (int k = first; k < first + count; k++) {
                const int f = tr->feature[k];
                int64_t l = lo[k], rr = 0;
                if (f < 0)
                    continue;
                for (int64_t j = lo[k]; j < hi[k]; j++) {
                    if (x[(int64_t)rows[j] * FEATURES + f] <= tr->bin[k])
                        rows[l++] = rows[j];
                    else
                        tmp_rows[lo[k] + rr++] = rows[j];
                }
                memcpy(rows + l, tmp_rows + lo[k], (size_t)rr * sizeof *rows);
                lo[2 * k + 1] = lo[k];
                hi[2 * k + 1] = l;
                lo[2 * k + 2] = l;
                hi[2 * k + 2] = hi[k];
            }
        }
        /* Leaves, the nodes with rows that did not split: -G / (N + 1), truncated; their rows' predictions
         * move by that much. */
        for (int k = 0; k < NODES; k++) {
            tr->leaf[k] = 0;
            if (tr->feature[k] >= 0 || hi[k] <= lo[k])
                continue;
            int64_t gs = 0;
            for (int64_t j = lo[k]; j < hi[k]; j++)
                gs += g[rows[j]];
            tr->leaf[k] = -gs / (hi[k] - lo[k] + 1);
        }
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
        for (int k = 0; k < NODES; k++) {
            if (tr->feature[k] >= 0 || tr->leaf[k] == 0)
                continue;
            for (int64_t j = lo[k]; j < hi[k]; j++)
                pred[rows[j]] += tr->leaf[k];
        }
        elapsed += wl_clock_now() - t0;
        wl_team_note_size(team_max);
        for (int k = 0; k < NODES; k++)
            h = wl_hash_u64(h, ((uint64_t)(uint32_t)tr->feature[k] << 32) ^ (uint64_t)(uint32_t)tr->bin[k] ^
                                   (uint64_t)tr->leaf[k] * 0x9e3779b97f4a7c15ULL);
        if (!ok)
            break;
    }
    if (atomic_load(&foreign))
        fprintf(stderr, "xgbhist: a thread got blocks of a node it had no histogram for\n");
    /* Every row's prediction is the sum of its leaves, tree by tree. */
    if (ok) {
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t p = 0;
            for (int r = 0; r < rounds; r++) {
                int k = 0;
                while (trees[r].feature[k] >= 0)
                    k = x[i * FEATURES + trees[r].feature[k]] <= trees[r].bin[k] ? 2 * k + 1 : 2 * k + 2;
                p += trees[r].leaf[k];
            }
            wrong += p != pred[i];
        }
        if (wrong) {
            ok = 0;
            fprintf(stderr, "xgbhist: %lld of %lld rows' predictions differ from their trees' leaves\n",
                    (long long)wrong, (long long)n);
        }
    }
    if (bad_levels)
        fprintf(stderr, "xgbhist: %ld histograms held the wrong rows; stopped after that round\n", bad_levels);
    h = wl_hash_u64s(h, (const uint64_t *)pred, (size_t)n);
    int64_t splits = 0, err0 = 0, err = 0;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NODES; k++)
            splits += trees[r].feature[k] >= 0;
    for (int64_t i = 0; i < n; i++) {
        err0 += y[i] < 0 ? -y[i] : y[i];
        err += y[i] - pred[i] < 0 ? pred[i] - y[i] : y[i] - pred[i];
    }
    wl_checksum_print(h);
    printf("rows=%lld rounds=%d splits=%lld mean_abs_error=%lld (%lld before) count=%d\n", (long long)n, rounds,
           (long long)splits, (long long)(err / n), (long long)(err0 / n), nt);
    free(x);
    free(y);
    free(pred);
    free(g);
    free(tloc);
    free(rows);
    free(tmp_rows);
    free(trees);
    free(hist);
    free(check);
    free(sp.first);
    free(sp.begin);
    free(sp.end);
    free(bld.target);
    free(bld.pool);
    free(bld.hist_of);
    free(bld.used);
    return wl_result_print(spec.name, elapsed, ok);
}
