/* skewed.c — one OpenMP region site whose instances differ fortyfold in size (a tree builder's histogram per node), or the same work in equal instances, for the estimator's tests. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * With --skewed, one instance in eight (by a hash of its number) is LARGE blocks
 * and the others SMALL; without, every instance is the mean of those, so both
 * runs do the same work in the same number of instances. Instance 1, the one
 * a site's first serial baseline is taken from, is small.
 */
#define SMALL 8
#define LARGE 320
#define EQUAL ((7 * SMALL + LARGE) / 8)

static uint64_t step(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int large(uint64_t k)
{
    return k != 1 && step(k * 0x9e3779b97f4a7c15ull) % 8 == 0;
}

/* Blocks of 1000 dependent steps: pure computation, the same sum for any team. */
static uint64_t region(long blocks)
{
    uint64_t s = 0;

#pragma omp parallel for schedule(static) reduction(+ : s)
    for (long b = 0; b < blocks; b++) {
        uint64_t x = (uint64_t)b;
        for (int k = 0; k < 1000; k++)
            x = step(x + (uint64_t)k);
        s += x & 0xff;
    }
    return s;
}

int main(int argc, char **argv)
{
    long regions = 1000;
    int skewed = 0;
    const char *until = NULL;
    uint64_t sum = 0, k;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--regions") == 0 && i + 1 < argc)
            regions = atol(argv[++i]);
        else if (strcmp(argv[i], "--skewed") == 0)
            skewed = 1;
        else if (strcmp(argv[i], "--until") == 0 && i + 1 < argc)
            until = argv[++i];
        else {
            fprintf(stderr, "usage: skewed [--skewed] [--regions R] [--until PATH]\n");
            return 2;
        }
    }
    /* --until: past the regions, on until PATH exists (checked every 256 instances). */
    for (k = 0; k < (uint64_t)regions || (until && (k % 256 || access(until, F_OK) != 0)); k++)
        sum += region(skewed ? (large(k) ? LARGE : SMALL) : EQUAL);
    printf("regions=%llu checksum=%llu\n", (unsigned long long)k, (unsigned long long)sum);
    return 0;
}
