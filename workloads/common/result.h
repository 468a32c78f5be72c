/* result.h — timing, team-size tracking and the result lines every workload prints. */
#ifndef WL_RESULT_H
#define WL_RESULT_H

#include <stdint.h>

/* Monotonic wall clock in seconds. */
double wl_clock_now(void);

/* Call from inside a parallel region (any thread, any number of times):
 * remembers the largest omp_get_num_threads() seen. */
void wl_team_note(void);

/* Same, for a team size the program counted itself: for regions that must not call
 * omp_get_num_threads() (split, partials: a call there is what a layer may take as
 * evidence that the region adapts to its team). */
void wl_team_note_size(int n);

/* The largest team noted so far (0 if no region noted one). */
int wl_team_max(void);

/* Prints "checksum=<16 hex digits>". */
void wl_checksum_print(uint64_t checksum);

/* Prints the last line "name=N threads=T time_s=S verified=yes|no", flushes
 * stdout and returns the exit status: 0 verified, 1 not. */
int wl_result_print(const char *name, double seconds, int verified);

#endif
