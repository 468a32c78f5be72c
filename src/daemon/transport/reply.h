/* reply.h — scafd's sends of REFUSE and WELCOME: encoded by the codec (scaf/wire.h), never waiting for a peer. */
#ifndef SCAFD_REPLY_H
#define SCAFD_REPLY_H

#include "scaf/wire.h"

/* Sends REFUSE only if the peer's buffer takes it now: scafd never waits for a peer that does not read. */
void scaf_reply_refuse(int fd, const struct scaf_wire_refusal *why);
/* Sends WELCOME with the page's memfd (SCM_RIGHTS), without waiting. Returns 0, or -1 if it did not go out whole. */
int scaf_reply_welcome(int fd, uint32_t client_id, uint32_t cpus, int memfd);

#endif
