/* blascount.h — the count a BLAS library is answered when it reads omp_get_max_threads(), and the team it then asks for, per thread. */
#ifndef SCAF_LAYER_BLASCOUNT_H
#define SCAF_LAYER_BLASCOUNT_H

/*
 * A BLAS library built with OpenMP is steered between calls, never inside one
 * (core/blasobj.h says why): OpenBLAS reads omp_get_max_threads() at every
 * call (common_thread.h, num_cpu_avail), splits its work into that many
 * items, passes a new count on with omp_set_num_threads() and opens a region
 * without a clause. The layer answers that read with the program's share,
 * keeps the pass-on from the runtime, and gives the region the team the
 * library asked for.
 */

/*
 * The count a BLAS library gets from omp_get_max_threads() outside any
 * region: the program's share (the page's threads) when connected and
 * SCAF_BLAS is on, never more than `real` (what the runtime returns); `real`
 * otherwise. Remembers it for this thread (scaf_blascount_echo, scaf_blascount_asked).
 */
int scaf_blascount_answer(int real);

/*
 * Nonzero when an omp_set_num_threads(n) from `caller` is OpenBLAS passing
 * the count it was just answered on to the runtime (goto_set_num_threads):
 * the layer keeps it from the runtime, so that the program's own nthreads-var
 * stays what it would be without scaf, and remembers it as the team the
 * library asks for.
 */
int scaf_blascount_echo(int n, const void *caller);

/*
 * The team a BLAS library asks for on this thread with a region that has no
 * num_threads clause: the larger of the count last answered it here and its
 * own blas_cpu_number (`cpu_number`, may be NULL); 0 when neither is known
 * (the runtime's own count then). Clears the pending echo.
 */
unsigned scaf_blascount_asked(const int *cpu_number);

#endif
