/* pertd.c — reads omp_get_max_threads() once, sizes per-thread buffers by it and numbers its threads (data.table's and XGBoost's shape): a program that keeps its team. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * pertd ROUNDS [STOP]: ROUNDS rounds, then more until the file STOP exists.
 * Prints `max=N env=V procs=P` first (N: omp_get_max_threads() before any
 * region; V: OMP_NUM_THREADS as the program sees it right after, "unset" when
 * unset; P: omp_get_num_procs() after both, as data.table's setDTthreads(0)
 * asks it after its package loaded),
 * then `teams=a,b,...` (every team size a region ran with), a checksum that
 * does not depend on the teams, and `done`. A team larger than N would write
 * past the buffers: it says `overflow` and exits 3 instead.
 */

#define ITEMS 20000

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 10;
    const char *stop = argc > 2 ? argv[2] : NULL;
    int n = omp_get_max_threads();
    const char *env = getenv("OMP_NUM_THREADS");
    unsigned long long *part = calloc((size_t)n, sizeof *part), total = 0;
    unsigned long teams = 0;
    int overflow = 0;
    struct stat st;

    printf("max=%d env=%s procs=%d\n", n, env ? env : "unset", omp_get_num_procs());
    fflush(stdout);
    if (!part)
        return 2;
    for (long r = 0; r < rounds || (stop && stat(stop, &st) != 0); r++) {
#pragma omp parallel
        {
            int t = omp_get_thread_num(), nt = omp_get_num_threads();

            if (t == 0)
                __atomic_fetch_or(&teams, 1ul << (nt < 63 ? nt : 63), __ATOMIC_RELAXED);
            /* The same for every thread of the team: a worksharing loop is met by all of them or none. */
            if (nt > n) {
                __atomic_store_n(&overflow, 1, __ATOMIC_RELAXED);
            } else {
#pragma omp for schedule(dynamic, 64)
                for (long i = 0; i < ITEMS; i++)
                    part[t] += (unsigned long long)(i * 7 + r) % 1009;
            }
        }
        if (stop && r >= rounds)
            usleep(2000);
    }
    if (overflow) {
        printf("overflow\n");
        return 3;
    }
    /* Integer sums: the same total for any split of the items between threads, over the rounds asked. */
    for (int t = 0; t < n; t++)
        total += part[t];
    printf("teams=");
    for (int k = 1, first = 1; k < 64; k++)
        if (teams & (1ul << k)) {
            printf("%s%d", first ? "" : ",", k);
            first = 0;
        }
    printf("\nchecksum=%llu\ndone\n", rounds > 0 && !stop ? total : 0ull);
    return 0;
}
