"""The daemon's status as Prometheus text exposition (format 0.0.4), for node_exporter's textfile collector."""

from __future__ import annotations

import pwd

# (metric, type, help, status field) of the node-wide gauges taken as they are.
NODE = (
    ("scaf_cpus", "gauge", "hardware contexts the daemon hands out", "cpus"),
    ("scaf_available_cpus", "gauge", "contexts free of foreign load, shared among clients", "available"),
    ("scaf_foreign_load_cpus", "gauge", "contexts kept busy by processes that are not clients", "foreign"),
    ("scaf_affinity_cpus", "gauge", "CPUs in the daemon's affinity mask", "affinity"),
    ("scaf_rate_hz", "gauge", "reallocations per second", "rate_hz"),
    ("scaf_chunk_cpus", "gauge", "allocation granularity in contexts", "chunk"),
)
# Per client: (metric, type, help, field).
CLIENT = (
    ("scaf_client_threads", "gauge", "team size the client runs now", "threads"),
    ("scaf_client_share_cpus", "gauge", "contexts the policy gave the client", "share"),
    ("scaf_client_efficiency", "gauge", "estimated parallel efficiency (absent while unknown)", "efficiency"),
    ("scaf_client_nlwp", "gauge", "threads the client process has", "nlwp"),
    ("scaf_client_regions_total", "counter", "parallel regions the client has run", "regions"),
    ("scaf_client_idle", "gauge", "1 while the client runs nothing and holds no share (absent: an older daemon)", "idle"),
)


def _escape_label(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**kv: str) -> str:
    return "{" + ",".join(f'{k}="{_escape_label(str(v))}"' for k, v in kv.items()) + "}"


def _num(v: object) -> str | None:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, float)):
        return repr(float(v)) if isinstance(v, float) else str(v)
    return None


def _user(uid: object) -> str:
    if not isinstance(uid, int) or isinstance(uid, bool):
        return ""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _job_of(pid: object) -> str:
    """A client's Slurm job id from its environment: readable by root and by its own user, else ""."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return ""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read(1 << 20)
    except OSError:
        return ""
    for var in env.split(b"\0"):
        if var.startswith(b"SLURM_JOB_ID="):
            return var[len(b"SLURM_JOB_ID="):].decode("ascii", "replace")
    return ""


def exposition(st: dict | None, socket: str) -> str:
    """The exposition text for one status reply; st None: the daemon did not answer (scaf_up 0 only)."""
    out: list[str] = []

    def family(name: str, kind: str, text: str, samples: list[tuple[str, str]]) -> None:
        if not samples:
            return
        out.append(f"# HELP {name} {text}")
        out.append(f"# TYPE {name} {kind}")
        out.extend(f"{name}{labels} {value}" for labels, value in samples)

    family("scaf_up", "gauge", "1 when the daemon answered on its socket", [(_labels(socket=socket),
                                                                             "1" if st else "0")])
    if not st:
        return "\n".join(out) + "\n"
    cg = st.get("cgroup") if isinstance(st.get("cgroup"), dict) else {}
    # "job" would clash with the label Prometheus gives every scraped series; job_id does not.
    job = st.get("job") if isinstance(st.get("job"), str) else ""
    family("scaf_info", "gauge", "the daemon's policy and what bounds its cpus (value always 1)",
           [(_labels(policy=str(st.get("policy", "")), limit=str(st.get("limit", "")),
                     cgroup_version=str(cg.get("version") or ""), daemon_pid=str(st.get("daemon_pid", "")),
                     **({"job_id": job} if job else {})),
             "1")])
    for name, kind, text, key in NODE:
        v = _num(st.get(key))
        family(name, kind, text, [("", v)] if v is not None else [])
    q = _num(cg.get("quota"))
    family("scaf_cgroup_quota_cpus", "gauge", "the cgroup CPU quota in whole contexts (absent: none)",
           [("", q)] if q is not None else [])
    clients = [c for c in st.get("clients") or [] if isinstance(c, dict)]
    family("scaf_clients", "gauge", "programs the daemon steers now", [("", str(len(clients)))])
    refused = _num(st.get("refused"))
    family("scaf_refused_clients_total", "counter", "connections the daemon refused since it started",
           [("", refused)] if refused is not None else [])
    ids = []
    for c in clients:
        verdict = c.get("verdict") if isinstance(c.get("verdict"), str) else (
            "malleable" if c.get("malleable") else "fixed")
        # A per-job daemon names its job; on a node-wide one, each client's own job, where it can be read.
        client_job = job or _job_of(c.get("pid"))
        ids.append((c, _labels(pid=str(c.get("pid", "")), name=str(c.get("name", "")), user=_user(c.get("uid")),
                               verdict=verdict, **({"job_id": client_job} if client_job else {}))))
    for name, kind, text, key in CLIENT:
        family(name, kind, text, [(lab, v) for c, lab in ids if (v := _num(c.get(key))) is not None])
    # What the daemon remembered of the program at its arrival (docs/memory.md): absent when nothing.
    family("scaf_client_remembered_runs", "gauge", "runs of the client's program the daemon remembered at its arrival",
           [(lab, v) for c, lab in ids
            if isinstance(c.get("memory"), dict) and (v := _num(c["memory"].get("runs"))) is not None])
    return "\n".join(out) + "\n"
