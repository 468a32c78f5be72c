/* gomp.h — what the GNU ABI adapter offers the LLVM one that shares its omp_* and GOMP_* wrappers in libscaf_omp.so. */
#ifndef SCAF_LAYER_GOMP_H
#define SCAF_LAYER_GOMP_H

/* Resolves the omp_* and GOMP_* entry points and starts the core, once; any thread, any time. */
void scaf_gomp_init(void);

#endif
