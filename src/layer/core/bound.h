/* bound.h — the largest team a program could have seen, and its affinity mask at startup. */
#ifndef SCAF_LAYER_BOUND_H
#define SCAF_LAYER_BOUND_H

#include <sched.h>

/*
 * Call once, early, with the runtime's initial nthreads-var (what its
 * omp_get_max_threads() returns before program code ran; < 1 when unknown:
 * the CPUs of the affinity mask then).
 */
void scaf_bound_init(int max_threads);

/*
 * The program starts with its share (client/start.c): `team` is its
 * nthreads-var from now on, as if OMP_NUM_THREADS had said so, and the bound
 * the HELLO of a reconnect carries. Only ever lowers the bound.
 */
void scaf_bound_start(unsigned team);

unsigned scaf_bound_threads(void);          /* initial nthreads-var (or the start team), >= 1 */
const cpu_set_t *scaf_bound_affinity(void); /* affinity mask at startup */

#endif
