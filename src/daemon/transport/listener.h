/* listener.h — scafd's Unix socket: path, directory, single-instance lock, stale socket recovery (not an installed interface). */
#ifndef SCAFD_LISTENER_H
#define SCAFD_LISTENER_H

#include <stdbool.h>
#include <sys/types.h>

struct scaf_listener {
    const char *path;
    bool path_is_default; /* no --socket: the per-user search order gave it, so its directory must be ours */
    bool shared;          /* --shared: socket 0666, a created directory 0755 */
    int verbose;
    bool inherited; /* fd was passed by socket activation: never bound, locked or removed here */
    double idle_exit_s; /* --idle-exit, written into the lock file so that a second daemon can say when this one leaves */
    int fd;     /* listening, non-blocking; -1 when closed */
    int lockfd; /* PATH.lock, flocked for the daemon's life */
    dev_t dev;  /* the socket this daemon bound, so close removes only that one */
    ino_t ino;
};

/* The options above set, fd and lockfd -1 (or fd the passed socket and inherited true: then
 * open only keeps it). Binds the socket (creating a missing parent directory,
 * recovering a stale socket). Returns 0, or -1 after printing a clear message on stderr. */
int scaf_listener_open(struct scaf_listener *l);
/* Removes the socket only if it is still the one this daemon bound. */
void scaf_listener_close(struct scaf_listener *l);

#endif
