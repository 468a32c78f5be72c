/* clock.c — clock_gettime as nanoseconds or seconds; async-signal-safe, no state. */
#include "scaf/clock.h"

uint64_t scaf_clock_ns(clockid_t c)
{
    struct timespec ts;

    if (clock_gettime(c, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double scaf_clock_s(clockid_t c)
{
    struct timespec ts;

    if (clock_gettime(c, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
