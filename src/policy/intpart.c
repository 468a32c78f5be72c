/* intpart.c — chunked integer partition closest to real-valued shares (largest error first). */
#include "scaf/policy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/*
 * Water-filling: scale the weights to `total`, then pin every share that
 * breaks its bound to the bound and every share under its floor to the floor, and
 * rescale the rest, until nothing breaks a bound. Bounds are pinned before
 * floors because pinning a bound only raises the others (it cannot create new
 * floor breakers), so each pass pins at least one client and there are at
 * most n passes. The result is what "closest to the exact shares" means once
 * bounds exist: the excess of a bounded client goes to the others in
 * proportion to their weights.
 */
static void fill_targets(const double *w, uint32_t n, double total, const double *lo, const double *hi,
                         double *t, unsigned char *pinned)
{
    for (uint32_t i = 0; i < n; i++)
        pinned[i] = 0;
    for (;;) {
        double rem = total, wsum = 0.0, w0 = -1.0;
        uint32_t nfree = 0;
        int equal = 1, changed = 0;

        for (uint32_t i = 0; i < n; i++) {
            if (pinned[i]) {
                rem -= t[i];
                continue;
            }
            if (nfree++ == 0)
                w0 = w[i];
            else if (w[i] != w0)
                equal = 0;
            wsum += w[i];
        }
        if (nfree == 0)
            return;
        /*
         * Equal weights take the exact path rem / nfree, so that equal
         * weights of any magnitude give bit-identical targets and therefore
         * exactly the equipartition result.
         */
        for (uint32_t i = 0; i < n; i++)
            if (!pinned[i])
                t[i] = (equal || wsum <= 0.0) ? rem / nfree : rem * (w[i] / wsum);
        for (uint32_t i = 0; i < n; i++)
            if (!pinned[i] && t[i] > hi[i]) {
                t[i] = hi[i];
                pinned[i] = 1;
                changed = 1;
            }
        if (changed)
            continue;
        for (uint32_t i = 0; i < n; i++)
            if (!pinned[i] && t[i] < lo[i]) {
                t[i] = lo[i];
                pinned[i] = 1;
                changed = 1;
            }
        if (!changed)
            return;
    }
}

/* Bounds and targets shared by the two entry points. */
struct plan {
    uint32_t chunk; /* the argument, or 1 when n chunks exceed total */
    int mode;       /* 0 targets valid, 1 all ones (total < n), 2 all bounds (bounds sum <= total) */
    double *t, *lo_d, *hi_d;
    uint32_t *lo, *hi;
    unsigned char *pinned;
};

static void plan_free(struct plan *p)
{
    free(p->t);
    free(p->lo_d);
    free(p->hi_d);
    free(p->lo);
    free(p->hi);
    free(p->pinned);
}

static int plan_make(struct plan *p, const double *exact, uint32_t n, uint32_t total, uint32_t chunk,
                     const uint32_t *bound)
{
    uint64_t sum_hi = 0;

    *p = (struct plan){0};
    if (!exact || chunk == 0) {
        errno = EINVAL;
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!isfinite(exact[i]) || exact[i] < 0.0) {
            errno = EINVAL;
            return -1;
        }
    p->t = malloc(n * sizeof(*p->t));
    p->lo_d = malloc(n * sizeof(*p->lo_d));
    p->hi_d = malloc(n * sizeof(*p->hi_d));
    p->lo = malloc(n * sizeof(*p->lo));
    p->hi = malloc(n * sizeof(*p->hi));
    p->pinned = malloc(n);
    if (!p->t || !p->lo_d || !p->hi_d || !p->lo || !p->hi || !p->pinned) {
        plan_free(p);
        errno = ENOMEM;
        return -1;
    }
    if (total < n) {
        p->mode = 1;
        return 0;
    }
    /* Below one chunk each, whole chunks cannot reach everyone: fall back to single contexts. */
    p->chunk = (uint64_t)n * chunk <= total ? chunk : 1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = (bound && bound[i]) ? bound[i] : total;

        p->hi[i] = c < total ? c : total;
        p->lo[i] = p->chunk < p->hi[i] ? p->chunk : p->hi[i];
        sum_hi += p->hi[i];
        p->lo_d[i] = p->lo[i];
        p->hi_d[i] = p->hi[i];
    }
    if (sum_hi <= total) {
        p->mode = 2;
        return 0;
    }
    fill_targets(exact, n, total, p->lo_d, p->hi_d, p->t, p->pinned);
    return 0;
}

int scaf_intpart_targets(const double *exact, uint32_t n, uint32_t total, uint32_t chunk, const uint32_t *bound,
                         double *target)
{
    struct plan p;

    if (n == 0)
        return 0;
    if (!target) {
        errno = EINVAL;
        return -1;
    }
    if (plan_make(&p, exact, n, total, chunk, bound) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        target[i] = p.mode == 1 ? 1.0 : p.mode == 2 ? p.hi_d[i] : p.t[i];
    plan_free(&p);
    return 0;
}

int scaf_intpart_chunked(const double *exact, uint32_t n, uint32_t total, uint32_t chunk,
                         const uint32_t *bound, uint32_t *out)
{
    struct plan p;
    uint64_t sum = 0;
    uint32_t used, *lo, *hi; /* used: the chunk this partition uses */
    double *t;

    if (n == 0)
        return 0;
    if (!out) {
        errno = EINVAL;
        return -1;
    }
    if (plan_make(&p, exact, n, total, chunk, bound) < 0)
        return -1;
    used = p.chunk;
    lo = p.lo;
    hi = p.hi;
    t = p.t;
    if (p.mode != 0) {
        for (uint32_t i = 0; i < n; i++)
            out[i] = p.mode == 1 ? 1 : hi[i];
        plan_free(&p);
        return 0;
    }

    /* Floors in chunks, never below the minimum nor above the bound. */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = lo[i];

        if (t[i] > lo[i]) {
            double f = floor(t[i] / used) * used;

            v = f >= hi[i] ? hi[i] : (uint32_t)f;
            if (v < lo[i])
                v = lo[i];
        }
        out[i] = v;
        sum += v;
    }
    /*
     * Floating-point error in the targets could push the floors a little over
     * total; take back from whoever is furthest above its target. Cannot loop
     * forever: sum(lo) <= n*used <= total.
     */
    while (sum > total) {
        uint32_t best = n;
        double best_err = 0.0;

        for (uint32_t i = 0; i < n; i++) {
            double err = t[i] - out[i];

            if (out[i] > lo[i] && (best == n || err < best_err)) {
                best = i;
                best_err = err;
            }
        }
        uint64_t step = out[best] - lo[best];
        if (step > used)
            step = used;
        if (step > sum - total)
            step = sum - total;
        out[best] -= (uint32_t)step;
        sum -= step;
    }
    /*
     * Largest error first: one chunk (or what the bound or the remaining total
     * allows) to the client furthest below its target; ties to the lowest
     * index. Terminates: sum(hi) > total, so someone always has room.
     */
    while (sum < total) {
        uint32_t best = n;
        double best_err = 0.0;

        for (uint32_t i = 0; i < n; i++) {
            double err = t[i] - out[i];

            if (out[i] < hi[i] && (best == n || err > best_err)) {
                best = i;
                best_err = err;
            }
        }
        uint64_t step = hi[best] - out[best];
        if (step > used)
            step = used;
        if (step > total - sum)
            step = total - sum;
        out[best] += (uint32_t)step;
        sum += step;
    }
    plan_free(&p);
    return 0;
}
