// tbb_for.cpp — a oneTBB parallel_for test program: fills an array in parallel, prints each round's exact checksum and the threads that ran it.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <vector>

#include "tbb_probe.h"

int main(int argc, char **argv)
{
    return probe_main("tbb_for", argc, argv, [](uint64_t n, probe_threads &t) {
        std::vector<uint64_t> out(n);
        tbb::parallel_for(tbb::blocked_range<uint64_t>(0, n, 4096), [&](const tbb::blocked_range<uint64_t> &r) {
            t.saw();
            for (uint64_t i = r.begin(); i != r.end(); ++i)
                out[i] = probe_item(i);
        });
        // The checksum is serial, in index order: it depends only on the values, not on who wrote them.
        uint64_t h = 1469598103934665603ull;
        for (uint64_t v : out)
            h = (h ^ v) * 1099511628211ull;
        return h;
    });
}
