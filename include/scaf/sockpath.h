/* sockpath.h — where scafd listens and where clients look for it. */
#ifndef SCAF_SOCKPATH_H
#define SCAF_SOCKPATH_H

#include <stddef.h>
#include <sys/un.h>

/* The longest socket path a sockaddr_un holds, its terminating NUL included. */
#define SCAF_SOCKPATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

/*
 * Search order (the daemon, the layer and the `scaf` command all use it):
 *   1. $SCAF_SOCKET, if set and non-empty;
 *   2. $XDG_RUNTIME_DIR/scaf/scafd.sock, if XDG_RUNTIME_DIR is set and non-empty;
 *   3. /tmp/scaf-$UID/scafd.sock.
 * A system-wide daemon is started with --socket /run/scaf/scafd.sock and its
 * clients set SCAF_SOCKET to that path.
 *
 * Writes the path into buf. Returns 0, or -1 with errno = ENAMETOOLONG when it
 * does not fit in buf or in a sockaddr_un; in the second case buf holds it
 * whole, for the caller to name in its message.
 */
int scaf_sockpath_default(char *buf, size_t len);

/*
 * This user's own socket: the search order without $SCAF_SOCKET (steps 2 and
 * 3), the only path `scaf run` starts a daemon on. Returns 0, or -1 with
 * errno = ENAMETOOLONG, as scaf_sockpath_default.
 */
int scaf_sockpath_user(char *buf, size_t len);

#endif
