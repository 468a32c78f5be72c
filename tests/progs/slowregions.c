/* slowregions.c — OpenMP regions of a chosen length in iterations (first one optionally longer), for experiment and long-region tests. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
    long regions = 4, iters = 1000000, first = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--regions") == 0 && i + 1 < argc)
            regions = atol(argv[++i]);
        else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
            iters = atol(argv[++i]);
        else if (strcmp(argv[i], "--first-iters") == 0 && i + 1 < argc)
            first = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: slowregions [--regions R] [--iters N] [--first-iters N]\n");
            return 2;
        }
    }
    uint64_t sum = 0;
    for (long r = 0; r < regions; r++) {
        sum += region(r == 0 && first > 0 ? first : iters);
        printf("region=%ld\n", r);
        fflush(stdout);
    }
    printf("checksum=%llu\n", (unsigned long long)sum);
    return 0;
}
