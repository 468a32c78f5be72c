/* marginal.c — a saturating curve per client, contexts one chunk at a time to the largest marginal gain, moves damped by confidence. */
#include "marginal.h"

#include "scaf/usl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * A reading of E = 0 at p' >= 2 (no progress at all) is read as this, so that
 * the fit gets a point it can use: sigma near 1e9, a client no context helps.
 */
#define E_MIN 1e-9

/*
 * Damping. A new allocation replaces the previous one only if it is better
 * even when judged pessimistically: every client it gives more contexts to is
 * read at E - DAMP_Z sd, every client it takes contexts from at E + DAMP_Z sd
 * (sd: how much that client's E wanders from round to round, as the caller
 * measured it; DAMP_SD_UNKNOWN until it has), and the summed speedup must
 * still rise by more than DAMP_REL of what the previous allocation gives.
 * A move that noise alone could explain is not followed, however large; a
 * move the estimates agree on is followed at once, however small.
 */
#define DAMP_Z 2.0
#define DAMP_SD_UNKNOWN 0.05
/*
 * ... or DAMP_SD_REL of E when that is less: an estimate is a ratio of
 * measured times, and its error is a fraction of it (the sd measured on the
 * 2-vCPU VM: 0.03-0.12 at E 0.5-0.95). A client just moved to a large team
 * and measured at E 0.007 is not read at E 0.107 for the 2 s its sd takes to
 * be known. Damping only: whether a client is slower than serial is still
 * judged with DAMP_SD_UNKNOWN (a verdict that leaves contexts idle).
 */
#define DAMP_SD_REL 0.1
#define DAMP_REL 0.01

/* Gains within this relative distance are ties: equal clients then alternate, as equipartition would. */
#define TIE 1e-12

/*
 * Two points this far apart (ratio of team sizes) bend the curve between them
 * by more than the estimator's noise does, so both are fitted even when the
 * larger team was faster: that is how a curve that flattens (SMT, memory
 * bandwidth) shows before it falls. Closer points are fitted together only
 * when they show a slowdown outright.
 */
#define FAR 1.5

/*
 * SMT. When contexts come in chunks of SMT siblings, a client given more
 * contexts than the cores of what is shared (available / chunk) has, by
 * pigeonhole, threads that share a core with its own; below that its
 * threads can each have a core of their own beside another program's. A
 * core's second hardware thread adds 0-30% of the first's work (the
 * simulator's SMT pair: 20% and 7%), and no Amdahl or USL curve through
 * points below the core count has a knee there: the compute program of an
 * SMT pair measured at 8 threads of 8 cores x 2 (E 0.93) read as worth 12.3
 * on 14 by Amdahl, where it runs at 8.5, and took 4 threads its partner
 * gained more from. So past the cores, and past every measured point, the
 * curve grows at SMT_YIELD of what it says. A point measured past the
 * cores beats this prior up to that point.
 */
#define SMT_YIELD 0.25

enum fit { FIT_NONE, FIT_ONE, FIT_TWO };

/* Where a curve's unmeasured stretch starts to grow at SMT_YIELD: the cores of what is available; 0 = no SMT. */
static double knee_of(uint32_t available, uint32_t chunk)
{
    return chunk > 1 ? (double)(available / chunk) : 0.0;
}

/* kappa of the coherency-only curve (sigma 0) through E at p >= 2: its peak, sqrt(1 / kappa), is the largest one point allows. */
static double coherency_kappa(double e, double p)
{
    return (1.0 / e - 1.0) / (p * (p - 1.0));
}

/*
 * A client's curve: the USL curve `u`, made to pass through what was
 * measured. A USL curve through two points is exact only when the fit lies
 * inside sigma, kappa >= 0; a curve that rises almost linearly and then turns
 * flat (SMT siblings past the core count) does not, and read off u alone the
 * turn lands in the wrong place. So u is corrected by its residual at each
 * measured point, interpolated linearly between them and held beyond: the
 * curve keeps u's shape (and its concavity between far points) and passes
 * through every measurement.
 */
struct curve {
    struct scaf_usl u;
    uint32_t n;  /* measured points, 0 to 3, p ascending */
    double p[3]; /* team sizes */
    double r[3]; /* measured speedup (E p) less u's there */
    double knee; /* knee_of: past it and past p[n - 1] the curve grows at SMT_YIELD; 0 = no SMT */
};

static int same_curve(const struct curve *a, const struct curve *b)
{
    if (a->u.sigma != b->u.sigma || a->u.kappa != b->u.kappa || a->n != b->n)
        return 0;
    for (uint32_t k = 0; k < a->n; k++)
        if (a->p[k] != b->p[k] || a->r[k] != b->r[k])
            return 0;
    return 1;
}

static double curve_fitted(const struct curve *c, double p)
{
    double r;

    uint32_t k = 1;

    if (c->n == 0)
        return scaf_usl_speedup(&c->u, p);
    while (k < c->n && p > c->p[k])
        k++;
    if (p <= c->p[0])
        r = c->r[0];
    else if (k == c->n)
        r = c->r[c->n - 1];
    else
        r = c->r[k - 1] + (c->r[k] - c->r[k - 1]) * (p - c->p[k - 1]) / (c->p[k] - c->p[k - 1]);
    return scaf_usl_speedup(&c->u, p) + r;
}

/* The curve with SMT's prior (SMT_YIELD). */
static double curve_speedup(const struct curve *c, double p)
{
    double from = c->n ? c->p[c->n - 1] : 0.0;

    if (from < c->knee)
        from = c->knee;
    if (c->knee <= 0.0 || p <= from)
        return curve_fitted(c, p);
    return curve_fitted(c, from) + SMT_YIELD * (curve_fitted(c, p) - curve_fitted(c, from));
}

/*
 * The client's curve with its E at p' moved by `shift`. From its report at
 * p' >= 2: through that point and the caller's second point when the larger
 * of the two teams was measured no faster than the smaller, or the two lie
 * FAR apart (FIT_TWO: a USL curve that can flatten and peak), else Amdahl
 * through the report alone (FIT_ONE: one point cannot tell contention from
 * coherency, and a curve that keeps rising is the reading that takes nothing
 * away); a second point that does not contradict the report is a measured
 * point of the curve either way. Without a report: the curve of last round
 * (prev_coef = E(2) = 1 / (1 + sigma + 2 kappa), read back as
 * sigma alone), no measured point. Probed clients
 * are unknown.
 */
static enum fit client_model(const struct scaf_policy_client *cl, double shift, double knee, struct curve *c)
{
    double e = cl->efficiency;

    c->n = 0;
    c->knee = knee;
    if (cl->probe && cl->probe != SCAF_PROBE_SHRINK && cl->probe != SCAF_PROBE_HOLD)
        return FIT_NONE;
    if (isfinite(e) && e >= 0.0 && cl->eff_team >= 2) {
        uint32_t p[3] = {cl->eff_team, cl->alt_team, cl->side_team};
        double ev[3] = {e > 1.0 ? 1.0 : e, cl->alt_efficiency > 1.0 ? 1.0 : cl->alt_efficiency,
                        cl->side_efficiency > 1.0 ? 1.0 : cl->side_efficiency};
        int other = p[1] >= 2 && p[1] != p[0] && isfinite(ev[1]) && ev[1] > 0.0, two = 0;
        /* The side point, measured but not fitted, where E is no higher at the larger team than at the report. */
        int side = other && p[2] >= 2 && p[2] != p[0] && p[2] != p[1] && isfinite(ev[2]) && ev[2] > 0.0 &&
                   (p[2] < p[0] ? ev[2] >= ev[0] : ev[2] <= ev[0]);

        if (other) {
            uint32_t small = p[0] < p[1] ? 0 : 1, big = 1 - small;

            /*
             * A larger team at a higher efficiency fits no USL curve: the
             * program changed phase since the older point (or noise swamped
             * it), and the report alone is the better witness.
             */
            other = ev[big] <= ev[small];
            two = other && (ev[big] * p[big] <= ev[small] * p[small] || (double)p[big] >= FAR * p[small]);
        }
        if (shift != 0.0 && other && ev[0] > 0.0) {
            /*
             * Damping's pessimistic reading moves the whole curve, both
             * points by the same factor: moved alone, the report against an
             * unmoved second point close by (an SMT pair's 10 and 8 threads)
             * bends the slope between them by far more than the shift, and a
             * 0.36 loss read as 0.82 held two programs off equipartition.
             */
            double f = (ev[0] + shift) / ev[0];

            for (int k = 1; k < 3; k++) {
                ev[k] = f > 0.0 ? ev[k] * f : E_MIN;
                if (ev[k] > 1.0)
                    ev[k] = 1.0;
            }
        }
        ev[0] += shift;
        if (ev[0] > 1.0)
            ev[0] = 1.0;
        if (!(ev[0] >= E_MIN))
            ev[0] = E_MIN;
        if (!two && (ev[0] * p[0] < 1.0 || e < SCAF_SHRINK_E_FAST)) {
            /*
             * One point slower than serial: the curve peaked somewhere in 1..p'. Amdahl through it would fall
             * from the first thread on and hold the client at one chunk until a probe; the coherency-only
             * curve through it (sigma 0) peaks at sqrt(1 / kappa), the largest peak the point allows, and a
             * memory-bound program measured at a whole large machine (E 0.0025 at 256, S 0.63, peak 12.6)
             * goes straight to its peak, where its next report fits the true curve. A program that only gets
             * slower is measured there at once and falls back to one chunk: at p' = 2 the peak is at 1.
             *
             * So is one point below E SCAF_SHRINK_E_FAST (judged on the report as measured, not as damping
             * shifts it), where more than 19 of every 20 threads are wasted: an Amdahl program gets there only
             * past 1 / (0.05 (1 - f)) threads (380 at f 0.95), so on these machines such a point says
             * contention or coherency, and Amdahl through it still rises. A lock-bound newcomer measured at E
             * 0.026 on 128 of 256 contexts (S 3.3; Amdahl gives 3.4 at 256) kept 32, then took all 256 once
             * alone (S 1.8 against 7.4 at its peak near 22) until a report from there; the point's peak is 21.
             */
            c->u.sigma = 0.0;
            c->u.kappa = coherency_kappa(ev[0], p[0]);
        } else if (scaf_usl_fit(p, ev, two ? 2 : 1, &c->u) < 0) {
            return FIT_NONE;
        }
        c->n = 0;
        for (int j = 0; j < 3; j++) {
            uint32_t k;

            if ((j == 1 && !other) || (j == 2 && !side))
                continue;
            /* Insert in ascending team size: at most three points. */
            for (k = c->n; k > 0 && c->p[k - 1] > p[j]; k--) {
                c->p[k] = c->p[k - 1];
                c->r[k] = c->r[k - 1];
            }
            c->p[k] = p[j];
            c->r[k] = ev[j] * p[j] - scaf_usl_speedup(&c->u, p[j]);
            c->n++;
        }
        return two ? FIT_TWO : FIT_ONE;
    }
    if (isfinite(cl->prev_coef) && cl->prev_coef > 0.0 && cl->prev_coef <= 1.0) {
        c->u.sigma = 1.0 / cl->prev_coef - 1.0;
        c->u.kappa = 0.0;
        return FIT_ONE;
    }
    return FIT_NONE;
}

int scaf_policy_curve(const struct scaf_policy_client *cl, double *sigma, double *kappa)
{
    struct curve c = {{0.0, 0.0}, 0, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, 0.0};
    enum fit f = cl ? client_model(cl, 0.0, 0.0, &c) : FIT_NONE;

    if (sigma)
        *sigma = c.u.sigma;
    if (kappa)
        *kappa = c.u.kappa;
    return f == FIT_TWO ? 2 : f == FIT_ONE ? 1 : 0;
}

double scaf_policy_curve_at(const struct scaf_policy_client *cl, double p, uint32_t available, uint32_t chunk)
{
    struct curve c = {{0.0, 0.0}, 0, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, 0.0};

    if (!cl || client_model(cl, 0.0, knee_of(available, chunk), &c) == FIT_NONE)
        return NAN;
    return curve_speedup(&c, p);
}

static int gain_ok(double g, double min_gain)
{
    return min_gain > 0.0 ? g >= min_gain : g > 0.0;
}

/* b beats a: larger gain per context; on a tie, fewer threads, then the lower index (b > a always). */
static int better(double gb, uint32_t tb, double ga, uint32_t ta)
{
    double tol = TIE * (fabs(ga) > fabs(gb) ? fabs(ga) : fabs(gb));

    if (gb > ga + tol)
        return 1;
    return gb >= ga - tol && tb < ta;
}

struct work {
    uint32_t k, chunk; /* in->chunk, or 1 when k chunks do not fit */
    const uint32_t *bound; /* the most each client may get */
    const enum fit *fit;
    const struct curve *m;
    double **hull; /* per client: NULL, or its curve's concave majorant at 0..bound (majorants) */
};

/*
 * Whether the corrected curve can bend upwards: its residual's slope rises at
 * a measured point (a point read low beside a close one, then held beyond).
 * u is concave, so a residual whose slope never rises keeps the curve concave.
 */
static int bends_up(const struct curve *c)
{
    double before = 0.0; /* r is held before the first point and beyond the last */

    for (uint32_t k = 1; k < c->n; k++) {
        double s = (c->r[k] - c->r[k - 1]) / (c->p[k] - c->p[k - 1]);

        if (s > before)
            return 1;
        before = s;
    }
    return before < 0.0;
}

/*
 * The least concave majorant of the curve on the whole team sizes 0..bound
 * (an upper hull, monotone chain), into h[0..bound]. Greedy by marginal gain
 * is exact for concave curves only: on a curve with a dip (a program alone
 * on 256 contexts, its report at 144 and a point at 146 read 4% low) it
 * stops at the dip's edge and leaves the rest of the machine idle, where
 * the curve beyond the dip is far higher. The majorant's gain over a dip is
 * what a larger step through it gains.
 */
static int hull_fill(const struct curve *c, uint32_t bound, double *h)
{
    uint32_t *v = malloc(((size_t)bound + 1) * sizeof(*v)), n = 0;

    if (!v)
        return -1;
    for (uint32_t x = 0; x <= bound; x++) {
        h[x] = x ? curve_speedup(c, x) : 0.0;
        /* Drop the last vertex while it lies on or below the chord from the one before it to x. */
        while (n >= 2 && (h[v[n - 1]] - h[v[n - 2]]) * (double)(x - v[n - 2]) <=
                             (h[x] - h[v[n - 2]]) * (double)(v[n - 1] - v[n - 2]))
            n--;
        v[n++] = x;
    }
    for (uint32_t j = 1; j < n; j++)
        for (uint32_t x = v[j - 1] + 1; x < v[j]; x++)
            h[x] = h[v[j - 1]] + (h[v[j]] - h[v[j - 1]]) * (double)(x - v[j - 1]) / (double)(v[j] - v[j - 1]);
    free(v);
    return 0;
}

/* What the client's curve gains from t to t + step; read off its majorant where it has one, if `majorant`. */
static double gain_of(const struct work *w, uint32_t i, uint32_t t, uint32_t step, int majorant)
{
    if (majorant && w->hull[i])
        return w->hull[i][t + step] - w->hull[i][t];
    return curve_speedup(&w->m[i], (double)t + step) - curve_speedup(&w->m[i], t);
}

/*
 * Contexts one chunk at a time to the known client whose curve gains most per
 * context (read off the majorants, if `majorant`); returns those used.
 */
static uint32_t greedy(const struct work *w, uint32_t room, double min_gain, int majorant, uint32_t *t)
{
    uint32_t used = 0;

    while (used < room) {
        uint32_t best = w->k, best_step = 0;
        double best_gain = 0.0;

        for (uint32_t i = 0; i < w->k; i++) {
            uint32_t step = w->chunk;
            double g;

            if (w->fit[i] == FIT_NONE || t[i] >= w->bound[i])
                continue;
            if (step > w->bound[i] - t[i])
                step = w->bound[i] - t[i];
            if (step > room - used)
                step = room - used;
            g = gain_of(w, i, t[i], step, majorant) / step;
            if (best == w->k || better(g, t[i], best_gain, t[best])) {
                best = i;
                best_gain = g;
                best_step = step;
            }
        }
        if (best == w->k || !gain_ok(best_gain, min_gain))
            break;
        t[best] += best_step;
        used += best_step;
    }
    return used;
}

/* How much the client's E wanders, for damping: as the caller measured it, else the default for its E. */
static double e_sd(const struct scaf_policy_client *cl)
{
    double rel = DAMP_SD_REL * cl->efficiency;

    if (isfinite(cl->e_sd) && cl->e_sd > 0.0)
        return cl->e_sd;
    return isfinite(rel) && rel >= 0.0 && rel < DAMP_SD_UNKNOWN ? rel : DAMP_SD_UNKNOWN;
}

/*
 * A client whose measurement says more threads make it slower than one: its
 * E at p' >= 2 is measured against its own serial time (the estimator's
 * serial experiments), so E p' < 1 is a second point of the curve, at p = 1,
 * and the pair shows a peak at one thread as surely as two team sizes would.
 * Or one whose E is below SCAF_SHRINK_E_FAST, read with the coherency-only
 * curve through it for that reason (client_model): its curve's peak is as
 * believed. Either only when it holds with E read DAMP_Z sd high. A client held at
 * one thread reports from one thread and keeps its last curve (prev_coef):
 * when that curve falls it stays down, and the caller's probes
 * (src/policy/probe.c) measure it again at a larger team now and then.
 */
static int peaked(const struct scaf_policy_client *cl, const struct curve *c)
{
    if (cl->eff_team >= 2 && isfinite(cl->efficiency) && cl->efficiency >= 0.0) {
        double sd = isfinite(cl->e_sd) && cl->e_sd > 0.0 ? cl->e_sd : DAMP_SD_UNKNOWN, high = cl->efficiency + DAMP_Z * sd;

        return high * cl->eff_team < 1.0 || high < SCAF_SHRINK_E_FAST;
    }
    return c->n == 0 && scaf_usl_speedup(&c->u, 2.0) < 1.0;
}

/*
 * What no curve gains from goes round-robin (fewest first) to the clients
 * `pick` admits, except those whose peak is believed (`peaked`: they keep
 * what greedy gave them, and the rest stays idle); returns those used.
 */
static uint32_t fill(const struct scaf_policy_input *in, const struct work *w, uint32_t room, enum fit pick,
                     uint32_t *t)
{
    uint32_t used = 0;

    while (used < room) {
        uint32_t best = w->k, step;

        for (uint32_t i = 0; i < w->k; i++)
            if (w->fit[i] == pick && t[i] < w->bound[i] && (best == w->k || t[i] < t[best]) &&
                !(pick == FIT_ONE && peaked(&in->clients[i], &w->m[i])))
                best = i;
        if (best == w->k)
            break;
        step = w->chunk < w->bound[best] - t[best] ? w->chunk : w->bound[best] - t[best];
        if (step > room - used)
            step = room - used;
        t[best] += step;
        used += step;
    }
    return used;
}

/* A shrink probe's client: halved this round, or held at the half it got. */
static int holds(const struct scaf_policy_client *cl, uint32_t chunk, uint32_t bound)
{
    if (cl->probe == SCAF_PROBE_SHRINK)
        return cl->prev >= 2 * chunk && cl->prev <= bound;
    return cl->probe == SCAF_PROBE_HOLD && cl->prev >= chunk && cl->prev <= bound;
}

/*
 * Every client the same curve from one point (or none known), and none held
 * by a shrink probe: equal shares, exactly as equipartition rounds them, so
 * that clients nobody can tell apart are treated alike to the last context
 * (greedy ties would agree on the sums but not always on who gets a
 * remainder next to a bound).
 */
static int identical(const struct scaf_policy_input *in, const struct work *w)
{
    for (uint32_t i = 0; i < w->k; i++) {
        /* Programs of different sizes get different equal shares, which like curves do not call for. */
        if (scaf_policy_group_size(in, i) != scaf_policy_group_size(in, 0))
            return 0;
        if (w->fit[i] != w->fit[0] || w->fit[i] == FIT_TWO || holds(&in->clients[i], w->chunk, w->bound[i]))
            return 0;
        if (w->fit[i] == FIT_ONE && peaked(&in->clients[i], &w->m[i]))
            return 0;
        if (w->fit[i] == FIT_ONE && !same_curve(&w->m[i], &w->m[0]))
            return 0;
    }
    return 1;
}

/* The summed speedup of allocation x less min_gain per context, each known client read at E + shift[i]. */
static double objective(const struct scaf_policy_input *in, const enum fit *fit, const double *shift,
                        const uint32_t *x, double min_gain)
{
    double j = 0.0;

    for (uint32_t i = 0; i < in->nclients; i++) {
        struct curve c;

        if (fit[i] == FIT_NONE || client_model(&in->clients[i], shift ? shift[i] : 0.0, knee_of(in->available, in->chunk), &c) == FIT_NONE)
            continue;
        j += curve_speedup(&c, x[i]) - min_gain * x[i];
    }
    return j;
}

/*
 * Keep the previous allocation unless `a` is better even read pessimistically
 * (see DAMP_*). Only a previous allocation that is still a valid answer is
 * kept: every client had one, none is probed, each is within its bounds, an
 * unknown client's share has not changed, and the sum fits.
 */
static int keep_prev(const struct scaf_policy_input *in, const struct work *w, const uint32_t *a, double min_gain,
                     double *shift, uint32_t *prev)
{
    uint64_t sum = 0;
    int same = 1, takes = 0;
    double now, before, base;

    for (uint32_t i = 0; i < w->k; i++) {
        const struct scaf_policy_client *cl = &in->clients[i];
        uint32_t lo = w->chunk < w->bound[i] ? w->chunk : w->bound[i];
        double sd = e_sd(cl);

        if (cl->probe || cl->prev < lo || cl->prev > w->bound[i] || (w->fit[i] == FIT_NONE && cl->prev != a[i]))
            return 0;
        prev[i] = cl->prev;
        sum += cl->prev;
        same &= cl->prev == a[i];
        takes |= a[i] < cl->prev;
        shift[i] = a[i] > cl->prev ? -DAMP_Z * sd : a[i] < cl->prev ? DAMP_Z * sd : 0.0;
    }
    /*
     * A move that takes from nobody hands out contexts the previous allocation
     * left idle (a client that left or went idle): noise cannot make it a
     * loss, and read pessimistically a flat one-point curve would hold them
     * idle (four pool workers measured at 3 threads and E 0.44 kept 3 each of
     * 16 contexts once their parent went idle, below equipartition's 4). It
     * cannot oscillate: the next move from the whole allocation takes from
     * someone and is damped. A client alone is damped as before: what it
     * left idle, it left past a peak (a memory-bound program held at 13 of
     * 256 jumped back to 256 whenever its second point expired).
     */
    if (same || (!takes && w->k > 1) || sum > in->available)
        return 0;
    now = objective(in, w->fit, shift, a, min_gain);
    before = objective(in, w->fit, shift, prev, min_gain);
    base = objective(in, w->fit, NULL, prev, 0.0);
    return now - before <= DAMP_REL * (base > 1.0 ? base : 1.0);
}

/*
 * Damping: the previous allocation replaces `share` when keep_prev says the
 * new one is not better even read pessimistically.
 */
static void damp(const struct scaf_policy_input *in, const struct work *w, double min_gain, double *shift,
                 uint32_t *prev, uint32_t *share)
{
    if (keep_prev(in, w, share, min_gain, shift, prev))
        for (uint32_t i = 0; i < w->k; i++)
            share[i] = in->clients[i].prev;
}

/*
 * Where a shrink probe runs: two thirds of the allocation in whole chunks
 * (x1.5 below it or more, where the policy fits a curve through the two
 * points: FAR), or lower where E < SCAF_SHRINK_E_FAST (most of every context
 * wasted), at the peak of the coherency-only curve through the report (the
 * largest peak the point allows, sigma 0) when that is lower. A lock-bound
 * program at E 0.025 on 128 threads (speedup 3.2) was probed at 64 (5.1) and
 * only then sent to its peak near 20 (7.4): probed at the point's peak, it
 * runs there while it is measured, and the two points, far apart, fit its
 * curve as well. Half the allocation (the first rule) cost twice as much
 * where the curve had not peaked, the common case, for no better fit: a
 * worker of a pool on 256 contexts at E 0.42 on 15 threads lost 1.9 of its
 * 6.2 for the 1.25 s of the probe, and its program's last task ended later.
 * Whole chunks, at least two threads (a report from one says nothing of
 * scaling).
 */
static uint32_t shrink_target(const struct scaf_policy_client *cl, uint32_t chunk)
{
    double e = cl->efficiency, p = cl->eff_team;
    uint32_t t = (uint32_t)((uint64_t)cl->prev * 2 / 3 / chunk * chunk);

    if (cl->eff_team >= 2 && isfinite(e) && e > 0.0 && e < SCAF_SHRINK_E_FAST && e * p >= 1.0) {
        uint32_t q = (uint32_t)ceil(sqrt(1.0 / coherency_kappa(e, p)));

        if (q < 2)
            q = 2;
        q = (q + chunk - 1) / chunk * chunk;
        if (q < t)
            t = q;
    }
    return t;
}

/* The majorants of the curves that can bend upwards, into w->hull; -1 (ENOMEM) when one cannot be kept. */
static int majorants(struct work *w)
{
    for (uint32_t i = 0; i < w->k; i++) {
        if (w->fit[i] == FIT_NONE || !bends_up(&w->m[i]))
            continue;
        w->hull[i] = malloc(((size_t)w->bound[i] + 1) * sizeof(*w->hull[i]));
        if (!w->hull[i] || hull_fill(&w->m[i], w->bound[i], w->hull[i]) < 0) {
            errno = ENOMEM;
            return -1;
        }
    }
    return 0;
}

/*
 * The known clients of one program (a pool's workers: a nonzero `group`),
 * none held by a shrink probe, split what they hold between them equally, in
 * chunks within their bounds. They run the program's tasks in turn, so their
 * curves differ by the noise of their reports, not by what they run, and an
 * unequal split buys nothing the curves can show: a task goes to the first
 * free worker, so a worker given less does not do less work, it finishes its
 * task later, and the program ends with its last task. A pool of 8 beside an
 * OpenMP job on 256 contexts whose workers held 13 to 17 threads on reports
 * 2% apart ran its last tasks on a few workers for a second and a half past
 * equal shares' end. What the program holds in all is still the curves' call.
 *
 * With `rest`, the split is in equal whole chunks only: where that leaves a
 * remainder (fewer chunks than clients) and every client's bound allows, each
 * gets the equal part, its bound becomes that part (greedy and fill pass it
 * by) and rest[first client of the program] is the remainder, for the caller
 * to hand to the others (back_to_programs). Without, the remainder goes one
 * chunk at a time to the first clients. -1 (ENOMEM) when the scratch cannot be
 * had.
 */
static int split_programs(const struct scaf_policy_input *in, const struct work *w, uint32_t *bound,
                          uint32_t *share, uint32_t *rest)
{
    uint32_t *idx = malloc(w->k * sizeof(*idx)), *b = malloc(w->k * sizeof(*b)), *out = malloc(w->k * sizeof(*out));
    double *ones = malloc(w->k * sizeof(*ones));
    int ret = -1;

    if (!idx || !b || !out || !ones) {
        errno = ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < w->k; i++) {
        uint32_t g = in->clients[i].group, n = 0, total = 0, first = 1, each;

        for (uint32_t j = 0; j < i && first && g; j++)
            first = in->clients[j].group != g;
        if (!g || !first)
            continue; /* a program of its own, or one already split */
        for (uint32_t j = i; j < w->k; j++) {
            if (in->clients[j].group != g || w->fit[j] == FIT_NONE || holds(&in->clients[j], w->chunk, bound[j]))
                continue;
            idx[n] = j;
            b[n] = bound[j];
            ones[n] = 1.0;
            total += share[j];
            n++;
        }
        if (n < 2)
            continue;
        each = total / (n * w->chunk) * w->chunk;
        if (rest && each > 0 && total > n * each) {
            uint32_t fits = 1;

            for (uint32_t m = 0; m < n; m++)
                fits &= b[m] >= each;
            if (fits) {
                for (uint32_t m = 0; m < n; m++)
                    share[idx[m]] = bound[idx[m]] = each;
                rest[idx[0]] = total - n * each;
                continue;
            }
        }
        if (scaf_intpart_chunked(ones, n, total, w->chunk, b, out) < 0)
            goto out;
        for (uint32_t m = 0; m < n; m++)
            share[idx[m]] = out[m];
    }
    ret = 0;
out:
    free(idx);
    free(b);
    free(out);
    free(ones);
    return ret;
}

/*
 * After split_programs with `rest`: the programs' remainders go to the other
 * clients where their curves gain (greedy, then fill under the speedup
 * policy), and back to the program they came from (split as without `rest`)
 * only where nobody else takes them. A remainder's chunks would have gone
 * to some of the program's clients and not the others: those run their
 * tasks out of step with their fellows, and the program's last tasks run on
 * a few of them at its end (8 workers on 59 of 128 contexts, three at 8
 * threads and five at 7, beside a job on 69: 0.3% under equal shares over
 * the run, where 7 each and 72 for the job are ahead of them). The bounds
 * split_programs lowered are `saved` again.
 */
static int back_to_programs(const struct scaf_policy_input *in, struct work *w, uint32_t *bound, const uint32_t *saved,
                            double min_gain, uint32_t *rest, uint32_t *share)
{
    uint32_t left = 0;

    for (uint32_t i = 0; i < w->k; i++)
        left += rest[i];
    if (!left)
        return 0;
    left -= greedy(w, left, min_gain, 0, share);
    if (min_gain <= 0.0) {
        left -= fill(in, w, left, FIT_NONE, share);
        left -= fill(in, w, left, FIT_ONE, share);
    }
    memcpy(bound, saved, w->k * sizeof(*bound));
    for (uint32_t i = 0; i < w->k; i++) {
        uint32_t back = rest[i] < left ? rest[i] : left;

        share[i] += back; /* i is the program's first client: the split below spreads it */
        left -= back;
    }
    return split_programs(in, w, bound, share, NULL);
}

/* The programs' equal splits in whole chunks, their remainders to the others (back_to_programs). */
static int share_programs(const struct scaf_policy_input *in, struct work *w, uint32_t *bound, double min_gain,
                          uint32_t *share)
{
    uint32_t *rest = calloc(w->k, sizeof(*rest)), *saved = malloc(w->k * sizeof(*saved));
    int ret = -1;

    if (!rest || !saved) {
        errno = ENOMEM;
    } else {
        memcpy(saved, bound, w->k * sizeof(*saved));
        if (split_programs(in, w, bound, share, rest) == 0)
            ret = back_to_programs(in, w, bound, saved, min_gain, rest, share);
        memcpy(bound, saved, w->k * sizeof(*bound));
    }
    free(rest);
    free(saved);
    return ret;
}

/*
 * The undamped allocation into share[]: shrink probes held, then greedy by
 * marginal gain, then fill. -1 (ENOMEM) when a majorant cannot be kept.
 */
static int allocate(const struct scaf_policy_input *in, struct work *w, uint32_t *bound, double min_gain,
                    uint32_t *share)
{
    uint32_t used = 0;

    for (uint32_t i = 0; i < w->k; i++) {
        const struct scaf_policy_client *cl = &in->clients[i];

        if (holds(cl, w->chunk, bound[i])) {
            /*
             * Its shrink target (shrink_target), or the team it was given,
             * at most its equal share so that the sum still fits; held there:
             * greedy and fill pass it by.
             */
            uint32_t t = cl->probe == SCAF_PROBE_HOLD ? cl->prev : shrink_target(cl, w->chunk);

            share[i] = bound[i] = t < share[i] ? t : share[i];
        } else if (w->fit[i] != FIT_NONE) {
            share[i] = w->chunk < bound[i] ? w->chunk : bound[i];
        }
        used += share[i];
    }
    /*
     * An unknown client is learnt only from a team of two chunks or more: a
     * report from one thread says nothing of scaling, and a probe waits for
     * one from two. Where its equal share is one chunk (more clients than half
     * the chunks) it would stay unknown for good beside known clients, at one
     * chunk however well it scales; so it gets two while the known clients'
     * first chunks leave room.
     */
    for (uint32_t i = 0; i < w->k; i++) {
        uint32_t two = 2 * w->chunk;

        if (w->fit[i] == FIT_NONE && share[i] < two && bound[i] >= two &&
            !holds(&in->clients[i], w->chunk, bound[i]) && used + (two - share[i]) <= in->available) {
            used += two - share[i];
            share[i] = two;
        }
    }
    /*
     * For concave curves (every USL curve is concave in p) one chunk at a time
     * to the largest gain per context is the allocation that maximizes the
     * summed speedup (less min_gain per context used).
     */
    used += greedy(w, in->available - used, min_gain, 0, share);
    /*
     * What no curve gains from one chunk at a time may still be gained by a
     * larger step through a dip (see hull_fill). Only what the first pass left:
     * where contexts are contended, a curve's own flat stretch (SMT siblings
     * measured past the cores) is what decides, and its majorant would bridge
     * it with the optimism of the extrapolation beyond the last point.
     */
    if (used < in->available) {
        if (majorants(w) < 0)
            return -1;
        used += greedy(w, in->available - used, min_gain, 1, share);
    }
    if (min_gain <= 0.0) {
        used += fill(in, w, in->available - used, FIT_NONE, share);
        used += fill(in, w, in->available - used, FIT_ONE, share);
    }
    return share_programs(in, w, bound, min_gain, share);
}

int scaf_marginal_decide(const struct scaf_policy_input *in, double min_gain, uint32_t *share, double *coef,
                         uint32_t *undamped)
{
    uint32_t k, *bound = NULL, *prev = NULL;
    double *shift = NULL;
    struct curve *m = NULL;
    enum fit *fit = NULL;
    double **hull = NULL;
    struct work w;
    int ret = -1;

    /*
     * The equal shares first: what an unknown client gets, and everything
     * when k > N (1 each). equipartition also checks the input (EINVAL).
     */
    if (scaf_policy_equipartition(in, share, coef) < 0)
        return -1;
    k = in->nclients;
    if (k == 0)
        return 0;
    shift = malloc(k * sizeof(*shift));
    bound = malloc(k * sizeof(*bound));
    prev = malloc(k * sizeof(*prev));
    m = malloc(k * sizeof(*m));
    fit = malloc(k * sizeof(*fit));
    hull = calloc(k, sizeof(*hull));
    if (!shift || !bound || !prev || !m || !fit || !hull) {
        errno = ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < k; i++) {
        uint32_t most = in->clients[i].max_threads; /* 0 = no bound, defensively */

        bound[i] = most && most < in->available ? most : in->available;
        fit[i] = client_model(&in->clients[i], 0.0, knee_of(in->available, in->chunk), &m[i]);
        if (coef)
            coef[i] = fit[i] != FIT_NONE ? 1.0 / (1.0 + m[i].u.sigma + 2.0 * m[i].u.kappa) : 0.0; /* E(2) */
    }
    if (k > in->available) {
        if (undamped)
            memcpy(undamped, share, k * sizeof(*share));
        ret = 0;
        goto out;
    }
    w = (struct work){k, (uint64_t)k * in->chunk <= in->available ? in->chunk : 1, bound, fit, m, hull};
    /* Clients nobody can tell apart keep the equal shares; any other set is allocated by marginal gain. */
    if ((min_gain > 0.0 || !identical(in, &w)) && allocate(in, &w, bound, min_gain, share) < 0)
        goto out;
    if (undamped)
        memcpy(undamped, share, k * sizeof(*share));
    damp(in, &w, min_gain, shift, prev, share);
    /*
     * Again on what damping kept: a worker back from its shrink probe, held at
     * two thirds of its share, rejoins its program's equal split at once. Its move back
     * takes a thread or two from each of its fellows and gains under 1% of the
     * summed speedup, so damping alone kept it at 7 threads where its fellows
     * had 17 (a pool beside a job on 256 contexts) until the pool ended.
     */
    if (split_programs(in, &w, bound, share, NULL) < 0)
        goto out;
    ret = 0;
out:
    free(shift);
    free(bound);
    free(prev);
    free(m);
    free(fit);
    for (uint32_t i = 0; hull && i < k; i++)
        free(hull[i]);
    free(hull);
    return ret;
}
