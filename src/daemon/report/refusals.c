/* refusals.c — the refusal log: a hostile peer costs at most a few lines a second, however fast it comes back. */
#include "refusals.h"
#include "jsonbuf.h"
#include "../say.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *scaf_refusal_kind_name(enum scaf_refusal_kind kind)
{
    static const char *const names[SCAF_REFUSAL_KINDS] = {
        [SCAF_REFUSAL_MALFORMED] = "malformed",
        [SCAF_REFUSAL_VERSION] = "version",
        [SCAF_REFUSAL_DUPLICATE] = "duplicate hello",
        [SCAF_REFUSAL_FULL] = "table full",
        [SCAF_REFUSAL_USER_CLIENTS] = "user's client quota",
        [SCAF_REFUSAL_USER_PENDING] = "user's pending quota",
        [SCAF_REFUSAL_CONNECTIONS] = "too many connections",
        [SCAF_REFUSAL_SILENT] = "silent",
        [SCAF_REFUSAL_STALLED] = "unread reply",
        [SCAF_REFUSAL_DESCRIPTORS] = "out of descriptors",
        [SCAF_REFUSAL_INTERNAL] = "internal",
    };
    return (unsigned)kind < SCAF_REFUSAL_KINDS ? names[kind] : "?";
}

/* The summary of the window that ends now, if anything in it went unshown; then a fresh window. */
static void close_window(struct scaf_refusals *r, double now)
{
    uint64_t total = 0;
    unsigned long long dropped = scaf_say_dropped();
    struct scaf_buf b = {0};

    for (int k = 0; k < SCAF_REFUSAL_KINDS; k++)
        total += r->count[k];
    if (total > r->full) {
        scaf_buf_printf(&b, "%llu refused in the last second (%u shown above), by reason:",
                        (unsigned long long)total, r->full);
        for (int k = 0; k < SCAF_REFUSAL_KINDS; k++)
            if (r->count[k])
                scaf_buf_printf(&b, " %s %llu,", scaf_refusal_kind_name((enum scaf_refusal_kind)k),
                                (unsigned long long)r->count[k]);
        if (!b.failed)
            b.p[--b.len] = '\0'; /* the last comma */
        if (dropped > r->dropped_seen)
            scaf_buf_printf(&b, "; %llu log lines dropped, stderr full", dropped - r->dropped_seen);
        if (!b.failed)
            scaf_say("%s", b.p);
        scaf_buf_free(&b);
        /* Reported only once a summary got out: one that was dropped itself leaves the count for the next. */
        if (scaf_say_dropped() == dropped)
            r->dropped_seen = dropped;
    }
    memset(r->count, 0, sizeof r->count);
    r->full = 0;
    r->window_start = now;
}

void scaf_refusals_note(struct scaf_refusals *r, double now, enum scaf_refusal_kind kind, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    if ((unsigned)kind >= SCAF_REFUSAL_KINDS)
        kind = SCAF_REFUSAL_INTERNAL;
    if (now - r->window_start >= 1.0)
        close_window(r, now);
    r->count[kind]++;
    if (r->full >= SCAF_REFUSALS_FULL_PER_S)
        return;
    r->full++;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    scaf_say("%s", line);
}

void scaf_refusals_tick(struct scaf_refusals *r, double now)
{
    if (now - r->window_start >= 1.0)
        close_window(r, now);
}
