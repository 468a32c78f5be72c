"""ctypes binding to build/lib/libscaf_decide.so: the daemon's decide stage (src/daemon/decide/turn.h), for the simulator.

One referee turn of scafd is ``scaf_decide_turn``: every client prepared from
what the daemon knows of it (its decoded page, its last allocation, a
remembered curve, a WAKE, its CPU time; the idle rule, the rigid team and the
policy state stepped), then the referee over that snapshot (partition,
policy, CPU-set layout, gangs). scafd calls it from src/daemon/pipeline.c;
``Turns`` here calls the same function from the same sources, over arrays of
the same structs, so the simulator and the daemon cannot drift::

    from scaf.lib import decide
    d = decide.Turns("speedup", cpus=64, chunk=1, capacity=8)
    r = d.reports            # numpy view of struct scaf_page_report, one per program
    r["eff_team"][0], r["efficiency"][0], r["estimate"][0] = 8, 0.9, decide.ESTIMATE_MEASURED
    out = d.turn(now_s=1.0, order=[0, 1], available=64)   # numpy view of struct scaf_referee_alloc
    out["threads"], out["control"], out["gang_slot"], out["idle"]

The start team (``start_team``, ``start_outlasts``) is the policy library's
own code (src/policy/startteam.c), linked into the same library.

Every struct below mirrors its C declaration field by field; their sizes are
checked against ``scaf_decide_struct_size`` when the library is loaded, and a
mismatch is ``DecideLibraryMissing`` ("run make"), as is a missing library.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

from scaf.lib import paths, proto
from scaf.lib.policy import _CClient, _CClientState

if TYPE_CHECKING:
    import numpy as np

# proto.h's, read from the C side (scaf.lib.proto, scaf_wire_constant): the page's words are the wire format's.
ESTIMATE_NONE, ESTIMATE_ASSUMED, ESTIMATE_MEASURED = proto.ESTIMATE_NONE, proto.ESTIMATE_ASSUMED, proto.ESTIMATE_MEASURED
VERDICT_UNDECIDED, VERDICT_MALLEABLE, VERDICT_FIXED = proto.VERDICT_UNDECIDED, proto.VERDICT_MALLEABLE, proto.VERDICT_FIXED
SOURCE_DEFAULT, SOURCE_EVIDENCE = proto.SOURCE_DEFAULT, proto.SOURCE_EVIDENCE
CONTROL_THREADS, CONTROL_CPUSET = proto.CONTROL_THREADS, proto.CONTROL_CPUSET
CPUSET_WORDS = proto.CPUSET_WORDS
REASON_MAX = proto.REASON_MAX
POINTS_MAX = 4  # SCAF_MEMO_POINTS, SCAF_POINTS_MAX

# scafd's defaults (src/daemon/main.c, decide/idle.h): --probe-interval 10 s, --idle-after 0.25 s, the idle
# rule's spans and fractions, --gang-quantum 100 ms.
PROBE_INTERVAL_S = 10.0
IDLE_AFTER_S = 0.25
IDLE_SPAN_S = 0.2
IDLE_CPU_FRAC = 0.10
IDLE_WAKE_FRAC = 0.50
IDLE_SLACK_TICKS = 1
GANG_QUANTUM_S = 0.1
# The lookout's interval (collect/lookout.c, LOOKOUT_INTERVAL_NS): foreign load is sampled once a second.
LOOKOUT_INTERVAL_S = 1.0


class DecideLibraryMissing(RuntimeError):
    """libscaf_decide.so is not built, cannot be loaded, or its structs and these mirrors are out of step."""


class PageReport(ctypes.Structure):
    """struct scaf_page_report (src/daemon/collect/pageread.h): a client's page as the daemon decoded it."""

    _fields_ = [("flags", ctypes.c_uint32), ("long_region", ctypes.c_bool), ("fixed_team", ctypes.c_uint32),
                ("last_team", ctypes.c_uint32), ("rigid_team", ctypes.c_uint32), ("rigid_regions", ctypes.c_uint32),
                ("wanted", ctypes.c_uint32), ("eff_team", ctypes.c_uint32), ("efficiency", ctypes.c_double),
                ("estimate", ctypes.c_uint32), ("experiment_pid", ctypes.c_int32), ("regions", ctypes.c_uint64),
                ("experiments", ctypes.c_uint64), ("verdict", ctypes.c_uint32), ("source", ctypes.c_uint32),
                ("started_with", ctypes.c_uint32), ("runtimes", ctypes.c_uint32), ("runtime_team", ctypes.c_uint32),
                ("reason", ctypes.c_char * REASON_MAX)]


class RefereeClient(ctypes.Structure):
    """struct scaf_referee_client (src/daemon/decide/referee.h)."""

    _fields_ = [("pol", _CClient), ("malleable", ctypes.c_bool), ("fixed_team", ctypes.c_uint32),
                ("long_region", ctypes.c_bool), ("rigid_team", ctypes.c_uint32), ("uid", ctypes.c_uint32),
                ("idle", ctypes.c_bool), ("idle_epoch", ctypes.c_uint32), ("idle_team", ctypes.c_uint32),
                ("regionless", ctypes.c_bool)]


class RefereeAlloc(ctypes.Structure):
    """struct scaf_referee_alloc: what the daemon writes to a client's page."""

    _fields_ = [("share", ctypes.c_uint32), ("threads", ctypes.c_uint32), ("control", ctypes.c_uint32),
                ("malleable", ctypes.c_bool), ("rigid", ctypes.c_uint32), ("gang_slot", ctypes.c_uint32),
                ("idle", ctypes.c_uint32), ("coef", ctypes.c_double), ("cpuset", ctypes.c_uint64 * CPUSET_WORDS)]


class Rigid(ctypes.Structure):
    """struct scaf_rigid (src/daemon/decide/rigid.h)."""

    _fields_ = [("seen", ctypes.c_uint32), ("team", ctypes.c_uint32), ("until_ns", ctypes.c_uint64)]


class Idle(ctypes.Structure):
    """struct scaf_idle (src/daemon/decide/idle.h)."""

    _fields_ = [("started", ctypes.c_bool), ("idle", ctypes.c_bool), ("have_mark", ctypes.c_bool),
                ("judged", ctypes.c_bool), ("regions", ctypes.c_uint64), ("quiet_since_ns", ctypes.c_uint64),
                ("mark_ns", ctypes.c_uint64), ("mark_ticks", ctypes.c_uint64), ("epoch", ctypes.c_uint32)]


class IdleRule(ctypes.Structure):
    """struct scaf_idle_rule."""

    _fields_ = [("window_ns", ctypes.c_uint64), ("span_ns", ctypes.c_uint64), ("cpu_frac", ctypes.c_double),
                ("wake_frac", ctypes.c_double), ("slack_ticks", ctypes.c_uint32), ("hz", ctypes.c_uint32)]


class MemoPoint(ctypes.Structure):
    """struct scaf_memo_point (src/daemon/memory/record.h): one remembered point of a curve."""

    _fields_ = [("team", ctypes.c_uint32), ("efficiency_ppm", ctypes.c_uint32)]


class PrepareIn(ctypes.Structure):
    """struct scaf_prepare_in (src/daemon/decide/prepare.h); pointers as addresses."""

    _fields_ = [("report", ctypes.c_void_p), ("max_threads", ctypes.c_uint32), ("alloc", ctypes.c_void_p),
                ("uid", ctypes.c_uint32), ("remembered", ctypes.c_void_p), ("nremembered", ctypes.c_uint32),
                ("prior", ctypes.c_bool), ("woke", ctypes.c_bool), ("cpu_ok", ctypes.c_bool),
                ("cpu_ticks", ctypes.c_uint64), ("group", ctypes.c_uint32)]


class PrepareTurn(ctypes.Structure):
    """struct scaf_prepare_turn."""

    _fields_ = [("now_ns", ctypes.c_uint64), ("probe_interval_ns", ctypes.c_uint64), ("chunk", ctypes.c_uint32),
                ("cpus", ctypes.c_uint32), ("idle_rule", ctypes.c_void_p)]


class DecideClient(ctypes.Structure):
    """struct scaf_decide_client (src/daemon/decide/turn.h)."""

    _fields_ = [("in_", PrepareIn), ("rigid", ctypes.c_void_p), ("state", ctypes.c_void_p), ("idle", ctypes.c_void_p)]


class DecideIn(ctypes.Structure):
    """struct scaf_decide_in."""

    _fields_ = [("turn", PrepareTurn), ("available", ctypes.c_uint32), ("cpu_list", ctypes.c_void_p),
                ("cpu_list_len", ctypes.c_uint32), ("gang", ctypes.c_bool), ("kernel_places", ctypes.c_bool),
                ("per_user", ctypes.c_bool), ("min_gain", ctypes.c_double), ("nclients", ctypes.c_uint32),
                ("clients", ctypes.c_void_p)]


# enum scaf_decide_struct (src/daemon/decide/mirror.h) -> the mirror; the scratch is opaque here (its size only).
_MIRRORS: tuple[type[ctypes.Structure] | None, ...] = (
    PageReport, RefereeClient, RefereeAlloc, None, PrepareIn, PrepareTurn, DecideClient, DecideIn, Rigid, Idle,
    IdleRule, MemoPoint)
_SCRATCH = 3

_lib: ctypes.CDLL | None = None


def _load() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    path = paths.decide_lib()
    if not path.exists():
        raise DecideLibraryMissing(f"{path} not found: run make (it builds the daemon's decide library)")
    try:
        lib = ctypes.CDLL(str(path), use_errno=True)
    except OSError as e:
        raise DecideLibraryMissing(f"cannot load {path}: {e}; run make") from e
    lib.scaf_decide_struct_size.restype = ctypes.c_size_t
    lib.scaf_decide_struct_size.argtypes = [ctypes.c_int]
    for which, mirror in enumerate(_MIRRORS):
        if mirror is None:
            continue
        size = lib.scaf_decide_struct_size(which)
        if size != ctypes.sizeof(mirror):
            raise DecideLibraryMissing(f"{path}: {mirror.__doc__.split(' ')[1] if mirror.__doc__ else mirror}"
                                       f" is {size} bytes, python/scaf/lib/decide.py's mirror "
                                       f"{ctypes.sizeof(mirror)}: out of step; run make")
    lib.scaf_policy_lookup.restype = ctypes.c_void_p
    lib.scaf_policy_lookup.argtypes = [ctypes.c_char_p]
    lib.scaf_decide_turn.restype = ctypes.c_int
    lib.scaf_decide_turn.argtypes = [ctypes.c_void_p, ctypes.POINTER(DecideIn), ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_void_p]
    lib.scaf_referee_scratch_free.restype = None
    lib.scaf_referee_scratch_free.argtypes = [ctypes.c_void_p]
    lib.scaf_start_team.restype = ctypes.c_uint32
    lib.scaf_start_team.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32]
    lib.scaf_start_outlasts.restype = ctypes.c_bool
    lib.scaf_start_outlasts.argtypes = [ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.c_bool]
    lib.scaf_foreignload_ema.restype = ctypes.c_double
    lib.scaf_foreignload_ema.argtypes = [ctypes.c_double, ctypes.c_double]
    lib.scaf_foreignload_smooth.restype = ctypes.c_double
    lib.scaf_foreignload_smooth.argtypes = [ctypes.c_double, ctypes.c_double, ctypes.c_double,
                                            ctypes.POINTER(ctypes.c_double)]
    lib.scaf_foreignload_available.restype = ctypes.c_uint32
    lib.scaf_foreignload_available.argtypes = [ctypes.c_uint32, ctypes.c_double, ctypes.c_double, ctypes.c_double]
    lib.scaf_foreignload_gone.restype = ctypes.c_double
    lib.scaf_foreignload_gone.argtypes = [ctypes.c_double]
    _lib = lib
    return lib


def start_team(available: int, busy: int, peers: int, bound: int) -> int:
    """scaf_start_team: the team a static split would start a program with (docs/memory.md, "The start team")."""
    return int(_load().scaf_start_team(max(available, 0), max(busy, 0), max(peers, 0), max(bound, 0)))


def start_outlasts(elapsed_s: float, expect_s: float, newcomer_s: float, held: bool) -> bool:
    """scaf_start_outlasts: whether a running client counts in a newcomer's start team."""
    return bool(_load().scaf_start_outlasts(elapsed_s, expect_s, newcomer_s, held))


class Lookout:
    """scafd's foreign load (collect/lookout.c over collect/foreignload.c, the same functions): once a second the
    contexts that processes which are no clients kept busy, a moving average of them, and the contexts left to the
    clients. A foreign process that ends leaves the average at once (its own smoothed load, `gone`)."""

    def __init__(self, cpus: int) -> None:
        self.cpus = cpus
        self.foreign = 0.0
        self.prev = 0.0

    def sample(self, busy: float, gone: float) -> None:
        """One sample: BUSY contexts of foreign load over the last interval, GONE the smoothed load of the foreign
        processes that ended since the one before (scaf_foreignload_smooth)."""
        prev = ctypes.c_double()
        self.foreign = float(_load().scaf_foreignload_smooth(self.foreign, busy, gone, ctypes.byref(prev)))
        self.prev = prev.value

    def available(self, gone: float = 0.0) -> int:
        """The contexts the referee hands out now (scafd_available): GONE, what has ended since the last sample,
        is out at once."""
        return int(_load().scaf_foreignload_available(self.cpus, self.foreign, self.prev, gone))

    @staticmethod
    def ema(old: float, busy: float) -> float:
        """One foreign process's own smoothed load after a sample (the foreign list's, scaf_foreignload_ema)."""
        return float(_load().scaf_foreignload_ema(old, busy))

    @staticmethod
    def gone(smoothed: float) -> float:
        """What a foreign process that ended takes out of the average at once (scaf_foreignload_gone)."""
        return float(_load().scaf_foreignload_gone(smoothed))


def start_rule(nthreads: int, start_team: int, *, user_fixed: bool, memory_runs: int, memory_verdict: int,
               memory_source: int = SOURCE_EVIDENCE) -> int:
    """The layer's start rule (scaf_start_decide, libscaf_launch.so: the function the layer, scaf-run and scaf run
    call) for a program whose count would be NTHREADS, asked of a daemon that offers START_TEAM: the team it
    starts with, or 0 when it starts with its own count."""
    from scaf.lib import startteam

    sin = startteam._StartIn(nthreads=max(nthreads, 1), user_fixed=int(user_fixed), asked=1,
                             start_team=max(start_team, 0), memory_runs=memory_runs,
                             memory_verdict=memory_verdict if memory_runs else 0,
                             memory_source=memory_source if memory_runs else 0)
    out = startteam._lib().scaf_start_decide(ctypes.byref(sin))
    return int(out.team) if out.why == startteam.START_APPLY else 0


def _view(arr: ctypes.Array) -> np.ndarray:
    """A numpy structured view on a ctypes array of structs: the same memory, one field per member."""
    import numpy as np

    return np.frombuffer(arr, dtype=np.dtype(arr._type_))  # type: ignore[attr-defined]


class Turns:
    """The decide stage of one daemon over `capacity` clients, turn after turn, as scafd keeps it.

    Per client (indexed 0..capacity-1 by the caller, whatever their arrival
    order): its decoded page (``reports``), its allocation as last written
    (``allocs``; ``applied`` says whether one was), its remembered curve
    (``set_memory``), and the state the daemon keeps between turns (rigid
    team, policy state, idle rule). ``turn()`` hands the present clients, in
    the order given (the daemon's: arrival), to ``scaf_decide_turn`` and
    writes what it decided into ``allocs``.
    """

    def __init__(self, policy: str, cpus: int, chunk: int, capacity: int, *, min_gain: float = 0.0,
                 gang: bool = True, kernel_places: bool = True, probe_interval_s: float = PROBE_INTERVAL_S,
                 idle_after_s: float = IDLE_AFTER_S, hz: int = 100) -> None:
        import numpy as np

        lib = _load()
        self._lib = lib
        self._policy = lib.scaf_policy_lookup(policy.encode())
        if not self._policy:
            raise ValueError(f"policy {policy!r} is not in libscaf_decide.so")
        n = max(capacity, 1)
        self.capacity = n
        self.hz = hz
        self._reports = (PageReport * n)()
        self._allocs = (RefereeAlloc * n)()
        self._rigid = (Rigid * n)()
        self._state = (_CClientState * n)()
        self._idle = (Idle * n)()
        self._memo = (MemoPoint * (n * POINTS_MAX))()
        self._clients = (DecideClient * n)()
        self._prepared = (RefereeClient * n)()
        self._out = (RefereeAlloc * n)()
        self._scratch = ctypes.create_string_buffer(lib.scaf_decide_struct_size(_SCRATCH))
        self._cpu_list = (ctypes.c_int * max(cpus, 1))(*range(max(cpus, 1)))
        self._rule = IdleRule(window_ns=int(idle_after_s * 1e9), span_ns=int(IDLE_SPAN_S * 1e9),
                              cpu_frac=IDLE_CPU_FRAC, wake_frac=IDLE_WAKE_FRAC, slack_ticks=IDLE_SLACK_TICKS, hz=hz)
        self._in = DecideIn()
        self._in.turn.probe_interval_ns = int(probe_interval_s * 1e9)
        self._in.turn.chunk = chunk
        self._in.turn.cpus = cpus
        self._in.turn.idle_rule = ctypes.addressof(self._rule) if idle_after_s > 0 else None
        self._in.cpu_list = ctypes.addressof(self._cpu_list)
        self._in.cpu_list_len = max(cpus, 1)
        self._in.gang = gang
        self._in.kernel_places = kernel_places
        self._in.min_gain = min_gain
        self._in.clients = ctypes.addressof(self._clients)
        self.reports = _view(self._reports)
        self.allocs = _view(self._allocs)
        self.state = _view(self._state)
        self.prepared = _view(self._prepared)
        self._cl = _view(self._clients)
        self._outv = _view(self._out)
        self.applied = np.zeros(n, dtype=bool)
        self.max_threads = np.ones(n, dtype=np.uint32)
        self.group = np.zeros(n, dtype=np.uint32)  # each client's program (0: one of its own), as HELLO's tree says
        self.nmemo = np.zeros(n, dtype=np.uint32)
        self.memo = _view(self._memo).reshape(n, POINTS_MAX)
        # The memory's flags as pipeline.c keeps them: measured (a measured report came, the remembered curve
        # stands in no more) and measured_wide (measured from 2 or more threads: the prior is no longer one).
        self.measured = np.zeros(n, dtype=bool)
        self.measured_wide = np.zeros(n, dtype=bool)

        def addr(arr: ctypes.Array, size: int) -> np.ndarray:
            return ctypes.addressof(arr) + size * np.arange(n, dtype=np.uint64)

        self._a_report = addr(self._reports, ctypes.sizeof(PageReport))
        self._a_alloc = addr(self._allocs, ctypes.sizeof(RefereeAlloc))
        self._a_rigid = addr(self._rigid, ctypes.sizeof(Rigid))
        self._a_state = addr(self._state, ctypes.sizeof(_CClientState))
        self._a_idle = addr(self._idle, ctypes.sizeof(Idle))
        self._a_memo = addr(self._memo, ctypes.sizeof(MemoPoint) * POINTS_MAX)
        self.reports["efficiency"] = -1.0

    def __del__(self) -> None:
        lib = getattr(self, "_lib", None)
        if lib is not None:
            lib.scaf_referee_scratch_free(ctypes.addressof(self._scratch))

    def arrive(self, j: int, max_threads: int, now_s: float, group: int = 0) -> None:
        """Client j says HELLO: a fresh page (scaf_pageread_init's values) and fresh state; `group`: the program
        it is a process of (a pool's parent and workers share one; 0: a program of its own)."""
        ctypes.memset(ctypes.addressof(self._reports[j]), 0, ctypes.sizeof(PageReport))
        for arr, size in ((self._allocs, RefereeAlloc), (self._rigid, Rigid), (self._state, _CClientState),
                          (self._idle, Idle)):
            ctypes.memset(ctypes.addressof(arr[j]), 0, ctypes.sizeof(size))
        r = self._reports[j]
        r.fixed_team = max_threads
        r.efficiency = -1.0
        self.max_threads[j] = max_threads
        self.group[j] = group
        self.applied[j] = False
        self.measured[j] = self.measured_wide[j] = False
        self.nmemo[j] = 0

    def set_memory(self, j: int, points: list[tuple[int, float]], now_s: float) -> None:
        """What the memory kept of client j's curve: stands in until its first measured report, and seeds the
        points its policy state keeps (memory.c's seed_points)."""
        pts = [(int(p), float(e)) for p, e in points if p >= 2 and 0 < e <= 1][:POINTS_MAX]
        st = self._state[j]
        for i, (p, e) in enumerate(pts):
            self.memo[j, i]["team"] = p
            self.memo[j, i]["efficiency_ppm"] = max(1, min(1_000_000, round(e * 1e6)))
            st.points.p[i] = p
            st.points.e[i] = self.memo[j, i]["efficiency_ppm"] / 1e6
            st.points.seen_ns[i] = _ns(now_s)
        self.nmemo[j] = len(pts)

    def turn(self, now_s: float, order: np.ndarray | list[int], available: int, woke: np.ndarray | None = None,
             cpu_ticks: np.ndarray | None = None) -> np.ndarray:
        """One referee turn over the clients `order` (in that order): their allocations, a numpy view of k
        struct scaf_referee_alloc (valid until the next turn), also copied into ``allocs``."""
        import numpy as np

        idx = np.asarray(order, dtype=np.int64)
        k = len(idx)
        if k == 0:
            return self._outv[:0]
        rep = self.reports
        meas = rep["estimate"][idx] >= ESTIMATE_MEASURED
        self.measured[idx] |= meas
        self.measured_wide[idx] |= meas & (rep["eff_team"][idx] >= 2)
        remembered = ~self.measured[idx] & (self.nmemo[idx] > 0)
        cl = self._cl[:k]
        inp = cl["in_"]
        inp["report"] = self._a_report[idx]
        inp["max_threads"] = self.max_threads[idx]
        inp["alloc"] = np.where(self.applied[idx], self._a_alloc[idx], 0)
        inp["uid"] = 0
        inp["remembered"] = np.where(remembered, self._a_memo[idx], 0)
        inp["nremembered"] = np.where(remembered, self.nmemo[idx], 0)
        inp["prior"] = (self.nmemo[idx] > 0) & ~self.measured_wide[idx]
        inp["woke"] = False if woke is None else woke[idx]
        inp["cpu_ok"] = cpu_ticks is not None
        inp["cpu_ticks"] = 0 if cpu_ticks is None else cpu_ticks[idx]
        inp["group"] = self.group[idx]
        cl["rigid"] = self._a_rigid[idx]
        cl["state"] = self._a_state[idx]
        cl["idle"] = self._a_idle[idx]
        self._in.turn.now_ns = _ns(now_s)
        self._in.available = max(int(available), 1)
        self._in.nclients = k
        if self._lib.scaf_decide_turn(self._policy, ctypes.byref(self._in), ctypes.addressof(self._prepared),
                                      ctypes.addressof(self._scratch), ctypes.addressof(self._out)) < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"scaf_decide_turn refused the turn (errno {err})")
        out = self._outv[:k]
        self.allocs[idx] = out
        self.applied[idx] = True
        return out


def _ns(t_s: float) -> int:
    """A simulated time as the daemon's CLOCK_MONOTONIC: never 0 (0 means 'not yet' in its state)."""
    return round(t_s * 1e9) + 1
