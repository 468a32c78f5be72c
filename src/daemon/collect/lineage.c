/* lineage.c — a client's ancestors, read once at its HELLO, so that a pool's workers count as their parent's program. */
#include "lineage.h"

#include "scaf/procfs.h"

#include <string.h>

void scaf_lineage_read(struct scaf_lineage *l, pid_t pid)
{
    pid_t at = pid, parent;
    uint64_t start;

    memset(l, 0, sizeof *l);
    l->self = pid;
    if (pid <= 0 || scaf_procfs_parent(pid, &parent, &start) < 0)
        return;
    l->self_start = start;
    /* parent 0: outside this PID namespace; 1: init, or a subreaper's orphans, nobody's program. */
    while (l->n < SCAF_LINEAGE_MAX && parent > 1 && parent != at) {
        pid_t next;

        at = parent;
        if (scaf_procfs_parent(at, &next, &start) < 0)
            return; /* it ended meanwhile: what is above it is no longer this process's */
        l->up[l->n] = at;
        l->up_start[l->n++] = start;
        parent = next;
    }
}

uint32_t scaf_lineage_depth(const struct scaf_lineage *child, const struct scaf_lineage *anc)
{
    if (anc->self_start == 0)
        return 0;
    for (uint32_t i = 0; i < child->n && i < SCAF_LINEAGE_MAX; i++)
        if (child->up[i] == anc->self && child->up_start[i] == anc->self_start)
            return i + 1;
    return 0;
}
