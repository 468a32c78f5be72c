/* memory.h — what the daemon remembers of each user's programs between their runs (docs/memory.md): recalled at arrival, learned at departure, kept in its state directory. */
#ifndef SCAFD_MEMORY_H
#define SCAFD_MEMORY_H

#include <sys/types.h>

#include "scaf/wire.h"

struct scafd;

/*
 * Answers a MEMORY request from a peer of uid `uid` (SO_PEERCRED: never a uid
 * the peer names) into *r. Never fails: what it cannot do is a status in *r.
 */
void scaf_memory_answer(struct scafd *d, uid_t uid, const struct scaf_wire_memory *req,
                        struct scaf_wire_memory_reply *r);

#endif
