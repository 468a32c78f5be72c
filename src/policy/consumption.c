/* consumption.c — the consumption policy: contexts chunk by chunk to the largest marginal speedup, idle below a threshold. */
#include "scaf/policy.h"
#include "scaf/usl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/*
 * A reading of E = 0 at p' >= 2 (no progress at all) is read as this, so that
 * the fit gets a point it can use: sigma near 1e9, a client no context helps.
 */
#define E_MIN 1e-9

/*
 * The client's curve: from its report at p' >= 2 (Amdahl through that one
 * point: a snapshot carries one point per client, and one point cannot tell
 * contention from coherency cost), else from the E(2) = 1 / (1 + sigma) it got
 * as coef last round. Returns 0 when it has none (unknown, or probed).
 */
static int client_model(const struct scaf_policy_client *cl, struct scaf_usl *m)
{
    double e = cl->efficiency;

    if (cl->probe)
        return 0;
    if (isfinite(e) && e >= 0.0 && cl->report_threads >= 2) {
        uint32_t p = cl->report_threads;

        if (e < E_MIN)
            e = E_MIN;
        return scaf_usl_fit(&p, &e, 1, m) == 0;
    }
    if (isfinite(cl->prev_coef) && cl->prev_coef > 0.0 && cl->prev_coef <= 1.0) {
        m->sigma = 1.0 / cl->prev_coef - 1.0;
        m->kappa = 0.0;
        return 1;
    }
    return 0;
}

int scaf_policy_consumption(const struct scaf_policy_input *in, uint32_t *threads, double *coef)
{
    uint32_t k, unit, used = 0;
    double *ones = NULL, min_gain;
    uint32_t *cap = NULL, *hi = NULL;
    struct scaf_usl *m = NULL;
    unsigned char *known = NULL;
    int ret = -1;

    if (!in || in->available == 0 || in->chunk == 0 || (in->nclients > 0 && (!in->clients || !threads))) {
        errno = EINVAL;
        return -1;
    }
    k = in->nclients;
    if (k == 0)
        return 0;
    min_gain = isfinite(in->min_gain) && in->min_gain > 0.0 ? in->min_gain : SCAF_MIN_GAIN_DEFAULT;
    ones = malloc(k * sizeof(*ones));
    cap = malloc(k * sizeof(*cap));
    hi = malloc(k * sizeof(*hi));
    m = malloc(k * sizeof(*m));
    known = malloc(k);
    if (!ones || !cap || !hi || !m || !known) {
        errno = ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < k; i++) {
        ones[i] = 1.0;
        cap[i] = in->clients[i].max_threads; /* 0 = no cap, defensively */
        hi[i] = cap[i] && cap[i] < in->available ? cap[i] : in->available;
        known[i] = (unsigned char)client_model(&in->clients[i], &m[i]);
        if (coef)
            coef[i] = known[i] ? 1.0 / (1.0 + m[i].sigma) : 0.0;
    }
    /* The equal shares: what an unknown client gets, and everything when k > N (1 each). */
    if (scaf_intpart_chunked(ones, k, in->available, in->chunk, cap, threads) < 0)
        goto out;
    if (k > in->available) {
        ret = 0;
        goto out;
    }
    unit = (uint64_t)k * in->chunk <= in->available ? in->chunk : 1;
    for (uint32_t i = 0; i < k; i++) {
        if (known[i])
            threads[i] = unit < hi[i] ? unit : hi[i];
        used += threads[i];
    }
    /*
     * Greedy by marginal gain per context: for concave curves (every USL
     * curve is concave in p) this is the allocation of the contexts given
     * that maximizes the summed speedup, and it stops where the next
     * context would add less than min_gain to anyone.
     */
    while (used < in->available) {
        uint32_t best = k, best_step = 0;
        double best_gain = -INFINITY;

        for (uint32_t i = 0; i < k; i++) {
            uint32_t step = unit, room = in->available - used;
            double g;

            if (!known[i] || threads[i] >= hi[i])
                continue;
            if (step > hi[i] - threads[i])
                step = hi[i] - threads[i];
            if (step > room)
                step = room;
            g = scaf_usl_gain(&m[i], threads[i], step) / step;
            if (g > best_gain) {
                best_gain = g;
                best = i;
                best_step = step;
            }
        }
        if (best == k || !(best_gain >= min_gain))
            break;
        threads[best] += best_step;
        used += best_step;
    }
    ret = 0;
out:
    free(ones);
    free(cap);
    free(hi);
    free(m);
    free(known);
    return ret;
}
