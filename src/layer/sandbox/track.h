/* track.h — the pages a sandboxed child writes, recorded by write-protection (one fault per page) and digested. */
#ifndef SCAF_LAYER_TRACK_H
#define SCAF_LAYER_TRACK_H

#include <signal.h>
#include <stdint.h>

/* Exit statuses of a tracking child: a failure of its own (not the region's), and a real fault of the region. */
#define SCAF_TRACK_EXIT_OWN 96
#define SCAF_TRACK_EXIT_FAULT (128 + SIGSEGV)

/*
 * In a sandboxed child, in this order (each returns 0 or -1; after a failure
 * the child must _exit(SCAF_TRACK_EXIT_OWN)):
 *
 * open: the tracking state and its signal stack, in mappings of their own that
 * are never write-protected.
 */
int scaf_track_open(void);

/* Leaves the bytes [lo, hi) out of the digest (they may differ between children for reasons not the region's). */
void scaf_track_skip(uintptr_t lo, uintptr_t hi);

/*
 * plan: every private writable mapping is to be protected, less the calling
 * thread's descriptor (the kernel writes its rseq area there), the tracking
 * state, the layer's own writable segments, and, of the stack holding `sp`,
 * everything below `keep` (the layer's and this child's own frames). Installs
 * the fault handler that records a page at its first write.
 */
int scaf_track_plan(uintptr_t sp, uintptr_t keep);

/*
 * arm: from here every first write to a protected page is recorded. Call it
 * last before the region runs (after the seccomp filter); a failure exits
 * with SCAF_TRACK_EXIT_OWN. A write outside the protected pages that faults
 * is the region's own crash: SCAF_TRACK_EXIT_FAULT.
 */
void scaf_track_arm(void);

/*
 * After the region: stops recording, and digests the pages written, in address
 * order, each with its words less the skipped bytes. -1 when more pages were
 * written than can be recorded.
 */
int scaf_track_finish(uint64_t *pages, uint64_t *digest);

/* Ends the child with `status` by a raw system call: nothing that a write to a protected page could trip. */
_Noreturn void scaf_track_exit(int status);

#endif
