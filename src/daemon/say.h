/* say.h — scafd's stderr lines and stdout tables (not an installed interface). */
#ifndef SCAFD_SAY_H
#define SCAFD_SAY_H

#include <stddef.h>

/* One line on stderr, prefixed with "scafd: ", written with a single write() that never waits:
 * when stderr cannot take the line now (a pipe nobody drains), it is dropped and counted. */
void scaf_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Lines dropped so far because stderr was full. */
unsigned long long scaf_say_dropped(void);

/* Writes buf to stdout the same way, in one write: 0, or -1 when stdout did not take all of it now. */
int scaf_say_stdout(const char *buf, size_t len);

#endif
