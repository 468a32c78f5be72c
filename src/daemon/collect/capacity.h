/* capacity.h — how many hardware contexts scafd hands out, and on which CPUs (not an installed interface). */
#ifndef SCAFD_CAPACITY_H
#define SCAFD_CAPACITY_H

#include "scaf/proto.h"

#include <stddef.h>
#include <stdint.h>

struct scaf_capacity {
    uint32_t cpus;          /* contexts the daemon hands out (N) */
    uint32_t cpu_list_len;  /* entries in cpu_list[] */
    int cpu_list[SCAF_MAX_CPUS]; /* the daemon's affinity list, ascending */
    uint32_t smt;           /* hardware threads per core of cpu_list[0], >= 1 */
    uint32_t quota;         /* the cgroup's CPU quota in whole contexts (rounded up); 0 = no limit found */
    int cgroup_version;     /* 1 or 2: the hierarchy the cpu controller is on; 0 = none found */
    char quota_file[512];   /* the file the quota came from (cpu.max or cpu.cfs_quota_us); "" = none */
};

/* The cgroup CPU quota that applies to this process: the smallest one on the path from its cgroup up to
 * the hierarchy's root, in whole contexts. */
struct scaf_cgroup_quota {
    int version;          /* 1 (cpu controller on a v1 hierarchy), 2 (unified), 0 (no cgroup cpu controller) */
    uint32_t limit;       /* 0 = no quota anywhere on the path */
    char file[512];       /* where the winning quota was read; "" when limit is 0 */
};

/* "max 100000" -> *limit = 0; "150000 100000" -> 2. Returns 0, or -1 with errno = EINVAL. */
int scaf_cpumax_parse(const char *text, uint32_t *limit);
/* Linux CPU list ("0-3,8,10-11"): fills up to max entries in ascending order of appearance.
 * Returns the number of CPUs listed, or -1 with errno = EINVAL (syntax) / E2BIG (more than max). */
int scaf_cpulist_parse(const char *text, int *cpu_list, size_t max);
/* cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us texts: "-1" -> *limit = 0; "150000", "100000" -> 2.
 * Returns 0, or -1 with errno = EINVAL. */
int scaf_cfs_quota_parse(const char *quota, const char *period, uint32_t *limit);
/* Reads /proc/self/cgroup and /proc/self/mountinfo, and the cgroup files they lead to, under `root`
 * ("/" or NULL: the real ones; tests point it at a fake tree, where mount points are taken relative to
 * root too). Never fails: what cannot be read is no limit. */
void scaf_cgroup_quota_read(const char *root, struct scaf_cgroup_quota *q);
/* Affinity, the cgroup CPU quota (v1 or v2, read under cgroup_root as above), SMT width; `cpus_override`
 * (> 0) replaces cpus. Returns 0 or -1 with errno. */
int scaf_capacity_detect(struct scaf_capacity *cap, uint32_t cpus_override, const char *cgroup_root);

#endif
