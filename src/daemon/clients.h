/* clients.h — arrival and departure of clients: who may register, their pages and lookout baselines, the table of clients (not an installed interface). */
#ifndef SCAFD_CLIENTS_H
#define SCAFD_CLIENTS_H

#include "report/refusals.h"
#include "scaf/wire.h"

#include <sys/types.h>

struct scafd;
struct scaf_client;

/* The client table d->clients (max_clients entries). Returns 0, or -1 with errno = ENOMEM. */
int scaf_clients_init(struct scafd *d);
/* Unmaps every client's page and frees the table; before the connections that hold the clients go. */
void scaf_clients_free(struct scafd *d);

/* Why a HELLO was not made a client: the refusal to send, and the kind it is counted as. */
struct scaf_clients_refusal {
    enum scaf_refusal_kind kind;
    struct scaf_wire_refusal why;
};

/*
 * A decoded HELLO `m` on the connected socket `fd`, whose peer was `uid` when
 * accepted, asks to become client `cl` (storage its connection provides).
 * Checks, in this order: the table's room, the user's quota (--shared), the
 * peer's identity (SO_PEERCRED: the kernel's word, never the client's), a pid
 * this daemon can see (its PID namespace). Then makes the page, reads the
 * name and session from /proc, takes the lookout baseline, writes the page's
 * memory half (recall/recall.c: the start team, what is remembered of HELLO's
 * key) and enters `cl` in d->clients (d->members_changed). Returns the page's memfd for the WELCOME,
 * or -1 with *no filled: nothing was registered, the caller refuses and closes.
 */
int scaf_clients_arrive(struct scafd *d, struct scaf_client *cl, int fd, uid_t uid, const struct scaf_wire_hello *m,
                        struct scaf_clients_refusal *no);

/*
 * Client `cl` leaves (its connection closed or was dropped): its run learned
 * by the memory (recall/recall.c, from its page), out of the table,
 * its CPU time handed to the lookout, a kill noted (d->killed_sid) when it did
 * not end through exit() and its process is gone or dying, its page unmapped.
 * The end-of-batch step gives its share back (d->members_changed).
 */
void scaf_clients_leave(struct scafd *d, struct scaf_client *cl);

#endif
