/* cg.c — conjugate gradient on a random sparse SPD matrix in CSR form, with many short regions (like NPB CG). */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* Every vector operation is its own parallel region, so a solve opens
 * thousands of short regions. Dot products are reduced into fixed blocks of
 * rows and the blocks are summed serially in order: the result is the same
 * bit for bit whatever team runs each region. */

#define BLOCK 2048

static const struct wl_spec spec = {
    .name = "cg",
    .description = "conjugate gradient on a sparse CSR matrix: many short regions, "
                   "bandwidth-bound, deterministic blocked reductions (like NPB CG)",
};

struct csr {
    int n;
    int *rowptr, *col;
    double *val;
};

/* Random symmetric matrix with off-diagonals in (-1, 0] and a diagonal that
 * exceeds each row's absolute sum by 1: strictly diagonally dominant, hence
 * SPD with a modest condition number, so CG converges in a few dozen steps. */
static int csr_build(struct csr *m, int n, int per_row)
{
    const size_t pairs = (size_t)n * (size_t)per_row;
    int *pi = malloc(pairs * sizeof *pi), *pj = malloc(pairs * sizeof *pj);
    double *pv = malloc(pairs * sizeof *pv);
    double *diag = calloc((size_t)n, sizeof *diag);
    int *fill = NULL;
    int rc = -1;
    m->rowptr = calloc((size_t)n + 1, sizeof *m->rowptr);
    m->col = malloc((2 * pairs + (size_t)n) * sizeof *m->col);
    m->val = malloc((2 * pairs + (size_t)n) * sizeof *m->val);
    m->n = n;
    if (!pi || !pj || !pv || !diag || !m->rowptr || !m->col || !m->val)
        goto out;
    for (size_t k = 0; k < pairs; k++) {
        int i = (int)(k / (size_t)per_row);
        uint64_t r = wl_mix64(k);
        int j = (int)(r % (uint64_t)n);
        if (j == i)
            j = (j + 1) % n;
        pi[k] = i;
        pj[k] = j;
        pv[k] = -wl_unit(wl_mix64(r));
        diag[i] -= pv[k];
        diag[j] -= pv[k];
        m->rowptr[i + 1]++;
        m->rowptr[j + 1]++;
    }
    for (int i = 0; i < n; i++)
        m->rowptr[i + 1] += m->rowptr[i] + 1; /* +1: the diagonal */
    fill = malloc((size_t)n * sizeof *fill);
    if (!fill)
        goto out;
    for (int i = 0; i < n; i++) {
        fill[i] = m->rowptr[i] + 1;
        m->col[m->rowptr[i]] = i;
        m->val[m->rowptr[i]] = diag[i] + 1.0;
    }
    for (size_t k = 0; k < pairs; k++) {
        m->col[fill[pi[k]]] = pj[k];
        m->val[fill[pi[k]]++] = pv[k];
        m->col[fill[pj[k]]] = pi[k];
        m->val[fill[pj[k]]++] = pv[k];
    }
    rc = 0;
out:
    free(pi);
    free(pj);
    free(pv);
    free(diag);
    free(fill);
    return rc;
}

static void spmv(const struct csr *m, const double *x, double *y)
{
    /* guided: exercises GOMP_parallel_loop_(nonmonotonic_)guided; each row
     * is summed serially, so the schedule cannot change a bit. */
#pragma omp parallel for schedule(guided, 64)
    for (int i = 0; i < m->n; i++) {
        double s = 0.0;
        for (int k = m->rowptr[i]; k < m->rowptr[i + 1]; k++)
            s += m->val[k] * x[m->col[k]];
        y[i] = s;
        if ((i & 1023) == 0)
            wl_team_note();
    }
}

static double dot(const double *a, const double *b, int n, double *partial)
{
    const int nb = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nb; blk++) {
        const int end = (blk + 1) * BLOCK < n ? (blk + 1) * BLOCK : n;
        double s = 0.0;
        for (int i = blk * BLOCK; i < end; i++)
            s += a[i] * b[i];
        partial[blk] = s;
        wl_team_note();
    }
    double s = 0.0;
    for (int blk = 0; blk < nb; blk++)
        s += partial[blk];
    return s;
}

/* y += alpha * x */
static void axpy(double alpha, const double *x, double *y, int n)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        y[i] += alpha * x[i];
        if ((i & 4095) == 0)
            wl_team_note();
    }
}

/* p = r + beta * p */
static void xpby(const double *r, double beta, double *p, int n)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        p[i] = r[i] + beta * p[i];
        if ((i & 4095) == 0)
            wl_team_note();
    }
}

/* Solves A x = b from x = 0 with a fixed number of iterations. */
static void cg_solve(const struct csr *m, const double *b, double *x, int iters, double *r,
                     double *p, double *q, double *partial)
{
    const int n = m->n;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        x[i] = 0.0;
        r[i] = b[i];
        p[i] = b[i];
        if ((i & 4095) == 0)
            wl_team_note();
    }
    double rr = dot(r, r, n, partial);
    for (int it = 0; it < iters && rr > 0.0; it++) {
        spmv(m, p, q);
        const double alpha = rr / dot(p, q, n, partial);
        axpy(alpha, p, x, n);
        axpy(-alpha, q, r, n);
        const double rr_new = dot(r, r, n, partial);
        xpby(r, rr_new / rr, p, n);
        rr = rr_new;
    }
}

/* The exact solution of right-hand side number s; b = A x_true is formed
 * serially, outside OpenMP, so a faulty parallel kernel cannot agree with it. */
static double x_true(int s, int i)
{
    return 1.0 + wl_unit(wl_mix64(((uint64_t)s << 40) ^ (uint64_t)i));
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const int n = WL_PICK(args.size, 20000, 200000, 400000);
    const int solves = (int)wl_scaled(&args, WL_PICK(args.size, 3, 18, 36), 1, 1);
    const int per_row = 6; /* about 13 nonzeros per row after symmetrizing */
    const int iters = 40;
    const double tol = 1e-9;
    struct csr m;
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    double *r = malloc((size_t)n * sizeof *r), *p = malloc((size_t)n * sizeof *p);
    double *q = malloc((size_t)n * sizeof *q);
    double *partial = malloc(((size_t)n / BLOCK + 1) * sizeof *partial);
    if (csr_build(&m, n, per_row) != 0 || !b || !x || !r || !p || !q || !partial) {
        fprintf(stderr, "cg: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }

    uint64_t h = 0;
    double worst = 0.0, elapsed = 0.0;
    for (int s = 0; s < solves; s++) {
        for (int i = 0; i < n; i++) {
            double acc = 0.0;
            for (int k = m.rowptr[i]; k < m.rowptr[i + 1]; k++)
                acc += m.val[k] * x_true(s, m.col[k]);
            b[i] = acc;
        }
        double t0 = wl_clock_now();
        cg_solve(&m, b, x, iters, r, p, q, partial);
        elapsed += wl_clock_now() - t0;
        for (int i = 0; i < n; i++) {
            double err = fabs(x[i] - x_true(s, i)) / x_true(s, i);
            if (!(err <= worst)) /* also catches NaN */
                worst = err;
        }
        h = wl_hash_doubles(h, x, (size_t)n);
    }

    wl_checksum_print(h);
    printf("n=%d nnz=%d solves=%d iterations=%d max_rel_error=%.3e\n", n, m.rowptr[n], solves,
           iters, worst);
    free(m.rowptr);
    free(m.col);
    free(m.val);
    free(b);
    free(x);
    free(r);
    free(p);
    free(q);
    free(partial);
    return wl_result_print(spec.name, elapsed, worst <= tol);
}
