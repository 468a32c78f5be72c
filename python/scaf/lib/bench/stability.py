"""The stability figure of an allocation log: allocation changes per minute and time-averaged threads per program."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from scaf.lib import alloclog
from scaf.lib.bench.errors import BenchError


@dataclass
class Stability:
    """What a daemon's --log says about one stretch of time.

    `changes` counts log lines in which the same clients as before got different thread
    counts (the re-partitions at arrivals and departures are not changes of mind); `avg_threads` is each
    program's thread count averaged over the time it was a client inside the window."""

    seconds: float = 0.0
    changes: int = 0
    avg_threads: dict[str, float] = field(default_factory=dict)

    @property
    def changes_per_min(self) -> float:
        return 60.0 * self.changes / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict:
        return {"seconds": round(self.seconds, 3), "changes": self.changes,
                "changes_per_min": round(self.changes_per_min, 3),
                "avg_threads": {k: round(v, 3) for k, v in sorted(self.avg_threads.items())}}


def read_log(path: Path) -> list[dict]:
    """The log's records in order (none while the daemon has not written it); BenchError naming a malformed line."""
    try:
        return alloclog.read(path, missing_ok=True)
    except alloclog.BadAllocLog as e:
        raise BenchError(str(e)) from None


def _threads(rec: dict) -> dict[int, tuple[str, int]]:
    out: dict[int, tuple[str, int]] = {}
    for c in rec["clients"]:
        if isinstance(c, dict) and isinstance(c.get("pid"), int) and isinstance(c.get("threads"), int):
            out[c["pid"]] = (str(c.get("name", c["pid"])), c["threads"])
    return out


def stability(records: list[dict], start: float | None = None, end: float | None = None,
              key: str = "name") -> Stability:
    """The figure over [start, end] (daemon clock; default: the first and last record).

    The log has one line per change, so the allocation holds from one line to the next.
    key="name" averages per program name (two clients of one name are summed per instant
    and so should not share a name); key="pid" keeps them apart."""
    if not records:
        return Stability()
    t0 = records[0]["time"] if start is None else start
    t1 = records[-1]["time"] if end is None else end
    if t1 <= t0:
        return Stability()
    area: dict[str, float] = {}
    present: dict[str, float] = {}
    changes = 0
    state: dict[int, tuple[str, int]] = {}
    t_prev = t0
    for rec in records + [{"time": t1, "clients": None}]:
        t = min(max(rec["time"], t0), t1)
        if t > t_prev:
            for pid, (name, thr) in state.items():
                k = name if key == "name" else str(pid)
                area[k] = area.get(k, 0.0) + thr * (t - t_prev)
                present[k] = present.get(k, 0.0) + (t - t_prev)
            t_prev = t
        if rec["clients"] is None:
            break
        new = _threads(rec)
        if (t0 < rec["time"] <= t1 and new.keys() == state.keys()
                and any(new[pid][1] != thr for pid, (_, thr) in state.items())):
            changes += 1
        state = new
    return Stability(seconds=t1 - t0, changes=changes,
                     avg_threads={k: area[k] / present[k] for k in area if present[k] > 0})


# A path no workload will ever see: --until it runs until killed.
NEVER = "/nonexistent/scaf-bench/never-released"


def measure(workloads: list[str], policy: str, cpus: int, size: str, settle: float, seconds: float,
            log: Path, daemon_args: list[str] | None = None, tag: str = "stability") -> dict:
    """Runs the workloads together under a private scafd (`--policy policy --cpus cpus --no-lookout
    --log log`), waits until every one is a client, lets the estimates settle for `settle` seconds and
    returns the figure over the next `seconds` (shorter if a program ends first), plus each
    program's result line. The programs are killed at the end: only the allocation is measured."""
    import time

    from scaf.lib import paths, procs
    from scaf.lib.bench import common, runner

    log.unlink(missing_ok=True)
    daemon = runner.start_daemon(policy, None, cpus, log, ["--no-lookout", *(daemon_args or [])], tag)
    children = []
    try:
        for name in workloads:
            env = runner.base_env(tag)
            env.update({"LD_PRELOAD": str(paths.layer()), "SCAF_SOCKET": daemon.socket,
                        "OMP_NUM_THREADS": str(cpus)})
            # Killed at the end of the window: those that can run until then (--until a path that never
            # appears) so that the window is the one asked for on any machine.
            children.append(procs.spawn(common.workload_argv(name, size, until=NEVER), env, None))
        pids = {p.pid for p in children}
        deadline = time.monotonic() + 60
        start = None
        while time.monotonic() < deadline and all(p.poll() is None for p in children):
            recs = read_log(log)
            both = [r for r in recs if pids <= {c.get("pid") for c in r["clients"] if isinstance(c, dict)}]
            if both:
                start = both[0]["time"] + settle
                break
            time.sleep(0.2)
        if start is None:
            raise BenchError("the programs did not all become clients within 60 s")
        t_open = time.monotonic() + settle
        t_end = t_open + seconds
        samples: dict[str, list[tuple[int, float]]] = {}
        while time.monotonic() < t_end and all(p.poll() is None for p in children):
            if time.monotonic() >= t_open:
                for c in daemon.status()["clients"]:
                    if c.get("pid") in pids and c.get("efficiency") is not None and c.get("estimate") == "measured":
                        samples.setdefault(c["name"], []).append((int(c.get("eff_threads", 0)), float(c["efficiency"])))
            time.sleep(0.25)
        ended_early = any(p.poll() is not None for p in children)
        # The daemon logs changes only: a status read now closes the window at the daemon's clock.
        now = daemon.status()["time"]
    finally:
        for p in children:
            procs.kill_group(p)
        daemon.finish()
    recs = read_log(log)
    st = stability(recs, start, now)
    out = st.as_dict()
    out["efficiency"] = noise(samples)
    out.update({"workloads": workloads, "policy": policy, "cpus": cpus, "size": size,
                "settle_s": settle, "ended_early": ended_early})
    return out


def noise(samples: dict[str, list[tuple[int, float]]]) -> dict[str, dict[str, dict[str, float]]]:
    """The estimator's noise as the daemon sees it: per program and per reported team size p',
    the mean and standard deviation of E over the status samples (every 0.25 s) and their count."""
    import statistics

    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, pts in sorted(samples.items()):
        by_p: dict[int, list[float]] = {}
        for pp, e in pts:
            by_p.setdefault(pp, []).append(e)
        out[name] = {str(pp): {"n": len(es), "mean": round(statistics.fmean(es), 3),
                               "sd": round(statistics.pstdev(es), 3)} for pp, es in sorted(by_p.items())}
    return out
