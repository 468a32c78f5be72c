/* capacity.c — how many contexts scafd may hand out: affinity mask, cgroup v2 cpu.max, SMT width. */
#include "capacity.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
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

/* The cgroup v2 mount point, from /proc/self/mountinfo. Returns 0 or -1. */
static int cgroup2_mount(char *out, size_t len)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    int rc = -1;

    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SOURCE SUPEROPTS" */
        char mnt[1024];
        const char *sep = strstr(line, " - ");
        if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
            continue;
        if (sscanf(line, "%*s %*s %*s %*s %1023s", mnt) == 1 && strlen(mnt) < len) {
            strcpy(out, mnt); /* octal escapes (\040) are left as is: such mounts are not ours */
            rc = 0;
            break;
        }
    }
    fclose(f);
    return rc;
}

/* The tightest cpu.max on the path from our cgroup up to the root (ancestors limit us too); 0 = none. */
static uint32_t cgroup_quota(void)
{
    char mnt[1024], rel[2048] = "", line[2048], path[4096], text[128];
    uint32_t best = 0;
    FILE *f;

    if (cgroup2_mount(mnt, sizeof mnt) < 0)
        return 0;
    f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "0::", 3) == 0) {
            snprintf(rel, sizeof rel, "%s", line + 3);
            rel[strcspn(rel, "\n")] = '\0';
        }
    fclose(f);
    if (rel[0] != '/')
        return 0;
    for (;;) {
        uint32_t lim;
        char *slash;

        snprintf(path, sizeof path, "%s%s/cpu.max", mnt, strcmp(rel, "/") == 0 ? "" : rel);
        if (read_text(path, text, sizeof text) == 0 && scaf_cpumax_parse(text, &lim) == 0 && lim > 0 &&
            (best == 0 || lim < best))
            best = lim;
        if (strcmp(rel, "/") == 0)
            break;
        slash = strrchr(rel, '/');
        if (slash == rel)
            rel[1] = '\0';
        else
            *slash = '\0';
    }
    return best;
}

int scaf_capacity_detect(struct scaf_capacity *cap, uint32_t cpus_override)
{
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
    cap->quota = cgroup_quota();
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
