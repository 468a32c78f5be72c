/* bigheap.c — an OpenMP program with a large touched heap whose regions write all of it: forks under experiments must cope. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    size_t mib = 1024, regions = 6;
    int times = 0;
    const size_t page = 4096;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--heap-mib") == 0 && i + 1 < argc)
            mib = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--regions") == 0 && i + 1 < argc)
            regions = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--times") == 0)
            times = 1;
        else {
            fprintf(stderr, "usage: bigheap [--heap-mib N] [--regions R] [--times]\n");
            return 2;
        }
    }
    size_t bytes = mib << 20, pages = bytes / page;
    unsigned char *heap = malloc(bytes);
    if (!heap || pages == 0) {
        fprintf(stderr, "bigheap: cannot allocate %zu MiB\n", mib);
        return 1;
    }
    memset(heap, 1, bytes);

    uint64_t sum = 0;
    for (size_t r = 0; r < regions; r++) {
        uint64_t t0 = now_ns(), s = 0;
        /* Every page is written once per region: after a fork, each write is a copy-on-write fault. */
#pragma omp parallel reduction(+ : s)
        {
#pragma omp for schedule(static)
            for (size_t p = 0; p < pages; p++) {
                unsigned char *b = heap + p * page;
                b[0] = (unsigned char)(b[0] + 1);
                for (size_t k = 0; k < page; k += 256)
                    s += b[k];
            }
        }
        sum += s;
        if (times)
            printf("region=%zu ns=%llu\n", r, (unsigned long long)(now_ns() - t0));
    }
    printf("checksum=%llu\n", (unsigned long long)sum);
    free(heap);
    return 0;
}
