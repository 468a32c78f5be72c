/* memory.h — what the daemon remembers of each user's programs between their runs (docs/memory.md): recalled at arrival, learned at departure, answered to MEMORY requests (not an installed interface). */
#ifndef SCAFD_MEMORY_H
#define SCAFD_MEMORY_H

#include <stdint.h>
#include <sys/types.h>

#include "scaf/wire.h"

struct scafd;
struct scaf_client;

/*
 * A client arrives (clients.c, before it enters the table and before its
 * WELCOME): counts the time of the clients already here with their current
 * number of peers, then fills its page's memory half (apply/pagewrite.c): its
 * start team (scaf_start_team over the available contexts and the other
 * clients now, with the peers remembered), and, for a nonzero `key` whose
 * user's memory is kept, the runs, verdict and known sites remembered. Its
 * remembered curve is kept in cl->memo (and seeds cl->state's points) until
 * its first measured report. The record's last seen is brought forward.
 */
void scaf_memory_arrive(struct scafd *d, struct scaf_client *cl, uint64_t key);

/*
 * A client leaves (clients.c, while it is still in the table and its page
 * mapped; also when it was killed): its run is learned into its user's
 * memory (memory/record.c) from the page (verdict, source, reason, learned
 * sites, each checked) and the daemon's own tally (curve points, peers, run
 * time), and that memory marked to be written.
 */
void scaf_memory_leave(struct scafd *d, struct scaf_client *cl);

/*
 * A referee turn, before idleness is judged again: each client's peer time
 * is counted up to now with the clients that were running (not idle) over
 * the stretch since the last count. A start team's busy clients are the
 * running ones too: a pool's idle worker or waiting parent is nobody's peer.
 */
void scaf_memory_turn(struct scafd *d);

/*
 * Answers a MEMORY request from a peer of uid `uid` (SO_PEERCRED: never a uid
 * the peer names) into *r. Never fails: what it cannot do is a status in *r.
 */
void scaf_memory_answer(struct scafd *d, uid_t uid, const struct scaf_wire_memory *req,
                        struct scaf_wire_memory_reply *r);

#endif
