/* alloclog.c — --log FILE: one JSON line per allocation change, appended and flushed as written. */
#include "alloclog.h"
#include "../say.h"

#include <errno.h>
#include <string.h>

int scaf_alloclog_open(struct scaf_alloclog *lg, const char *path)
{
    lg->f = NULL;
    lg->path = path;
    if (!path)
        return 0;
    /* Appending keeps earlier runs' lines: the log is a record, never clobbered. */
    lg->f = fopen(path, "ae");
    if (!lg->f) {
        scaf_say("cannot open log file %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

bool scaf_alloclog_on(const struct scaf_alloclog *lg)
{
    return lg->f != NULL;
}

void scaf_alloclog_write(struct scaf_alloclog *lg, const char *line)
{
    if (!lg->f)
        return;
    /* A full disk must not stop the daemon; say it once and stop logging. */
    if (fputs(line, lg->f) == EOF || fputc('\n', lg->f) == EOF || fflush(lg->f) == EOF) {
        scaf_say("writing log %s failed (%s); logging stops", lg->path, strerror(errno));
        fclose(lg->f);
        lg->f = NULL;
    }
}

void scaf_alloclog_close(struct scaf_alloclog *lg)
{
    if (lg->f)
        fclose(lg->f);
    lg->f = NULL;
}
