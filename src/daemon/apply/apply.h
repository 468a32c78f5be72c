/* apply.h — the referee's decision made real: the pages whose allocation changed written, the gangs' turns (not an installed interface). */
#ifndef SCAFD_APPLY_H
#define SCAFD_APPLY_H

#include <stdbool.h>
#include <stdint.h>

struct scaf_client;
struct scaf_referee_alloc;

/* The gangs that take turns, and whose turn it is. */
struct scaf_gangs {
    uint32_t slots; /* gangs taking turns now (0 or >= 2) */
    uint32_t turn;  /* whose turn: 0..slots-1 */
};

/*
 * Writes allocs[i] to the page of clients[i] (n of each) only when something
 * in it changed (or the client count did), so that clients are not woken for
 * nothing, records it as the client's, and sets the gangs' turns and every
 * gang word. `cpus`: the contexts the daemon hands out. Returns whether any
 * client's allocation changed.
 */
bool scaf_apply_run(struct scaf_client *const *clients, uint32_t n, const struct scaf_referee_alloc *allocs,
                    uint32_t cpus, struct scaf_gangs *g);

/* The gang timer: passes the turn to the next gang and flips the gang words; nothing else. */
void scaf_apply_gang_tick(struct scaf_client *const *clients, uint32_t n, struct scaf_gangs *g);

#endif
