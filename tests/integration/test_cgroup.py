"""scafd's capacity under cgroup v1 and v2 CPU quotas: a real daemon reading a fake cgroup tree, and this machine's own."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import SCAF, daemon_binaries

V1_MOUNTINFO = (
    "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
)
V2_MOUNTINFO = "25 23 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def v1_tree(root: Path) -> Path:
    """A Slurm-like job cgroup: the job allows 3 CPUs, its parent only 1 (the parent wins)."""
    cpu = "sys/fs/cgroup/cpu,cpuacct"
    return tree(root, {
        "proc/self/cgroup": "4:cpuset:/\n3:cpu,cpuacct:/slurm/job7\n0::/\n",
        "proc/self/mountinfo": V1_MOUNTINFO,
        f"{cpu}/slurm/job7/cpu.cfs_quota_us": "300000\n",
        f"{cpu}/slurm/job7/cpu.cfs_period_us": "100000\n",
        f"{cpu}/slurm/cpu.cfs_quota_us": "50000\n",
        f"{cpu}/slurm/cpu.cfs_period_us": "100000\n",
        f"{cpu}/cpu.cfs_quota_us": "-1\n",
        f"{cpu}/cpu.cfs_period_us": "100000\n",
    })


def v2_tree(root: Path) -> Path:
    return tree(root, {
        "proc/self/cgroup": "0::/kubepods/pod1/c1\n",
        "proc/self/mountinfo": V2_MOUNTINFO,
        "sys/fs/cgroup/kubepods/pod1/c1/cpu.max": "max 100000\n",
        "sys/fs/cgroup/kubepods/pod1/cpu.max": "100000 100000\n",
        "sys/fs/cgroup/kubepods/cpu.max": "max 100000\n",
    })


@pytest.mark.parametrize("binary", daemon_binaries(), ids=lambda b: b.parent.parent.name)
@pytest.mark.parametrize("version,make,quota_file", [
    (1, v1_tree, "sys/fs/cgroup/cpu,cpuacct/slurm/cpu.cfs_quota_us"),
    (2, v2_tree, "sys/fs/cgroup/kubepods/pod1/cpu.max"),
])
def test_daemon_cpus_follow_nested_quota(scafd_factory, tmp_path: Path, version, make, quota_file, binary) -> None:
    root = make(tmp_path)
    d = scafd_factory("--no-lookout", binary=binary, env={"SCAFD_TEST_CGROUP_ROOT": str(root)})
    st = d.status()
    ncpu = len(os.sched_getaffinity(0))
    assert st["affinity"] == ncpu
    assert st["cgroup"] == {"version": version, "quota": 1, "quota_file": str(root / quota_file)}
    assert st["cpus"] == 1
    assert st["limit"] == ("cgroup quota" if ncpu > 1 else "affinity")
    assert f"cgroup v{version} quota 1" in d.stderr()

    human = subprocess.run([str(SCAF), "status", "--socket", d.socket], check=False, capture_output=True, text=True,
                           timeout=60)
    assert human.returncode == 0, human.stderr
    assert f"cgroup v{version} quota 1 (from {root / quota_file})" in human.stdout.replace("\n", "")


def test_daemon_no_quota_in_tree(scafd_factory, tmp_path: Path) -> None:
    root = tree(tmp_path, {"proc/self/cgroup": "0::/a\n", "proc/self/mountinfo": V2_MOUNTINFO,
                           "sys/fs/cgroup/a/cpu.max": "max 100000\n"})
    st = scafd_factory("--no-lookout", env={"SCAFD_TEST_CGROUP_ROOT": str(root)}).status()
    assert st["cgroup"] == {"version": 2, "quota": None, "quota_file": None}
    assert st["cpus"] == len(os.sched_getaffinity(0)) and st["limit"] == "affinity"


def expected_real_version() -> int | None:
    """This machine's cgroup version for the cpu controller, read independently of scafd."""
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    mounts = Path("/proc/self/mountinfo").read_text()
    if any("cpu" in ln.split(":")[1].split(",") for ln in lines if ln.count(":") >= 2) and " - cgroup " in mounts:
        return 1
    if any(ln.startswith("0::") for ln in lines) and " - cgroup2 " in mounts:
        return 2
    return None


def test_daemon_reads_this_machines_cgroups(scafd_factory) -> None:
    """The real hierarchy, read-only: the version scafd reports is the one /proc shows."""
    st = scafd_factory("--no-lookout").status()
    assert st["cgroup"]["version"] == expected_real_version()
    q = st["cgroup"]["quota"]
    assert (q is None) == (st["cgroup"]["quota_file"] is None)
    if q is not None:
        assert Path(st["cgroup"]["quota_file"]).exists()
        assert st["cpus"] == min(q, st["affinity"])
    else:
        assert st["cpus"] == st["affinity"]
    print(json.dumps({k: st[k] for k in ("cpus", "affinity", "limit", "cgroup")}))
