/* sockpath.c — the default socket path search order shared by daemon and clients. */
#include "scaf/sockpath.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/un.h>
#include <unistd.h>

int scaf_sockpath_default(char *buf, size_t len)
{
    const char *env = getenv("SCAF_SOCKET");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;

    if (env && *env)
        n = snprintf(buf, len, "%s", env);
    else if (xdg && *xdg)
        n = snprintf(buf, len, "%s/scaf/scafd.sock", xdg);
    else
        n = snprintf(buf, len, "/tmp/scaf-%u/scafd.sock", (unsigned)getuid());

    /* sun_path must also hold it, NUL included. */
    if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}
