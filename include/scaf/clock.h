/* clock.h — the clocks daemon and layer read, in one place (vDSO for the monotonic and wall clocks). */
#ifndef SCAF_CLOCK_H
#define SCAF_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds on clock `c`; 0 when the clock cannot be read (a thread CPU clock of an exited thread). */
uint64_t scaf_clock_ns(clockid_t c);

/* Seconds on clock `c`, for timers and JSON timestamps; 0.0 when it cannot be read. */
double scaf_clock_s(clockid_t c);

#endif
