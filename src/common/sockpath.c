/* sockpath.c — the default socket path search order shared by daemon and clients. */
#include "scaf/sockpath.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/un.h>
#include <unistd.h>

/* Whether N, what snprintf wrote into LEN bytes, fits there and in a sockaddr_un: 0, or -1 with ENAMETOOLONG
 * (the path is whole in the buffer when only the sockaddr_un is too small). */
static int fits(int n, size_t len)
{
    /* sun_path must also hold it, NUL included. */
    if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int scaf_sockpath_user(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");

    if (xdg && *xdg)
        return fits(snprintf(buf, len, "%s/scaf/scafd.sock", xdg), len);
    return fits(snprintf(buf, len, "/tmp/scaf-%u/scafd.sock", (unsigned)getuid()), len);
}

int scaf_sockpath_default(char *buf, size_t len)
{
    const char *env = getenv("SCAF_SOCKET");

    if (env && *env)
        return fits(snprintf(buf, len, "%s", env), len);
    return scaf_sockpath_user(buf, len);
}
