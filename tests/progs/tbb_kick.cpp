// tbb_kick.cpp — a shared object that runs one oneTBB parallel_reduce when called, so that a Python program can open a TCM permit before it loads another oneTBB user.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_reduce.h>

extern "C" unsigned long tbb_kick(unsigned long n)
{
    return oneapi::tbb::parallel_reduce(
        oneapi::tbb::blocked_range<unsigned long>(0, n), 0ul,
        [](const oneapi::tbb::blocked_range<unsigned long> &r, unsigned long s) {
            for (unsigned long i = r.begin(); i != r.end(); ++i)
                s += i;
            return s;
        },
        [](unsigned long a, unsigned long b) { return a + b; });
}
