"""ctypes binding to build/lib/libscaf_policy.so: the very policy code the daemon runs.

Stable API (the simulator and `scaf allocate` depend on it)::

    from scaf.lib.policy import Client, allocate, policy_names

    policy_names()                      # ["speedup", "equipartition", "consumption"]; [0] is the default
    shares, coef = allocate("speedup", 16, [Client(8, 0.9), Client(8, 0.5)])
    # shares == [14, 2]: one int per client, in input order
    # coef    == [0.984..., 0.875]: E(2) = 1 / (1 + sigma) of each client's curve (0.0 where none)

- ``allocate(policy, cpus, clients, chunk=1) -> (list[int], list[float])`` runs one
  decision: each client's share. ``cpus`` is N (>= 1), ``chunk`` the allocation granularity
  (>= 1). Every client gets >= 1; with len(clients) <= cpus the sum is at most cpus
  (exactly cpus under equipartition unless every client is at its bound, max_threads; speedup leaves
  contexts idle only past a measured peak, consumption below its min_gain); with more
  clients than cpus everyone gets 1. The call is pure: feed ``prev`` (last allocation), ``eff_team``
  (p', the team E was measured at) and ``prev_coef`` (last coef) back yourself to
  model a daemon over time.
- ``speedup_model(cpus, clients, chunk=1) -> (coef, exact)``: the speedup policy
  before damping (coef = E(2) of each client's curve, exact = the undamped allocation).
- ``curve(client) -> (kind, sigma, kappa)``: the curve both model policies read from one client;
  ``curve_at(client, p, cpus, chunk)``: its S(p), corrected to pass through the measured points (and SMT's
  prior past the cores when chunk > 1).
- ``Batch(policy, cpus, chunk=1, capacity=1)``: the same decision many times over
  a client array built once and filled through a numpy view (``.clients``), then
  ``.run(k)`` for its first k entries; for callers that decide thousands of times.
- ``intpart(exact, total, chunk=1, bounds=None) -> list[int]`` and
  ``targets(...) -> list[float]``: the chunked integer partition and the real targets it
  rounds (see include/scaf/policy.h for the rules).

Errors: ``PolicyLibraryMissing`` (a RuntimeError) when the shared library has not been
built ("run make"); ``ValueError`` for an unknown policy name or invalid numbers.
The struct layout is checked against the library's ``scaf_policy_client_size()`` when
the library is loaded (at import when it exists).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scaf.lib import paths

if TYPE_CHECKING:
    import numpy as np

UINT32_MAX = 0xFFFFFFFF
MIN_GAIN_DEFAULT = 0.5  # SCAF_MIN_GAIN_DEFAULT in include/scaf/policy.h


class PolicyLibraryMissing(RuntimeError):
    """libscaf_policy.so is not built (or cannot be loaded)."""


@dataclass
class Client:
    """One client as a policy sees it.

    eff_team: p', the team the efficiency was measured at (0 = never ran).
    efficiency: E at p'; None (or NaN, or < 0) = unknown.
    prev: the previous allocation (0 = new client); the speedup policy damps around it.
    max_threads: its bound, never allocate more than this (0 = none).
    prev_coef: the coef this client got last time (0.0 = none); used when p' = 1.
    e_sd: standard deviation of E at p' from round to round (0.0 = unknown); damping follows it.
    probe: probe it this round (its estimate and prev_coef are ignored: unknown, an equal share).
    alt_team, alt_efficiency: a second point of its curve, E measured at another team size
        (0 = none); a curve that peaks is fitted through both when the larger team was no faster.
    side_team, side_efficiency: a third point, on the report's other side from the second (0 = none):
        the curve passes through it, unfitted.
    """

    eff_team: int = 0
    efficiency: float | None = None
    prev: int = 0
    max_threads: int = 0
    prev_coef: float = 0.0
    probe: bool = False
    e_sd: float = 0.0
    alt_team: int = 0
    alt_efficiency: float = 0.0
    side_team: int = 0
    side_efficiency: float = 0.0


class _CClient(ctypes.Structure):
    """Mirror of struct scaf_policy_client (include/scaf/policy.h)."""

    _fields_ = [
        ("max_threads", ctypes.c_uint32),
        ("prev", ctypes.c_uint32),
        ("eff_team", ctypes.c_uint32),
        ("probe", ctypes.c_uint32),
        ("efficiency", ctypes.c_double),
        ("prev_coef", ctypes.c_double),
        ("e_sd", ctypes.c_double),
        ("alt_efficiency", ctypes.c_double),
        ("alt_team", ctypes.c_uint32),
        ("group", ctypes.c_uint32),
        ("side_efficiency", ctypes.c_double),
        ("side_team", ctypes.c_uint32),
        ("reserved2", ctypes.c_uint32),
    ]


_lib: ctypes.CDLL | None = None


def _load() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    path = paths.policy_lib()
    if not path.exists():
        raise PolicyLibraryMissing(f"{path} not found: run make (it builds the policy library)")
    try:
        lib = ctypes.CDLL(str(path), use_errno=True)
    except OSError as e:
        raise PolicyLibraryMissing(f"cannot load {path}: {e}; run make") from e
    lib.scaf_policy_client_size.restype = ctypes.c_size_t
    lib.scaf_policy_client_size.argtypes = []
    size = lib.scaf_policy_client_size()
    if size != ctypes.sizeof(_CClient):
        raise PolicyLibraryMissing(
            f"{path}: struct scaf_policy_client is {size} bytes, python/scaf/lib/policy.py expects "
            f"{ctypes.sizeof(_CClient)}: the library and this module are out of step; run make"
        )
    lib.scaf_policy_count.restype = ctypes.c_size_t
    lib.scaf_policy_count.argtypes = []
    lib.scaf_policy_at.restype = ctypes.c_void_p
    lib.scaf_policy_at.argtypes = [ctypes.c_size_t]
    lib.scaf_policy_run.restype = ctypes.c_int
    lib.scaf_policy_run.argtypes = [
        ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
        ctypes.POINTER(_CClient), ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_double),
    ]
    lib.scaf_policy_run_gain.restype = ctypes.c_int
    lib.scaf_policy_run_gain.argtypes = [
        ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_double, ctypes.c_uint32,
        ctypes.POINTER(_CClient), ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_double),
    ]
    lib.scaf_policy_speedup_model.restype = ctypes.c_int
    lib.scaf_policy_speedup_model.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
    ]
    for name in ("scaf_intpart_chunked", "scaf_intpart_targets"):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_int
        fn.argtypes = [
            ctypes.POINTER(ctypes.c_double), ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
            ctypes.POINTER(ctypes.c_uint32),
            ctypes.POINTER(ctypes.c_uint32 if name == "scaf_intpart_chunked" else ctypes.c_double),
        ]
    _lib = lib
    return lib


class _CPolicy(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("description", ctypes.c_char_p), ("decide", ctypes.c_void_p)]


class _CInput(ctypes.Structure):
    _fields_ = [
        ("available", ctypes.c_uint32),
        ("chunk", ctypes.c_uint32),
        ("nclients", ctypes.c_uint32),
        ("clients", ctypes.POINTER(_CClient)),
        ("min_gain", ctypes.c_double),
    ]


def _policies() -> list[tuple[str, str]]:
    lib = _load()
    out = []
    for i in range(lib.scaf_policy_count()):
        p = ctypes.cast(lib.scaf_policy_at(i), ctypes.POINTER(_CPolicy)).contents
        out.append((p.name.decode(), p.description.decode()))
    return out


def policy_names() -> list[str]:
    """Registered policy names in registry order; the first is the daemon's default."""
    return [name for name, _ in _policies()]


def policy_descriptions() -> dict[str, str]:
    """Name -> one-line description, in registry order."""
    return dict(_policies())


def _u32(value: int, what: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= UINT32_MAX:
        raise ValueError(f"{what} must be an integer in [{minimum}, {UINT32_MAX}], got {value!r}")
    return value


def _c_clients(clients: Sequence[Client]) -> ctypes.Array[_CClient]:
    arr = (_CClient * max(len(clients), 1))()
    for i, c in enumerate(clients):
        e = c.efficiency
        if e is None:
            e = -1.0
        elif not isinstance(e, (int, float)) or isinstance(e, bool):
            raise ValueError(f"client {i}: efficiency must be a number or None, got {e!r}")
        pc = float(c.prev_coef)
        arr[i] = _CClient(
            max_threads=_u32(c.max_threads, f"client {i}: max_threads") or UINT32_MAX,
            prev=_u32(c.prev, f"client {i}: prev"),
            eff_team=_u32(c.eff_team, f"client {i}: eff_team"),
            probe=1 if c.probe else 0,
            efficiency=float(e),
            prev_coef=pc if math.isfinite(pc) else 0.0,
            e_sd=float(c.e_sd) if math.isfinite(c.e_sd) and c.e_sd > 0 else 0.0,
            alt_team=_u32(c.alt_team, f"client {i}: alt_team"),
            alt_efficiency=float(c.alt_efficiency) if math.isfinite(c.alt_efficiency) else 0.0,
            side_team=_u32(c.side_team, f"client {i}: side_team"),
            side_efficiency=float(c.side_efficiency) if math.isfinite(c.side_efficiency) else 0.0,
        )
    return arr


def _check(cpus: int, chunk: int) -> None:
    _u32(cpus, "contexts", 1)  # the message `scaf allocate` has always printed
    _u32(chunk, "chunk", 1)


def _min_gain(min_gain: float) -> float:
    if isinstance(min_gain, bool) or not isinstance(min_gain, (int, float)) or not math.isfinite(min_gain) \
            or min_gain < 0:
        raise ValueError(f"min_gain must be a finite number >= 0 (0 = the default), got {min_gain!r}")
    return float(min_gain)


def allocate(
    policy: str, cpus: int, clients: Sequence[Client], chunk: int = 1, min_gain: float = 0.0
) -> tuple[list[int], list[float]]:
    """Run policy `policy` once: (share per client, model coefficient per client).

    min_gain: the consumption policy's threshold (0 = its default, MIN_GAIN_DEFAULT); others ignore it.
    """
    lib = _load()
    names = policy_names()
    if policy not in names:
        raise ValueError(f"unknown policy {policy!r}; known: {', '.join(names)}")
    _check(cpus, chunk)
    gain = _min_gain(min_gain)
    n = len(clients)
    arr = _c_clients(clients)
    shares = (ctypes.c_uint32 * max(n, 1))()
    coef = (ctypes.c_double * max(n, 1))()
    if lib.scaf_policy_run_gain(policy.encode(), cpus, chunk, gain, n, arr, shares, coef) != 0:
        err = ctypes.get_errno()
        raise ValueError(f"policy {policy} refused the input (errno {err})")
    return [int(shares[i]) for i in range(n)], [float(coef[i]) for i in range(n)]


def speedup_model(cpus: int, clients: Sequence[Client], chunk: int = 1) -> tuple[list[float], list[float]]:
    """The speedup policy before damping: (E(2) of each client's curve, undamped allocation as floats)."""
    lib = _load()
    _check(cpus, chunk)
    n = len(clients)
    arr = _c_clients(clients)
    inp = _CInput(cpus, chunk, n, ctypes.cast(arr, ctypes.POINTER(_CClient)))
    coef = (ctypes.c_double * max(n, 1))()
    exact = (ctypes.c_double * max(n, 1))()
    if lib.scaf_policy_speedup_model(ctypes.byref(inp), coef, exact) != 0:
        raise ValueError("speedup model refused the input")
    return [float(coef[i]) for i in range(n)], [float(exact[i]) for i in range(n)]


def curve(client: Client) -> tuple[int, float, float]:
    """The curve the speedup and consumption policies read from one client: (kind, sigma, kappa) of
    S(p) = p / (1 + sigma (p - 1) + kappa p (p - 1)); kind 0 = none, 1 = one point (kappa 0), 2 = two points."""
    lib = _load()
    if not getattr(lib, "_scaf_curve_typed", False):
        lib.scaf_policy_curve.restype = ctypes.c_int
        lib.scaf_policy_curve.argtypes = [ctypes.POINTER(_CClient), ctypes.POINTER(ctypes.c_double),
                                          ctypes.POINTER(ctypes.c_double)]
        lib._scaf_curve_typed = True
    arr = _c_clients([client])
    sigma, kappa = ctypes.c_double(), ctypes.c_double()
    kind = lib.scaf_policy_curve(arr, ctypes.byref(sigma), ctypes.byref(kappa))
    return int(kind), float(sigma.value), float(kappa.value)


def curve_at(client: Client, p: float, cpus: int = 0, chunk: int = 1) -> float:
    """S(p) of the client's curve as the policies read it (through its measured points; on CPUS contexts in SMT
    chunks of CHUNK > 1, past the cores and its last point at a quarter of the slope); nan when none."""
    lib = _load()
    if not getattr(lib, "_scaf_curve_at_typed", False):
        lib.scaf_policy_curve_at.restype = ctypes.c_double
        lib.scaf_policy_curve_at.argtypes = [ctypes.POINTER(_CClient), ctypes.c_double, ctypes.c_uint32,
                                             ctypes.c_uint32]
        lib._scaf_curve_at_typed = True
    return float(lib.scaf_policy_curve_at(_c_clients([client]), float(p), _u32(cpus, "cpus"),
                                          _u32(chunk, "chunk", 1)))


def _intpart_args(
    exact: Sequence[float], total: int, chunk: int, bounds: Sequence[int] | None
) -> tuple[ctypes.Array[ctypes.c_double], ctypes.Array[ctypes.c_uint32] | None]:
    _u32(total, "total")
    _u32(chunk, "chunk", 1)
    for x in exact:
        if not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
            raise ValueError(f"exact shares must be finite and >= 0, got {x!r}")
    ex = (ctypes.c_double * max(len(exact), 1))(*exact)
    cp = None
    if bounds is not None:
        if len(bounds) != len(exact):
            raise ValueError("bounds must have one entry per share")
        cp = (ctypes.c_uint32 * max(len(bounds), 1))(*[_u32(c, "bound") for c in bounds])
    return ex, cp


def _partition(fn_name: str, ctype: type, exact: Sequence[float], total: int, chunk: int,
               bounds: Sequence[int] | None) -> list:
    """Calls scaf_intpart_chunked or scaf_intpart_targets, which share their arguments."""
    ex, cp = _intpart_args(exact, total, chunk, bounds)
    out = (ctype * max(len(exact), 1))()
    if getattr(_load(), fn_name)(ex, len(exact), total, chunk, cp, out) != 0:
        raise ValueError("intpart refused the input")
    return [out[i] for i in range(len(exact))]


def intpart(exact: Sequence[float], total: int, chunk: int = 1, bounds: Sequence[int] | None = None) -> list[int]:
    """Chunked integer partition of `total` closest to `exact` (bounds: 0 = none)."""
    return [int(v) for v in _partition("scaf_intpart_chunked", ctypes.c_uint32, exact, total, chunk, bounds)]


def targets(exact: Sequence[float], total: int, chunk: int = 1, bounds: Sequence[int] | None = None) -> list[float]:
    """The real-valued targets intpart rounds (after bounds and minimum chunks)."""
    return [float(v) for v in _partition("scaf_intpart_targets", ctypes.c_double, exact, total, chunk, bounds)]



class Batch:
    """Many decisions of one policy over a client array built once, for callers that decide thousands of times.

    allocate() builds a ctypes array per call. A Batch holds one array of
    `capacity` struct scaf_policy_client (this module's own mirror, layout
    checked at load) and `clients`, a numpy structured view on the same
    memory with one field per struct member (max_threads, prev,
    eff_team, efficiency (-1.0 = unknown),
    prev_coef): fill its first k entries, then run(k). The simulator does;
    tests/python/test_sim.py checks that run() gives exactly what
    allocate() gives.
    """

    def __init__(self, policy: str, cpus: int, chunk: int = 1, capacity: int = 1, min_gain: float = 0.0) -> None:
        import numpy as np

        names = policy_names()
        if policy not in names:
            raise ValueError(f"policy {policy!r} is not in libscaf_policy.so ({', '.join(names)})")
        self._lib = _load()
        n = max(capacity, 1)
        self._arr = (_CClient * n)()
        cc = _CClient
        dtype = np.dtype({"names": [f for f, _ in cc._fields_], "formats": [np.dtype(t) for _, t in cc._fields_],
                          "offsets": [getattr(cc, f).offset for f, _ in cc._fields_], "itemsize": ctypes.sizeof(cc)})
        self.clients = np.frombuffer((ctypes.c_char * ctypes.sizeof(self._arr)).from_buffer(self._arr), dtype=dtype)
        self._shares = (ctypes.c_uint32 * n)()
        self._coef = (ctypes.c_double * n)()
        self._shares_view = np.ctypeslib.as_array(self._shares)
        self._coef_view = np.ctypeslib.as_array(self._coef)
        self.policy = policy
        self._name = policy.encode()
        self.cpus, self.chunk = cpus, chunk
        self.min_gain = _min_gain(min_gain)

    def run(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Decide for the first K clients: (share per client, model coefficient per client), copies."""
        if self._lib.scaf_policy_run_gain(self._name, self.cpus, self.chunk, self.min_gain, k, self._arr,
                                          self._shares, self._coef):
            raise OSError(ctypes.get_errno(), f"scaf_policy_run_gain({self.policy}) refused the input")
        return self._shares_view[:k].copy(), self._coef_view[:k].copy()

class _CProbe(ctypes.Structure):
    """Mirror of struct scaf_probe (include/scaf/policy.h)."""

    _fields_ = [("low_since_ns", ctypes.c_uint64), ("probe_since_ns", ctypes.c_uint64),
                ("probe_end_ns", ctypes.c_uint64), ("backoff", ctypes.c_uint32), ("reserved", ctypes.c_uint32)]


class _CNoise(ctypes.Structure):
    """Mirror of struct scaf_noise."""

    _fields_ = [("p", ctypes.c_uint32), ("n", ctypes.c_uint32), ("mean", ctypes.c_double), ("var", ctypes.c_double)]


class _CPoints(ctypes.Structure):
    """Mirror of struct scaf_points."""

    _fields_ = [("p", ctypes.c_uint32 * 4), ("e", ctypes.c_double * 4), ("seen_ns", ctypes.c_uint64 * 4)]


class _CShrink(ctypes.Structure):
    """Mirror of struct scaf_shrink."""

    _fields_ = [("steady_since_ns", ctypes.c_uint64), ("probe_since_ns", ctypes.c_uint64),
                ("steady_at", ctypes.c_uint32), ("reserved", ctypes.c_uint32)]


class _CClientState(ctypes.Structure):
    """Mirror of struct scaf_client_state."""

    _fields_ = [("probe", _CProbe), ("noise", _CNoise), ("points", _CPoints), ("shrink", _CShrink)]


# scafd's default --probe-interval (src/daemon/options.c).
PROBE_INTERVAL_S = 10.0


class ClientState:
    """The per-client state the daemon keeps between rounds for the model policies (the probe clocks, the
    noise of E and the points of its curve), stepped by the library's own scaf_client_state_step, the call
    scafd makes."""

    def __init__(self, interval_s: float = PROBE_INTERVAL_S) -> None:
        lib = _load()
        if not getattr(lib, "_scaf_state_typed", False):
            lib.scaf_client_state_size.restype = ctypes.c_size_t
            lib.scaf_client_state_size.argtypes = []
            if lib.scaf_client_state_size() != ctypes.sizeof(_CClientState):
                raise PolicyLibraryMissing("struct scaf_client_state and its mirror in python/scaf/lib/policy.py "
                                           "are out of step; run make")
            lib.scaf_client_state_step.restype = None
            lib.scaf_client_state_step.argtypes = [ctypes.POINTER(_CClientState), ctypes.c_uint64, ctypes.c_uint64,
                                                   ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                                   ctypes.c_double, ctypes.POINTER(_CClient)]
            lib._scaf_state_typed = True
        self._lib = lib
        self._state = _CClientState()
        self._out = _CClient()
        self._interval_ns = int(interval_s * 1e9)

    def step(self, now_s: float, prev: int, chunk: int, eff_team: int,
             efficiency: float | None) -> tuple[int, float, int, float]:
        """One round: (probe, e_sd, alt_team, alt_efficiency) for the client's policy input, as the daemon
        computes them (probe: 1 = grow probe, 2 = shrink probe, 3 = held by one); efficiency None = none."""
        e = efficiency if efficiency is not None and math.isfinite(efficiency) else -1.0
        self._lib.scaf_client_state_step(ctypes.byref(self._state), int(now_s * 1e9) + 1, self._interval_ns, prev,
                                         chunk, eff_team, e, ctypes.byref(self._out))
        o = self._out
        return int(o.probe), float(o.e_sd), int(o.alt_team), float(o.alt_efficiency)


# Check the layout as soon as the module is imported, when the library is there;
# a missing library is reported by the first call instead, so that `scaf --help` works.
if paths.policy_lib().exists():
    _load()
