/* conn.h — the layer's connection to scafd: lazy first connect, handshake, page mapping, reconnect, fork. */
#ifndef SCAF_LAYER_CONN_H
#define SCAF_LAYER_CONN_H

#include <stdatomic.h>
#include <stdint.h>

struct scaf_page;

/* Where the layer stands; read on the region path only while no page is mapped. */
enum scaf_conn_state {
    SCAF_CONN_UNTRIED = 0, /* nothing tried yet: the next outermost region connects */
    SCAF_CONN_INERT = 1,   /* disabled, no daemon, or refused: pass everything through */
    SCAF_CONN_LIVE = 2,    /* connected once; the helper thread keeps it (or reconnects) */
};
extern _Atomic int scaf_conn_state;

/* Outcome of one handshake attempt. */
enum scaf_conn_result {
    SCAF_CONN_OK = 0,
    SCAF_CONN_ABSENT = 1,          /* no daemon listens (or the path is unusable) */
    SCAF_CONN_REFUSED = 2,         /* the daemon said REFUSE (full, malformed, ...) */
    SCAF_CONN_REFUSED_VERSION = 3, /* the daemon speaks another protocol: never retry */
    SCAF_CONN_BROKEN = 4,          /* protocol or mapping error */
    SCAF_CONN_UNTRUSTED = 5,       /* the daemon runs as a user we do not trust (SO_PEERCRED) */
};

/* Called once from the layer's constructor. The state starts UNTRIED, or INERT when `disabled` (SCAF_DISABLE). */
void scaf_conn_init(int disabled);

/*
 * The first connect, made lazily by the first outermost region or omp_* call
 * so that processes that never run OpenMP never become clients. Thread-safe;
 * only the first caller connects. Returns the page, or NULL when the layer is
 * (now) inert.
 */
struct scaf_page *scaf_conn_first(void);

/*
 * Nonzero when the first connect found no daemon we could use but a later one
 * may appear (none listening, a hung or full daemon, one of an untrusted
 * user): the helper thread then keeps trying with scaf_conn_join.
 */
int scaf_conn_wants_join(void);

/*
 * Helper thread only. One attempt to join a daemon after the first connect
 * failed; on success publishes the page and makes the state LIVE, so the next
 * region is steered. Returns the attempt's enum scaf_conn_result.
 */
enum scaf_conn_result scaf_conn_join(void);

/* Helper thread only. Nonzero when the daemon closed our connection (EOF or error). */
int scaf_conn_lost(void);

/* Helper thread only. Closes the dead connection; the last page stays published. */
void scaf_conn_drop(void);

/*
 * Any thread: the page says the client is idle in period `idle` (its `idle` word) and the program
 * works again. Sends one WAKE for that period on the connection, without waiting (MSG_DONTWAIT, the
 * lock only tried): a WAKE that cannot go now is tried by the next caller, and the daemon sees the
 * regions counter move at its next turn anyway. Returns 0 when the WAKE of that period is gone (sent
 * now or by another thread), -1 when it could not go. Preserves errno.
 */
int scaf_conn_wake(uint32_t idle);

/*
 * Around fork: the connection lock is held across it (lock in the prepare
 * handler, unlock in both parent and child) so that a child never inherits a
 * half-made connection.
 */
void scaf_conn_lock(void);
void scaf_conn_unlock(void);

/*
 * In a forked child (not an experiment's): drops the inherited connection and
 * page so that the child connects anew, as a client of its own, at its first
 * region.
 */
void scaf_conn_forget(void);

/*
 * Helper thread only. One reconnect attempt; on success publishes the new page
 * (the old one stays mapped: region threads may still read it). Returns the
 * attempt's enum scaf_conn_result.
 */
enum scaf_conn_result scaf_conn_reconnect(void);

#endif
