/* say.c — scafd's stderr lines, one write per line. */
#include "say.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

void scaf_say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One write per line, so lines from a busy daemon never interleave mid-way. */
    dprintf(STDERR_FILENO, "scafd: %s\n", line);
}
