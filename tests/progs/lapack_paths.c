/* lapack_paths.c — a program that reaches the threaded level-3 BLAS and LAPACK paths (dgemv, dgemm, dsyrk, dtrsm, dpotrf, dgetrf, dsyevd) through whatever libblas.so.3 and liblapack.so.3 the system links, and prints what it computed. */
/*
 * Built by the tests as a Debian scientific program is: `gcc lapack_paths.c -llapack -lblas`, so that the
 * library is the one the alternatives system chose (libopenblas0-openmp in the corpus). Every routine runs
 * on matrices large enough to go parallel in OpenBLAS (its level-3 drivers split past a few hundred rows),
 * and each result is checked by a residual that does not depend on the thread count. The printed checksums
 * are rounded to 10 significant digits: OpenBLAS's results differ in the last bits between thread counts,
 * as OPENBLAS_NUM_THREADS would make them differ, and the tests compare them with a relative tolerance.
 *
 * Built with -DSCIPY_OPENBLAS64 instead, it calls the OpenBLAS that numpy's wheels bundle
 * (numpy.libs/libscipy_openblas64_-*.so: 64-bit integers, every name as scipy_NAME_64_), a pthread build.
 *
 *   lapack_paths [N [ROUNDS [UNTIL]]]   N: the order of the matrices (default 1200); ROUNDS: repetitions
 *                                       (default 2); UNTIL: a path: after ROUNDS, go on until it exists
 *
 * Output: one line per routine and round, `ROUTINE round=R ok=1 sum=S`, then `done`. Exit 1 when a residual
 * is out of bounds.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef SCIPY_OPENBLAS64
typedef long long blasint;
#define F(name) scipy_##name##_64_
#else
typedef int blasint;
#define F(name) name##_
#endif
#define dgemv_ F(dgemv)
#define dgemm_ F(dgemm)
#define dsyrk_ F(dsyrk)
#define dtrsm_ F(dtrsm)
#define dpotrf_ F(dpotrf)
#define dgetrf_ F(dgetrf)
#define dsyevd_ F(dsyevd)

extern void dgemm_(const char *ta, const char *tb, const blasint *m, const blasint *n, const blasint *k, const double *alpha,
                   const double *a, const blasint *lda, const double *b, const blasint *ldb, const double *beta, double *c,
                   const blasint *ldc);
extern void dgemv_(const char *t, const blasint *m, const blasint *n, const double *alpha, const double *a, const blasint *lda,
                   const double *x, const blasint *incx, const double *beta, double *y, const blasint *incy);
extern void dsyrk_(const char *uplo, const char *trans, const blasint *n, const blasint *k, const double *alpha,
                   const double *a, const blasint *lda, const double *beta, double *c, const blasint *ldc);
extern void dtrsm_(const char *side, const char *uplo, const char *transa, const char *diag, const blasint *m,
                   const blasint *n, const double *alpha, const double *a, const blasint *lda, double *b, const blasint *ldb);
extern void dpotrf_(const char *uplo, const blasint *n, double *a, const blasint *lda, blasint *info);
extern void dgetrf_(const blasint *m, const blasint *n, double *a, const blasint *lda, blasint *ipiv, blasint *info);
extern void dsyevd_(const char *jobz, const char *uplo, const blasint *n, double *a, const blasint *lda, double *w,
                    double *work, const blasint *lwork, blasint *iwork, const blasint *liwork, blasint *info);

/* A fixed pseudo-random fill: the same matrices in every run. */
static void fill(double *a, size_t len, unsigned seed)
{
    unsigned long long x = 0x9e3779b97f4a7c15ull ^ seed;

    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        a[i] = (double)(x >> 11) / 9007199254740992.0 - 0.5;
    }
}

static double sum(const double *a, size_t len)
{
    double s = 0;

    for (size_t i = 0; i < len; i++)
        s += a[i];
    return s;
}

static double maxabs(const double *a, size_t len)
{
    double m = 0;

    for (size_t i = 0; i < len; i++)
        if (fabs(a[i]) > m)
            m = fabs(a[i]);
    return m;
}

static int report(const char *what, int round, int ok, double s)
{
    printf("%s round=%d ok=%d sum=%.9e\n", what, round, ok, s);
    fflush(stdout);
    return ok;
}

int main(int argc, char **argv)
{
    blasint n = argc > 1 ? atoi(argv[1]) : 1200, info = 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 2, bad = 0;
    const char *until = argc > 3 ? argv[3] : NULL;
    size_t nn;
    double *a, *b, *c, *s, *w, one = 1.0, zero = 0.0, minus = -1.0, wq;
    blasint *ipiv, *iwork, lwork = -1, liwork = -1, iq;

    if (n < 8 || rounds < 1) {
        fprintf(stderr, "usage: lapack_paths [N >= 8 [ROUNDS >= 1 [UNTIL]]]\n");
        return 2;
    }
    nn = (size_t)n * (size_t)n;
    a = malloc(nn * sizeof *a);
    b = malloc(nn * sizeof *b);
    c = malloc(nn * sizeof *c);
    s = malloc(nn * sizeof *s);
    w = malloc((size_t)n * sizeof *w);
    ipiv = malloc((size_t)n * sizeof *ipiv);
    if (!a || !b || !c || !s || !w || !ipiv) {
        fprintf(stderr, "lapack_paths: out of memory\n");
        return 2;
    }
    for (int r = 0; r < rounds || (until && access(until, F_OK) != 0); r++) {
        /* dgemv first: its threaded items never wait for each other, so a region site judged on it alone
         * looks like any other; the level-3 drivers below share the same site and do wait */
        fill(a, nn, 1);
        fill(b, nn, 2);
        {
            blasint inc = 1;
            dgemv_("N", &n, &n, &one, a, &n, b, &inc, &zero, w, &inc);
            dgemv_("T", &n, &n, &one, a, &n, w, &inc, &zero, c, &inc);
            bad |= !report("dgemv", r, isfinite(sum(c, (size_t)n)), sum(c, (size_t)n));
        }

        /* dgemm: C = A B */
        dgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n);
        bad |= !report("dgemm", r, isfinite(sum(c, nn)), sum(c, nn));

        /* dsyrk: S = A A^T + n I (upper), symmetric positive definite for the factorisations below */
        memset(s, 0, nn * sizeof *s);
        dsyrk_("U", "N", &n, &n, &one, a, &n, &zero, s, &n);
        for (blasint i = 0; i < n; i++)
            s[(size_t)i * n + i] += n;
        for (blasint j = 0; j < n; j++) /* mirror the upper triangle: a full symmetric matrix */
            for (blasint i = j + 1; i < n; i++)
                s[(size_t)j * n + i] = s[(size_t)i * n + j];
        bad |= !report("dsyrk", r, isfinite(sum(s, nn)), sum(s, nn));

        /* dpotrf: S = U^T U; residual through dtrsm: U^{-T} S U^{-1} should be I */
        memcpy(c, s, nn * sizeof *c);
        dpotrf_("U", &n, c, &n, &info);
        if (info != 0) {
            fprintf(stderr, "lapack_paths: dpotrf info=%d\n", (int)info);
            return 1;
        }
        for (blasint j = 0; j < n; j++)
            for (blasint i = j + 1; i < n; i++)
                c[(size_t)j * n + i] = 0; /* the strict lower triangle is not U's */
        memcpy(b, s, nn * sizeof *b);
        dtrsm_("L", "U", "T", "N", &n, &n, &one, c, &n, b, &n);
        dtrsm_("R", "U", "N", "N", &n, &n, &one, c, &n, b, &n);
        for (blasint i = 0; i < n; i++)
            b[(size_t)i * n + i] -= 1.0;
        bad |= !report("dpotrf", r, maxabs(b, nn) < 1e-8, sum(c, nn));
        bad |= !report("dtrsm", r, maxabs(b, nn) < 1e-8, maxabs(b, nn) < 1e-8 ? 0.0 : maxabs(b, nn));

        /* dgetrf: P A = L U; residual: L U - P A through dgemm */
        fill(a, nn, 3);
        memcpy(c, a, nn * sizeof *c);
        dgetrf_(&n, &n, c, &n, ipiv, &info);
        if (info != 0) {
            fprintf(stderr, "lapack_paths: dgetrf info=%d\n", (int)info);
            return 1;
        }
        {
            double *l = b, *u = s;

            for (blasint j = 0; j < n; j++)
                for (blasint i = 0; i < n; i++) {
                    double v = c[(size_t)j * n + i];
                    l[(size_t)j * n + i] = i > j ? v : i == j ? 1.0 : 0.0;
                    u[(size_t)j * n + i] = i <= j ? v : 0.0;
                }
            for (blasint i = 0; i < n; i++) { /* apply the row swaps to A, in order */
                blasint p = ipiv[i] - 1;
                if (p != i)
                    for (blasint j = 0; j < n; j++) {
                        double t = a[(size_t)j * n + i];
                        a[(size_t)j * n + i] = a[(size_t)j * n + p];
                        a[(size_t)j * n + p] = t;
                    }
            }
            dgemm_("N", "N", &n, &n, &n, &one, l, &n, u, &n, &minus, a, &n);
            bad |= !report("dgetrf", r, maxabs(a, nn) < 1e-9 * n, sum(c, nn));
        }

        /* dsyevd: the eigenvalues of S (a smaller order: it is the slowest routine here) */
        {
            blasint m = n / 2 > 8 ? n / 2 : 8;
            double trace = 0, wsum;

            fill(a, (size_t)m * m, 4);
            for (blasint j = 0; j < m; j++) /* a symmetric matrix: A + A^T */
                for (blasint i = 0; i < m; i++)
                    c[(size_t)j * m + i] = a[(size_t)j * m + i] + a[(size_t)i * m + j];
            for (blasint i = 0; i < m; i++)
                trace += c[(size_t)i * m + i];
            lwork = liwork = -1;
            dsyevd_("V", "U", &m, c, &m, w, &wq, &lwork, &iq, &liwork, &info);
            lwork = (int)wq;
            liwork = iq;
            {
                double *work = malloc((size_t)lwork * sizeof *work);
                iwork = malloc((size_t)liwork * sizeof *iwork);
                if (!work || !iwork) {
                    fprintf(stderr, "lapack_paths: out of memory\n");
                    return 2;
                }
                dsyevd_("V", "U", &m, c, &m, w, work, &lwork, iwork, &liwork, &info);
                free(work);
                free(iwork);
            }
            if (info != 0) {
                fprintf(stderr, "lapack_paths: dsyevd info=%d\n", (int)info);
                return 1;
            }
            wsum = sum(w, (size_t)m);
            bad |= !report("dsyevd", r, fabs(wsum - trace) < 1e-8 * m, wsum);
        }
    }
    printf("done\n");
    free(a);
    free(b);
    free(c);
    free(s);
    free(w);
    free(ipiv);
    return bad ? 1 : 0;
}
