/* session.h — scafd's connections: reading, HELLO, refusals, replies, departures (not an installed interface). */
#ifndef SCAFD_SESSION_H
#define SCAFD_SESSION_H

struct scafd;

#include <stdint.h>

/* The connection table (max_clients plus a pool for peers that have not said HELLO) and d->clients[].
 * Returns 0, or -1 with errno = ENOMEM. */
int scaf_session_table_init(struct scafd *d);
void scaf_session_table_free(struct scafd *d);

enum scaf_session_accept_result {
    SCAF_CONN_ACCEPT_OK = 0,  /* accepted (or turned away) what was pending, up to the bound */
    SCAF_CONN_ACCEPT_NO_FDS,  /* out of descriptors: one pending peer was closed; stop listening until one ends */
};

/* The listening socket is readable: accepts what is pending, bounded per call. */
enum scaf_session_accept_result scaf_session_accept(struct scafd *d);
/* Connections open now, with or without HELLO. */
uint32_t scaf_session_count(const struct scafd *d);
/* An epoll event whose tag is not one of the loop's own: ignored when that connection is gone. */
void scaf_session_event(struct scafd *d, uint64_t tag, uint32_t events);
/* Drops peers that leave a reply unread or never say HELLO, and summarizes the second's refusals;
 * called once a second. */
void scaf_session_reap_stalled(struct scafd *d, double now);

/*
 * The replies that wait for the end-of-batch step, so that they show what the
 * referee made of this batch: WELCOME (the page already holds the first
 * allocation), then status replies. A peer they cannot reach is dropped, which
 * sets d->members_changed when it was a client.
 */
void scaf_session_send_welcomes(struct scafd *d);
void scaf_session_send_status(struct scafd *d);

#endif
