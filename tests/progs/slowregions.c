/* slowregions.c — OpenMP regions of a chosen length in iterations (the first one optionally longer, or held until a file exists, or preceded by serial work held until one does), for experiment, long-region and turn tests. */
#include <omp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A little integer hashing per iteration: pure computation, no syscalls, same result for any team. */
static uint64_t step(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static uint64_t region(long iters)
{
    uint64_t s = 0;

    /* Blocks of 1000 dependent steps: not vectorisable, and the sum does not depend on the team. */
#pragma omp parallel reduction(+ : s)
    {
#pragma omp for schedule(static)
        for (long b = 0; b < iters / 1000; b++) {
            uint64_t x = (uint64_t)b;
            for (int k = 0; k < 1000; k++)
                x = step(x + (uint64_t)k);
            s += x & 0xff;
        }
    }
    return s;
}

/* The first region of --hold: every thread hashes blocks until thread 0 sees the file. A region of
 * whatever length the test needs, on any machine; its sum depends on that length, so it is kept out of
 * the checksum. */
static void held_region(const char *path)
{
    _Atomic int done = 0;

#pragma omp parallel
    {
        uint64_t x = 0;
        long blocks = 0;
        while (!atomic_load_explicit(&done, memory_order_relaxed)) {
            for (int k = 0; k < 1000; k++)
                x = step(x + (uint64_t)k);
            if (omp_get_thread_num() == 0 && ++blocks % 64 == 0 && access(path, F_OK) == 0)
                atomic_store_explicit(&done, 1, memory_order_relaxed);
        }
        if (x == 42)
            fprintf(stderr, "slowregions: a lucky hash\n");
    }
}

/* --serial-hold, --serial-blocks: a program's start before its first region (an interpreter's imports): one
 * thread busy until the file exists, or for that many blocks, after OpenMP was touched, so that the layer has
 * connected. */
static void serial_until(const char *path, long nblocks)
{
    uint64_t x = 0;

    for (long blocks = 1;; blocks++) {
        for (int k = 0; k < 1000; k++)
            x = step(x + (uint64_t)k);
        if (path ? blocks % 64 == 0 && access(path, F_OK) == 0 : blocks >= nblocks)
            break;
    }
    if (x == 42)
        fprintf(stderr, "slowregions: a lucky hash\n");
}

int main(int argc, char **argv)
{
    long regions = 4, iters = 1000000, first = 0, serial_blocks = 0;
    const char *hold = NULL, *serial = NULL;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--regions") == 0 && i + 1 < argc)
            regions = atol(argv[++i]);
        else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
            iters = atol(argv[++i]);
        else if (strcmp(argv[i], "--first-iters") == 0 && i + 1 < argc)
            first = atol(argv[++i]);
        else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc)
            hold = argv[++i];
        else if (strcmp(argv[i], "--serial-hold") == 0 && i + 1 < argc)
            serial = argv[++i];
        else if (strcmp(argv[i], "--serial-blocks") == 0 && i + 1 < argc)
            serial_blocks = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: slowregions [--regions R] [--iters N] [--first-iters N | --hold PATH] "
                            "[--serial-hold PATH | --serial-blocks N]\n");
            return 2;
        }
    }
    if (serial || serial_blocks > 0) {
        double t0;

        printf("max_threads=%d\n", omp_get_max_threads());
        fflush(stdout);
        t0 = omp_get_wtime();
        serial_until(serial, serial_blocks);
        printf("serial_s=%.4f\n", omp_get_wtime() - t0);
        fflush(stdout);
    }
    uint64_t sum = 0;
    for (long r = 0; r < regions; r++) {
        if (r == 0 && hold) {
            held_region(hold);
            printf("region=0 held\n");
            fflush(stdout);
            continue;
        }
        sum += region(r == 0 && first > 0 ? first : iters);
        printf("region=%ld\n", r);
        fflush(stdout);
    }
    printf("checksum=%llu\n", (unsigned long long)sum);
    return 0;
}
