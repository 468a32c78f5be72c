"""Which bound sets a daemon's `cpus`, in one line from its status: what `scaf status` and `scaf doctor` print."""

from __future__ import annotations


def capacity_line(st: dict) -> str | None:
    """Which bound sets `cpus`: the affinity mask, the cgroup CPU quota (and which cgroup version), or --cpus."""
    if "limit" not in st:
        return None  # an older daemon
    cg = st.get("cgroup") or {}
    version = cg.get("version")
    quota = cg.get("quota")
    where = f"cgroup v{version}" if version else "no cgroup cpu controller"
    if quota:
        where += f" quota {quota} (from {cg.get('quota_file')})"
    elif version:
        where += ", no CPU quota"
    bound = {"affinity": "the affinity mask", "cgroup quota": "the cgroup quota", "--cpus": "scafd --cpus"}.get(
        str(st.get("limit")), str(st.get("limit")))
    return f"cpus {st.get('cpus', '?')} set by {bound}; affinity {st.get('affinity', '?')} CPUs; {where}"
