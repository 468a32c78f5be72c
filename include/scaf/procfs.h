/* procfs.h — reading small /proc files without stdio, so the preload layer can use it anywhere. */
#ifndef SCAF_PROCFS_H
#define SCAF_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Reads up to len-1 bytes of `path` into buf and NUL-terminates it (one open,
 * read until EOF or full, close; no allocation, no stdio: async-signal-safe).
 * Returns the number of bytes read (0 for an empty file), or -1 with errno from
 * open/read, or EINVAL when len is 0.
 */
ssize_t scaf_procfs_read(const char *path, char *buf, size_t len);

/* The same from an open descriptor (left open): up to len-1 bytes, NUL-terminated, read until EOF or full. */
ssize_t scaf_procfs_read_fd(int fd, char *buf, size_t len);

/*
 * /proc/PID/<name> for pid > 0, /proc/self/<name> for pid <= 0, read as above,
 * with a trailing newline removed. Returns as scaf_procfs_read; ENAMETOOLONG
 * when the path would not fit.
 */
ssize_t scaf_procfs_read_pid(pid_t pid, const char *name, char *buf, size_t len);

/* This process's resident pages (the second field of /proc/self/statm); 0 when it cannot be read. */
uint64_t scaf_procfs_resident_pages(void);

/*
 * Reads the whole of `path` into *buf, NUL-terminated, for files with no
 * useful bound (/proc/stat on 1024 CPUs is about 100 KB). *buf and *cap may
 * start as NULL and 0; they are kept for the next call, so a reader that comes
 * back every second allocates only when the file outgrows its buffer. Uses
 * realloc: not for the layer's async-signal-safe paths. Returns the number of
 * bytes read, or -1 with errno from open/read, ENOMEM, or EFBIG past 64 MiB;
 * *buf stays valid for free() either way.
 */
ssize_t scaf_procfs_read_grow(const char *path, char **buf, size_t *cap);

/*
 * Whether process `pid` is on its way out: a zombie; its exit under way (PF_EXITING in the flags of
 * /proc/PID/stat: the kernel is tearing it down, and its descriptors close at the end of that, which
 * for a large address space takes a noticeable time); or signalled and not yet run (a pending
 * SIGKILL, or a pending signal whose default action ends it and that it neither blocks, ignores nor
 * catches, as /proc/PID/status shows them for its main thread).
 * Returns 1 when so, 0 when it runs on or is already gone (reaped: its descriptors are closed), or
 * -1 with errno when /proc/PID cannot be read for another reason or does not parse (EPROTO).
 */
int scaf_procfs_exiting(pid_t pid);

/* The session id of process `pid` (/proc/PID/stat): 0 when the session's leader is outside the
 * caller's PID namespace (a container's processes, often). -1 with errno (ENOENT: no such process;
 * EPROTO). */
pid_t scaf_procfs_session(pid_t pid);

/*
 * The parent of process `pid` and the start time of `pid` (/proc/PID/stat fields 4 and 22, clock ticks
 * after boot): a pid and its start time together name one process, where a pid alone may be reused.
 * *ppid is 0 when the parent is outside the caller's PID namespace. Returns 0, or -1 with errno (ENOENT:
 * no such process; EPROTO; EINVAL for pid <= 0 or a NULL pointer).
 */
int scaf_procfs_parent(pid_t pid, pid_t *ppid, uint64_t *start);

/*
 * The user and system CPU time of thread `tid` of this process, in clock ticks (/proc/self/task/TID/stat,
 * fields 14 and 15; sysconf(_SC_CLK_TCK) a second), and its state letter when `state` is not NULL.
 * Returns 0, or -1 with errno (ENOENT: no such thread; EPROTO; EINVAL for tid <= 0).
 */
int scaf_procfs_task_times(pid_t tid, uint64_t *user, uint64_t *sys, char *state);

/* One mapping of /proc/self/maps: its range and its four permission letters ("rw-p"). */
struct scaf_map {
    uintptr_t lo, hi;
    char perms[5];
};

/*
 * Calls fn(map, arg) for each mapping of this process, in address order, with
 * no allocation and no stdio (usable in a freshly forked child). A nonzero
 * return from fn stops the walk and is returned. Returns 0 when every line
 * was passed, or -1 with errno when the file could not be read.
 */
int scaf_procfs_each_map(int (*fn)(const struct scaf_map *map, void *arg), void *arg);

#endif
