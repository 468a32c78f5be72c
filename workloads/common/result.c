/* result.c — timing, team-size tracking and the result lines every workload prints. */
#include "result.h"

#include <inttypes.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

static _Atomic int max_team;

double wl_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void wl_team_note(void)
{
    wl_team_note_size(omp_get_num_threads());
}

void wl_team_note_size(int n)
{
    /* Read first: after the first region this is a read of a shared line. */
    int cur = atomic_load_explicit(&max_team, memory_order_relaxed);
    while (n > cur &&
           !atomic_compare_exchange_weak_explicit(&max_team, &cur, n, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

int wl_team_max(void)
{
    return atomic_load_explicit(&max_team, memory_order_relaxed);
}

void wl_checksum_print(uint64_t checksum)
{
    printf("checksum=%016" PRIx64 "\n", checksum);
}

int wl_result_print(const char *name, double seconds, int verified)
{
    printf("name=%s threads=%d time_s=%.6f verified=%s\n", name, wl_team_max(), seconds,
           verified ? "yes" : "no");
    fflush(stdout);
    return verified ? 0 : 1;
}
