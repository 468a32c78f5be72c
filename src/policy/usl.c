/* usl.c — fit the Universal Scalability Law to (team size, efficiency) points, and read the curve. */
#include "scaf/usl.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>

/*
 * Below this, the 2x2 normal equations are treated as singular: the points
 * sit at one team size (x2 = p x1 exactly) or so close that kappa would be
 * noise amplified by the conditioning.
 */
#define SINGULAR 1e-9

/* sum of squared residuals of y = s x1 + k x2 over the accumulated moments */
static double sse(double s, double k, double s11, double s12, double s22, double s1y, double s2y, double syy)
{
    return syy - 2.0 * (s * s1y + k * s2y) + s * s * s11 + 2.0 * s * k * s12 + k * k * s22;
}

int scaf_usl_fit(const uint32_t *p, const double *e, uint32_t n, struct scaf_usl *out)
{
    double s11 = 0.0, s12 = 0.0, s22 = 0.0, s1y = 0.0, s2y = 0.0, syy = 0.0, det;
    double best_s = 0.0, best_k = 0.0, best;
    uint32_t p0 = 0;
    int distinct = 0, any = 0;

    if (!p || !e || !out || n == 0) {
        errno = EINVAL;
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        if (p[i] == 0 || !isfinite(e[i]) || e[i] <= 0.0) {
            errno = EINVAL;
            return -1;
        }
    for (uint32_t i = 0; i < n; i++) {
        double x1 = (double)p[i] - 1.0, x2 = (double)p[i] * x1, y = 1.0 / (e[i] > 1.0 ? 1.0 : e[i]) - 1.0;

        if (p[i] < 2)
            continue;
        if (!any)
            p0 = p[i];
        else if (p[i] != p0)
            distinct = 1;
        any = 1;
        s11 += x1 * x1;
        s12 += x1 * x2;
        s22 += x2 * x2;
        s1y += x1 * y;
        s2y += x2 * y;
        syy += y * y;
    }
    if (!any) {
        errno = ENODATA;
        return -1;
    }
    /* Candidates on the boundary of sigma, kappa >= 0: kappa = 0, then sigma = 0. */
    best_s = s1y > 0.0 ? s1y / s11 : 0.0;
    best = sse(best_s, 0.0, s11, s12, s22, s1y, s2y, syy);
    det = s11 * s22 - s12 * s12;
    if (distinct && det > SINGULAR * s11 * s22) {
        double k = s2y > 0.0 ? s2y / s22 : 0.0, r = sse(0.0, k, s11, s12, s22, s1y, s2y, syy);
        double s_in = (s22 * s1y - s12 * s2y) / det, k_in = (s11 * s2y - s12 * s1y) / det;

        if (r < best) {
            best = r;
            best_s = 0.0;
            best_k = k;
        }
        /* The unconstrained optimum, when it is feasible, is the least-squares answer. */
        if (s_in >= 0.0 && k_in >= 0.0) {
            best_s = s_in;
            best_k = k_in;
        }
    }
    out->sigma = best_s;
    out->kappa = best_k;
    return 0;
}

static int model_ok(const struct scaf_usl *m)
{
    return m && isfinite(m->sigma) && isfinite(m->kappa) && m->sigma >= 0.0 && m->kappa >= 0.0;
}

double scaf_usl_speedup(const struct scaf_usl *m, double p)
{
    if (!model_ok(m) || !(p >= 1.0))
        return 1.0;
    return p / (1.0 + m->sigma * (p - 1.0) + m->kappa * p * (p - 1.0));
}

double scaf_usl_gain(const struct scaf_usl *m, uint32_t p, uint32_t step)
{
    return scaf_usl_speedup(m, (double)p + step) - scaf_usl_speedup(m, p);
}

uint32_t scaf_usl_best(const struct scaf_usl *m, uint32_t pmax)
{
    uint32_t cand[3], best = 1;
    double peak;

    if (pmax == 0)
        return 1;
    if (!model_ok(m))
        return 1; /* scaf_usl_speedup reads such a model as S = 1 */
    if (m->sigma >= 1.0)
        return 1; /* S(p) <= 1 everywhere: one thread is as fast as any team */
    if (m->kappa <= 0.0)
        return pmax; /* Amdahl: S rises for ever, however slowly */
    /* dS/dp = 0 at p* = sqrt((1 - sigma) / kappa); the integer peak is one of its neighbours. */
    peak = sqrt((1.0 - m->sigma) / m->kappa);
    if (peak >= pmax)
        return pmax;
    cand[0] = peak < 1.0 ? 1 : (uint32_t)floor(peak);
    cand[1] = cand[0] + 1 <= pmax ? cand[0] + 1 : pmax;
    cand[2] = 1;
    for (int i = 0; i < 3; i++)
        if (scaf_usl_speedup(m, cand[i]) > scaf_usl_speedup(m, best) ||
            (scaf_usl_speedup(m, cand[i]) == scaf_usl_speedup(m, best) && cand[i] < best))
            best = cand[i];
    return best;
}
