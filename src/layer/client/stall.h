/* stall.h — the stall net: a region that runs far past its history with fewer threads than it asked for, while its thread only yields or waits, is said once, and its program keeps its team from then on. */
#ifndef SCAF_LAYER_STALL_H
#define SCAF_LAYER_STALL_H

#include <stdint.h>

struct scaf_site;

/*
 * Why (docs/layer.md, "The stall net"): some code splits its work into as
 * many items as threads it expects and makes the items wait for each other
 * (OpenBLAS's level-3 drivers do; core/blasobj.h keeps those regions whole).
 * Given fewer threads, one thread runs two items in turn and the first waits
 * forever for the second. Nothing the layer sees from outside tells such a
 * region from any other, so this net catches what the rules miss: it cannot
 * unblock the region (no runtime adds threads to a running team), but it says
 * so, fixes the program's team for the rest of the run, and the memory keeps
 * it fixed from the next run on (a fixed program starts with its share).
 */

/*
 * A region on the calling thread is about to run with `team` threads where
 * the runtime would have given it `asked`: watched while it runs. Returns a
 * slot for scaf_stall_end, or -1 when not watched (team >= asked, the net is
 * off, or every slot is busy). Cheap: a compare-and-swap and a few stores.
 */
int scaf_stall_begin(void (*fn)(void *), struct scaf_site *site, unsigned team, unsigned asked);

void scaf_stall_end(int slot);

/*
 * From the helper thread, at every tick: a watched region past its limit
 * (SCAF_STALL_S, and ten times what its site's history says it takes at that
 * team) whose opening thread only yielded or waited over the last second
 * (scaf_stallrule_idle: OpenBLAS's waits are yield loops) is said once
 * on stderr and fixes the program's team (malleable.h). `now_ns`:
 * CLOCK_MONOTONIC. Reads /proc only for a region past its limit.
 */
void scaf_stall_check(uint64_t now_ns);

#endif
