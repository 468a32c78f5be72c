/* say.c — the layer's diagnostics: one write(2) per line, so the program's stdio is never touched. */
#include "say.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

int scaf_layer_verbose;

void scaf_say_init(int verbose)
{
    scaf_layer_verbose = verbose;
}

/* Formats `prefix` + fmt into one line and writes it; errors writing diagnostics are not the program's problem. */
static void say_line(const char *prefix, const char *fmt, va_list ap)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%s", prefix);

    n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    if (write(STDERR_FILENO, buf, (size_t)n) < 0)
        return;
}

void scaf_layer_log(const char *fmt, ...)
{
    char prefix[32];
    va_list ap;

    if (!scaf_layer_verbose)
        return;
    snprintf(prefix, sizeof prefix, "scaf[%d]: ", (int)getpid());
    va_start(ap, fmt);
    say_line(prefix, fmt, ap);
    va_end(ap);
}

void scaf_say_into(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, len, fmt, ap);
    va_end(ap);
}

void scaf_say_always(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    say_line("", fmt, ap);
    va_end(ap);
}
