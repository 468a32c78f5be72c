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

/* scaf_peer_trusted with DAEMON_USER from this process's environment ($SCAF_DAEMON_USER), as scaf-run and the
 * scaf command ask it. Same returns. */
int scaf_peer_trusted_env(int fd, const char *sockpath, uid_t *peer_uid);

/*
 * Why a daemon running as PEER_UID is not trusted, into BUF: "runs as uid B,
 * not as you (uid A), root or SCAF_DAEMON_USER" (a sentence's predicate: the
 * caller names the daemon and says what it does instead).
 */
void scaf_peer_refusal(uid_t peer_uid, char *buf, size_t len);

#endif
