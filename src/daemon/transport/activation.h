/* activation.h — socket activation: adopt the listening socket systemd (or any LISTEN_FDS launcher) passed as fd 3 (not an installed interface). */
#ifndef SCAFD_ACTIVATION_H
#define SCAFD_ACTIVATION_H

#include <stddef.h>

enum scaf_activation {
    SCAF_ACTIVATION_NONE, /* no socket was passed to this process: bind one ourselves */
    SCAF_ACTIVATION_OK,   /* *fd is the passed listening socket, *path its address */
    SCAF_ACTIVATION_BAD,  /* a socket was passed but cannot be served (said on stderr) */
};

/* The sd_listen_fds(3) protocol without libsystemd: LISTEN_PID must be this process and
 * LISTEN_FDS exactly 1; the socket at fd 3 must be a listening AF_UNIX stream socket bound to a
 * path, which is copied into path (len bytes). The variables are removed from the environment
 * either way, and the fd is made non-blocking and close-on-exec. */
enum scaf_activation scaf_activation_take(int *fd, char *path, size_t len);

#endif
