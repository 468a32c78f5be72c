/* say.h — scafd's stderr lines (not an installed interface). */
#ifndef SCAFD_SAY_H
#define SCAFD_SAY_H

/* One line on stderr, prefixed with "scafd: ", written with a single write(). */
void scaf_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
