/* usl.h — the Universal Scalability Law: a speedup curve that can flatten and fall, fitted from measured points. */
#ifndef SCAF_USL_H
#define SCAF_USL_H

#include <stdint.h>

/*
 * S(p) = p / (1 + sigma (p - 1) + kappa p (p - 1)), sigma, kappa >= 0.
 * sigma is contention (Amdahl's serial fraction: S flattens at 1/sigma),
 * kappa coherency cost (S peaks at p* = sqrt((1 - sigma) / kappa), then
 * falls). Pure functions, no state; see docs/policy.md.
 */
struct scaf_usl {
    double sigma;
    double kappa;
};

/*
 * Least squares on 1/E - 1 = sigma (p - 1) + kappa p (p - 1) over n points
 * (team size p[i] >= 1, efficiency e[i] = S/p in (0, inf); E > 1 is read as 1),
 * with sigma, kappa >= 0. Points at p = 1 say nothing about either and are
 * skipped. With one distinct team size >= 2 the two unknowns cannot be told
 * apart, and kappa = 0 (Amdahl through that point). Returns 0, or -1 with
 * errno = EINVAL (NULL, n = 0, p = 0, E not finite or <= 0) or ENODATA (no
 * point at p >= 2).
 */
int scaf_usl_fit(const uint32_t *p, const double *e, uint32_t n, struct scaf_usl *out);

/* S(p) for p >= 1 (1 for p < 1, or when the parameters are not finite and >= 0). */
double scaf_usl_speedup(const struct scaf_usl *m, double p);

/* S(p + step) - S(p): what `step` more threads give a client at p (negative past the peak). */
double scaf_usl_gain(const struct scaf_usl *m, uint32_t p, uint32_t step);

/* The p in [1, pmax] with the largest S (the smallest such p on ties); 1 when pmax is 0 or the model is not finite and >= 0. */
uint32_t scaf_usl_best(const struct scaf_usl *m, uint32_t pmax);

#endif
