/* bound.c — the largest team a program could have seen, and its affinity mask at startup. */
#include "bound.h"

#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

/* Written in the constructor, and once more when the program starts with its share (another thread may be
 * reading it for a HELLO then): relaxed, one word. */
static _Atomic unsigned bound_threads = 1;
static cpu_set_t bound_affinity;

/*
 * Runs in the layer's constructor, after the OpenMP runtime's own constructor
 * (the runtime is our DT_NEEDED, so it is initialised first) and before any
 * program code can call omp_set_num_threads. The adapter's real
 * omp_get_max_threads() then returns the initial nthreads-var: the first value
 * of OMP_NUM_THREADS, else the number of CPUs in the affinity mask. That is exactly what the program could see, so no
 * steered team may exceed it (programs size per-thread arrays from it).
 */
void scaf_bound_init(int max_threads)
{
    int n = max_threads;

    CPU_ZERO(&bound_affinity);
    if (sched_getaffinity(0, sizeof bound_affinity, &bound_affinity) != 0 ||
        CPU_COUNT(&bound_affinity) == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);

        CPU_ZERO(&bound_affinity);
        for (long i = 0; i < cpus && i < CPU_SETSIZE; i++)
            CPU_SET((int)i, &bound_affinity);
    }
    if (n < 1)
        n = CPU_COUNT(&bound_affinity);
    if (n < 1)
        n = 1;
    atomic_store_explicit(&bound_threads, (unsigned)n, memory_order_relaxed);
}

void scaf_bound_start(unsigned team)
{
    if (team >= 1 && team < atomic_load_explicit(&bound_threads, memory_order_relaxed))
        atomic_store_explicit(&bound_threads, team, memory_order_relaxed);
}

unsigned scaf_bound_threads(void)
{
    return atomic_load_explicit(&bound_threads, memory_order_relaxed);
}

const cpu_set_t *scaf_bound_affinity(void)
{
    return &bound_affinity;
}
