/* handshake.c — regions whose work items wait for each other, in the shapes real code has them: the stall net's and the evidence rule's test program. */
/*
 *   handshake SHAPE ROUNDS
 *
 * Each round opens one region of n work items in which every item marks its
 * arrival and then waits, calling sched_yield as OpenBLAS's drivers do, until
 * every other item of the round has arrived. SHAPE says how n is chosen:
 *
 *   items   n = omp_get_max_threads() read once outside, and a
 *           `parallel for schedule(static) num_threads(n)` over n items:
 *           one item a thread only while the team is n (OpenBLAS's exec_blas).
 *           Its calls are those of any static loop: the evidence cannot tell.
 *           Given fewer threads, one thread holds two items and never returns.
 *   team    n = omp_get_num_threads() inside the region, one item a thread:
 *           right for any team, and seen as such.
 *
 * Prints `round=R n=N team=T` per round and `done`. A first round of each
 * shape runs with every thread the program sees (the first look).
 */
#include <omp.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 256

static _Atomic int arrived[MAXN];

/* Item i of round r arrives, then waits until all n items of round r have. */
static void item(int i, int n, int r)
{
    atomic_store(&arrived[i], r);
    for (int j = 0; j < n; j++)
        while (atomic_load(&arrived[j]) < r)
            sched_yield();
}

int main(int argc, char **argv)
{
    const char *shape = argc > 1 ? argv[1] : "";
    int rounds = argc > 2 ? atoi(argv[2]) : 0;

    if ((strcmp(shape, "items") != 0 && strcmp(shape, "team") != 0) || rounds < 1) {
        fprintf(stderr, "usage: handshake items|team ROUNDS\n");
        return 2;
    }
    if (strcmp(shape, "items") == 0) {
        int n = omp_get_max_threads();

        if (n > MAXN)
            n = MAXN;
        for (int r = 1; r <= rounds; r++) {
            int team = 0;
#pragma omp parallel for schedule(static) num_threads(n)
            for (int i = 0; i < n; i++) {
                if (i == 0)
                    team = omp_get_num_threads();
                item(i, n, r);
            }
            printf("round=%d n=%d team=%d\n", r, n, team);
            fflush(stdout);
        }
    } else {
        for (int r = 1; r <= rounds; r++) {
            int team = 0;
#pragma omp parallel
            {
                int n = omp_get_num_threads();
                if (omp_get_thread_num() == 0)
                    team = n;
                item(omp_get_thread_num(), n > MAXN ? MAXN : n, r);
            }
            printf("round=%d n=%d team=%d\n", r, team, team);
            fflush(stdout);
        }
    }
    printf("done\n");
    return 0;
}
