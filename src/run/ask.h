/* ask.h — the daemon a replayed `scaf run` talks to: found as the Python `scaf run` would find it, trusted as the layer trusts it, and asked what it remembers of the program. */
#ifndef SCAF_RUN_ASK_H
#define SCAF_RUN_ASK_H

#include <stdint.h>

#include "scaf/wire.h"

/* What the daemon said. */
struct scaf_run_answer {
    int recalled;                          /* a MEMORY_REPLY came: `reply` holds it */
    struct scaf_wire_memory_reply reply;
};

/*
 * Reaches the daemon on SOCK the way the record's DAEMON ("own", "shared", "none") says `scaf run` did: for
 * "own", the socket's directory must be this user's alone, and for "own" and "shared" a daemon of a trusted
 * user must answer there. When ASK, asks what it remembers of KEY (RECALL, with COUNT as the program's bound;
 * key 0 names no program: only the share) and fills *out. Returns 0 to go on (without a recall when none came), or -1 when the Python `scaf run` must handle it:
 * a daemon to start, a directory or a daemon to refuse, a path to explain.
 */
int scaf_run_ask(const char *daemon, const char *sock, int ask, uint64_t key, unsigned count,
                 struct scaf_run_answer *out);

#endif
