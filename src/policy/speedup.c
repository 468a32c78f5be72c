/* speedup.c — the max-speedup policy: fit S(p) = 1 + C ln p per client, share N by C, round, damp. */
#include "scaf/policy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/*
 * Damping: a client keeps its previous allocation while its new target is
 * closer to it than its threshold. One unit (DAMP_UNITS) is the smallest step
 * an allocation can take, so anything less is rounding noise. Above that, the
 * threshold follows the confidence in the client's estimate: where the caller
 * measured how much E wanders (e_sd), DAMP_Z times the move of the target that
 * this noise alone causes (at most DAMP_NOISE_CAP of the machine, so that a
 * very noisy client is not frozen); where it did not, DAMP_FRACTION of prev,
 * which covers large allocations, where a few percent of noise in E moves the
 * target by more than one context.
 */
#define DAMP_UNITS 1.0
#define DAMP_FRACTION 0.10
#define DAMP_Z 2.0
#define DAMP_NOISE_CAP 0.25

/*
 * Efficiencies above 1 are read as 1. Real superlinear speedups exist (cache
 * effects), but an estimator reading above 1 is far more often noise, and an
 * unbounded E lets a single noisy client take the whole machine.
 */
#define E_MAX 1.0

/*
 * No real fit comes near this ((p-1)/ln p is 7e7 at p = 2^31), but a
 * carried-over prev_coef is only as sane as its caller: the bound keeps sums
 * of weights finite whatever arrives.
 */
#define C_MAX 1e9

static int input_ok(const struct scaf_policy_input *in)
{
    return in && in->available > 0 && in->chunk > 0 && (in->nclients == 0 || in->clients);
}

int scaf_policy_speedup_model(const struct scaf_policy_input *in, double *coef, double *exact)
{
    uint32_t k;
    double *c = NULL;
    unsigned char *known = NULL;
    double pos_sum = 0.0, pos_min = 0.0, pos_max = 0.0, assumed = 1.0, wsum = 0.0, w0 = -1.0;
    uint32_t npos = 0;
    int equal = 1, ret = -1;

    if (!input_ok(in)) {
        errno = EINVAL;
        return -1;
    }
    k = in->nclients;
    if (k == 0)
        return 0;
    c = malloc(k * sizeof(*c));
    known = malloc(k);
    if (!c || !known) {
        errno = ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < k; i++) {
        const struct scaf_policy_client *cl = &in->clients[i];
        double e = cl->efficiency, p = cl->report_threads;

        known[i] = 0;
        if (cl->probe)
            continue; /* probed: unknown until the probe ends, so its first noisy windows at the new team do not bounce it */
        if (isfinite(e) && e >= 0.0 && cl->report_threads >= 2) {
            /* The dissertation's fit, unclamped: C < 0 when E p' < 1 (slower than serial). */
            if (e > E_MAX)
                e = E_MAX;
            c[i] = (e * p - 1.0) / log(p);
            known[i] = 1;
        } else if (isfinite(cl->prev_coef) && cl->prev_coef != 0.0) {
            /*
             * p' = 1 (ln 1 = 0), or no estimate this round: one thread says
             * nothing about scaling, so the curve fitted earlier still stands.
             */
            c[i] = cl->prev_coef;
            known[i] = 1;
        }
        if (known[i] && c[i] > C_MAX)
            c[i] = C_MAX;
        if (known[i] && c[i] < -C_MAX)
            c[i] = -C_MAX;
        if (known[i] && c[i] > 0.0) {
            pos_sum += c[i];
            pos_min = npos == 0 || c[i] < pos_min ? c[i] : pos_min;
            pos_max = npos == 0 || c[i] > pos_max ? c[i] : pos_max;
            npos++;
        }
    }
    /*
     * A client without an estimate is assumed average: the mean of the known
     * positive C (exactly that C when they are all equal, so that equal
     * clients stay bit-identical). With none known, unknown clients share
     * equally among themselves (weight 1, reported coef 0 = no model).
     */
    if (npos > 0)
        assumed = pos_min == pos_max ? pos_min : pos_sum / npos;
    for (uint32_t i = 0; i < k; i++) {
        double w = known[i] ? (c[i] > 0.0 ? c[i] : 0.0) : assumed;

        if (coef)
            coef[i] = known[i] ? c[i] : (npos > 0 ? assumed : 0.0);
        c[i] = w;
        if (i == 0)
            w0 = w;
        else if (w != w0)
            equal = 0;
        wsum += w;
    }
    /* Nobody gains from threads (every C <= 0): equal shares are the neutral choice. */
    for (uint32_t i = 0; exact && i < k; i++)
        exact[i] = (equal || wsum <= 0.0) ? (double)in->available / k : in->available * (c[i] / wsum);
    ret = 0;
out:
    free(c);
    free(known);
    return ret;
}

/*
 * Keep clients whose target is within the damping threshold of their valid
 * previous allocation; the others share what is left. Falls back to the
 * undamped result `a` whenever that would break the sum, a bound, or leave
 * an unkept client further from its target than both its threshold and the
 * undamped result, so damping never costs more than one threshold per client.
 */
static int damp(const struct scaf_policy_input *in, const double *t, const double *thr_in, const uint32_t *cap,
                uint32_t unit, const uint32_t *a, uint32_t *out)
{
    uint32_t k = in->nclients, nrest = 0;
    uint64_t sum_a = 0, sum_kept = 0, rest_lo = 0, rest_hi = 0;
    unsigned char *kept = malloc(k);
    double *rw = malloc(k * sizeof(*rw));
    uint32_t *rcap = malloc(k * sizeof(*rcap)), *rout = malloc(k * sizeof(*rout));
    int ret = -1, any = 0;

    if (!kept || !rw || !rcap || !rout) {
        errno = ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < k; i++) {
        uint32_t prev = in->clients[i].prev, hi = cap[i] && cap[i] < in->available ? cap[i] : in->available;
        uint32_t lo = unit < hi ? unit : hi;
        double thr = thr_in[i], diff = fabs(t[i] - (double)prev);

        /* A probed client must move: keeping it would be the ratchet the probe exists to break. */
        kept[i] = !in->clients[i].probe && prev >= lo && prev <= hi && diff < thr;
        sum_a += a[i];
        if (kept[i]) {
            sum_kept += prev;
            any = 1;
        } else {
            rest_lo += lo;
            rest_hi += hi;
        }
    }
    if (!any || sum_kept + rest_lo > sum_a)
        goto undamped;
    for (uint32_t i = 0; i < k; i++)
        if (!kept[i]) {
            rw[nrest] = t[i] > 0.0 ? t[i] : 0.0;
            rcap[nrest] = cap[i];
            nrest++;
        }
    if (nrest == 0) {
        if (sum_kept != sum_a)
            goto undamped;
    } else {
        uint64_t rsum = 0;

        if (rest_hi < sum_a - sum_kept)
            goto undamped;
        if (scaf_intpart_chunked(rw, nrest, (uint32_t)(sum_a - sum_kept), unit, rcap, rout) < 0)
            goto out;
        for (uint32_t j = 0; j < nrest; j++)
            rsum += rout[j];
        if (rsum != sum_a - sum_kept)
            goto undamped;
    }
    for (uint32_t i = 0, j = 0; i < k; i++) {
        uint32_t prev = in->clients[i].prev;
        double thr = thr_in[i];

        if (kept[i]) {
            out[i] = prev;
            continue;
        }
        out[i] = rout[j++];
        if (fabs(out[i] - t[i]) > thr && fabs(out[i] - t[i]) > fabs(a[i] - t[i]))
            goto undamped;
    }
    ret = 0;
    goto out;
undamped:
    for (uint32_t i = 0; i < k; i++)
        out[i] = a[i];
    ret = 0;
out:
    free(kept);
    free(rw);
    free(rcap);
    free(rout);
    return ret;
}

/*
 * Each client's damping threshold (see DAMP_*). The target is t_i = N w_i / W
 * with w = max(C, 0) and W the sum; C = (E p' - 1) / ln p', so noise sd in E
 * moves t_i by about N (W - w_i) / W^2 * p' / ln p' * sd.
 */
static void thresholds(const struct scaf_policy_input *in, const double *c, uint32_t unit, double *thr)
{
    double wsum = 0.0;

    for (uint32_t i = 0; i < in->nclients; i++)
        wsum += c[i] > 0.0 ? c[i] : 0.0;
    for (uint32_t i = 0; i < in->nclients; i++) {
        const struct scaf_policy_client *cl = &in->clients[i];
        double base = DAMP_UNITS * unit, p = cl->report_threads;

        thr[i] = base;
        if (isfinite(cl->e_sd) && cl->e_sd > 0.0 && p >= 2 && !cl->probe && wsum > 0.0) {
            double w = c[i] > 0.0 ? c[i] : 0.0;
            double move = in->available * (wsum - w) / (wsum * wsum) * p / log(p) * cl->e_sd;
            double cap = DAMP_NOISE_CAP * in->available;

            move *= DAMP_Z;
            if (move > cap)
                move = cap;
            if (move > thr[i])
                thr[i] = move;
        } else if (DAMP_FRACTION * cl->prev > thr[i]) {
            thr[i] = DAMP_FRACTION * cl->prev;
        }
    }
}

int scaf_policy_speedup(const struct scaf_policy_input *in, uint32_t *threads, double *coef)
{
    uint32_t k, unit;
    double *exact = NULL, *t = NULL, *c = NULL, *thr = NULL;
    uint32_t *cap = NULL, *a = NULL;
    int ret = -1;

    if (!input_ok(in) || (in->nclients > 0 && !threads)) {
        errno = EINVAL;
        return -1;
    }
    k = in->nclients;
    if (k == 0)
        return 0;
    exact = malloc(k * sizeof(*exact));
    t = malloc(k * sizeof(*t));
    cap = malloc(k * sizeof(*cap));
    a = malloc(k * sizeof(*a));
    c = malloc(k * sizeof(*c));
    thr = malloc(k * sizeof(*thr));
    if (!exact || !t || !cap || !a || !c || !thr) {
        errno = ENOMEM;
        goto out;
    }
    if (scaf_policy_speedup_model(in, c, exact) < 0)
        goto out;
    for (uint32_t i = 0; coef && i < k; i++)
        coef[i] = c[i];
    for (uint32_t i = 0; i < k; i++)
        cap[i] = in->clients[i].max_threads; /* 0 = no cap, defensively */
    if (scaf_intpart_chunked(exact, k, in->available, in->chunk, cap, a) < 0)
        goto out;
    if (k > in->available) {
        /* Everyone gets 1: nothing to damp. */
        for (uint32_t i = 0; i < k; i++)
            threads[i] = a[i];
        ret = 0;
        goto out;
    }
    if (scaf_intpart_targets(exact, k, in->available, in->chunk, cap, t) < 0)
        goto out;
    unit = (uint64_t)k * in->chunk <= in->available ? in->chunk : 1;
    thresholds(in, c, unit, thr);
    ret = damp(in, t, thr, cap, unit, a, threads);
out:
    free(c);
    free(thr);
    free(exact);
    free(t);
    free(cap);
    free(a);
    return ret;
}
