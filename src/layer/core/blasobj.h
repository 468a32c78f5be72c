/* blasobj.h — which loaded objects belong to a BLAS library, read from their dynamic symbol tables: such a library's OpenMP regions keep the team they ask for. */
#ifndef SCAF_LAYER_BLASOBJ_H
#define SCAF_LAYER_BLASOBJ_H

#include <stdint.h>

/*
 * Why (docs/layer.md, "BLAS libraries built with OpenMP"): OpenBLAS's
 * exec_blas hands `num` work items to a parallel loop, one item a thread, and
 * its level-3 drivers make each item wait for flags that other items set. A
 * team smaller than `num` runs two items on one thread, one after the other,
 * and the first waits forever for the second. So a region whose code lies in
 * a BLAS library is never given fewer threads than it asked for; the library
 * is steered *between* calls instead, through the count it reads before it
 * splits its work (OpenBLAS reads omp_get_max_threads() at every call).
 */

enum scaf_blasobj_kind {
    SCAF_BLASOBJ_NONE = 0,     /* not a BLAS library's code */
    SCAF_BLASOBJ_OPENBLAS = 1, /* OpenBLAS, or an interface object of it (Debian's libblas.so.3, liblapack.so.3) */
    SCAF_BLASOBJ_BLIS = 2,
    SCAF_BLASOBJ_MKL = 3,
};

/*
 * What one dynamic symbol says of the object that has it (`defined`: the
 * object defines it; otherwise it only refers to it): enum scaf_blasobj_kind,
 * NONE when the symbol says nothing. Pure (tests/unit/test_layer_blasobj.c).
 * An object belongs to a BLAS library when it defines a library's identity
 * (openblas_get_parallel, BLIS's bli_thread_set_num_threads, MKL's mkl_*), or
 * refers to OpenBLAS's internal count (blas_cpu_number, goto_set_num_threads),
 * as only OpenBLAS's own interface objects do.
 */
int scaf_blasobj_symbol_kind(const char *name, int defined);

/* The library name of a kind, for messages ("OpenBLAS", "BLIS", "MKL"; "" for NONE). */
const char *scaf_blasobj_kind_name(int kind);

/*
 * The kind of the loaded object whose code holds `addr` (NONE when no object
 * holds it). Cached per object (up to 64) and lock-free once cached: the
 * omp_* wrappers ask it for their caller. `cpu_number`, when not NULL, gets
 * the address of OpenBLAS's blas_cpu_number where that object defines it
 * (NULL otherwise). Never calls dlopen or dlsym: safe inside a loader lock.
 */
int scaf_blasobj_of(const void *addr, const int **cpu_number);

/* The cached objects whose code overlaps [lo, hi) are forgotten: that code was unloaded (dlclose). */
void scaf_blasobj_forget_range(uintptr_t lo, uintptr_t hi);

#endif
