"""The runtime directory's rules on the Python side: the same as src/common/rundir.c, which scafd uses.

`scaf run` needs the directory before scafd exists (its start lock, the log
scafd's output goes to), so it cannot leave the checks to scafd alone; it
applies the very rules scafd applies, on descriptors, never on paths twice:
create only the last component (0700), accept an existing directory only if
it is a real directory of this user that nobody else can write, and open
every file in it relative to the directory's descriptor with O_NOFOLLOW,
refusing a file that is not a plain, singly linked file of this user.
"""

from __future__ import annotations

import errno
import os
import stat


class UnsafeDir(Exception):
    """The directory (or a file in it) may be somebody else's: nothing was written there."""


def open_dir(path: str, *, private: bool = True) -> int:
    """A descriptor on the directory PATH (created 0700 when missing); raises UnsafeDir or OSError.

    PRIVATE (the per-user default path): it must be ours and writable by
    nobody else. Otherwise ours or root's, and sticky when anyone may write it.
    """
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise UnsafeDir(f"cannot create the directory {path}: {e.strerror}") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            what = "a symbolic link" if os.path.islink(path) else "not a directory"
            raise UnsafeDir(f"{path} is {what}; nothing was written there") from None
        raise UnsafeDir(f"cannot open the directory {path}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        me = os.geteuid()
        mode = stat.S_IMODE(st.st_mode)
        if private and st.st_uid != me:
            raise UnsafeDir(f"the directory {path} belongs to uid {st.st_uid}, not to you (uid {me}); "
                            "nothing was written there")
        if private and mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise UnsafeDir(f"the directory {path} is writable by other users (mode {mode:03o}); "
                            "nothing was written there")
        if not private and st.st_uid not in (me, 0):
            raise UnsafeDir(f"the directory {path} belongs to uid {st.st_uid}, not to you (uid {me}) or root")
        if not private and mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            raise UnsafeDir(f"the directory {path} is writable by every user and not sticky (mode {mode:03o})")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_in(dirfd: int, name: str, flags: int, mode: int = 0o600) -> int:
    """NAME inside DIRFD, opened with O_NOFOLLOW; raises UnsafeDir for a link or somebody else's file."""
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dirfd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafeDir(f"{name} is a symbolic link; nothing was written through it") from None
        raise UnsafeDir(f"cannot open {name}: {e.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
        os.close(fd)
        raise UnsafeDir(f"{name} is not a plain file of yours (planted by someone else?); nothing was written to it")
    return fd
