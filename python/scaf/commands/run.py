"""`scaf run`: run a program with the layer preloaded, starting a per-user daemon if none answers."""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from scaf.lib import (
    autostart,
    paths,
    proto,
    replay,
    runenv,
    runtimes,
    sockpath,
    startteam,
    supervise,
)
from scaf.lib.launch import resolve

# Our own failures (missing build, daemon that will not start), like env(1) and timeout(1).
EXIT_SCAF = 125
# The per-user socket's directory may be somebody else's, or another user's daemon answers there.
EXIT_UNSAFE = 122

DESCRIPTION = """\
Run CMD with scaf's layer preloaded, so that every OpenMP parallel region it
opens uses the number of threads the daemon allocates to it. The layer follows
the OpenMP runtime CMD loads, read from its ELF dynamic dependencies (CMD is
not run to find out): libscaf_gomp.so for GNU libgomp (gcc, gfortran), and for
programs that load no runtime at start-up (python loads one later);
libscaf_omp.so for LLVM libomp (clang -fopenmp) and Intel libiomp5 (icx, MKL).
The program is not modified; its output is the same as without scaf as long
as it is malleable (below).

scaf run
  - says on stderr at once when CMD loads a parallel runtime that scaf cannot
    steer (a oneTBB older than 2021.11, a statically linked OpenMP runtime)
    or two OpenMP runtimes (then it runs CMD without the layer),
  - for a program linked with oneTBB 2021.11 or later, and for python and
    other interpreters that may load it later, also preloads libscaf_tcm.so,
    the Thread Composability Manager oneTBB asks for its worker threads:
    they follow CMD's share too (an Intel libtcm.so.1 beside libtbb is not
    used then),
  - appends the layer to LD_PRELOAD (keeping any libraries already there),
  - sets SCAF_SOCKET to the socket it resolved, so the layer talks to the
    same daemon,
  - starts a per-user daemon if none answers on your own default socket
    (unless --no-start): `scafd --socket P --idle-exit 30` plus --policy
    and --daemon-arg, detached, its messages in scafd.log next to the
    socket; it exits 30 s after its last client. Concurrent `scaf run`s
    start only one. A note on stderr says so.
  - never starts a daemon on another socket given by --socket or
    $SCAF_SOCKET (a shared daemon's, which its service manager runs; one
    that names your own default socket counts as yours): when none answers
    there, it says so in one line and runs CMD unsteered; CMD joins that
    daemon by itself if it comes back while CMD runs.
  - refuses (status 122) when your default socket's directory may be
    somebody else's: not a real directory, owned by another user, or
    writable by others. Nothing is written there. The same when a daemon
    of another user answers on your socket (SO_PEERCRED: only you, root and
    SCAF_DAEMON_USER are trusted).
  - runs CMD as its child, passes SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1
    and SIGUSR2 on to it, and exits with its exit status.

Without a daemon the layer is inert: the program runs exactly as with plain
libgomp. Programs that are not GNU OpenMP programs run unaffected.

memory and the start team:
  The daemon remembers what it learned of each of your programs between
  runs (docs/memory.md in scaf's source tree). A program that keeps its team
  (remembered fixed, or --fixed, or a `fixed` rule) is best started with its
  share of the machine, as OMP_NUM_THREADS=N/k would start it, instead of
  reading the whole machine and keeping it. So, unless you set
  OMP_NUM_THREADS yourself (your count always stands), scaf run asks the
  daemon what it remembers of CMD (the executable's build ID, and for python,
  R, Rscript, julia and octave the script, module or code it runs) and, when
  it should, exports OMP_NUM_THREADS=T and SCAF_START_TEAM=T, T being the
  share CMD would get now. Such a program keeps T threads for its whole run
  (it sized itself by T): never fewer, never more, and its
  omp_get_num_procs() answers T as well, as inside a cpuset of T CPUs (so
  that data.table's setDTthreads(0) takes T). The count is CMD's only,
  through its execs (Rscript execs R): a program CMD starts sees
  OMP_NUM_THREADS=T as a user's (SCAF_START_PARENT). The layer does the same
  at the program's first OpenMP call, for programs not started by scaf run.
  --no-memory keeps CMD out of the memory (SCAF_MEMORY=0): nothing of it is
  recalled or remembered. --verbose says what was decided and why. A daemon
  that keeps no memory, or of an older protocol: CMD starts as it always did.

every runtime, not only OpenMP:
  Runtimes that size a pool once, when it is built, cannot follow a share
  later: polars and every rayon pool, onnxruntime, numba, numexpr, DuckDB,
  Go, the JVM, .NET and Julia. When the daemon's share for CMD is below the
  CPUs it may run on (another program runs), scaf run starts those whose
  threads spin while they wait with that share, through what each honours:
  onnxruntime by ORT_INTRA_OP_NUM_THREADS, DuckDB by the layer's answer to
  std::thread::hardware_concurrency(). Those whose threads sleep when idle
  keep their own count: they lose more by a count fixed below the machine
  than by sharing it. A variable you set stands. Arrow's CPU pool follows
  the share all along (the layer resizes it). A process with such a runtime
  is a client from its start, and `scaf status` says how each of its
  runtimes is steered. A statically linked program (Go without cgo) cannot
  be a client: scaf run says so. docs/runtimes.md in scaf's source tree has
  the table and the measurements.

malleable or fixed:
  A program is malleable when its results do not depend on how many threads
  its parallel regions get. scaf changes a malleable program's team at each
  outermost region; a fixed program keeps the team it would have without
  scaf, and the daemon gives it its share of the cores through its CPU
  affinity instead (slower next to other programs, but the same team).
  By default the layer decides from evidence (the program's omp_* calls, see
  docs/layer.md in scaf's source tree), unless a rules file names the program
  (`scaf rules`) or `scaf check` found it malleable: the daemon remembers
  that, and the layer then steers the program as a `malleable` rule would
  (--fixed, SCAF_MALLEABLE=no or a `fixed` rule still win; --no-memory
  recalls nothing).
  You can decide instead, for this run, over any rule:

  --fixed      keep the team. Use it when the results must be bitwise
               reproducible: a floating-point reduction (reduction(+:x) over
               doubles, or partial sums per thread) rounds differently for
               different team sizes, so its last digits can change when scaf
               changes the team. Also for a program that splits work by a
               thread count it read earlier, or keeps per-thread data between
               regions, when the layer has not seen that.
  --malleable  steer the team whatever the evidence says. Only when you know
               the results do not depend on it (`scaf check` tests one input):
               a wrong --malleable can give wrong results or crash.

  They set SCAF_MALLEABLE=no or yes in the program's environment.

socket (first that applies):
  --socket P, $SCAF_SOCKET, $XDG_RUNTIME_DIR/scaf/scafd.sock, /tmp/scaf-$UID/scafd.sock
"""

EPILOG = """\
signals:
  SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to scaf run are passed
  on to CMD (the terminal's Ctrl-C already reaches it). scaf run killed with SIGKILL
  takes CMD with it (SIGKILL), as if scaf run had been CMD itself.

exit status:
  the program's exit status; 128+N if a signal N killed it (as a shell reports it)
  2    usage error (no command)
  122  your socket's directory cannot be used safely (missing parent, another
       user's, a symbolic link, writable by others, a planted file in it), or
       another user's daemon answers on your socket: nothing was written
       there and CMD did not run
  125  scaf itself failed (layer or daemon not built, daemon would not start)
  126  CMD was found but cannot be executed
  127  CMD was not found

environment:
  SCAF_SOCKET       the daemon's socket (set for the program to the one resolved);
                    scaf run never starts a daemon on it
  SCAF_DAEMON_ARGS  more scafd options for a daemon scaf run starts (shell words,
                    before --policy and --daemon-arg), e.g. "--policy equipartition"
  SCAF_DAEMON_USER  a shared daemon's user (name or uid) to trust besides you and root
  SCAF_MALLEABLE    yes, no or auto (default): what --malleable/--fixed set
  SCAF_MEMORY       0: what --no-memory sets; the program is kept out of the daemon's memory
  OMP_NUM_THREADS   yours stands: scaf run then starts no program with a share of its own;
                    otherwise set to the start team when the daemon's memory says so, with
                    SCAF_START_TEAM (the layer's sign that the count is scaf's) and
                    SCAF_START_PARENT (scaf's pid: the count is for its child only)
  SCAF_START_SHARE  set to the share CMD's spinning runtimes start with, beside their own
                    variables (above), when it is below CMD's CPUs
  SCAF_RUNTIMES     set to the runtimes scaf run found in CMD (polars,jvm): the layer
                    makes the process a client from its start
  SCAF_LAYER        auto (default), gomp or omp: what --layer sets
  XDG_CACHE_HOME    the layer chosen for each program (and where R lives, for
                    Rscript) is kept in $XDG_CACHE_HOME/scaf (default ~/.cache/scaf)
                    and used again while CMD, every library it loads and every
                    folder searched for one are unchanged; delete the folder to
                    forget it. So is what each command decided (run-v3/): the same
                    command, in the same folder and environment, with every file
                    that decision read unchanged, is started again without Python,
                    in a few milliseconds (the start team is asked afresh)
  SCAF_RUN_REPLAY=0 decide every time, and keep no record of it
  SCAF_RULES        the rules files to read instead of ~/.config/scaf/rules and
                    /etc/scaf/rules (colon-separated; see `scaf rules --help`)
  LD_PRELOAD        the layer is appended to it
  GOMP_SPINCOUNT    set to 10000 unless it or OMP_WAIT_POLICY is set: libgomp's idle
                    threads then spin for microseconds, not milliseconds, before they
                    sleep, so a team waiting for its turn gives the CPUs back
  KMP_BLOCKTIME     the same for libomp and libiomp5: set to 1 (ms) unless it or
                    OMP_WAIT_POLICY is set
  OPENBLAS_THREAD_TIMEOUT
                    the same for OpenBLAS's pool: set to 18 (2^18 cycles, a tenth of a
                    millisecond, where OpenBLAS spins 2^28, a tenth of a second, after
                    every call) unless it or GOTO_THREAD_TIMEOUT is set
  SCAF_VERBOSE=1    the layer reports on stderr what it does
  SCAF_DISABLE=1    the layer stays inert
  (the layer's other settings: docs/settings.md in scaf's source tree)

examples:
  scaf run -- ./my_omp_program input.dat       run one program under scaf
  scaf run -- gm convert -size 4000x4000 plasma: -blur 0x9 /tmp/a.ppm &
  scaf run -- gm convert -size 4000x4000 plasma: -charcoal 3 /tmp/b.ppm
                                               two programs share the machine
  scaf run --socket /run/scaf/scafd.sock -- make -j check
                                               use a system-wide daemon
  scaf run --no-start -- ./prog                use a daemon only if one is running
  scaf run --policy equipartition -- ./prog    if this run starts the daemon: equal shares
  scaf run --fixed -- ./solver input.dat       bitwise-reproducible sums: keep the team
  scaf run --malleable -- ./render scene       checked with `scaf check`: let scaf steer it
  SCAF_VERBOSE=1 scaf run -- ./prog            see what the layer decides
  scaf run --verbose -- ./clang_prog           say which layer and runtime scaf chose, and the start team
  scaf run --no-memory -- ./experiment         recall nothing of it, remember nothing of this run
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run a program under scaf (starts a per-user daemon if needed)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="scaf run [-h] [--socket P] [--no-start] [--policy NAME] [--daemon-arg ARG]\n"
              "                [--layer auto|gomp|omp] [-v] [--malleable | --fixed] [--no-memory]\n"
              "                -- CMD [ARGS...]",
    )
    p.add_argument("--socket", metavar="P", help="the daemon's socket (default: the search order above); "
                   "no daemon is started on it")
    p.add_argument("--no-start", action="store_true", help="do not start a daemon when none answers")
    p.add_argument("--policy", metavar="NAME", help="the policy of a daemon this run starts (scafd --policy)")
    p.add_argument("--daemon-arg", metavar="ARG", action="append", default=[],
                   help="one more scafd option for a daemon this run starts (repeatable: "
                        "--daemon-arg=--cpus --daemon-arg=4)")
    p.add_argument("--layer", choices=("auto", "gomp", "omp"), default=None,
                   help="the layer to preload: auto (default: by the OpenMP runtime CMD loads), gomp "
                        "(libscaf_gomp.so, GNU libgomp) or omp (libscaf_omp.so, LLVM libomp and Intel libiomp5); "
                        "default $SCAF_LAYER, else auto")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="say on stderr which layer and OpenMP runtime scaf chose, and why, and whether CMD "
                        "starts with a share of its own (the start team) and why")
    p.add_argument("--no-memory", action="store_true",
                   help="keep CMD out of the daemon's memory: nothing is recalled (no start team) or remembered "
                        "of this run (SCAF_MEMORY=0)")
    m = p.add_mutually_exclusive_group()
    m.add_argument("--malleable", dest="malleable", action="store_const", const="yes",
                   help="scaf may change the team at every region, whatever the evidence or rules say "
                        "(SCAF_MALLEABLE=yes)")
    m.add_argument("--fixed", dest="malleable", action="store_const", const="no",
                   help="keep the program's team; steer it by CPU affinity only (SCAF_MALLEABLE=no), "
                        "e.g. for bitwise-reproducible floating-point results")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="the program and its arguments")
    p.set_defaults(func=main, _parser=p)


def _err(msg: str) -> None:
    print(f"scaf: {msg}", file=sys.stderr, flush=True)


def _daemon_args(args: argparse.Namespace) -> list[str] | None:
    """The auto-started daemon's extra options: $SCAF_DAEMON_ARGS, --policy, --daemon-arg; None when malformed."""
    try:
        words = shlex.split(os.environ.get("SCAF_DAEMON_ARGS", ""))
    except ValueError as e:
        _err(f"SCAF_DAEMON_ARGS is not a list of shell words: {e}")
        return None
    return [*words, *(["--policy", args.policy] if args.policy else []), *args.daemon_arg]


def _ensure(sock: str, own: bool, args: argparse.Namespace) -> int:
    """Makes sure a daemon we trust answers, starting ours on our own path; 0 to go on, else the exit status."""
    if not own:
        # A shared daemon's socket: its service manager starts it, never we (a daemon of ours there would
        # lock every other user out). Down: the program runs unsteered, and joins it if it comes back.
        problem = autostart.socket_problem(sock)
        if problem:
            _err(problem)
            _err("(run with --no-start to run the program without a daemon)")
            return EXIT_SCAF
        try:
            st = autostart.answers(sock)
        except proto.UntrustedDaemon as e:
            _err(str(e))
            return EXIT_UNSAFE
        except proto.BadStatus as e:
            _err(f"what answers on {sock} is not a scaf daemon ({e}); running the program unsteered")
            return 0
        if st is None:
            _err(f"no daemon answers on {sock}; running the program unsteered "
                 "(scaf run starts a daemon only on your own default socket)")
        else:
            _policy_note(sock, st, args)
        return 0
    extra = _daemon_args(args)
    if extra is None:
        return 2
    got = autostart.daemon_for(sock, True, extra)
    if got.problem:
        _err(got.message)
        if got.problem == "unsafe-dir":
            _err("(remove it if it is yours to remove, or set XDG_RUNTIME_DIR or SCAF_SOCKET elsewhere)")
        if got.problem == "failed":
            _err("(run with --no-start to run the program without one)")
        return EXIT_SCAF if got.problem == "failed" else EXIT_UNSAFE
    started = got.started
    if started:
        _err(autostart.started_line(started))
    elif args.policy or args.daemon_arg:
        try:
            st = autostart.answers(sock)
        except (proto.UntrustedDaemon, proto.BadStatus):
            st = None  # it answered properly a moment ago; the note is only a courtesy
        if st is not None:
            _policy_note(sock, st, args)
    return 0


def _policy_note(sock: str, st: dict, args: argparse.Namespace) -> None:
    """--policy / --daemon-arg only shape a daemon this run starts: say so when one already ran."""
    if args.policy and st.get("policy") != args.policy:
        _err(f"the daemon on {sock} (pid {st.get('daemon_pid')}) already runs policy {st.get('policy')}; "
             f"--policy {args.policy} applies only to a daemon scaf run starts")
    elif args.daemon_arg and not args.policy:
        _err(f"a daemon already answers on {sock} (pid {st.get('daemon_pid')}): --daemon-arg not applied")


def main(args: argparse.Namespace) -> int:
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        args._parser.print_usage(sys.stderr)
        print("scaf run: error: no command given; put it after --, e.g. scaf run -- ./my_omp_program",
              file=sys.stderr)
        return 2

    # Find the program first: a typo should not start a daemon.
    path, code = resolve(argv[0], os.environ.get("PATH"))
    if path is None:
        if code == 127:
            _err(f"{argv[0]}: " + ("No such file or directory" if "/" in argv[0] else "command not found"))
        else:
            _err(f"{argv[0]}: Permission denied" if not os.path.isdir(argv[0]) else f"{argv[0]}: Is a directory")
        return code

    # What this run decides, for scaf-run to replay while none of it changes (docs/python.md, "Replays").
    record = replay.Record()
    if "/" not in argv[0]:
        record.saw_path_dirs(os.environ.get("PATH"))
    record.seen.saw(path)
    record.replayable = not (args.verbose or args.policy or args.daemon_arg)
    want = args.layer or os.environ.get("SCAF_LAYER") or "auto"
    if want not in ("auto", "gomp", "omp"):
        _err(f"SCAF_LAYER={want!r} is not auto, gomp or omp")
        return 2
    if want == "auto":
        try:
            choice = runtimes.choose(path, seen=record.seen)
        except (ValueError, KeyError, IndexError, AssertionError, OSError) as e:  # a damaged ELF: the old default
            choice = runtimes.Choice("gomp", "GNU libgomp (default)", f"its ELF headers could not be read ({e})")
    else:
        choice = runtimes.Choice(want, "GNU libgomp" if want == "gomp" else "LLVM libomp or Intel libiomp5",
                                 "--layer" if args.layer else "SCAF_LAYER")
    if choice.warning:
        _err(choice.warning)
        record.replayable = False
    layer, provider = runenv.preloads(choice)
    if args.verbose:
        _err(f"layer {layer.name if layer else 'none'} for {choice.runtime}: {choice.reason}")
    for lib in (layer, provider):
        if lib is None:
            continue
        if not lib.is_file():
            _err(f"the layer {lib} is missing; run make")
            return EXIT_SCAF
        if any(c in str(lib) for c in " :"):
            _err(f"the layer's path {lib} has a space or a colon, which LD_PRELOAD cannot carry; "
                 "build scaf in another directory")
            return EXIT_SCAF
    if not paths.launch_lib().is_file():
        # The codec that asks the daemon and the supervisor that runs the program are its C code.
        _err(f"the launch library {paths.launch_lib()} is missing; run make")
        return EXIT_SCAF
    sock = args.socket or sockpath.default_socket()
    # Our own default socket, however it was named (an exported SCAF_SOCKET may name it too).
    own = autostart.own_socket(sock)
    if not args.no_start:
        code = _ensure(sock, own, args)
        if code:
            return code
    # What scaf run adds, the start team included: the daemon is asked now, just before the program starts.
    env, _ = runenv.environment(path, argv, os.environ, sock, choice, malleable=args.malleable,
                                no_memory=args.no_memory, say=_err if args.verbose else None, record=record)
    if os.environ.get("SCAF_RUN_REPLAY", "").strip() != "0" and getattr(args, "_words", None) is not None:
        _record(record, args, path, argv, "none" if args.no_start else "own" if own else "shared", sock)
    return supervise.run(path, argv, env)


def _record(record: replay.Record, args: argparse.Namespace, path: str, argv: list[str], daemon: str,
            sock: str) -> None:
    """Keeps this run's decision for scaf-run to replay (docs/python.md, "Replays")."""
    try:
        cwd = os.getcwd()
    except OSError:
        return  # a folder that is gone: nothing to key the record by
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] == "scaf" and getattr(module, "__file__", None):
            record.seen.saw(module.__file__)  # an upgraded scaf decides afresh
    record.write(args._words, cwd, os.environb, path, argv, daemon, sock, startteam.program_count())

