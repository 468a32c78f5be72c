/* alloclog.h — --log FILE: the allocation log, one JSON line per change (not an installed interface). */
#ifndef SCAFD_ALLOCLOG_H
#define SCAFD_ALLOCLOG_H

#include <stdbool.h>
#include <stdio.h>

struct scaf_alloclog {
    FILE *f; /* NULL: off, or stopped after a write error */
    const char *path;
};

/* Opens `path` for appending (NULL: logging off). Returns 0, or -1 after saying why on stderr. */
int scaf_alloclog_open(struct scaf_alloclog *lg, const char *path);
bool scaf_alloclog_on(const struct scaf_alloclog *lg);
/* Appends `line` and a newline, flushed. A write error is said once, then logging stops. */
void scaf_alloclog_write(struct scaf_alloclog *lg, const char *line);
void scaf_alloclog_close(struct scaf_alloclog *lg);

#endif
