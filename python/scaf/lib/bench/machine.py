"""Describe the machine a measurement ran on: CPU, topology, kernel, cgroup limits, counters."""

from __future__ import annotations

import ctypes
import datetime as dt
import os
import platform
import subprocess
from pathlib import Path

from scaf.lib import paths

SYS_CPU = Path("/sys/devices/system/cpu")

# perf_event_open(2): syscall numbers, and attr bits for a user-space-only event
# (exclude_kernel, exclude_hv), so that perf_event_paranoid <= 2 allows it.
PERF_SYSCALL = {"x86_64": 298, "aarch64": 241, "i686": 336, "armv7l": 364, "ppc64le": 319,
                "riscv64": 241, "s390x": 331}
PERF_TYPE_HARDWARE = 0
PERF_COUNT_HW_INSTRUCTIONS = 1
PERF_ATTR_SIZE_VER0 = 64
ATTR_DISABLED = 1 << 0
ATTR_EXCLUDE_KERNEL = 1 << 5
ATTR_EXCLUDE_HV = 1 << 6


def _read(path: Path | str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]; raises ValueError on anything else."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        a, b = int(lo), int(hi) if sep else int(lo)
        if a < 0 or b < a:
            raise ValueError(f"bad CPU range {part!r}")
        out.extend(range(a, b + 1))
    if not out:
        raise ValueError("empty CPU list")
    return sorted(set(out))


def format_cpulist(cpus: list[int]) -> str:
    """[0, 1, 2, 3, 8] -> '0-3,8'."""
    runs: list[list[int]] = []
    for c in sorted(set(cpus)):
        if runs and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def cpu_model() -> str:
    text = _read("/proc/cpuinfo") or ""
    for key in ("model name", "Model", "cpu model", "Processor"):
        for line in text.splitlines():
            k, _, v = line.partition(":")
            if k.strip() == key and v.strip():
                return v.strip()
    return platform.processor() or "unknown"


def topology() -> dict:
    """Logical CPUs, cores, sockets, SMT width and NUMA nodes, from /sys (lscpu's sources)."""
    online = _read(SYS_CPU / "online")
    cpus = parse_cpulist(online) if online else list(range(os.cpu_count() or 1))
    cores: set[tuple[str, str]] = set()
    sockets: set[str] = set()
    smt = 1
    for c in cpus:
        topo = SYS_CPU / f"cpu{c}" / "topology"
        pkg = _read(topo / "physical_package_id") or "0"
        core = _read(topo / "core_id") or str(c)
        cores.add((pkg, core))
        sockets.add(pkg)
        sib = _read(topo / "thread_siblings_list")
        if sib:
            try:
                smt = max(smt, len(parse_cpulist(sib)))
            except ValueError:
                pass
    nodes = sorted(p.name for p in Path("/sys/devices/system/node").glob("node[0-9]*"))
    return {
        "logical_cpus": len(cpus),
        "online": format_cpulist(cpus),
        "cores": len(cores),
        "sockets": len(sockets),
        "smt": smt,
        "numa_nodes": len(nodes) or 1,
        "affinity": format_cpulist(sorted(os.sched_getaffinity(0))),
    }


def cgroup_limits() -> dict:
    """CPU quota (cpu.max on cgroup v2, cfs_quota/period on v1) and cpuset of this process."""
    out: dict = {"version": None, "cpu_quota_cpus": None, "cpuset": None, "path": None}
    text = _read("/proc/self/cgroup") or ""
    v2_path = None
    v1: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2_path = parts[2]
        for ctrl in parts[1].split(","):
            if ctrl:
                v1[ctrl] = parts[2]
    root = Path("/sys/fs/cgroup")
    cpu_max = _read(root / (v2_path or "/").lstrip("/") / "cpu.max") if v2_path is not None else None
    if cpu_max is None and v2_path is not None:
        cpu_max = _read(root / "unified" / v2_path.lstrip("/") / "cpu.max")
    if cpu_max:
        out["version"] = 2
        out["path"] = v2_path
        out["cpu_max"] = cpu_max
        quota, _, period = cpu_max.partition(" ")
        if quota != "max" and period:
            out["cpu_quota_cpus"] = round(int(quota) / int(period), 3)
        eff = _read(root / (v2_path or "/").lstrip("/") / "cpuset.cpus.effective")
        out["cpuset"] = eff or None
        return out
    if "cpu" in v1:
        base = root / "cpu" / v1["cpu"].lstrip("/")
        if not base.exists():
            base = root / "cpu,cpuacct" / v1["cpu"].lstrip("/")
        quota_s, period_s = _read(base / "cpu.cfs_quota_us"), _read(base / "cpu.cfs_period_us")
        if quota_s is not None:
            out["version"] = 1
            out["path"] = v1["cpu"]
            out["cpu_max"] = f"{quota_s} {period_s}"
            if quota_s.lstrip("-").isdigit() and int(quota_s) > 0 and period_s:
                out["cpu_quota_cpus"] = round(int(quota_s) / int(period_s), 3)
    if "cpuset" in v1:
        out["cpuset"] = _read(root / "cpuset" / v1["cpuset"].lstrip("/") / "cpuset.effective_cpus") \
            or _read(root / "cpuset" / v1["cpuset"].lstrip("/") / "cpuset.cpus")
    return out


def hardware_counters() -> dict:
    """Whether perf_event_open grants a hardware instructions counter to this user.

    Opens (and closes) one user-space-only counter for this thread with the raw
    syscall: the same question the layer's estimator asks, without needing perf(1).
    """
    paranoid = _read("/proc/sys/kernel/perf_event_paranoid")
    nr = PERF_SYSCALL.get(platform.machine())
    info: dict = {"available": False, "perf_event_paranoid": paranoid, "detail": ""}
    if nr is None:
        info["detail"] = f"perf_event_open syscall number unknown for {platform.machine()}"
        return info
    attr = (ctypes.c_uint8 * PERF_ATTR_SIZE_VER0)()
    ctypes.c_uint32.from_buffer(attr, 0).value = PERF_TYPE_HARDWARE
    ctypes.c_uint32.from_buffer(attr, 4).value = PERF_ATTR_SIZE_VER0
    ctypes.c_uint64.from_buffer(attr, 8).value = PERF_COUNT_HW_INSTRUCTIONS
    ctypes.c_uint64.from_buffer(attr, 40).value = ATTR_DISABLED | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(ctypes.c_long(nr), ctypes.byref(attr), ctypes.c_int(0), ctypes.c_int(-1),
                      ctypes.c_int(-1), ctypes.c_ulong(0))
    if fd >= 0:
        os.close(fd)
        info["available"] = True
        info["detail"] = "hardware instructions counter opened"
    else:
        err = ctypes.get_errno()
        info["detail"] = f"perf_event_open(instructions) failed: {os.strerror(err)} (errno {err})"
    return info


def _git_commit() -> str | None:
    try:
        res = subprocess.run(["git", "-C", str(paths.ROOT), "rev-parse", "--short", "HEAD"],
                             check=False, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None


def _memory_gib() -> float | None:
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 1024 / 1024, 1)
    return None


def describe() -> dict:
    """Everything a reader of a result needs to know about the machine it came from."""
    uname = platform.uname()
    return {
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "hostname": uname.node,
        "cpu_model": cpu_model(),
        "arch": uname.machine,
        "kernel": f"{uname.system} {uname.release}",
        "topology": topology(),
        "memory_gib": _memory_gib(),
        "cgroup": cgroup_limits(),
        "hardware_counters": hardware_counters(),
        "loadavg": _read("/proc/loadavg"),
        "python": platform.python_version(),
        "scaf_commit": _git_commit(),
    }


def summary_lines(m: dict) -> list[str]:
    """A few human lines: CPU, topology, kernel, cgroup quota, counters."""
    t = m.get("topology", {})
    cg = m.get("cgroup", {})
    hc = m.get("hardware_counters", {})
    quota = cg.get("cpu_quota_cpus")
    quota_text = "none" if quota is None else f"{quota:g} CPUs"
    cpuset = f", cpuset {cg['cpuset']}" if cg.get("cpuset") else ""
    return [
        f"cpu        {m.get('cpu_model')} ({m.get('arch')})",
        (f"topology   {t.get('logical_cpus')} logical CPUs, {t.get('cores')} cores, "
        f"{t.get('sockets')} socket(s), SMT {t.get('smt')}, {t.get('numa_nodes')} NUMA node(s); "
        f"affinity {t.get('affinity')}"),
        f"kernel     {m.get('kernel')}; memory {m.get('memory_gib')} GiB; load {m.get('loadavg')}",
        f"cgroup     v{cg.get('version') or '?'} cpu quota {quota_text}{cpuset}",
        (f"counters   {'yes' if hc.get('available') else 'no'}: {hc.get('detail')} "
        f"(perf_event_paranoid {hc.get('perf_event_paranoid')})"),
    ]
