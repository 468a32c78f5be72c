/* file.c — one user's memory file: checked field by field before it is believed, written through a temporary file and a rename, set aside when damaged. */
#include "file.h"
#include "scaf/procfs.h"
#include "scaf/rundir.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint32_t scaf_memfile_crc32(uint32_t crc, const void *p, size_t n)
{
    const unsigned char *b = p;

    /* Bitwise, reflected polynomial 0xEDB88320: a few hundred kilobytes once a second at most. */
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= b[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

void scaf_memfile_name(uid_t uid, char *buf, size_t len)
{
    snprintf(buf, len, "memory-%u.bin", (unsigned)uid);
}

static int cmp_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* No key twice: the second would never be found, and says the file was not written by this code. */
static const char *check_keys(const unsigned char *recs, uint32_t count)
{
    const char *bad = NULL;
    uint64_t *keys;

    if (count < 2)
        return NULL;
    keys = malloc((size_t)count * sizeof *keys);
    if (!keys)
        return NULL; /* out of memory: the other checks stand */
    for (uint32_t i = 0; i < count; i++)
        memcpy(&keys[i], recs + (size_t)i * sizeof(struct scaf_memo_record) + offsetof(struct scaf_memo_record, key),
               sizeof keys[i]);
    qsort(keys, count, sizeof *keys, cmp_key);
    for (uint32_t i = 1; i < count && !bad; i++)
        if (keys[i] == keys[i - 1])
            bad = "a program recorded twice";
    free(keys);
    return bad;
}

const char *scaf_memfile_check(const void *buf, size_t len, uid_t uid, uint32_t *count)
{
    struct scaf_memfile_header h;
    const unsigned char *recs = (const unsigned char *)buf + sizeof h;

    if (len < sizeof h)
        return "shorter than its header";
    memcpy(&h, buf, sizeof h);
    if (h.magic != SCAF_MEMFILE_MAGIC)
        return "another magic (not a scafd memory file)";
    if (h.version != SCAF_MEMFILE_VERSION && h.version != SCAF_MEMFILE_VERSION_1)
        return "another version";
    if (h.record_size != sizeof(struct scaf_memo_record))
        return "another record size";
    if (h.uid != (uint32_t)uid)
        return "another user's memory";
    if (h.reserved != 0)
        return "a nonzero reserved field";
    if (h.count > SCAF_MEMFILE_MAX_RECORDS)
        return "more records than a memory file holds";
    if (len != sizeof h + (size_t)h.count * sizeof(struct scaf_memo_record))
        return len < sizeof h + (size_t)h.count * sizeof(struct scaf_memo_record) ? "short (cut off)"
                                                                                   : "longer than its records";
    if (scaf_memfile_crc32(0, recs, len - sizeof h) != h.crc)
        return "a CRC mismatch";
    for (uint32_t i = 0; i < h.count; i++) {
        struct scaf_memo_record rec;
        const char *why;

        memcpy(&rec, recs + (size_t)i * sizeof rec, sizeof rec);
        if ((why = scaf_memo_record_check(&rec)))
            return why;
        if (h.version == SCAF_MEMFILE_VERSION_1 && rec.run_ms != 0)
            return "a version 1 record with a run time";
    }
    {
        const char *why = check_keys(recs, h.count);
        if (why)
            return why;
    }
    *count = h.count;
    return NULL;
}

/* Reads all of fd (at most max bytes; one more tells a file that is too long) into a malloc'd buffer. */
static ssize_t read_all(int fd, size_t max, unsigned char **out)
{
    /* Room for max + 1 bytes and the NUL the reader adds. */
    char *buf = malloc(max + 2);
    ssize_t len;

    if (!buf)
        return -1;
    len = scaf_procfs_read_fd(fd, buf, max + 2);
    if (len < 0) {
        int err = errno;
        free(buf);
        errno = err;
        return -1;
    }
    *out = (unsigned char *)buf;
    return len;
}

enum scaf_memfile_load scaf_memfile_load(int dirfd, uid_t uid, struct scaf_memo_record **recs, uint32_t *count,
                                         char *why, size_t whylen)
{
    const size_t max = sizeof(struct scaf_memfile_header) + (size_t)SCAF_MEMFILE_MAX_RECORDS * sizeof **recs;
    enum scaf_memfile_load rc = SCAF_MEMFILE_ERROR;
    unsigned char *buf = NULL;
    char name[64], reason[160];
    const char *bad;
    uint32_t n = 0;
    ssize_t len;
    int fd;

    *recs = NULL;
    *count = 0;
    scaf_memfile_name(uid, name, sizeof name);
    fd = scaf_rundir_openat(dirfd, name, O_RDONLY, 0, reason, sizeof reason);
    if (fd < 0) {
        if (errno == ENOENT)
            return SCAF_MEMFILE_ABSENT;
        snprintf(why, whylen, "%s", reason);
        /* A link, or a file that is not a plain one of ours: never believed, set aside. */
        return errno == ELOOP || errno == EPERM ? SCAF_MEMFILE_DAMAGED : SCAF_MEMFILE_ERROR;
    }
    len = read_all(fd, max, &buf);
    if (len < 0) {
        snprintf(why, whylen, "cannot read it: %s", strerror(errno));
        goto cleanup;
    }
    if ((size_t)len > max) {
        snprintf(why, whylen, "longer than a memory file can be");
        rc = SCAF_MEMFILE_DAMAGED;
        goto cleanup;
    }
    if ((bad = scaf_memfile_check(buf, (size_t)len, uid, &n))) {
        snprintf(why, whylen, "%s", bad);
        rc = SCAF_MEMFILE_DAMAGED;
        goto cleanup;
    }
    if (n) {
        *recs = malloc((size_t)n * sizeof **recs);
        if (!*recs) {
            snprintf(why, whylen, "out of memory for %u records", n);
            goto cleanup;
        }
        memcpy(*recs, buf + sizeof(struct scaf_memfile_header), (size_t)n * sizeof **recs);
    }
    *count = n;
    rc = SCAF_MEMFILE_LOADED;
cleanup:
    free(buf);
    close(fd);
    return rc;
}

int scaf_memfile_set_aside(int dirfd, uid_t uid, int64_t now_s, char *name, size_t namelen)
{
    char from[64], stamp[32] = "unknown";
    time_t t = (time_t)now_s;
    struct tm tm;

    scaf_memfile_name(uid, from, sizeof from);
    if (gmtime_r(&t, &tm))
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    for (int i = 1; i < 100; i++) {
        if (i == 1)
            snprintf(name, namelen, "%s.bad-%s", from, stamp);
        else
            snprintf(name, namelen, "%s.bad-%s-%d", from, stamp, i);
        /* Never over an earlier damaged file: each one is kept for whoever wants to look. */
        if (renameat2(dirfd, from, dirfd, name, RENAME_NOREPLACE) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

/* Writes n bytes; with a kill point inside them (tests only), dies there as a crash would. */
static int write_all(int fd, const unsigned char *p, size_t n, long long kill_at, pid_t kill_also)
{
    size_t off = 0;

    while (off < n) {
        size_t want = n - off;
        ssize_t w;

        if (kill_at >= 0 && (unsigned long long)kill_at < n && off + want > (size_t)kill_at)
            want = (size_t)kill_at - off;
        if (want == 0) {
            /* SCAFD_TEST_MEMORY_KILL_AT: a daemon killed in the middle of its write */
            if (kill_also > 0)
                kill(kill_also, SIGKILL);
            raise(SIGKILL);
        }
        w = write(fd, p + off, want);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        off += (size_t)w;
    }
    return 0;
}

/* SCAFD_TEST_MEMORY_HOLD: a write that waits, as on a disk or NFS server that does not answer. */
static void hold(const char *path)
{
    const struct timespec tick = {.tv_nsec = 10 * 1000 * 1000};

    while (path && access(path, F_OK) == 0)
        nanosleep(&tick, NULL);
}

int scaf_memfile_save(int dirfd, uid_t uid, const struct scaf_memo_record *recs, uint32_t count,
                      const struct scaf_memfile_hooks *hooks, char *why, size_t whylen)
{
    struct scaf_memfile_header h = {
        .magic = SCAF_MEMFILE_MAGIC,
        .version = SCAF_MEMFILE_VERSION,
        .record_size = sizeof(struct scaf_memo_record),
        .count = count,
        .crc = scaf_memfile_crc32(0, recs, (size_t)count * sizeof *recs),
        .uid = (uint32_t)uid,
    };
    size_t len = sizeof h + (size_t)count * sizeof *recs;
    char name[64], tmp[80], reason[160];
    unsigned char *buf = NULL;
    int fd = -1, rc = -1, err = 0;
    const char *step = "";

    scaf_memfile_name(uid, name, sizeof name);
    snprintf(tmp, sizeof tmp, "%s.tmp", name);
    buf = malloc(len);
    if (!buf) {
        err = ENOMEM;
        snprintf(why, whylen, "out of memory for %zu bytes", len);
        goto cleanup;
    }
    memcpy(buf, &h, sizeof h);
    if (count)
        memcpy(buf + sizeof h, recs, (size_t)count * sizeof *recs);
    /* A temporary file left by a daemon killed while writing is ours: truncated and written again. */
    fd = scaf_rundir_openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600, reason, sizeof reason);
    if (fd < 0) {
        err = errno;
        snprintf(why, whylen, "%s", reason);
        goto cleanup;
    }
    if (fchmod(fd, 0600) < 0) {
        step = "chmod";
        goto failed;
    }
    if (write_all(fd, buf, len, hooks ? hooks->kill_at : -1, hooks ? hooks->kill_also : 0) < 0) {
        step = "write";
        goto failed;
    }
    hold(hooks ? hooks->hold : NULL);
    if (fsync(fd) < 0) {
        step = "fsync";
        goto failed;
    }
    if (close(fd) < 0) {
        fd = -1;
        step = "close";
        goto failed;
    }
    fd = -1;
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        step = "rename";
        goto failed;
    }
    /* The rename itself is durable only once the directory is. */
    if (fsync(dirfd) < 0) {
        step = "fsync of the directory";
        goto failed;
    }
    rc = 0;
    goto cleanup;
failed:
    err = errno;
    snprintf(why, whylen, "%s of %s: %s", step, tmp, strerror(err));
    unlinkat(dirfd, tmp, 0);
cleanup:
    if (fd >= 0)
        close(fd);
    free(buf);
    if (rc < 0)
        errno = err;
    return rc;
}
