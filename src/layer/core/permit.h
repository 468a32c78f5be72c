/* permit.h — thread-count permits: a runtime with its own workers (oneTBB, through the TCM adapter) asks how many it may run; the helper renegotiates them when the share changes. */
#ifndef SCAF_LAYER_PERMIT_H
#define SCAF_LAYER_PERMIT_H

#include <stdatomic.h>
#include <stdint.h>

struct scaf_page;

/* At most this many permits in a process (oneTBB holds one per arena). */
#define SCAF_PERMIT_MAX 32
/* The most workers one permit may ask ("automatic"): the protocol's CPU limit. */
#define SCAF_PERMIT_MAX_WORKERS 1024u

/*
 * A permit is named by a key that is never 0 and never repeats in a process
 * for a slot's next user (a generation in its upper bits): a handle a runtime
 * kept after releasing it is refused, not taken for someone else's.
 *
 * `notify(arg)` is the runtime's renegotiation callback. It is called by the
 * helper thread only, with none of the core's locks held (the runtime reads
 * the permit back from inside it), and never after scaf_permit_close
 * returned for that permit.
 */
typedef void (*scaf_permit_notify)(uint64_t key, void *owner, void *arg);

/*
 * Opens a permit for `owner` (the adapter's client, passed back to notify)
 * asking min..max workers in `state` (enum scaf_grant_state). With
 * `callers_enter`, every thread that works for the permit, the caller of a
 * parallel algorithm included, enters and leaves it (scaf_permit_thread_*),
 * so that no thread inside means no work; without it only the state says so.
 * Returns 0 and the key in *key, or -1 with errno ENOSPC (table full).
 */
int scaf_permit_open(unsigned min, unsigned max, unsigned state, int callers_enter, scaf_permit_notify notify,
                     void *owner, void *arg, uint64_t *key);

/* Asks again (new bounds and state). Returns 0, or -1 with errno EINVAL for a key that names no open permit. */
int scaf_permit_update(uint64_t key, unsigned min, unsigned max, unsigned state);

/* Only the state (idle, inactive, active again). Returns 0 or -1 with errno EINVAL. */
int scaf_permit_set_state(uint64_t key, unsigned state);

/* The grant and state now. Returns 0 or -1 with errno EINVAL. */
int scaf_permit_read(uint64_t key, unsigned *grant, unsigned *state);

/* Closes it; waits for a notify of it in flight. Returns 0 or -1 with errno EINVAL. */
int scaf_permit_close(uint64_t key);

/* Closes every permit of `owner` (a runtime that disconnects). */
void scaf_permit_close_owner(void *owner);

/* The calling thread starts or stops working for the permit (counted; shown with SCAF_VERBOSE). */
int scaf_permit_thread_enter(uint64_t key);
int scaf_permit_thread_leave(void);

/* Permits open now. */
unsigned scaf_permit_count(void);

/*
 * A process with oneTBB and OpenMP is one client: its share is divided
 * between the two. An outermost OpenMP region notes its team when it starts
 * (`delta` = team - 1 more threads busy) and takes it back when it ends
 * (-(team - 1)); the permits' split leaves those contexts out, at oneTBB's
 * next request or the helper's next tick. The region itself takes the share
 * as it would alone: oneTBB's workers linger a little after each algorithm
 * (they spin before they give their arena up), and a program that calls one
 * runtime after the other would otherwise run its OpenMP regions short. It
 * sits on the region path, so it is called only while a permit is open.
 */
void scaf_permit_note_region(int delta);

/*
 * Nonzero while a permit is open. The region path counts its threads only
 * then, so a process without oneTBB pays one relaxed load per region and no
 * atomic add; a region that began before the first permit opened is not
 * counted (the split lags by that one region).
 */
extern _Atomic int scaf_permit_any;

/*
 * Helper thread, each tick and at each page change: splits the page's
 * threads between the permits again and calls notify for each whose grant
 * changed. A process that runs no OpenMP region shows on the page the team
 * its permits run while they work, and (without BLAS pools either) how many
 * threads it wants now: 1 once every permit has been inactive or idle for a
 * second, so that the daemon gives the rest to others (`wanted`, protocol 5).
 */
void scaf_permit_poll(struct scaf_page *page);

#endif
