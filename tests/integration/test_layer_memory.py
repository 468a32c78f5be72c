"""The layer's side of the daemon's memory against a scripted peer that writes the page's memory half itself:
the key in HELLO, the start team (GNU, LLVM and Intel runtimes), known sites steered from their first
instance, learned sites written back (and again after a reconnect).

The peer is test_layer_handshake.Peer: a real socket and a real shared page, so these tests need no daemon
with a memory store; the daemon's side is tested where it lives.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import layer_env, short_tmpdir
from elftools.elf.elffile import ELFFile
from scaf.lib import paths, progkey
from support import wire
from test_kmpc import IOMP5, RUNTIMES
from test_kmpc import build_probe as kmpc_build_probe
from test_layer import MAXSEC, QUIET, Probe, build_probe, plain_env
from test_layer_handshake import Peer, wait

PAGE = wire.PAGE_OFFSETS
MEMO = wire.SITE_MEMO
SOURCE_EVIDENCE, SOURCE_USER = 1, 2
PERTD = Path(__file__).resolve().parents[1] / "progs" / "pertd.c"


def fnv1a(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h or 1


def u32(mm: mmap.mmap, field: str) -> int:
    return struct.unpack_from("=I", mm, PAGE[field])[0]


def reason(mm: mmap.mmap) -> str:
    return bytes(mm[PAGE["reason"]:PAGE["reason"] + wire.REASON_MAX]).split(b"\0")[0].decode()


def learned(mm: mmap.mmap) -> list[tuple[int, int, int]]:
    n = min(u32(mm, "learned_sites"), wire.MEMORY_SITES)
    return [MEMO.unpack_from(mm, PAGE["learned"] + i * MEMO.size) for i in range(n)]


def memory(start_team: int = 0, runs: int = 0, verdict: int = 0, source: int = 0,
           known: list[tuple[int, int, int]] | None = None) -> Callable[[mmap.mmap], None]:
    """What scafd writes into the page's daemon half before WELCOME (docs/memory.md)."""

    def write(mm: mmap.mmap) -> None:
        struct.pack_into("=5I", mm, PAGE["start_team"], start_team, runs, verdict, source, len(known or []))
        for i, site in enumerate(known or []):
            MEMO.pack_into(mm, PAGE["known"] + i * MEMO.size, *site)

    return write


REMEMBERED_FIXED = {"start_team": 1, "runs": 3, "verdict": wire.VERDICT_FIXED, "source": SOURCE_EVIDENCE}


def env_for(peer: Peer, extra: dict[str, str] | None = None, layer: str = "gomp") -> dict[str, str]:
    """The layer and the peer's socket; OMP_NUM_THREADS and the layer's settings of this shell dropped: the
    program's count is its own (the CPUs), unless a test says otherwise."""
    env = layer_env(peer.path, {**QUIET, "SCAF_ESTIMATE": "0"})
    env["LD_PRELOAD"] = str(paths.layer(layer))
    for k in [k for k in env if k.startswith("SCAF_") and k not in ("SCAF_SOCKET", "SCAF_ESTIMATE", "SCAF_BUILD")]:
        del env[k]
    env.pop("OMP_NUM_THREADS", None)
    env.update(extra or {})
    return env


@pytest.fixture
def peer() -> Iterator[Peer]:
    p = Peer()
    yield p
    p.cleanup()


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_probe(tmp_path_factory)


def build_pertd(rt: str, out_dir: Path) -> Path:
    """tests/progs/pertd.c for a runtime: "gomp" (gcc, libgomp) or one of test_kmpc's RUNTIMES."""
    out = out_dir / f"pertd-{rt}"
    flags = ["-O2", "-Wall", "-Wextra", "-Werror"]
    if rt == "gomp":
        subprocess.run(["gcc", "-fopenmp", *flags, "-o", str(out), str(PERTD)], check=True)
        return out
    cc, link, _ = RUNTIMES[rt]
    if cc == "gcc":
        obj = out_dir / f"pertd-{rt}.o"
        subprocess.run([cc, "-fopenmp", *flags, "-c", "-o", str(obj), str(PERTD)], check=True)
        subprocess.run([cc, "-o", str(out), str(obj), *link], check=True)
    else:
        subprocess.run([cc, *flags, *link, "-o", str(out), str(PERTD)], check=True)
    return out


def build_probe_for(rt: str, out_dir: Path) -> Path:
    """tests/progs/omp_probe.c for "gomp" (gcc, libgomp) or one of test_kmpc's RUNTIMES."""
    if rt == "gomp":
        out = out_dir / "omp_probe"
        subprocess.run(["gcc", "-fopenmp", "-O2", "-o", str(out), str(PERTD.parent / "omp_probe.c")], check=True)
        return out
    return kmpc_build_probe(rt, out_dir)


def cpus() -> int:
    return len(os.sched_getaffinity(0))


needs_two = pytest.mark.skipif(cpus() < 2, reason="a start team below the program's count needs 2 CPUs")


class Run:
    """One program under the layer, its output captured, against the peer."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(self, timeout: float = 60) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def runs() -> Iterator[Callable[[list[str], dict[str, str]], Run]]:
    started: list[Run] = []

    def start(argv: list[str], env: dict[str, str]) -> Run:
        r = Run(argv, env)
        started.append(r)
        return r

    yield start
    for r in started:
        r.kill()


def probe_run(exe: Path, args: list[str], env: dict[str, str], peer: Peer, page_init: Callable[[mmap.mmap], None],
              regions: int = 20, contexts: int | None = None) -> tuple[Probe, mmap.mmap, str, dict]:
    """omp_probe against the peer, the page's memory half written by PAGE_INIT, until it opened more than
    REGIONS regions (a count, not a time), then stopped: the probe, its page, its stdout and its HELLO."""
    n = cpus() if contexts is None else contexts
    p = Probe(exe, args, env)
    try:
        conn, hello = peer.accept()
        mm = peer.welcome(conn, threads=n, cpus=n, page_init=page_init)
        assert mm is not None
        wait(lambda: u32(mm, "regions") > regions, "regions")
        rc, text = p.finish()
        assert rc == 0, text
        conn.close()
        return p, mm, text, hello
    finally:
        p.kill()


def fields(out: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for line in out.splitlines() for kv in line.split() if "=" in kv)


# ---- the key ----


def test_hello_carries_the_key_libscaf_key_computes(probe: Path, peer: Peer, runs: Callable[..., Run]) -> None:
    argv = [str(probe), "follow", "/nonexistent/scaf-test/stop", "0.2"]
    r = runs(argv, env_for(peer, {"OMP_NUM_THREADS": "2"}))
    conn, hello = peer.accept()
    mm = peer.welcome(conn, threads=2)
    rc, _, err = r.finish()
    assert rc == 0, err
    want = progkey.key_of(str(probe), argv)
    assert want.key != 0 and hello["key"] == want.key, (hello, want)
    assert mm is not None and u32(mm, "started_with") == 0
    conn.close()
    # SCAF_MEMORY=0: the program is kept out of the memory, its HELLO names nothing.
    r = runs(argv, env_for(peer, {"OMP_NUM_THREADS": "2", "SCAF_MEMORY": "0"}))
    conn, hello = peer.accept()
    peer.welcome(conn, threads=2)
    rc, _, err = r.finish()
    assert rc == 0 and hello["key"] == 0, err
    conn.close()


def test_a_script_is_keyed_with_its_interpreter(peer: Peer, tmp_path: Path) -> None:
    """python running a script: the key names both, as libscaf_launch does for the same command line, and a
    script named relative to the directory the program started in keeps its key after a chdir."""
    script = tmp_path / "omp_first.py"
    # The region goes through the layer's GOMP_parallel (the first preloaded definition), on one thread.
    script.write_text("import ctypes, os\nos.chdir('/')\nomp = ctypes.CDLL(None)\n"
                      "fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda p: None)\n"
                      "omp.GOMP_parallel(fn, None, 1, 0)\n")
    python = os.path.realpath(sys.executable)
    r = subprocess.Popen([python, "omp_first.py"], cwd=tmp_path, env=env_for(peer, {"OMP_NUM_THREADS": "2"}),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        conn, hello = peer.accept()
        peer.welcome(conn, threads=1)
        _, err = r.communicate(timeout=60)
    finally:
        if r.poll() is None:
            r.kill()
    assert r.returncode == 0, err
    want = progkey.key_of(python, ["python3", str(script)])
    assert want.key != 0 and hello["key"] == want.key, (hello, want)
    conn.close()


# ---- the start team ----


@needs_two
@pytest.mark.parametrize("rt", ["gomp", *sorted(RUNTIMES)])
def test_a_remembered_fixed_program_starts_with_its_share(rt: str, peer: Peer, runs: Callable[..., Run],
                                                           tmp_path: Path) -> None:
    """pertd reads omp_get_max_threads() once and sizes per-thread buffers by it: remembered fixed, it reads
    the start team, every region runs it, the page's larger allocation never grows it, and its result is a
    plain run's."""
    if "iomp5" in rt and not IOMP5.exists():
        pytest.fail(f"{IOMP5} missing: the intel-openmp wheel (requirements.txt) is not installed")
    exe = build_pertd(rt, tmp_path)
    plain = subprocess.run([str(exe), "30"], check=False, env=plain_env(QUIET), capture_output=True, text=True,
                           timeout=60)
    assert plain.returncode == 0 and fields(plain.stdout)["max"] == str(cpus()), plain.stdout
    assert fields(plain.stdout)["procs"] == str(cpus()), plain.stdout
    r = runs([str(exe), "30"], env_for(peer, layer="gomp" if rt == "gomp" else "omp"))
    conn, hello = peer.accept()
    mm = peer.welcome(conn, threads=cpus(), cpus=cpus(), page_init=memory(**REMEMBERED_FIXED))
    assert mm is not None
    rc, out, err = r.finish()
    assert rc == 0, out + err
    got = fields(out)
    assert got["max"] == "1" and got["env"] == "1", out
    # As inside a cpuset of its share: a count of the CPUs taken later (setDTthreads(0)) is the share too.
    assert got["procs"] == "1", out
    assert got["teams"] == "1", out
    assert got["checksum"] == fields(plain.stdout)["checksum"]
    assert u32(mm, "started_with") == 1
    assert u32(mm, "verdict") == wire.VERDICT_FIXED and u32(mm, "verdict_source") == SOURCE_EVIDENCE
    assert u32(mm, "fixed_team") == 1 and u32(mm, "client_flags") & wire.CLIENT_NONMALLEABLE
    assert reason(mm) == f"started with 1 of {cpus()} contexts: remembered fixed from 3 runs; cannot grow"
    assert hello["max_threads"] == cpus()  # the HELLO went before the start: the bound it could have seen
    conn.close()


@needs_two
@pytest.mark.parametrize("rt", ["gomp", *sorted(RUNTIMES)])
def test_a_first_region_is_a_first_touch(rt: str, peer: Peer, tmp_path: Path) -> None:
    """omp_probe's follow mode reads no count: its first region (GOMP_parallel, __kmpc_fork_call) is its first
    touch of OpenMP, and it runs the start team, as every region after it."""
    if "iomp5" in rt and not IOMP5.exists():
        pytest.fail(f"{IOMP5} missing: the intel-openmp wheel (requirements.txt) is not installed")
    exe = build_probe_for(rt, tmp_path)
    p, mm, text, _ = probe_run(exe, ["follow", "STOP", MAXSEC], env_for(peer, layer="gomp" if rt == "gomp" else "omp"),
                               peer, memory(**REMEMBERED_FIXED), regions=30)
    assert set(p.teams()) == {1} and u32(mm, "started_with") == 1, text
    assert "kinds" in text and all(kv.endswith("=1") for kv in text.split("kinds ")[1].split()[:11]), text


@needs_two
@pytest.mark.parametrize("rt", ["gomp", *sorted(RUNTIMES)])
@pytest.mark.parametrize("case", ["remembered fixed", "no memory"])
def test_a_count_of_processors_first_is_a_first_touch(rt: str, case: str, peer: Peer, tmp_path: Path) -> None:
    """omp_probe's procs mode asks omp_get_num_procs() (then its Fortran name) before anything else, as a
    program that sizes itself by the CPUs does: remembered fixed, the start team is decided on that call and
    both names answer it; with nothing remembered, both answer the CPUs, as a plain run does."""
    if "iomp5" in rt and not IOMP5.exists():
        pytest.fail(f"{IOMP5} missing: the intel-openmp wheel (requirements.txt) is not installed")
    exe = build_probe_for(rt, tmp_path)
    n = cpus()
    plain = subprocess.run([str(exe), "procs", "STOP", "0"], check=False, env=plain_env(QUIET),
                           capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and f"procs={n} fprocs={n} max={n}\n" in plain.stdout, plain.stdout
    mem = memory(**REMEMBERED_FIXED) if case == "remembered fixed" else memory(start_team=1)
    want = 1 if case == "remembered fixed" else n
    p, mm, text, _ = probe_run(exe, ["procs", "STOP", MAXSEC], env_for(peer, layer="gomp" if rt == "gomp" else "omp"),
                               peer, mem)
    assert f"procs={want} fprocs={want} max={want}\n" in text, text
    assert set(p.teams()) == {want} and u32(mm, "started_with") == (want if want < n else 0), text


@needs_two
def test_the_users_fixed_starts_it_with_its_share_without_memory(probe: Path, peer: Peer,
                                                                 runs: Callable[..., Run]) -> None:
    p, mm, text, _ = probe_run(probe, ["fixed", "STOP", MAXSEC], env_for(peer, {"SCAF_MALLEABLE": "no"}), peer,
                               memory(start_team=1), regions=30)
    assert "max=1\n" in text and set(p.teams()) == {1}, text
    assert u32(mm, "started_with") == 1 and u32(mm, "verdict_source") == SOURCE_USER
    assert reason(mm) == (f"started with 1 of {cpus()} contexts: SCAF_MALLEABLE=no (scaf run --fixed); "
                          "cannot grow")


@needs_two
@pytest.mark.parametrize("case", ["no memory", "malleable memory", "user count", "SCAF_MEMORY=0", "sets its count"])
def test_no_start_team_without_a_reason_to_keep_the_team(case: str, probe: Path, peer: Peer) -> None:
    """A program with no memory and no user rule starts as before; so does one whose count is the user's
    (OMP_NUM_THREADS), one kept out of the memory, and one that sets its own count first (said in the log)."""
    n = cpus()
    mem = {"no memory": memory(start_team=1), "malleable memory": memory(1, 3, wire.VERDICT_MALLEABLE, 1)}.get(
        case, memory(**REMEMBERED_FIXED))
    extra = {"SCAF_VERBOSE": "1"}
    args = ["fixed", "STOP", MAXSEC]
    if case == "user count":
        extra["OMP_NUM_THREADS"] = str(n)
    elif case == "SCAF_MEMORY=0":
        extra["SCAF_MEMORY"] = "0"
    elif case == "sets its count":
        args = ["setnum", str(n), "STOP", MAXSEC]
    p, mm, text, _ = probe_run(probe, args, env_for(peer, extra), peer, mem)
    if case != "sets its count":
        assert f"max={n}\n" in text, text
    assert max(p.teams()) == n and u32(mm, "started_with") == 0, text
    if case == "sets its count":
        assert "the program set its own count first" in p.stderr(), p.stderr()


def test_scaf_runs_start_team_is_reported(probe: Path, peer: Peer) -> None:
    """scaf run exported OMP_NUM_THREADS=1 and SCAF_START_TEAM=1: the count is scaf's, and the page says so."""
    p, mm, text, hello = probe_run(probe, ["fixed", "STOP", MAXSEC],
                                   env_for(peer, {"OMP_NUM_THREADS": "1", "SCAF_START_TEAM": "1"}), peer,
                                   memory(**REMEMBERED_FIXED), contexts=2)
    assert "max=1\n" in text and set(p.teams()) == {1}, text
    assert hello["max_threads"] == 1
    assert u32(mm, "started_with") == 1 and u32(mm, "verdict") == wire.VERDICT_FIXED
    assert reason(mm) == "started with 1 of 2 contexts: remembered fixed from 3 runs; cannot grow"


# ---- sites: learned, then known ----


def outlined_offsets(exe: Path) -> dict[int, str]:
    """The probe's functions by address: the outlined region bodies among them."""
    with open(exe, "rb") as f:
        elf = ELFFile(f)
        symtab = elf.get_section_by_name(".symtab")
        assert symtab is not None, "the probe is built with symbols"
        return {s["st_value"]: s.name for s in symtab.iter_symbols() if s["st_info"]["type"] == "STT_FUNC"}


def object_hash(exe: Path) -> int:
    with open(exe, "rb") as f:
        for seg in ELFFile(f).iter_segments():
            if seg["p_type"] == "PT_NOTE":
                for note in seg.iter_notes():
                    if note["n_type"] == "NT_GNU_BUILD_ID":
                        return fnv1a(bytes.fromhex(note["n_desc"]))
    pytest.skip(f"{exe} has no build ID")
    return 0


def report_teams(path: str) -> list[int]:
    with open(path) as f:
        return json.loads(f.readlines()[-1])["teams"]


@needs_two
def test_sites_learned_then_steered_from_their_first_instance(probe: Path, peer: Peer) -> None:
    """First run: after its count query, each site's first instance runs at the full team (a first look), and
    settles clean: learned[] names it by the probe's build ID and its offset. A reconnect writes them again.
    Second run, with them in known[]: no first look, every region at the page's team from the first."""
    report_dir = short_tmpdir()
    first_report, second_report = f"{report_dir}/first.jsonl", f"{report_dir}/second.jsonl"
    n = cpus()
    p = Probe(probe, ["fixed", "STOP", MAXSEC], env_for(peer, {"SCAF_REPORT": first_report}))
    try:
        conn, _ = peer.accept()
        mm = peer.welcome(conn, threads=1, cpus=n)
        assert mm is not None
        wait(lambda: u32(mm, "verdict") == wire.VERDICT_MALLEABLE and u32(mm, "regions") > 60, "settled")
        sites = learned(mm)
        assert sites, "nothing learned"
        obj = object_hash(probe)
        funcs = outlined_offsets(probe)
        for o, off, bits in sites:
            assert o == obj, f"object {o:x}, the probe's build ID hashes to {obj:x}"
            assert off in funcs and ("_omp_fn" in funcs[off] or funcs[off] == "loop_static_body"), (hex(off), funcs.get(off))
            assert bits == wire.MEMO_CLEAN
        # The daemon restarts: the new page gets every learned site again.
        conn.close()
        peer.close_listener()
        peer.listen()
        conn2, _ = peer.accept(timeout=20)
        mm2 = peer.welcome(conn2, threads=1, cpus=n)
        assert mm2 is not None
        wait(lambda: learned(mm2)[:len(sites)] == sites, "learned sites written to the new page")
        rc, text = p.finish()
        assert rc == 0, text
        conn2.close()
    finally:
        p.kill()
    assert n in report_teams(first_report)  # first looks at the full team
    p = Probe(probe, ["fixed", "STOP", MAXSEC], env_for(peer, {"SCAF_REPORT": second_report}))
    try:
        conn, _ = peer.accept()
        mm = peer.welcome(conn, threads=1, cpus=n, page_init=memory(known=sites))
        assert mm is not None
        wait(lambda: u32(mm, "regions") > 60 and u32(mm, "verdict") == wire.VERDICT_MALLEABLE, "regions")
        rc, text = p.finish()
        assert rc == 0, text
        conn.close()
    finally:
        p.kill()
    assert report_teams(second_report) == [1]  # no first look
