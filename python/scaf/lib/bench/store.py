"""results.json: every raw run and the machine, rewritten atomically after each finished run."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path

FORMAT = "scaf-bench"
VERSION = 1
RESULTS = "results.json"


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def run_key(run: dict) -> tuple:
    """What makes a run unique; a resumed bench skips keys it already has."""
    kind = run["kind"]
    if kind == "solo":
        return ("solo", run["workload"], run["threads"], run["repeat"])
    if kind == "pair":
        return ("pair", *run["pair"], run["config"], run["repeat"])
    if kind == "overhead":
        return ("overhead", run["variant"], run["round"])
    raise ValueError(f"unknown run kind {kind!r}")


def run_ok(run: dict) -> bool:
    return run.get("error") is None and all(p.get("error") is None for p in run.get("programs", []))


class ResultsError(Exception):
    """results.json is missing, unreadable, or from an incompatible bench."""


def load(directory: Path) -> dict:
    path = Path(directory) / RESULTS
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as e:
        raise ResultsError(f"{path} does not exist (is {directory} a `scaf bench` output folder?)") from e
    except (OSError, json.JSONDecodeError) as e:
        raise ResultsError(f"cannot read {path}: {e}") from e
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ResultsError(f"{path} is not a scaf bench results file")
    if data.get("version") != VERSION:
        raise ResultsError(f"{path} has format version {data.get('version')}; this scaf reads {VERSION}")
    if not isinstance(data.get("runs"), list):
        raise ResultsError(f"{path} has no list of runs")
    return data


class Results:
    """The results of one output folder, possibly extended by several invocations (sessions)."""

    def __init__(self, directory: Path, params: dict, machine: dict, retry_failed: bool = False):
        self.dir = Path(directory)
        self.path = self.dir / RESULTS
        self.retry_failed = retry_failed
        if self.path.exists():
            self.data = load(self.dir)
            for key in ("size", "stagger_s", "programs"):
                old = self.data.get("params", {}).get(key)
                new = params.get(key)
                if old is not None and new is not None and old != new:
                    raise ResultsError(
                        f"{self.path} holds runs with {key}={old}, not {new}: "
                        f"use another --out, or the same {key} to resume")
            for key, value in params.items():
                if value is not None:
                    self.data["params"].setdefault(key, value)
        else:
            self.dir.mkdir(parents=True, exist_ok=True)
            self.data = {"format": FORMAT, "version": VERSION, "created": now_iso(),
                         "params": {k: v for k, v in params.items() if v is not None},
                         "machine": machine, "sessions": [], "runs": []}
        self.data["machine"] = machine
        self.data["sessions"].append({"started": now_iso(), "argv": sys.argv[1:], "machine": machine,
                                      "params": params})
        self.session = len(self.data["sessions"]) - 1
        self.save()

    def runs(self) -> list[dict]:
        return self.data["runs"]

    def done(self, key: tuple) -> bool:
        for run in self.data["runs"]:
            if run_key(run) == key:
                return run_ok(run) or not self.retry_failed
        return False

    def add(self, run: dict) -> None:
        key = run_key(run)
        run["session"] = self.session
        self.data["runs"] = [r for r in self.data["runs"] if run_key(r) != key]
        self.data["runs"].append(run)
        self.save()

    def save(self) -> None:
        """Write to a temporary file in the folder and rename it over results.json (atomic)."""
        self.data["updated"] = now_iso()
        fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=self.dir)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.data, f, indent=1)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
