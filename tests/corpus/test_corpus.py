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
    """Every package a program needs is in packages.txt, which the install script reads, or, for
    the venv's programs, pinned in requirements.txt, which `make` installs into build/venv."""
    known = harness.known_packages()
    assert len(known) == len(set(known)), "packages.txt lists a package twice"
    needed = {p for prog in PROGRAMS for p in prog.packages}
    assert needed <= set(known), f"add to tests/corpus/packages.txt: {sorted(needed - set(known))}"
    pinned = harness.pinned_pip_packages()
    pip = {p.lower() for prog in PROGRAMS for p in prog.pip}
    assert pip <= set(pinned), f"pin in requirements.txt: {sorted(pip - set(pinned))}"
    names = [p.name for p in PROGRAMS]
    assert len(names) == len(set(names))


def test_pip_packages_are_asked_of_the_venv() -> None:
    """A pip row's packages are looked up in build/venv by its own python: a pinned package has its
    pinned version, one the venv lacks is missing, and the skip message says to run make."""
    if not harness.venv_python().exists():
        msg = f"{harness.venv_python()} missing: run make"
        if REQUIRED:
            pytest.fail(msg + " (SCAF_CORPUS_REQUIRED=1)")
        pytest.skip(msg)
    absent = "scaf-corpus-no-such-package"
    prog = harness.Program(name="probe", packages=(), steps=((str(harness.venv_python()), "-c", "pass"),),
                           inputs=lambda _d: None, pip=("numpy", absent))
    assert harness.missing_packages(prog) == [f"pip:{absent}"]
    assert harness.package_versions(prog) == {"numpy (pip)": harness.pinned_pip_packages()["numpy"],
                                              f"{absent} (pip)": ""}
    msg = _missing_message(prog, harness.missing_packages(prog))
    assert f"pip package(s) {absent} not in" in msg and "run make" in msg and "Debian" not in msg, msg


def _missing_message(prog: harness.Program, missing: list[str]) -> str:
    found = "missing" if shutil.which(prog.binary()) is None else "found"
    debs = [p for p in missing if not p.startswith("pip:")]
    pip = [p.removeprefix("pip:") for p in missing if p.startswith("pip:")]
    if not missing:  # the packages are there but not the program: name them all
        debs, pip = list(prog.packages), list(prog.pip)
    parts = []
    if debs:
        parts.append(f"Debian package(s) {' '.join(debs)} not installed; run tools/deps corpus "
                     f"(or: apt-get install {' '.join(debs)})")
    if pip:
        parts.append(f"pip package(s) {' '.join(pip)} not in {harness.venv_python().parent.parent}; run make "
                     "(it installs requirements.txt there)")
    return f"{prog.name} ({prog.binary()} {found}): " + "; ".join(parts)


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.name)
def test_program(prog: harness.Program, tmp_path: Path, scafd_factory: Callable[..., Daemon]) -> None:
    missing = harness.missing_packages(prog)
    if missing or shutil.which(prog.binary()) is None:
        msg = _missing_message(prog, missing)
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
    clients = harness.read_log(daemon.log, scaf.clients, harness.competitor_name(prog))
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
    if prog.regions:
        assert any(c["regions"] > 0 for c in clients.values()), f"{prog.name} opened no parallel region: {record}"
    elif prog.regions is False:
        # Its pool alone made it a client: no region, and the layer reported the pool's size.
        assert all(c["regions"] == 0 for c in clients.values()), f"{prog.name} opened a parallel region: {record}"
        assert any(t > 0 for c in clients.values() for t in c["last_team"]), f"{prog.name}: no pool size: {record}"
