"""Real third-party OpenMP programs under the layer: ImageMagick, GraphicsMagick, scikit-learn.

Each runs plain and then under the layer with a daemon. The outputs must be byte-identical,
the exit codes equal, and the process must show up as a client while it runs. These programs
pass explicit num_threads clauses, call omp_get_max_threads/omp_set_num_threads, and (for
scikit-learn) bring their own bundled, renamed libgomp.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Daemon, layer_env
from scaf.lib import paths

PROGS = Path(__file__).resolve().parents[1] / "progs"
CONVERT = "/usr/bin/convert-im6.q16"
# 8192 rows at least: below that ImageMagick keeps small images on one thread.
IM_ARGS = ["-size", "256x8192", "gradient:", "-blur", "0x6"]
GM_ARGS = ["convert", "-size", "256x8192", "gradient:", "-blur", "0x12"]


def plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("SCAF_")}


def run_watched(argv: list[str], env: dict[str, str], daemon: Daemon | None) -> tuple[int, bytes, bytes, dict | None]:
    """Runs argv; with a daemon, polls its status meanwhile and returns this process's client entry."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = None
    if daemon is not None:
        while proc.poll() is None:
            for c in daemon.status()["clients"]:
                if c["pid"] == proc.pid:
                    seen = c
            time.sleep(0.02)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err, seen


def compare(tmp_path: Path, scafd: Daemon, argv_for: Callable[[str], list[str]], outfile: str | None) -> dict:
    """argv_for(path) -> argv. Returns the client entry seen under the daemon."""
    results = []
    for label, env, daemon in (
        ("plain", plain_env(), None),
        ("nodaemon", layer_env(None), None),
        ("layer", layer_env(scafd.socket), scafd),
    ):
        target = str(tmp_path / f"{label}-{outfile}") if outfile else ""
        rc, out, err, seen = run_watched(argv_for(target), env, daemon)
        data = Path(target).read_bytes() if outfile else out
        results.append((label, rc, data, err, seen))
    (_, rc0, data0, err0, _) = results[0]
    assert rc0 == 0, err0
    for label, rc, data, err, _ in results[1:]:
        assert rc == rc0, (label, err)
        assert data == data0, f"{label}: output differs from the plain run"
        assert err == err0, (label, err)
    seen = results[-1][4]
    assert seen is not None, f"never a client while it ran: {scafd.stderr()}"
    return seen


def test_imagemagick_convert(tmp_path: Path, scafd: Daemon) -> None:
    if not os.access(CONVERT, os.X_OK):
        pytest.skip(f"{CONVERT} not installed (apt-get install imagemagick)")
    seen = compare(tmp_path, scafd, lambda out: [CONVERT, *IM_ARGS, out], "out.ppm")
    assert seen["name"].startswith("convert")
    # ImageMagick reads omp_get_max_threads() before its regions, but passes an explicit
    # num_threads to each of them, which the layer never changes: whatever the verdict, its
    # teams are its own. The verdict and its reason reach the status.
    assert seen["verdict"] in ("malleable", "fixed", "undecided") and seen["reason"], seen


def test_graphicsmagick_convert(tmp_path: Path, scafd: Daemon) -> None:
    gm = shutil.which("gm")
    if gm is None:
        pytest.skip("gm not installed (apt-get install graphicsmagick)")
    seen = compare(tmp_path, scafd, lambda out: [gm, *GM_ARGS, out], "out.ppm")
    assert seen["name"] == "gm", seen


def test_scikit_learn_bundled_libgomp(tmp_path: Path, scafd: Daemon) -> None:
    python = paths.build_dir() / "venv" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"{python} missing (make py)")
    probe = subprocess.run([str(python), "-c", "import sklearn"], check=False, capture_output=True)
    if probe.returncode != 0:
        pytest.skip("scikit-learn not installed in build/venv")
    libs = list(Path(subprocess.run(
        [str(python), "-c", "import sklearn, os; print(os.path.dirname(os.path.dirname(sklearn.__file__)))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()).glob("scikit_learn.libs/libgomp*"))
    assert libs, "expected scikit-learn's bundled libgomp (the hazard this test is about)"
    script = str(PROGS / "sklearn_kmeans.py")
    seen = compare(tmp_path, scafd, lambda _out: [str(python), script, "100000", "30"], None)
    assert seen["name"].startswith("python"), seen
