"""Where scaf's built artefacts and the daemon's socket are."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_dir() -> Path:
    """The build output root: $SCAF_BUILD, else <repo>/build."""
    env = os.environ.get("SCAF_BUILD")
    return Path(env) if env else ROOT / "build"


def scafd() -> Path:
    return build_dir() / "bin" / "scafd"


def layer() -> Path:
    return build_dir() / "lib" / "libscaf_gomp.so"


def policy_lib() -> Path:
    return build_dir() / "lib" / "libscaf_policy.so"


def workload(name: str) -> Path:
    return build_dir() / "workloads" / name


def workloads_dir() -> Path:
    return build_dir() / "workloads"


def default_socket() -> str:
    """Same search order as src/common/sockpath.c (documented in the README)."""
    env = os.environ.get("SCAF_SOCKET")
    if env:
        return env
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return os.path.join(xdg, "scaf", "scafd.sock")
    return f"/tmp/scaf-{os.getuid()}/scafd.sock"
