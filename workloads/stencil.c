/* stencil.c — 3D 7-point Jacobi iteration with a barrier after every step. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* The grid starts as a sum of two eigenvectors of the discrete Laplacian
 * with zero boundary, which Jacobi multiplies by known factors each step:
 * the exact answer is analytic and the check costs one pass. Each region
 * runs STEPS_PER_REGION steps separated by worksharing barriers. */

#define STEPS_PER_REGION 10

static const struct wl_spec spec = {
    .name = "stencil",
    .description = "3D 7-point Jacobi stencil with a barrier after every step; "
                   "bandwidth- and barrier-bound",
};

struct mode {
    int a, b, c;
    double amp;
};
static const struct mode modes[2] = {{1, 1, 1, 1.0}, {2, 3, 1, 0.5}};

#define IDX(n, i, j, k) (((size_t)(i) * (size_t)((n) + 2) + (size_t)(j)) * (size_t)((n) + 2) + (size_t)(k))

/* sin(pi*a*i/(n+1)) for i = 0..n+1 */
static double *sines(int n, int a)
{
    double *s = malloc((size_t)(n + 2) * sizeof *s);
    if (s)
        for (int i = 0; i <= n + 1; i++)
            s[i] = sin(M_PI * a * i / (n + 1));
    return s;
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const int n = WL_PICK(args.size, 64, 128, 200);
    const int regions = (int)wl_scaled(&args, WL_PICK(args.size, 10, 120, 120), 1, 1);
    const size_t cells = (size_t)(n + 2) * (n + 2) * (n + 2);
    double *u = calloc(cells, sizeof *u), *w = calloc(cells, sizeof *w);
    double *sn[2][3];
    for (int m = 0; m < 2; m++) {
        sn[m][0] = sines(n, modes[m].a);
        sn[m][1] = sines(n, modes[m].b);
        sn[m][2] = sines(n, modes[m].c);
    }
    if (!u || !w || !sn[0][0] || !sn[0][1] || !sn[0][2] || !sn[1][0] || !sn[1][1] || !sn[1][2]) {
        fprintf(stderr, "stencil: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
#pragma omp parallel for schedule(static)
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= n; j++)
            for (int k = 1; k <= n; k++) {
                double v = 0.0;
                for (int m = 0; m < 2; m++)
                    v += modes[m].amp * sn[m][0][i] * sn[m][1][j] * sn[m][2][k];
                u[IDX(n, i, j, k)] = v;
            }

    const double sixth = 1.0 / 6.0;
    double t0 = wl_clock_now();
    for (int r = 0; r < regions; r++) {
#pragma omp parallel
        {
            double *src = u, *dst = w;
            wl_team_note();
            for (int s = 0; s < STEPS_PER_REGION; s++) {
#pragma omp for schedule(static)
                for (int i = 1; i <= n; i++)
                    for (int j = 1; j <= n; j++)
                        for (int k = 1; k <= n; k++)
                            dst[IDX(n, i, j, k)] =
                                sixth * ((src[IDX(n, i - 1, j, k)] + src[IDX(n, i + 1, j, k)]) +
                                         (src[IDX(n, i, j - 1, k)] + src[IDX(n, i, j + 1, k)]) +
                                         (src[IDX(n, i, j, k - 1)] + src[IDX(n, i, j, k + 1)]));
                double *t = src;
                src = dst;
                dst = t;
            }
        }
        if (STEPS_PER_REGION % 2) {
            double *t = u;
            u = w;
            w = t;
        }
    }
    double elapsed = wl_clock_now() - t0;
    const int steps = regions * STEPS_PER_REGION;

    double factor[2];
    for (int m = 0; m < 2; m++)
        factor[m] = modes[m].amp *
                    pow((cos(M_PI * modes[m].a / (n + 1)) + cos(M_PI * modes[m].b / (n + 1)) +
                         cos(M_PI * modes[m].c / (n + 1))) / 3.0,
                        steps);
    double worst = 0.0;
    for (int i = 0; i <= n + 1; i++)
        for (int j = 0; j <= n + 1; j++)
            for (int k = 0; k <= n + 1; k++) {
                double want = 0.0;
                if (i >= 1 && i <= n && j >= 1 && j <= n && k >= 1 && k <= n)
                    for (int m = 0; m < 2; m++)
                        want += factor[m] * sn[m][0][i] * sn[m][1][j] * sn[m][2][k];
                const double err = fabs(u[IDX(n, i, j, k)] - want);
                if (!(err <= worst)) /* also catches NaN */
                    worst = err;
            }
    const int ok = worst <= 1e-11;
    if (!ok)
        fprintf(stderr, "stencil: grid differs from the analytic result by %.3e\n", worst);

    wl_checksum_print(wl_hash_doubles(0, u, cells));
    printf("n=%d steps=%d max_abs_error=%.3e\n", n, steps, worst);
    free(u);
    free(w);
    for (int m = 0; m < 2; m++)
        for (int d = 0; d < 3; d++)
            free(sn[m][d]);
    return wl_result_print(spec.name, elapsed, ok);
}
