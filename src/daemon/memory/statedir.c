/* statedir.c — where the memory lives: the directory chosen from the option and the environment, created 0700, opened by the rundir rules. */
#include "statedir.h"
#include "scaf/rundir.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int usable(const char *s)
{
    return s && s[0] == '/';
}

/* The result when it fits, else none. */
static enum scaf_statedir_from put(char *out, size_t len, enum scaf_statedir_from from, const char *fmt,
                                   const char *a, size_t alen)
{
    int n = snprintf(out, len, fmt, (int)alen, a);

    if (n < 0 || (size_t)n >= len) {
        if (len)
            out[0] = '\0';
        return SCAF_STATEDIR_NONE;
    }
    return from;
}

enum scaf_statedir_from scaf_statedir_choose(const char *option, const char *state_directory,
                                             const char *xdg_state_home, const char *home, char *out, size_t len)
{
    if (option && option[0])
        return put(out, len, SCAF_STATEDIR_OPTION, "%.*s", option, strlen(option));
    /* systemd may list several directories, colon-separated: ours is the first. */
    if (usable(state_directory))
        return put(out, len, SCAF_STATEDIR_SYSTEMD, "%.*s", state_directory, strcspn(state_directory, ":"));
    if (usable(xdg_state_home))
        return put(out, len, SCAF_STATEDIR_XDG, "%.*s/scaf", xdg_state_home, strlen(xdg_state_home));
    if (usable(home)) {
        size_t n = strlen(home);
        while (n > 1 && home[n - 1] == '/')
            n--; /* HOME=/ (system users): "/.local/state/scaf", not "//.local/state/scaf" */
        return put(out, len, SCAF_STATEDIR_HOME, n == 1 ? "%.*s.local/state/scaf" : "%.*s/.local/state/scaf", home, n);
    }
    if (len)
        out[0] = '\0';
    return SCAF_STATEDIR_NONE;
}

/* mkdir of path's parent directories after the first `keep` bytes (which must exist), mode 0700. */
static int make_parents(const char *dir, size_t keep, char *why, size_t whylen)
{
    char path[PATH_MAX];
    size_t n = strlen(dir);

    if (n >= sizeof path) {
        snprintf(why, whylen, "the path is too long");
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = keep + 1; i < n; i++) {
        if (path[i] != '/')
            continue;
        path[i] = '\0';
        if (mkdir(path, 0700) < 0 && errno != EEXIST) {
            int err = errno;
            snprintf(why, whylen, "cannot create %s: %s", path, strerror(err));
            errno = err;
            return -1;
        }
        path[i] = '/';
    }
    return 0;
}

int scaf_statedir_open(const char *dir, enum scaf_statedir_from from, char *why, size_t whylen)
{
    static const char tail[] = "/.local/state/scaf";
    char real[PATH_MAX];
    size_t n = strlen(dir);

    switch (from) {
    case SCAF_STATEDIR_SYSTEMD:
        /* systemd made it and owns the path to it; under DynamicUser=yes it is a link into /var/lib/private. */
        if (!realpath(dir, real)) {
            int err = errno;
            snprintf(why, whylen, "cannot resolve it: %s", strerror(err));
            errno = err;
            return -1;
        }
        dir = real;
        break;
    case SCAF_STATEDIR_XDG:
        /* $XDG_STATE_HOME itself may be missing: the specification has it made 0700. */
        if (make_parents(dir, 0, why, whylen) < 0)
            return -1;
        break;
    case SCAF_STATEDIR_HOME:
        /* ~/.local and ~/.local/state, never the home itself. */
        if (n > sizeof tail - 1 && make_parents(dir, n - (sizeof tail - 1), why, whylen) < 0)
            return -1;
        break;
    default:
        break;
    }
    return scaf_rundir_open(dir, SCAF_RUNDIR_PRIVATE, why, whylen);
}
