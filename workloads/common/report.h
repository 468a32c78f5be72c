/* report.h — timing, team-size tracking and the result lines every workload prints. */
#ifndef WL_REPORT_H
#define WL_REPORT_H

#include <stdint.h>

/* Monotonic wall clock in seconds. */
double wl_clock_now(void);

/* Call from inside a parallel region (any thread, any number of times):
 * remembers the largest omp_get_num_threads() seen. */
void wl_team_note(void);

/* The largest team noted so far (0 if no region noted one). */
int wl_team_max(void);

/* Prints "checksum=<16 hex digits>". */
void wl_checksum_print(uint64_t checksum);

/* Prints the last line "name=N threads=T time_s=S verified=yes|no", flushes
 * stdout and returns the exit status: 0 verified, 1 not. */
int wl_result_print(const char *name, double seconds, int verified);

#endif
