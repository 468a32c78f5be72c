// tbb_omp.cpp — one process with oneTBB and OpenMP (libgomp): each round a TBB parallel_for, then an OpenMP region; prints the threads each used and an exact result.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <omp.h>

#include <vector>

#include "tbb_probe.h"

int main(int argc, char **argv)
{
    int team = 0;
    int rc = probe_main("tbb_omp", argc, argv, [&](uint64_t n, probe_threads &t) {
        std::vector<uint64_t> out(n);
        tbb::parallel_for(tbb::blocked_range<uint64_t>(0, n, 4096), [&](const tbb::blocked_range<uint64_t> &r) {
            t.saw();
            for (uint64_t i = r.begin(); i != r.end(); ++i)
                out[i] = probe_item(i);
        });
        // Then the same amount of work in an OpenMP region, in the same thread: the runtimes take turns.
        uint64_t sum = 0;
#pragma omp parallel reduction(+ : sum)
        {
#pragma omp single
            team = omp_get_num_threads();
#pragma omp for schedule(static)
            for (long long i = 0; i < (long long)n; i++)
                sum += probe_item((uint64_t)i + n) ^ out[(uint64_t)i];
        }
        std::printf("team=%d\n", team);
        return sum;
    });
    return rc;
}
