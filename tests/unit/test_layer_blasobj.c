/* test_layer_blasobj.c — which loaded objects belong to a BLAS library: the symbol rules row by row, then real objects (Debian's OpenMP OpenBLAS where installed). */
#include "../../src/layer/core/blasobj.h"

#include <dlfcn.h>
#include <stdio.h>

#include "check.h"

static const struct {
    const char *name;
    int defined, kind;
} rows[] = {
    /* OpenBLAS's identity, defined: the library itself (plain, Fortran-suffixed, scipy-openblas renamed). */
    {"openblas_get_parallel", 1, SCAF_BLASOBJ_OPENBLAS},
    {"openblas_get_parallel_", 1, SCAF_BLASOBJ_OPENBLAS},
    {"scipy_openblas_get_parallel64_", 1, SCAF_BLASOBJ_OPENBLAS},
    /* ... and only referred to: a program that asks OpenBLAS's parallel mode is not OpenBLAS. */
    {"openblas_get_parallel", 0, SCAF_BLASOBJ_NONE},
    /* OpenBLAS's internal count, referred to: its own interface objects (libblas.so.3, liblapack.so.3). */
    {"blas_cpu_number", 0, SCAF_BLASOBJ_OPENBLAS},
    {"goto_set_num_threads", 0, SCAF_BLASOBJ_OPENBLAS},
    {"goto_set_num_threads64_", 0, SCAF_BLASOBJ_OPENBLAS},
    {"scipy_blas_cpu_number", 0, SCAF_BLASOBJ_OPENBLAS},
    {"blas_cpu_number", 1, SCAF_BLASOBJ_OPENBLAS},
    /* BLIS and MKL, defined. */
    {"bli_thread_set_num_threads", 1, SCAF_BLASOBJ_BLIS},
    {"bli_init", 1, SCAF_BLASOBJ_BLIS},
    {"bli_thread_set_num_threads", 0, SCAF_BLASOBJ_NONE},
    {"mkl_blas_dgemm", 1, SCAF_BLASOBJ_MKL},
    {"MKL_Set_Num_Threads", 1, SCAF_BLASOBJ_MKL},
    {"MKL_Set_Num_Threads", 0, SCAF_BLASOBJ_NONE},
    /* What every program has: BLAS entry points it calls, OpenMP, libc. */
    {"dgemm_", 0, SCAF_BLASOBJ_NONE},
    {"dgemm_", 1, SCAF_BLASOBJ_NONE},
    {"cblas_dgemm", 0, SCAF_BLASOBJ_NONE},
    {"omp_get_max_threads", 0, SCAF_BLASOBJ_NONE},
    {"GOMP_parallel", 0, SCAF_BLASOBJ_NONE},
    {"openblas", 1, SCAF_BLASOBJ_NONE},
    {"blas_cpu_numbers", 0, SCAF_BLASOBJ_NONE},
    {"mk", 1, SCAF_BLASOBJ_NONE},
    {"", 1, SCAF_BLASOBJ_NONE},
    {NULL, 1, SCAF_BLASOBJ_NONE},
};

/* A real object by soname: its kind from one of its functions, and whether it gave OpenBLAS's count. */
static void object(const char *soname, const char *fn, int want, int want_count)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    const int *count = (const int *)1;
    void *f;
    int kind;

    if (!h) {
        printf("test_layer_blasobj: %s not installed: skipped\n", soname);
        return;
    }
    f = dlsym(h, fn);
    CHECK(f != NULL, "%s has no %s", soname, fn);
    if (f) {
        kind = scaf_blasobj_of(f, &count);
        CHECK(kind == want, "%s (%s): kind %d, want %d", soname, fn, kind, want);
        CHECK((count != NULL) == want_count, "%s: blas_cpu_number %s", soname, count ? "found" : "not found");
        /* Cached now: the same answer without the loader. */
        CHECK(scaf_blasobj_of(f, NULL) == want, "%s: cached kind differs", soname);
    }
    /* Kept open: a plain dlclose here (the layer interposes the program's) would leave the cache with a range
     * that the next object may be mapped at. */
}

static void own_code(void) {}

int main(void)
{
    const int *count = (const int *)1;

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int k = scaf_blasobj_symbol_kind(rows[i].name, rows[i].defined);
        CHECK(k == rows[i].kind, "%s (%s): kind %d, want %d", rows[i].name ? rows[i].name : "(null)",
              rows[i].defined ? "defined" : "referred to", k, rows[i].kind);
    }
    /* The test's own code, libc, and an address no object holds. */
    CHECK(scaf_blasobj_of((const void *)own_code, &count) == SCAF_BLASOBJ_NONE && count == NULL, "own code");
    CHECK(scaf_blasobj_of((const void *)printf, NULL) == SCAF_BLASOBJ_NONE, "libc");
    CHECK(scaf_blasobj_of((const void *)16, NULL) == SCAF_BLASOBJ_NONE, "no object");
    /* Debian's OpenMP OpenBLAS (the corpus installs libopenblas0-openmp): the library defines blas_cpu_number;
     * its interface objects refer to it and are OpenBLAS's too. */
    object("libopenblas.so.0", "exec_blas", SCAF_BLASOBJ_OPENBLAS, 1);
    object("libblas.so.3", "dgemm_", SCAF_BLASOBJ_OPENBLAS, 0);
    object("libgomp.so.1", "GOMP_parallel", SCAF_BLASOBJ_NONE, 0);
    /* Forgotten when unloaded: nothing cached answers for the range any more (the loader may map another object
     * there). */
    scaf_blasobj_forget_range(0, UINTPTR_MAX);
    CHECK(scaf_blasobj_of((const void *)own_code, NULL) == SCAF_BLASOBJ_NONE, "own code again");
    return check_exit("test_layer_blasobj");
}
