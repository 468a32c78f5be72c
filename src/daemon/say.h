/* say.h — scafd's stderr lines (not an installed interface). */
#ifndef SCAFD_SAY_H
#define SCAFD_SAY_H

/* One line on stderr, prefixed with "scafd: ", written with a single write() that never waits:
 * when stderr cannot take the line now (a pipe nobody drains), it is dropped and counted. */
void scaf_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Lines dropped so far because stderr was full. */
unsigned long long scaf_say_dropped(void);

#endif
