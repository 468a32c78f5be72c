"""`scaf plot` makes valid PNGs from the documented trace and daemon-log formats."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT, SCAF

FIXTURES = ROOT / "tests" / "fixtures"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def scaf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCAF), *args], check=False, capture_output=True, text=True, timeout=120)


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 1000


def test_plot_trace_text_and_csv(tmp_path: Path) -> None:
    for name in ("small.trace", "small_trace.csv"):
        out = tmp_path / f"{name}.png"
        res = scaf("plot", "trace", str(FIXTURES / name), "-o", str(out), "--title", "fixture")
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == str(out)
        assert_png(out)


def test_plot_alloc(tmp_path: Path) -> None:
    out = tmp_path / "alloc.png"
    res = scaf("plot", "alloc", str(FIXTURES / "alloc.jsonl"), "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert_png(out)


def test_default_output_next_to_input(tmp_path: Path) -> None:
    src = tmp_path / "run.trace"
    src.write_text((FIXTURES / "small.trace").read_text())
    res = scaf("plot", "trace", str(src))
    assert res.returncode == 0, res.stderr
    assert_png(tmp_path / "run.png")


def test_functions_for_the_demo(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "python"))
    from scaf.lib.plot import plot_alloc_log, plot_trace

    assert plot_alloc_log(FIXTURES / "alloc.jsonl", tmp_path / "a.png") is None
    assert plot_trace(FIXTURES / "small.trace", tmp_path / "t.png") is None  # no note: it has rows
    assert_png(tmp_path / "a.png")
    assert_png(tmp_path / "t.png")


def test_real_trace_plots(tmp_path: Path) -> None:
    trace = tmp_path / "real.trace"
    spin = "import time\nend=time.monotonic()+0.4\nwhile time.monotonic()<end: pass"
    res = scaf("trace", "-o", str(trace), "--", sys.executable, "-c", spin)
    assert res.returncode == 0, res.stderr
    res = scaf("plot", "trace", str(trace), "-o", str(tmp_path / "real.png"))
    assert res.returncode == 0, res.stderr
    assert_png(tmp_path / "real.png")


def test_bad_inputs_are_refused_without_output(tmp_path: Path) -> None:
    out = tmp_path / "x.png"
    cases = [
        ("trace", FIXTURES / "alloc.jsonl", "not a scaf trace row"),
        ("alloc", FIXTURES / "small.trace", "small.trace line 1: not JSON"),
        ("trace", tmp_path / "missing.trace", "cannot read"),
    ]
    blank = tmp_path / "blank.trace"
    blank.write_text("\n")
    cases.append(("trace", blank, "no trace rows"))
    for kind, src, msg in cases:
        res = scaf("plot", kind, str(src), "-o", str(out))
        assert res.returncode == 1, (kind, src, res.stderr)
        assert msg in res.stderr
        assert not out.exists()
    res = scaf("plot")
    assert res.returncode == 2


def test_a_run_too_short_to_sample_still_gives_a_picture(tmp_path: Path) -> None:
    """A trace with its header but no row (the run ended before the first sample): exit 0, a PNG
    that says so, and the reason on stderr."""
    empty = tmp_path / "short.trace"
    empty.write_text("# scaf-trace 1 period=0.1 cpus=2 start=0 clock=schedstat\n")
    csv = tmp_path / "short.csv"
    csv.write_text("time,pid,name,cpu,usage\n")
    for src in (empty, csv):
        out = tmp_path / f"{src.name}.png"
        res = scaf("plot", "trace", str(src), "-o", str(out))
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == str(out)
        assert "ended before the first sample" in res.stderr
        assert_png(out)


def test_alloc_log_tolerates_a_torn_last_line(tmp_path: Path) -> None:
    log = tmp_path / "torn.jsonl"
    log.write_text((FIXTURES / "alloc.jsonl").read_text() + '{"version":1,"time":17')
    res = scaf("plot", "alloc", str(log), "-o", str(tmp_path / "torn.png"))
    assert res.returncode == 0, res.stderr
    assert_png(tmp_path / "torn.png")


def test_help() -> None:
    for args in (("plot", "--help"), ("plot", "trace", "--help"), ("plot", "alloc", "--help")):
        res = scaf(*args)
        assert res.returncode == 0 and "examples:" in res.stdout


def _alloc_log(path: Path, rows: list[tuple[float, int, list[tuple[int, int, str, int]]]]) -> Path:
    import json

    path.write_text("".join(json.dumps({"time": t, "cpus": 4, "available": available, "policy": "equipartition",
                                        "clients": [{"id": i, "pid": pid, "name": name, "threads": th}
                                                    for i, pid, name, th in clients]}) + "\n"
                            for t, available, clients in rows))
    return path


def test_equal_allocations_stay_apart_and_available_is_drawn(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt
    from scaf.lib.plot import alloc_figure

    log = _alloc_log(tmp_path / "a.jsonl", [
        (100.0, 4, [(1, 11, "ep", 2), (2, 12, "cg", 2)]),
        (101.0, 4, [(1, 11, "ep", 2), (2, 12, "cg", 2)]),
        (102.0, 3, [(1, 11, "ep", 2), (2, 12, "cg", 1)]),
    ])
    fig = alloc_figure(log)
    try:
        ax = fig.axes[0]
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        ep, cg = lines["ep (11)"], lines["cg (12)"]
        # Equal allocations: neither line hides the other (different y and different dashes) ...
        ep_y, cg_y = list(ep.get_ydata()), list(cg.get_ydata())
        assert ep_y[0] != cg_y[0]
        assert ep.get_linestyle() != cg.get_linestyle()
        # ... and each stays within a tenth of a thread of its allocation.
        assert all(abs(y - 2) < 0.1 for y in ep.get_ydata())
        assert abs(cg_y[-1] - 1) < 0.1
        # "available" is drawn, also where it equals cpus.
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "available" in labels and "cpus" in labels
        assert any(c.get_label() == "available" for c in ax.collections)
        assert "offset" in ax.get_ylabel()
    finally:
        plt.close(fig)


def test_trace_strip_heights_are_labelled(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt
    from scaf.lib.plot import trace_figure

    fig = trace_figure(FIXTURES / "small.trace")
    try:
        ax = fig.axes[0]
        assert "100%" in ax.get_ylabel()
        right = ax.child_axes
        ticks = [t.get_text() for a in right for t in a.get_yticklabels()]
        assert ticks.count("0%") >= 1 and ticks.count("0%") == ticks.count("100%")
    finally:
        plt.close(fig)


def test_trace_of_a_wrapper_is_named_after_the_program(tmp_path: Path) -> None:
    """`scaf trace -- scaf run -- PROGRAM`: the tree's root is the scaf (python) wrapper, its name PROGRAM."""
    import matplotlib.pyplot as plt
    from scaf.lib import paths
    from scaf.lib.plot import read_trace, trace_figure

    trace = tmp_path / "w.trace"
    ep = paths.workload("ep")
    res = scaf("trace", "--period", "0.1", "-o", str(trace), "--", str(SCAF), "run", "--no-start", "--",
               str(ep), "--size", "W")  # W: seconds, so that samples see ep even on a loaded machine
    assert res.returncode == 0, res.stderr
    data = read_trace(trace)
    assert list(data.names.values()) == ["ep"], data.names
    fig = trace_figure(trace)
    try:
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert labels and all(lb.startswith("ep (") for lb in labels), labels
    finally:
        plt.close(fig)
