"""The program's dlclose under the layer: an object really unmapped takes what the layer knew of its region sites with
it (code loaded later at the same addresses is judged afresh), one still referenced or marked never to unload keeps
it, and the program's own dlclose answers as without the layer. Real programs and libraries built here, a real
daemon."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import Daemon, layer_env

LIB = r"""
#include <omp.h>
int reg(int n)
{
    long sum = 0;
#pragma omp parallel for reduction(+ : sum)
    for (int i = 0; i < n; i++)
        sum += i % 7;
    return (int)(sum % 1000);
}
"""

# MODE: "once" (open, run, close), "twice" (open twice, close once, then again), "nodelete" (RTLD_NODELETE).
MAIN = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    const char *mode = argv[2];
    int flags = RTLD_NOW | (strcmp(mode, "nodelete") == 0 ? RTLD_NODELETE : 0);
    void *h = dlopen(argv[1], flags), *h2 = NULL;
    int (*reg)(int);
    int r = 0;

    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    if (strcmp(mode, "twice") == 0)
        h2 = dlopen(argv[1], flags);
    *(void **)&reg = dlsym(h, "reg");
    for (int k = 0; k < 20; k++)
        r += reg(200000);
    printf("result=%d\n", r);
    fflush(stdout);
    if (dlclose(h) != 0) {
        fprintf(stderr, "dlclose: %s\n", dlerror());
        return 3;
    }
    fprintf(stderr, "MARK first close done\n");
    if (h2 && dlclose(h2) != 0)
        return 4;
    return 0;
}
"""


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("unload")
    (d / "reg.c").write_text(LIB)
    (d / "main.c").write_text(MAIN)
    lib, exe = d / "libreg.so", d / "main"
    subprocess.run(["gcc", "-O1", "-fopenmp", "-shared", "-fPIC", "-o", str(lib), str(d / "reg.c")], check=True)
    # libgomp stays loaded whatever is closed (as in R, whose engine links it): unmapping it under its own sleeping
    # worker threads crashes the program at exit, with the layer or without.
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(d / "main.c"), "-Wl,--no-as-needed", "-lgomp"], check=True)
    return exe, lib


def run(exe: Path, lib: Path, mode: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), str(lib), mode], capture_output=True, text=True, timeout=120, env=env, check=False)


@pytest.mark.parametrize("mode, forgotten_after_first_close", [("once", True), ("twice", False), ("nodelete", False)])
def test_an_unloaded_object_takes_its_region_sites_with_it(programs: tuple[Path, Path], scafd: Daemon, mode: str,
                                                          forgotten_after_first_close: bool) -> None:
    exe, lib = programs
    plain = run(exe, lib, mode, {k: v for k, v in layer_env(None).items() if k != "LD_PRELOAD"})
    r = run(exe, lib, mode, layer_env(scafd.socket, {"SCAF_VERBOSE": "1"}))
    assert plain.returncode == 0, plain.stderr
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout  # the same answer
    head, _, tail = r.stderr.partition("MARK first close done")
    assert tail, r.stderr
    said = f"{lib} unloaded:"
    if forgotten_after_first_close:
        assert said in head and "region sites of its code forgotten" in head, r.stderr
    else:
        assert said not in head, r.stderr
    if mode == "twice":
        # The second close unmaps it.
        assert said in tail, r.stderr
    if mode == "nodelete":
        assert said not in r.stderr
