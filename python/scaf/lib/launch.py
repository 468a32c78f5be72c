"""How scaf starts a program: find it like a shell, and add or remove the layer in LD_PRELOAD."""

from __future__ import annotations

import os

from scaf.lib import paths


def append_preload(current: str | None, lib: str) -> str:
    """LD_PRELOAD with LIB appended (ld.so splits on spaces and colons); never twice."""
    items = (current or "").replace(":", " ").split()
    if lib in items:
        return current or lib
    if not items:
        return lib
    return (current or "").rstrip(" :") + ":" + lib


def resolve(cmd: str, env_path: str | None) -> tuple[str | None, int]:
    """Find CMD like a shell: (path, 0), or (None, 126|127) with the reason in errno terms."""
    if "/" in cmd:
        if not os.path.exists(cmd):
            return None, 127
        if os.path.isdir(cmd) or not os.access(cmd, os.X_OK):
            return None, 126
        return cmd, 0
    found_unexecutable = False
    for d in (env_path if env_path is not None else os.defpath).split(":"):
        cand = os.path.join(d or ".", cmd)
        if os.path.isfile(cand):
            if os.access(cand, os.X_OK):
                return cand, 0
            found_unexecutable = True
    return None, 126 if found_unexecutable else 127


def strip_layer(preload: str) -> str:
    """LD_PRELOAD without scaf's layer, space-separated (for processes that are no OpenMP clients)."""
    layers = {str(paths.layer("gomp")), str(paths.layer("omp")), str(paths.tcm_provider())}
    keep = [p for p in preload.replace(":", " ").split() if p not in layers]
    return " ".join(keep)
