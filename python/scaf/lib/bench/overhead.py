"""The measurements of `scaf bench overhead`: one workload alone, plain libgomp vs the layer (+daemon), alternating."""

from __future__ import annotations

from scaf.lib import paths
from scaf.lib.bench import common, runner
from scaf.lib.bench.common import Unit
from scaf.lib.daemon import PrivateDaemon

# name -> (uses the layer, talks to the private daemon, extra environment)
VARIANTS: dict[str, tuple[bool, bool, dict[str, str]]] = {
    "plain": (False, False, {}),
    "inert": (True, False, {}),
    "scaf": (True, True, {}),
}
# With --feedback: estimation off entirely, and experiments forced although the client is alone.
FEEDBACK_VARIANTS: dict[str, tuple[bool, bool, dict[str, str]]] = {
    "scaf-noestimate": (True, True, {"SCAF_ESTIMATE": "0"}),
    "scaf-eager": (True, True, {"SCAF_LAZY": "0"}),
}
NOWHERE = "/nonexistent/scaf-bench/none.sock"


def overhead_unit(variant: str, spec: tuple[bool, bool, dict[str, str]], rnd: int, workload: str,
                  size: str, cpus: list[int], tag: str, timeout: float,
                  daemon: list[PrivateDaemon | None]) -> Unit:
    layer, with_daemon, extra = spec

    def run() -> dict:
        env = runner.base_env(tag)
        settings = dict(extra)
        if layer:
            settings["LD_PRELOAD"] = str(paths.layer(paths.workload_layer(workload)))
            settings["SCAF_SOCKET"] = NOWHERE
            if with_daemon:
                d = daemon[0]
                assert d is not None
                settings["SCAF_SOCKET"] = d.socket
        env.update(settings)
        prog = runner.Program(workload, common.workload_argv(workload, size), env, cpus, settings)
        record = {"kind": "overhead", "variant": variant, "round": rnd, "workload": workload,
                  "size": size, "error": None,
                  "programs": runner.run_together([prog], [0.0], timeout)}
        d = daemon[0]
        if with_daemon and d is not None:
            if not d.alive():
                record["error"] = f"private scafd died: {d.stderr()[-400:]}"
            p = record["programs"][0]
            p["scaf_client"] = p.get("pid") in runner.clients_in_log(d.log)
            if p["error"] is None and not p["scaf_client"]:
                p["error"] = "never appeared as a client of the private scafd (layer inert?)"
        return record

    return Unit(("overhead", variant, rnd), f"overhead {variant} round {rnd + 1}", run,
                common.describe_programs)
