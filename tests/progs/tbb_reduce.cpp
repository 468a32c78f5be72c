// tbb_reduce.cpp — a oneTBB parallel_reduce test program: an integer sum (exact for any split), each round's result and the threads that ran it.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_reduce.h>

#include <functional>

#include "tbb_probe.h"

int main(int argc, char **argv)
{
    return probe_main("tbb_reduce", argc, argv, [](uint64_t n, probe_threads &t) {
        // Wrapping integer addition is associative and commutative: the sum is the same for any split.
        return tbb::parallel_reduce(
            tbb::blocked_range<uint64_t>(0, n, 4096), uint64_t{0},
            [&](const tbb::blocked_range<uint64_t> &r, uint64_t acc) {
                t.saw();
                for (uint64_t i = r.begin(); i != r.end(); ++i)
                    acc += probe_item(i);
                return acc;
            },
            std::plus<uint64_t>());
    });
}
