"""What `scaf run` sets so that Python process pools (joblib's loky, Dask's nannies) leave their workers' thread counts to scaf."""

from __future__ import annotations

import os
from pathlib import Path

from scaf.lib import choicecache

# joblib 1.6.0, joblib/_parallel_backends.py, ParallelBackendBase.MAX_NUM_THREADS_VARS and
# _prepare_worker_env: each loky worker gets `var = os.environ.get(var, cpu_count() // n_jobs)` for each of
# these, unless the program passed inner_max_num_threads (then that, whatever the environment says).
LOKY_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS", "NUMEXPR_NUM_THREADS")
# The ones scaf steers and whose library default is the CPUs of the affinity mask, so that setting them to
# that count changes nothing for the program itself: libgomp's and libomp's nthreads-var, OpenBLAS's
# pthread pool. MKL's default is the physical cores, BLIS, numexpr and vecLib are not steered: for those
# loky's rule stands.
STEERED_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")

# distributed 2026.8.0, distributed/distributed.yaml: `distributed.nanny.pre-spawn-environ` sets
# OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS to 1 in every worker (and
# MALLOC_TRIM_THRESHOLD_). distributed/nanny.py, _get_env_variables: a value set in the nanny's environment
# wins over the configuration's, and a key whose configured value is None is not set at all, so the
# worker inherits the environment. dask.config reads DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON (a Python
# literal) over its YAML files and merges the mapping into the defaults key by key.
DASK_VAR = "DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON"
DASK_UNSET = "{'OMP_NUM_THREADS': None, 'MKL_NUM_THREADS': None, 'OPENBLAS_NUM_THREADS': None}"
DASK_KEYS = ("pre-spawn-environ", "pre_spawn_environ", "DASK_DISTRIBUTED__NANNY")


def machine_count() -> int:
    """What an OpenMP runtime or OpenBLAS starts with when nothing is set: the CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


def _dask_config_dirs(env: dict[str, str], program: str) -> list[Path]:
    """Where dask.config looks for YAML (dask/config.py, `paths`): the root config, the interpreter's
    prefix, the user's folder (or DASK_CONFIG)."""
    prefix = Path(os.path.realpath(program)).parent.parent
    home = env.get("HOME") or str(Path.home())
    return [Path(env.get("DASK_ROOT_CONFIG", "/etc/dask")), prefix / "etc" / "dask",
            Path(env.get("DASK_CONFIG") or os.path.join(home, ".config", "dask"))]


def dask_configured(env: dict[str, str], program: str, seen: choicecache.Witness | None = None) -> bool:
    """Whether the user configured the nannies' environment: the variable, or a YAML file that names it. SEEN
    gets the folders and files read."""
    if any(k.startswith(DASK_VAR) for k in env):
        return True
    for d in _dask_config_dirs(env, program):
        if seen is not None:
            seen.saw(str(d))
        try:
            files = [p for p in d.iterdir() if p.suffix in (".yaml", ".yml", ".json")] if d.is_dir() else []
        except OSError:
            continue
        for f in files:
            if seen is not None:
                seen.saw(str(f))
            try:
                text = f.read_text(errors="replace")
            except OSError:
                continue
            if any(k in text for k in DASK_KEYS[:2]):
                return True
    return False


def pool_env(env: dict[str, str], program: str, python: bool, cpus: int | None = None,
             seen: choicecache.Witness | None = None) -> dict[str, str]:
    """The variables `scaf run` adds for a Python program, so that its pools' workers start with the machine's
    count and scaf steers them (docs/cli.md, "Process pools"). Empty when the program is not Python, and for
    each framework whose count the user set: any of loky's variables set keeps loky's behaviour (and the
    nannies', which read the same environment first), Dask's configuration of the nannies' environment keeps
    Dask's."""
    if not python:
        return {}
    # One word on counts covers both: the nannies take a variable of the environment over their configuration,
    # so loky's variables set by us would override a count the user gave Dask, and the reverse.
    if any(v in env for v in LOKY_VARS) or dask_configured(env, program, seen):
        return {}
    n = str(cpus or machine_count())
    return {**{v: n for v in STEERED_VARS}, DASK_VAR: DASK_UNSET}
