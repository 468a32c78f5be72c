"""Real users for the two-user tests: made with useradd for a test module, removed after it."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def real_users(names: tuple[str, ...]) -> Iterator[list[pwd.struct_passwd]]:
    """The users `names`, created now and deleted afterwards (unless they existed before).

    Skips the test, with the reason, when not root or when useradd, userdel or setpriv is missing.
    """
    if os.geteuid() != 0:
        pytest.skip("two-user tests need root: they create users and run processes as them")
    for tool in ("useradd", "userdel", "setpriv"):
        if not shutil.which(tool):
            pytest.skip(f"two-user tests need {tool}")
    created = []
    try:
        for name in names:
            try:
                pwd.getpwnam(name)
            except KeyError:
                subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                               check=True, capture_output=True)
                created.append(name)
        yield [pwd.getpwnam(n) for n in names]
    finally:
        for name in created:
            subprocess.run(["userdel", name], check=False, capture_output=True)
