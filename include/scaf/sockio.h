/* sockio.h — blocking I/O on a Unix stream socket to the daemon, bounded by a timeout: what the layer and scaf-run both need before they speak the protocol. */
#ifndef SCAF_SOCKIO_H
#define SCAF_SOCKIO_H

#include <stddef.h>

/*
 * Connects to the Unix socket at PATH with every later read and write bounded by TIMEOUT_MS (SO_RCVTIMEO,
 * SO_SNDTIMEO); close-on-exec. Returns the descriptor, or -1 with errno set (connect's when nobody listens,
 * ENAMETOOLONG when PATH does not fit).
 */
int scaf_sockio_dial(const char *path, int timeout_ms);

/* Sends all LEN bytes (no SIGPIPE; EINTR retried). Returns 0, or -1 on error or timeout. */
int scaf_sockio_send_all(int fd, const void *buf, size_t len);

/* Reads exactly LEN bytes (EINTR retried). Returns 0, or -1 on EOF, error or timeout. */
int scaf_sockio_recv_all(int fd, void *buf, size_t len);

#endif
