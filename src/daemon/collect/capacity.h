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
    uint32_t quota;         /* ceil(cpu.max quota / period); 0 = no cgroup limit found */
};

/* "max 100000" -> *limit = 0; "150000 100000" -> 2. Returns 0, or -1 with errno = EINVAL. */
int scaf_cpumax_parse(const char *text, uint32_t *limit);
/* Linux CPU list ("0-3,8,10-11"): fills up to max entries in ascending order of appearance.
 * Returns the number of CPUs listed, or -1 with errno = EINVAL (syntax) / E2BIG (more than max). */
int scaf_cpulist_parse(const char *text, int *cpu_list, size_t max);
/* Affinity, cgroup v2 cpu.max, SMT width; `cpus_override` (> 0) replaces cpus. Returns 0 or -1 with errno. */
int scaf_capacity_detect(struct scaf_capacity *cap, uint32_t cpus_override);

#endif
