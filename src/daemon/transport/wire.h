/* wire.h — scafd's side of the socket protocol: checks of what peers send, and the messages scafd sends (not an installed interface). */
#ifndef SCAFD_WIRE_H
#define SCAFD_WIRE_H

#include "scaf/proto.h"

#include <stddef.h>
#include <stdint.h>

/* Why a message is refused: an enum scaf_refuse_reason and the text the peer and stderr get. */
struct scaf_wire_refusal {
    uint32_t reason;
    char text[SCAF_REFUSE_TEXT];
};

/*
 * Checks a complete header (magic, version, type, length, reserved, and a
 * second HELLO when `client_id` is nonzero: the connection already said one).
 * Returns the whole message's length, or 0 with *why filled.
 */
uint32_t scaf_wire_check_header(const struct scaf_msg_header *h, uint32_t client_id, struct scaf_wire_refusal *why);
/* Checks a HELLO's body. Returns 0, or -1 with *why filled (always MALFORMED). */
int scaf_wire_check_hello(const struct scaf_msg_hello *m, struct scaf_wire_refusal *why);

/* Sends REFUSE only if the peer's buffer takes it now: scafd never waits for a peer that does not read. */
void scaf_wire_send_refuse(int fd, const struct scaf_wire_refusal *why);
/* Sends WELCOME with the page's memfd (SCM_RIGHTS), without waiting. Returns 0, or -1 if it did not go out whole. */
int scaf_wire_send_welcome(int fd, uint32_t client_id, uint32_t cpus, int memfd);
/* The header of a STATUS_REPLY of `length` bytes, header included. */
struct scaf_msg_header scaf_wire_status_header(uint32_t length);

#endif
