/* peer.h — whether the daemon at the other end of a connected Unix socket is one this user may trust. */
#ifndef SCAF_PEER_H
#define SCAF_PEER_H

#include <sys/types.h>

/*
 * Reads SO_PEERCRED of FD, a socket connected to SOCKPATH, into *peer_uid and
 * says whether that daemon may steer this user's programs:
 *   - it runs as this user (getuid()) or as root (a socket-activated daemon's
 *     socket carries the credentials of its creator, pid 1, uid 0);
 *   - it runs as DAEMON_USER (SCAF_DAEMON_USER: a user name or a numeric uid;
 *     NULL or "" for none);
 *   - or it runs as the owner of SOCKPATH's directory, and that directory is an
 *     entry of /run (root's, writable by nobody else): only root can have
 *     handed it to the daemon's user (a system service's /run/scaf, made by its
 *     service manager for a dedicated or dynamic user). A directory in /tmp or
 *     in a user's home never qualifies.
 * Returns 1 (trusted), 0 (not trusted), or -1 with errno set when the
 * credentials cannot be read.
 */
int scaf_peer_trusted(int fd, const char *sockpath, const char *daemon_user, uid_t *peer_uid);

#endif
