"""Draw per-CPU strips from a `scaf trace` file, and threads per client from a daemon log, as PNGs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from scaf.lib import alloclog


class PlotInputError(Exception):
    """The input file cannot be plotted (missing, empty, or not in the documented format)."""


def too_short_note(data: TraceData) -> str | None:
    """Why a valid trace has nothing to draw (the run ended before the first sample), or None."""
    if data.rows:
        return None
    every = f" (one every {data.period:g} s)" if data.period else ""
    return f"the traced run ended before the first sample{every}: too short for a trace picture"


@dataclass
class TraceData:
    period: float | None = None
    cpus: int | None = None
    names: dict[int, str] = field(default_factory=dict)
    rows: list[tuple[float, int, int, float]] = field(default_factory=list)  # time, pid, cpu, usage


def read_trace(path: str | Path) -> TraceData:
    """Parses `scaf trace` text (`time pid@cpu usage`, `#` comments) or CSV output."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise PlotInputError(f"cannot read {path}: {e.strerror or e}") from e
    data = TraceData()
    csv = bool(lines) and lines[0].strip().startswith("time,")
    header: list[str] = lines[0].strip().split(",") if csv else []
    for n, raw in enumerate(lines[1:] if csv else lines, start=2 if csv else 1):
        line = raw.strip()
        if not line:
            continue
        try:
            if csv:
                rec = dict(zip(header, line.split(",")))
                pid = int(rec["pid"])
                if rec.get("name"):
                    data.names[pid] = rec["name"]  # the last wins: a wrapper's tree is renamed
                data.rows.append((float(rec["time"]), pid, int(rec["cpu"]), float(rec["usage"])))
            elif line.startswith("#"):
                words = line[1:].split()
                if words[:1] == ["tree"] and len(words) >= 2:
                    data.names[int(words[1])] = " ".join(words[2:]) or words[1]
                elif words[:1] == ["scaf-trace"]:
                    for w in words[2:]:
                        key, _, val = w.partition("=")
                        if key == "period":
                            data.period = float(val)
                        elif key == "cpus":
                            data.cpus = int(val)
            else:
                t, who, use = line.split()
                pid_s, cpu_s = who.split("@")
                data.rows.append((float(t), int(pid_s), int(cpu_s), float(use)))
        except (ValueError, KeyError) as e:
            raise PlotInputError(f"{path}:{n}: not a scaf trace row: {raw!r}") from e
    if not data.rows and data.period is None and not csv:
        # A `scaf trace` file always starts with its header; without header and rows it is not one.
        raise PlotInputError(f"{path}: no trace rows (is it the output of `scaf trace`?)")
    return data


def _palette(n: int) -> list:
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def plot_trace(trace_file: str | Path, png: str | Path, title: str | None = None) -> str | None:
    """Draws one strip per CPU over time, each filled by the trees' shares of it, into png.

    Returns None, or a note when the trace holds no sample (a run shorter than the sampling
    period): the picture then says so instead of showing strips.
    """
    import matplotlib.pyplot as plt

    data = read_trace(trace_file)
    fig = trace_figure(data, title, name=Path(trace_file).name)
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return too_short_note(data)


def trace_figure(trace: str | Path | TraceData, title: str | None = None, name: str | None = None):
    """The figure of plot_trace, for saving or inspecting (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    data = trace if isinstance(trace, TraceData) else read_trace(trace)
    name = name or (Path(trace).name if not isinstance(trace, TraceData) else "trace")
    note = too_short_note(data)
    if note:
        fig, ax = plt.subplots(figsize=(10, 2.0))
        ax.set_axis_off()
        ax.text(0.5, 0.5, note[0].upper() + note[1:] + ".", ha="center", va="center", wrap=True)
        ax.set_title(title or f"CPU use per process tree ({name})")
        return fig
    times = np.array(sorted({r[0] for r in data.rows}))
    period = data.period
    if period is None:
        period = float(np.median(np.diff(times))) if len(times) > 1 else 1.0
    pids = sorted({r[1] for r in data.rows})
    ncpu = max(data.cpus or 0, max(r[2] for r in data.rows) + 1)
    tindex = {t: i for i, t in enumerate(times)}
    use = np.zeros((ncpu, len(pids), len(times)))
    pidx = {p: i for i, p in enumerate(pids)}
    for t, pid, cpu, u in data.rows:
        use[cpu, pidx[pid], tindex[t]] += u
    # A row at time t covers (t - period, t]: draw it as a step over that interval.
    edges = np.append(times - period, times[-1])
    colors = _palette(len(pids))
    height = 0.85
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.45 * ncpu))
    for cpu in range(ncpu):
        # Usage above 1 is sampling jitter; the strip shows at most the whole CPU.
        stack = np.minimum(np.cumsum(use[cpu], axis=0), 1.0)
        lower = np.zeros(len(times))
        for i in range(len(pids)):
            upper = stack[i]
            if np.any(upper > lower):
                ax.stairs(cpu + upper * height, edges, baseline=cpu + lower * height,
                          fill=True, color=colors[i], linewidth=0)
            lower = upper
        ax.axhline(cpu, color="0.85", linewidth=0.5)
    handles = [matplotlib.patches.Patch(color=colors[i], label=f"{data.names.get(p, 'pid')} ({p})")
               for i, p in enumerate(pids)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small",
              frameon=False)
    ax.set_yticks([c + height / 2 for c in range(ncpu)], [f"cpu{c}" for c in range(ncpu)])
    # The scale of every strip: its full height is that whole CPU busy.
    ax.set_ylabel("CPU (strip height: 0-100% of that CPU)")
    right = ax.secondary_yaxis("right")
    right.set_yticks([c + f * height for c in range(ncpu) for f in (0.0, 1.0)],
                     ["0%", "100%"] * ncpu, fontsize="x-small")
    ax.set_ylim(-0.1, ncpu)
    ax.set_xlim(float(edges[0]), float(edges[-1]))
    ax.set_xlabel("time (s)")
    ax.set_title(title or f"CPU use per process tree ({name})")
    fig.tight_layout()
    return fig


def read_alloc_log(path: str | Path) -> list[dict]:
    """Status records from a daemon --log in time order; PlotInputError for a malformed line or no record."""
    try:
        records = alloclog.read(path)
    except alloclog.BadAllocLog as e:
        raise PlotInputError(str(e)) from e
    if not records:
        raise PlotInputError(f"{path}: no status lines with a \"time\" field (is it a scafd --log?)")
    records.sort(key=lambda r: r["time"])
    return records


def plot_alloc_log(log_path: str | Path, png_path: str | Path, title: str | None = None) -> str | None:
    """Draws each client's thread allocation over time from a daemon --log into png_path.

    Returns None (like plot_trace, whose note says when a trace is too short to draw)."""
    import matplotlib.pyplot as plt

    fig = alloc_figure(log_path, title)
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    return None


def alloc_figure(log_path: str | Path, title: str | None = None):
    """The figure of plot_alloc_log, for saving or inspecting (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_alloc_log(log_path)
    t0 = records[0]["time"]
    times = [r["time"] - t0 for r in records]
    series: dict[tuple[int, int], list[float]] = {}
    labels: dict[tuple[int, int], str] = {}
    for i, rec in enumerate(records):
        for c in rec.get("clients", []):
            if not isinstance(c, dict):
                continue
            key = (int(c.get("id", -1)), int(c.get("pid", -1)))
            ys = series.setdefault(key, [float("nan")] * len(records))
            ys[i] = float(c.get("threads", 0))
            labels[key] = f"{c.get('name', '?')} ({c.get('pid', '?')})"
    fig, ax = plt.subplots(figsize=(10, 4))
    cpus = [float(r.get("cpus", float("nan"))) for r in records]
    available = [float(r.get("available", float("nan"))) for r in records]
    # Available (cpus less foreign load) as a shaded area, so that it shows even where it equals cpus.
    ax.fill_between(times, available, step="post", color="0.9", linewidth=0, label="available")
    ax.step(times, cpus, where="post", color="0.3", linestyle="--", linewidth=1, label="cpus")
    colors = _palette(len(series))
    # Clients with equal allocations would draw one line over the other: each gets its own dash
    # pattern and a small vertical offset (within a tenth of a thread, so the level still reads).
    n = len(series)
    styles = ("-", "--", "-.", ":")
    for i, ((key, ys), color) in enumerate(zip(sorted(series.items()), colors)):
        off = 0.0 if n < 2 else (i - (n - 1) / 2) * min(0.08, 0.2 / n)
        ax.step(times, [y + off for y in ys], where="post", color=color, linewidth=1.8,
                linestyle=styles[i % len(styles)], label=labels[key])
    policies = sorted({str(r.get("policy", "?")) for r in records})
    ax.set_xlabel("time (s)")
    ax.set_ylabel("threads allocated\n(equal lines offset slightly)")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_title(title or f"scafd allocation per client (policy {', '.join(policies)})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False)
    fig.tight_layout()
    return fig

