/* stream.c — memory-bound streaming: repeated triads over three large arrays (like STREAM). */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* Pass p computes x = y + s*z with the roles of (a, b, c) rotating, so every
 * array is rewritten every three passes and no pass repeats another. Each
 * element evolves by the same linear map, so the final arrays are a known
 * 3x3 matrix times the initial ones: the check costs one pass. All values
 * and coefficients are positive, so rounding stays within a few hundred ulps. */

static const struct wl_spec spec = {
    .name = "stream",
    .description = "memory-bound streaming triads over three large arrays (like STREAM); "
                   "bandwidth saturates after a few threads",
    .takes_until = 1,
};

static const double S = 0.5;

static void triad(double *restrict x, const double *restrict y, const double *restrict z, long n)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        x[i] = y[i] + S * z[i];
        if ((i & 65535) == 0)
            wl_team_note();
    }
}

static double init(long i, int which)
{
    return 1.0 + wl_unit(wl_mix64((uint64_t)i * 3 + (uint64_t)which));
}

static void fill(double *v[3], long n)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            v[k][i] = init(i, k);
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const long n = WL_PICK(args.size, 1L << 20, 1L << 23, 1L << 24);
    const int passes = (int)wl_scaled(&args, WL_PICK(args.size, 30, 450, 900), 1, 1);
    double *v[3];
    for (int k = 0; k < 3; k++)
        v[k] = malloc((size_t)n * sizeof(double));
    if (!v[0] || !v[1] || !v[2]) {
        fprintf(stderr, "stream: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    /* Parallel first touch, as STREAM does, so pages land near their users. */
    fill(v, n);

    /* m[x][k]: coefficient of initial array k in array x. */
    double m[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    double t0 = wl_clock_now();
    long p;
    for (p = 0; wl_round_runs(args.until, p, passes); p++) {
        /* --until: the values grow with every pass, so each further `passes` passes start again from
         * the initial arrays, and the check covers those since the last start. */
        if (p > 0 && p % passes == 0) {
            fill(v, n);
            for (int x = 0; x < 3; x++)
                for (int k = 0; k < 3; k++)
                    m[x][k] = x == k;
        }
        const int x = (int)(p % 3), y = (int)((p + 1) % 3), z = (int)((p + 2) % 3);
        triad(v[x], v[y], v[z], n);
        for (int k = 0; k < 3; k++)
            m[x][k] = m[y][k] + S * m[z][k];
    }
    double elapsed = wl_clock_now() - t0;

    long bad = 0;
    double worst = 0.0;
    for (long i = 0; i < n; i++) {
        const double i0 = init(i, 0), i1 = init(i, 1), i2 = init(i, 2);
        for (int x = 0; x < 3; x++) {
            const double want = m[x][0] * i0 + m[x][1] * i1 + m[x][2] * i2;
            const double err = fabs(v[x][i] - want) / want;
            if (!(err <= 1e-10)) /* also catches NaN */
                bad++;
            if (!(err <= worst))
                worst = err;
        }
    }
    if (bad)
        fprintf(stderr, "stream: %ld elements differ from the analytic result\n", bad);

    uint64_t h = 0;
    for (int k = 0; k < 3; k++)
        h = wl_hash_doubles(h, v[k], (size_t)n);
    wl_checksum_print(h);
    printf("elements=%ld passes=%ld bytes_per_pass=%ld max_rel_error=%.3e\n", n, p,
           n * 3 * (long)sizeof(double), worst);
    for (int k = 0; k < 3; k++)
        free(v[k]);
    return wl_result_print(spec.name, elapsed, bad == 0);
}
