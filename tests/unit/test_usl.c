/* test_usl.c — table tests of the Universal Scalability Law fit and of reading the fitted curve. */
#include "scaf/usl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "check.h"

#define MAXPTS 8

/* E at p on the curve (sigma, kappa), times (1 + noise) */
static double eff(double s, double k, uint32_t p, double noise)
{
    struct scaf_usl m = {s, k};

    return scaf_usl_speedup(&m, p) / p * (1.0 + noise);
}

struct fitcase {
    const char *name;
    double sigma, kappa; /* the true curve */
    uint32_t n;
    uint32_t p[MAXPTS];
    double noise[MAXPTS]; /* relative error on each E */
    double want_sigma, want_kappa, tol;
};

static const struct fitcase fits[] = {
    {"exact Amdahl recovered", 0.05, 0.0, 4, {2, 4, 8, 16}, {0}, 0.05, 0.0, 1e-9},
    {"exact USL recovered", 0.02, 0.001, 4, {2, 4, 8, 16}, {0}, 0.02, 0.001, 1e-9},
    {"exact USL, two sizes", 0.1, 0.01, 2, {2, 8}, {0}, 0.1, 0.01, 1e-9},
    {"perfect scaling", 0.0, 0.0, 3, {2, 4, 8}, {0}, 0.0, 0.0, 1e-12},
    {"p = 1 points are skipped", 0.05, 0.002, 5, {1, 1, 2, 4, 8}, {0, 0.3}, 0.05, 0.002, 1e-9},
    {"repeated sizes average", 0.05, 0.002, 6, {4, 4, 8, 8, 16, 16}, {0.02, -0.02, 0.02, -0.02, 0.02, -0.02}, 0.05, 0.002, 0.006},
    {"noisy points stay close", 0.03, 0.0005, 6, {2, 4, 6, 8, 12, 16}, {0.02, -0.03, 0.01, 0.03, -0.02, 0.01}, 0.03, 0.0005, 0.01},
    /* one size cannot separate the two: Amdahl through the point (sigma = 1/E - 1 over p - 1) */
    {"one point falls back to kappa = 0", 0.1, 0.01, 1, {8}, {0}, 0.1 + 0.01 * 8, 0.0, 1e-12},
    {"one size repeated falls back too", 0.1, 0.0, 3, {4, 4, 4}, {0}, 0.1, 0.0, 1e-12},
    /* superlinear readings (E > 1) are read as 1, so nothing goes negative */
    {"E > 1 is read as 1", 0.0, 0.0, 2, {2, 4}, {0.2, 0.1}, 0.0, 0.0, 1e-12},
    /* a curve that improves faster than linear in p would need kappa < 0: clamped, sigma alone */
    {"kappa < 0 clamped to 0", 0.2, 0.0, 3, {2, 4, 8}, {0, 0.05, 0.15}, 0.16, 0.0, 0.06},
};

static void run_fits(void)
{
    for (size_t n = 0; n < sizeof(fits) / sizeof(fits[0]); n++) {
        const struct fitcase *fc = &fits[n];
        double e[MAXPTS];
        struct scaf_usl m = {-1, -1};

        for (uint32_t i = 0; i < fc->n; i++)
            e[i] = eff(fc->sigma, fc->kappa, fc->p[i], fc->noise[i]);
        if (scaf_usl_fit(fc->p, e, fc->n, &m) != 0) {
            fail(fc->name, "fit failed");
            continue;
        }
        CHECK(m.sigma >= 0.0 && m.kappa >= 0.0, "%s: negative parameter %g %g", fc->name, m.sigma, m.kappa);
        CHECK(fabs(m.sigma - fc->want_sigma) <= fc->tol && fabs(m.kappa - fc->want_kappa) <= fc->tol * 0.1 + 1e-12,
              "%s: got sigma %.6g kappa %.6g, want %.6g %.6g", fc->name, m.sigma, m.kappa, fc->want_sigma,
              fc->want_kappa);
    }
}

static void run_degenerate(void)
{
    uint32_t p[3] = {2, 4, 8}, p1[2] = {1, 1}, p0[1] = {0};
    double e[3] = {0.9, 0.8, 0.7}, bad[3] = {0.9, NAN, 0.7}, zero[3] = {0.9, 0.0, 0.7}, neg[1] = {-0.5};
    struct scaf_usl m;

    errno = 0;
    CHECK(scaf_usl_fit(NULL, e, 3, &m) == -1 && errno == EINVAL, "NULL p");
    errno = 0;
    CHECK(scaf_usl_fit(p, e, 0, &m) == -1 && errno == EINVAL, "no points");
    errno = 0;
    CHECK(scaf_usl_fit(p, e, 3, NULL) == -1 && errno == EINVAL, "NULL out");
    errno = 0;
    CHECK(scaf_usl_fit(p, bad, 3, &m) == -1 && errno == EINVAL, "NaN efficiency");
    errno = 0;
    CHECK(scaf_usl_fit(p, zero, 3, &m) == -1 && errno == EINVAL, "zero efficiency");
    errno = 0;
    CHECK(scaf_usl_fit(p0, neg, 1, &m) == -1 && errno == EINVAL, "p = 0, E < 0");
    errno = 0;
    CHECK(scaf_usl_fit(p1, e, 2, &m) == -1 && errno == ENODATA, "only p = 1: ENODATA");
}

struct curvecase {
    const char *name;
    double sigma, kappa;
    uint32_t pmax, want_best;
};

static const struct curvecase curves[] = {
    /* p* = sqrt((1 - sigma) / kappa) */
    {"kappa > 0: interior peak", 0.02, 0.001, 64, 31},
    {"peak beyond the machine", 0.02, 0.001, 16, 16},
    {"stream-like: peak at 6", 0.05, 0.025, 32, 6},
    {"Amdahl rises for ever", 0.2, 0.0, 48, 48},
    {"perfect scaling", 0.0, 0.0, 8, 8},
    {"sigma >= 1: one thread", 1.5, 0.0, 8, 1},
    {"sigma = 1 is flat: the smallest", 1.0, 0.0, 8, 1},
    {"huge kappa: one thread", 0.0, 10.0, 8, 1},
    {"pmax 1", 0.0, 0.0, 1, 1},
    {"pmax 0 reads as 1", 0.0, 0.0, 0, 1},
    {"garbage model reads as flat: 1", NAN, -1.0, 12, 1},
};

static void run_curves(void)
{
    for (size_t n = 0; n < sizeof(curves) / sizeof(curves[0]); n++) {
        const struct curvecase *cc = &curves[n];
        struct scaf_usl m = {cc->sigma, cc->kappa};
        uint32_t best = scaf_usl_best(&m, cc->pmax), brute = 1;

        CHECK(best == cc->want_best, "%s: best %u, want %u", cc->name, best, cc->want_best);
        /* and the closed form agrees with a search over every p */
        for (uint32_t p = 2; p <= cc->pmax; p++)
            if (scaf_usl_speedup(&m, p) > scaf_usl_speedup(&m, brute))
                brute = p;
        CHECK(best == brute, "%s: best %u, search says %u", cc->name, best, brute);
    }
    {
        struct scaf_usl m = {0.05, 0.025};
        double s6 = scaf_usl_speedup(&m, 6), s7 = scaf_usl_speedup(&m, 7);

        CHECK(fabs(scaf_usl_gain(&m, 6, 1) - (s7 - s6)) < 1e-15, "gain is S(p+1) - S(p)");
        CHECK(scaf_usl_gain(&m, 8, 4) < 0.0, "past the peak more threads are slower");
        CHECK(scaf_usl_gain(&m, 1, 1) > 0.0, "before the peak they help");
        CHECK(scaf_usl_speedup(&m, 1) == 1.0 && scaf_usl_speedup(&m, 0.5) == 1.0, "S(1) = 1, below 1 too");
        CHECK(scaf_usl_speedup(NULL, 4) == 1.0, "NULL model");
    }
}

int main(void)
{
    run_fits();
    run_degenerate();
    run_curves();
    return check_exit("test_usl");
}
