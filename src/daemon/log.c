/* log.c — --log FILE: one JSON line per allocation change, flushed as written. */
#include "daemon.h"

#include <errno.h>
#include <string.h>

int scaf_log_open(struct scafd *d)
{
    if (!d->opt.log_path)
        return 0;
    /* Appending keeps earlier runs' lines: the log is a record, never clobbered. */
    d->log = fopen(d->opt.log_path, "ae");
    if (!d->log) {
        scaf_say("cannot open log file %s: %s", d->opt.log_path, strerror(errno));
        return -1;
    }
    return 0;
}

void scaf_log_write(struct scafd *d)
{
    struct scaf_buf b = {0};

    if (!d->log)
        return;
    if (scaf_status_build(d, &b) == 0) {
        scaf_buf_printf(&b, "\n");
        /* A full disk must not stop the daemon; say it once and stop logging. */
        if (b.failed || fputs(b.p, d->log) == EOF || fflush(d->log) == EOF) {
            scaf_say("writing log %s failed (%s); logging stops", d->opt.log_path, strerror(errno));
            fclose(d->log);
            d->log = NULL;
        }
    }
    scaf_buf_free(&b);
}

void scaf_log_close(struct scafd *d)
{
    if (d->log)
        fclose(d->log);
    d->log = NULL;
}
