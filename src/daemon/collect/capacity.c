/* capacity.c — how many contexts scafd may hand out: affinity mask, cgroup v1 or v2 CPU quota, SMT width. */
#include "capacity.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int scaf_cpumax_parse(const char *text, uint32_t *limit)
{
    char quota[32];
    unsigned long long q, period;
    int consumed = 0;

    /* Format: "$MAX $PERIOD\n" where $MAX is "max" or microseconds. */
    if (!text || sscanf(text, "%31s %llu %n", quota, &period, &consumed) != 2 || period == 0)
        goto bad;
    if (text[consumed] != '\0')
        goto bad;
    if (strcmp(quota, "max") == 0) {
        *limit = 0;
        return 0;
    }
    for (const char *p = quota; *p; p++)
        if (!isdigit((unsigned char)*p))
            goto bad;
    errno = 0;
    q = strtoull(quota, NULL, 10);
    if (errno || q == 0)
        goto bad;
    /* A quota of 1.5 periods lets 2 threads run part of the time: round up, never to 0. */
    q = (q + period - 1) / period;
    *limit = q > UINT32_MAX ? UINT32_MAX : (uint32_t)q;
    return 0;
bad:
    errno = EINVAL;
    return -1;
}

int scaf_cpulist_parse(const char *text, int *cpu_list, size_t max)
{
    const char *p = text;
    size_t n = 0;

    if (!text)
        goto bad;
    while (*p && *p != '\n') {
        char *end;
        long lo, hi;

        if (!isdigit((unsigned char)*p))
            goto bad;
        lo = strtol(p, &end, 10);
        hi = lo;
        p = end;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p))
                goto bad;
            hi = strtol(p, &end, 10);
            p = end;
        }
        if (lo < 0 || hi < lo || hi >= INT_MAX)
            goto bad;
        for (long c = lo; c <= hi; c++) {
            if (n >= max) {
                errno = E2BIG;
                return -1;
            }
            cpu_list[n++] = (int)c;
        }
        if (*p == ',')
            p++;
        else if (*p && *p != '\n')
            goto bad;
    }
    return (int)n;
bad:
    errno = EINVAL;
    return -1;
}

/* Reads a small text file into buf; returns 0 or -1 with errno. */
static int read_text(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");
    size_t n;

    if (!f)
        return -1;
    n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return 0;
}

int scaf_cfs_quota_parse(const char *quota, const char *period, uint32_t *limit)
{
    long long q;
    unsigned long long per;
    int used = 0;

    /* cpu.cfs_quota_us is "-1" (no limit) or microseconds per period; cpu.cfs_period_us is microseconds. */
    if (!quota || !period || sscanf(period, "%llu %n", &per, &used) != 1 || period[used] != '\0' || per == 0 ||
        !(isdigit((unsigned char)period[0])))
        goto bad;
    used = 0;
    if (sscanf(quota, "%lld %n", &q, &used) != 1 || quota[used] != '\0' ||
        !(isdigit((unsigned char)quota[0]) || quota[0] == '-'))
        goto bad;
    if (q == -1) {
        *limit = 0;
        return 0;
    }
    if (q <= 0)
        goto bad;
    /* As for cpu.max: a fraction of a period more is one more context, never 0. */
    per = ((unsigned long long)q + per - 1) / per;
    *limit = per > UINT32_MAX ? UINT32_MAX : (uint32_t)per;
    return 0;
bad:
    errno = EINVAL;
    return -1;
}

/* `path` as seen from `root`: tests put a fake /proc and /sys under a directory. */
static void under(const char *root, const char *path, char *out, size_t len)
{
    if (!root || !root[0] || strcmp(root, "/") == 0)
        snprintf(out, len, "%s", path);
    else
        snprintf(out, len, "%s%s", root, path);
}

/* Is `word` one of the comma-separated items of list[0..n)? */
static bool has_item(const char *list, size_t n, const char *word)
{
    size_t w = strlen(word);

    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && list[j] != ',')
            j++;
        if (j - i == w && strncmp(list + i, word, w) == 0)
            return true;
        i = j + 1;
    }
    return false;
}

/* The mount of the v1 hierarchy carrying the cpu controller (version 1) or of the unified hierarchy
 * (version 2), from mountinfo: its mount point and the cgroup it shows as its root. Returns 0 or -1. */
static int cgroup_mount(const char *root, int version, char *mnt, size_t mlen, char *mroot, size_t rlen)
{
    char path[1024], line[4096];
    FILE *f;
    int rc = -1;

    under(root, "/proc/self/mountinfo", path, sizeof path);
    f = fopen(path, "re");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS" */
        char r[1024], m[1024], fstype[64], opts[1024];
        const char *sep = strstr(line, " - ");

        if (!sep || sscanf(sep + 3, "%63s %*s %1023s", fstype, opts) != 2)
            continue;
        if (version == 2 ? strcmp(fstype, "cgroup2") != 0
                         : strcmp(fstype, "cgroup") != 0 || !has_item(opts, strlen(opts), "cpu"))
            continue;
        /* Octal escapes (\040) are left as they are: such mount points are not cgroup hierarchies. */
        if (sscanf(line, "%*s %*s %*s %1023s %1023s", r, m) == 2 && strlen(m) < mlen && strlen(r) < rlen) {
            strcpy(mnt, m);
            strcpy(mroot, r);
            rc = 0;
            break;
        }
    }
    fclose(f);
    return rc;
}

/* Our cgroup on the hierarchy of that version, from /proc/self/cgroup ("ID:CONTROLLERS:PATH" lines).
 * Returns 0 or -1. */
static int cgroup_path(const char *root, int version, char *out, size_t len)
{
    char path[1024], line[4096];
    FILE *f;
    int rc = -1;

    under(root, "/proc/self/cgroup", path, sizeof path);
    f = fopen(path, "re");
    if (!f)
        return -1;
    while (rc < 0 && fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

        if (!c2)
            continue;
        line[strcspn(line, "\n")] = '\0';
        if (version == 2 ? strncmp(line, "0::", 3) == 0 : has_item(c1 + 1, (size_t)(c2 - c1 - 1), "cpu")) {
            if (c2[1] == '/' && strlen(c2 + 1) < len) {
                strcpy(out, c2 + 1);
                rc = 0;
            }
        }
    }
    fclose(f);
    return rc;
}

/* dir + "/" + name into path; -1 when it does not fit (such a path is not ours to read). */
static int join(char *path, size_t len, const char *dir, const char *name)
{
    int n = snprintf(path, len, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The quota set in one cgroup directory, in contexts; 0 = none or unreadable. */
static uint32_t dir_quota(int version, const char *dir, char *file, size_t flen)
{
    char path[4096], qtext[64], ptext[64];
    uint32_t lim = 0;

    if (version == 2) {
        if (join(path, sizeof path, dir, "cpu.max") < 0 || read_text(path, qtext, sizeof qtext) < 0 ||
            scaf_cpumax_parse(qtext, &lim) < 0)
            return 0;
    } else {
        if (join(path, sizeof path, dir, "cpu.cfs_period_us") < 0 || read_text(path, ptext, sizeof ptext) < 0)
            return 0;
        if (join(path, sizeof path, dir, "cpu.cfs_quota_us") < 0 || read_text(path, qtext, sizeof qtext) < 0 ||
            scaf_cfs_quota_parse(qtext, ptext, &lim) < 0)
            return 0;
    }
    if (strlen(path) >= flen)
        return 0;
    strcpy(file, path);
    return lim;
}

void scaf_cgroup_quota_read(const char *root, struct scaf_cgroup_quota *q)
{
    char mnt[1024], mroot[1024], rel[2048], base[2048], dir[4096], file[sizeof q->file];
    size_t rl;

    memset(q, 0, sizeof *q);
    /* The cpu controller lives on one hierarchy only: a v1 one when mounted so (hybrid hosts mount an
     * empty unified hierarchy beside it), otherwise the unified one. */
    if (cgroup_path(root, 1, rel, sizeof rel) == 0 && cgroup_mount(root, 1, mnt, sizeof mnt, mroot, sizeof mroot) == 0)
        q->version = 1;
    else if (cgroup_path(root, 2, rel, sizeof rel) == 0 &&
             cgroup_mount(root, 2, mnt, sizeof mnt, mroot, sizeof mroot) == 0)
        q->version = 2;
    else
        return;
    /* A mount of a sub-cgroup (containers) shows that cgroup as its root: our path is relative to it. */
    rl = strlen(mroot);
    if (strcmp(mroot, "/") != 0 && strncmp(rel, mroot, rl) == 0 && (rel[rl] == '/' || rel[rl] == '\0'))
        memmove(rel, rel + rl, strlen(rel + rl) + 1);
    if (rel[0] == '\0')
        strcpy(rel, "/");
    under(root, mnt, base, sizeof base);
    /* Ancestors limit us too: the smallest quota on the way up to the hierarchy's root wins. */
    for (;;) {
        char *slash;
        uint32_t lim;
        int n;

        n = snprintf(dir, sizeof dir, "%s%s", base, strcmp(rel, "/") == 0 ? "" : rel);
        lim = n > 0 && (size_t)n < sizeof dir ? dir_quota(q->version, dir, file, sizeof file) : 0;
        if (lim > 0 && (q->limit == 0 || lim < q->limit)) {
            q->limit = lim;
            memcpy(q->file, file, sizeof q->file);
        }
        if (strcmp(rel, "/") == 0)
            break;
        slash = strrchr(rel, '/');
        if (slash == rel)
            rel[1] = '\0';
        else
            *slash = '\0';
    }
}

int scaf_capacity_detect(struct scaf_capacity *cap, uint32_t cpus_override, const char *cgroup_root)
{
    struct scaf_cgroup_quota q;
    cpu_set_t *set = NULL;
    size_t setsize = CPU_ALLOC_SIZE(SCAF_MAX_CPUS);
    char path[128], text[512];
    int sib[SCAF_MAX_CPUS];
    int rc = -1;

    memset(cap, 0, sizeof *cap);
    set = CPU_ALLOC(SCAF_MAX_CPUS);
    if (!set)
        goto out;
    CPU_ZERO_S(setsize, set);
    if (sched_getaffinity(0, setsize, set) < 0)
        goto out;
    for (int c = 0; c < SCAF_MAX_CPUS; c++)
        if (CPU_ISSET_S(c, setsize, set))
            cap->cpu_list[cap->cpu_list_len++] = c;
    if (cap->cpu_list_len == 0) {
        errno = ENODEV;
        goto out;
    }
    scaf_cgroup_quota_read(cgroup_root, &q);
    cap->quota = q.limit;
    cap->cgroup_version = q.version;
    memcpy(cap->quota_file, q.file, sizeof cap->quota_file);
    cap->cpus = cap->cpu_list_len;
    if (cap->quota > 0 && cap->quota < cap->cpus)
        cap->cpus = cap->quota;
    if (cpus_override > 0)
        cap->cpus = cpus_override;

    /* SMT width of the first CPU we may use; 1 when the topology is not exposed. */
    cap->smt = 1;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cap->cpu_list[0]);
    if (read_text(path, text, sizeof text) == 0) {
        int k = scaf_cpulist_parse(text, sib, SCAF_MAX_CPUS);
        if (k > 0)
            cap->smt = (uint32_t)k;
    }
    rc = 0;
out:
    if (set)
        CPU_FREE(set);
    return rc;
}
