"""Each corpus program plain and under scaf with a competing client: identical results, and a client.

The daemon believes the machine has 2 contexts (--cpus 2) and shares them equally, so the
program gets 2 threads while alone and 1 while the competitor (ep --size S, restarted over and
over) runs: its share changes below its bound several times a second. Lookout is off, so other
load on the build machine does not move the allocations. Timings are recorded, never asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Daemon
from scaf.lib import paths

from . import harness
from .programs import PROGRAMS

REQUIRED = os.environ.get("SCAF_CORPUS_REQUIRED") == "1"


def report_dir() -> Path:
    return paths.build_dir() / "corpus"


def test_packages_listed_once() -> None:
    """Every package a program needs is in packages.txt, which the install script reads."""
    known = harness.known_packages()
    assert len(known) == len(set(known)), "packages.txt lists a package twice"
    needed = {p for prog in PROGRAMS for p in prog.packages}
    assert needed <= set(known), f"add to tests/corpus/packages.txt: {sorted(needed - set(known))}"
    names = [p.name for p in PROGRAMS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.name)
def test_program(prog: harness.Program, tmp_path: Path, scafd_factory: Callable[..., Daemon]) -> None:
    missing = harness.missing_packages(prog)
    if missing or shutil.which(prog.binary()) is None:
        msg = (f"{prog.name}: Debian package(s) {' '.join(missing or prog.packages)} not installed "
               f"({prog.binary()} {'missing' if shutil.which(prog.binary()) is None else 'found'}); "
               f"run tools/deps corpus (or: apt-get install {' '.join(prog.packages)})")
        if REQUIRED:
            pytest.fail(msg + " (SCAF_CORPUS_REQUIRED=1)")
        pytest.skip(msg)

    daemon = scafd_factory("--policy", "equipartition", "--cpus", "2", "--no-lookout")
    inputs_dir = tmp_path / "inputs"
    inputs_dir.mkdir()
    prog.inputs(inputs_dir)

    plain = harness.run_mode(prog, "plain", tmp_path, inputs_dir)
    for k, step in enumerate(plain.steps):
        assert step.rc == 0, f"{prog.name} step {k} fails without scaf ({step.rc}): {step.stderr[-2000:]!r}"
    if prog.check is not None:
        prog.check(plain.steps[-1])

    scaf = harness.run_mode(prog, "scaf", tmp_path, inputs_dir, daemon)
    diffs = harness.differences(prog, plain, scaf)
    clients = harness.read_log(daemon.log, scaf.clients)
    record = {
        "name": prog.name,
        "packages": harness.package_versions(prog),
        "plain_s": round(plain.seconds, 2),
        "scaf_s": round(scaf.seconds, 2),
        "identical": not diffs,
        "differences": diffs,
        "competitor_runs": {"plain": plain.competitor_runs, "scaf": scaf.competitor_runs},
        "clients": [c for _pid, c in sorted(clients.items())],
    }
    report_dir().mkdir(parents=True, exist_ok=True)
    (report_dir() / f"{prog.name}.json").write_text(json.dumps(record, indent=1) + "\n")

    if diffs:
        # pytest deletes old temporary folders; a difference must stay to be diagnosed.
        kept = report_dir() / f"failed-{prog.name}-{int(time.time())}"
        shutil.copytree(tmp_path, kept, symlinks=True, ignore_dangling_symlinks=True)
        if daemon.log and os.path.exists(daemon.log):
            shutil.copy(daemon.log, kept / "alloc.jsonl")
        (kept / "scafd.stderr").write_text(daemon.stderr())
        diffs.append(f"(both runs, their inputs and the daemon's log are kept in {kept})")
    assert not diffs, f"{prog.name}: results under scaf differ from the plain run:\n" + "\n".join(diffs)
    assert clients, f"{prog.name} never appeared as a client of the daemon: {daemon.stderr()}"
    assert any(c["regions"] > 0 for c in clients.values()), f"{prog.name} opened no parallel region: {record}"
