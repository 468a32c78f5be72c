/* blascount.c — the count a BLAS library is answered when it reads omp_get_max_threads(), and the team it then asks for, per thread. */
#include "blascount.h"

#include <stdatomic.h>
#include <stddef.h>

#include "blasobj.h"
#include "page.h"
#include "say.h"
#include "settings.h"

/* ---- the count, per thread ---- */

/* The count answered to a BLAS library on this thread (0: none), and whether its echo is still to come. */
static _Thread_local unsigned answered;
static _Thread_local int echo_pending;

int scaf_blascount_answer(int real)
{
    struct scaf_page *p = scaf_page_get();
    int n = real;

    if (p && scaf_settings.blas) {
        unsigned share = scaf_page_threads(p);

        if (share < 1)
            share = 1;
        if ((unsigned)real > share)
            n = (int)share;
    }
    answered = n > 0 ? (unsigned)n : 0;
    if (scaf_layer_verbose) {
        static _Atomic int said;

        if (atomic_exchange_explicit(&said, n, memory_order_relaxed) != n)
            scaf_layer_log("a BLAS library reads its count: %d (the runtime's is %d)", n, real);
    }
    /* OpenBLAS passes a count it reads on to the runtime only when it differs from its own, and returns at once
     * on 1 without doing so (common_thread.h, num_cpu_avail). */
    echo_pending = n > 1;
    return n;
}

int scaf_blascount_echo(int n, const void *caller)
{
    if (!echo_pending || n < 1 || (unsigned)n != answered)
        return 0;
    if (scaf_blasobj_of(caller, NULL) == SCAF_BLASOBJ_NONE)
        return 0;
    echo_pending = 0;
    return 1;
}

unsigned scaf_blascount_asked(const int *cpu_number)
{
    unsigned t = answered;

    echo_pending = 0;
    if (cpu_number) {
        /* Another thread of the program may have set the library's count since this thread's call split its
         * work by it (a plain int, read as OpenBLAS reads it): the larger of the two covers every item. */
        int c = __atomic_load_n(cpu_number, __ATOMIC_RELAXED);

        if (c > 0 && (unsigned)c > t)
            t = (unsigned)c;
    }
    return t;
}
