/* statedir.h — where the memory lives: --state-dir, $STATE_DIRECTORY, $XDG_STATE_HOME/scaf or ~/.local/state/scaf, made 0700 and opened the safe way (not an installed interface). */
#ifndef SCAFD_MEMORY_STATEDIR_H
#define SCAFD_MEMORY_STATEDIR_H

#include <stddef.h>

/* Which rule gave the directory. */
enum scaf_statedir_from {
    SCAF_STATEDIR_NONE = 0, /* none could: no option, no systemd, no usable $XDG_STATE_HOME or home */
    SCAF_STATEDIR_OPTION,   /* scafd --state-dir DIR */
    SCAF_STATEDIR_SYSTEMD,  /* $STATE_DIRECTORY (StateDirectory=scaf in the unit; its first entry) */
    SCAF_STATEDIR_XDG,      /* $XDG_STATE_HOME/scaf (an absolute $XDG_STATE_HOME) */
    SCAF_STATEDIR_HOME,     /* HOME/.local/state/scaf */
};

/*
 * The directory, from the option and the environment's values (each may be
 * NULL or empty; relative ones are ignored, as the XDG specification says),
 * in this order: option, state_directory, xdg_state_home, home. Writes it to
 * out and returns which rule gave it; SCAF_STATEDIR_NONE when none did or it
 * does not fit in len. Pure.
 */
enum scaf_statedir_from scaf_statedir_choose(const char *option, const char *state_directory,
                                             const char *xdg_state_home, const char *home, char *out, size_t len);

/*
 * Opens the directory `dir` that `from` gave, creating it mode 0700 when
 * missing: only its last component for an option (a missing parent is a
 * mistake in the path), the XDG base directories as well for the defaults
 * ($XDG_STATE_HOME, ~/.local, ~/.local/state: the XDG specification creates
 * them 0700). systemd's directory is resolved first (under DynamicUser it is
 * a link to /var/lib/private/scaf). Then the rundir rules of
 * src/common/rundir.c: a real directory of ours, writable by nobody else.
 * Returns its descriptor (O_CLOEXEC), or -1 with errno and a one-line reason.
 */
int scaf_statedir_open(const char *dir, enum scaf_statedir_from from, char *why, size_t whylen);

#endif
