/* procfs.h — reading small /proc files without stdio, so the preload layer can use it anywhere. */
#ifndef SCAF_PROCFS_H
#define SCAF_PROCFS_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Reads up to len-1 bytes of `path` into buf and NUL-terminates it (one open,
 * read until EOF or full, close; no allocation, no stdio: async-signal-safe).
 * Returns the number of bytes read (0 for an empty file), or -1 with errno from
 * open/read, or EINVAL when len is 0.
 */
ssize_t scaf_procfs_read(const char *path, char *buf, size_t len);

/*
 * /proc/PID/<name> for pid > 0, /proc/self/<name> for pid <= 0, read as above,
 * with a trailing newline removed. Returns as scaf_procfs_read; ENAMETOOLONG
 * when the path would not fit.
 */
ssize_t scaf_procfs_read_pid(pid_t pid, const char *name, char *buf, size_t len);

#endif
