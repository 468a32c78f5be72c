/* tbblib.c — what a oneTBB library says of itself, read from its file: its version, and whether it asks a Thread Composability Manager for its workers. */
#include "scaf/tbblib.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *scaf_tbblib_tcm_first(void)
{
    return SCAF_TBBLIB_TCM_FIRST;
}

/* The version after the "oneTBB: VERSION" tag at V (END: the bytes read so far), into OUT. Returns 0 when
 * the version ends before END; -1 when it may go on in bytes not read yet (it is read again with them). */
static int version_at(const char *v, const char *end, char *out, size_t len)
{
    size_t i = 0;

    while (v < end && *v == '\t')
        v++;
    while (v < end && ((*v >= '0' && *v <= '9') || *v == '.')) {
        if (i + 1 < len)
            out[i++] = *v;
        v++;
    }
    out[i] = '\0';
    if (v == end) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

int scaf_tbblib_read(const char *path, struct scaf_tbblib *out)
{
    static const char TCM[] = "tcmConnect", VER[] = "oneTBB: VERSION\t";
    /* KEEP: the bytes carried over from one chunk to the next, so that no string is cut at a boundary. */
    enum { CHUNK = 65536, KEEP = 64 };
    char *buf = NULL;
    size_t have = 0;
    ssize_t n = 0;
    int fd = -1, rc = -1;

    memset(out, 0, sizeof *out);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        goto cleanup;
    buf = malloc(CHUNK + KEEP + 1);
    if (!buf)
        goto cleanup;
    while ((n = read(fd, buf + have, CHUNK)) > 0) {
        const char *v;

        have += (size_t)n;
        buf[have] = '\0';
        if (!out->tcm && memmem(buf, have, TCM, sizeof TCM - 1))
            out->tcm = 1;
        if (!out->version[0] && (v = memmem(buf, have, VER, sizeof VER - 1)) != NULL)
            version_at(v + sizeof VER - 1, buf + have, out->version, sizeof out->version);
        if (out->tcm && out->version[0])
            break;
        if (have > KEEP) {
            memmove(buf, buf + have - KEEP, KEEP);
            have = KEEP;
        }
    }
    if (n < 0)
        goto cleanup;
    /* A version that runs to the file's very end: the NUL put after the bytes read ends it. */
    if (!out->version[0] && have > 0) {
        const char *v;

        buf[have] = '\0';
        if ((v = memmem(buf, have, VER, sizeof VER - 1)) != NULL)
            version_at(v + sizeof VER - 1, buf + have + 1, out->version, sizeof out->version);
    }
    rc = 0;
cleanup:
    free(buf);
    if (fd >= 0)
        close(fd);
    return rc;
}
