/* lineage.h — a client's ancestors, read once at its HELLO, so that a pool's workers count as their parent's program (not an installed interface). */
#ifndef SCAFD_LINEAGE_H
#define SCAFD_LINEAGE_H

#include <stdint.h>
#include <sys/types.h>

/* Ancestors kept: a Dask worker is the parent's grandchild (nanny, worker), deeper trees are rare. */
#define SCAF_LINEAGE_MAX 8

/*
 * One process and the processes above it, each named by pid and start time
 * (a pid alone may be reused). self_start 0: its own start time is unknown,
 * and no one counts it as an ancestor.
 */
struct scaf_lineage {
    pid_t self;
    uint64_t self_start;
    uint32_t n;                       /* ancestors in up[]: parent first */
    pid_t up[SCAF_LINEAGE_MAX];
    uint64_t up_start[SCAF_LINEAGE_MAX];
};

/*
 * Reads pid's start time and its ancestors from /proc (scaf_procfs_parent),
 * parent first, until pid 1, a parent outside this PID namespace (0), one
 * that cannot be read, or SCAF_LINEAGE_MAX of them. Never fails: what could
 * not be read is left out (a process whose own stat cannot be read has
 * self_start 0 and no ancestors).
 */
void scaf_lineage_read(struct scaf_lineage *l, pid_t pid);

/*
 * How far above `child` the process `anc` is: 1 for its parent, 2 for its
 * grandparent..., 0 when it is not among child's ancestors (or anc's start
 * time is unknown). Pure.
 */
uint32_t scaf_lineage_depth(const struct scaf_lineage *child, const struct scaf_lineage *anc);

#endif
