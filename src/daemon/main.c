/* main.c — scafd's command line: options, --help, start-up checks, exit status. */
#include "loop.h"
#include "clients.h"
#include "pipeline.h"
#include "say.h"
#include "scafd.h"
#include "collect/capacity.h"
#include "collect/lookout.h"
#include "memory/file.h"
#include "memory/keep.h"
#include "report/alloclog.h"
#include "transport/conn.h"
#include "transport/activation.h"
#include "transport/listener.h"
#include "scaf/sockpath.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Option ranges (--help says them): every period stays a positive whole number of nanoseconds. */
#define SCAFD_RATE_MIN 0.01
#define SCAFD_RATE_MAX 1000
#define SCAFD_SCOREBOARD_MIN 0.01

/* Exit status: 0 clean exit (signal, --idle-exit, --help), 1 runtime failure, 2 bad command line. */
enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

static const char USAGE[] = "usage: scafd [OPTIONS]   (scafd --help for details)\n";

static void help(void)
{
    printf("NAME\n"
           "    scafd - the scaf daemon: space-shares the machine among OpenMP programs\n"
           "\n"
           "SYNOPSIS\n"
           "    scafd [--socket PATH] [--policy NAME] [--cpus N] [--rate HZ] [-t SECS]\n"
           "          [--log FILE] [--idle-exit SECS] [--max-clients N] [--chunk C]\n"
           "          [--no-lookout] [--gang-quantum MS] [--placement cpuset|kernel]\n"
           "          [--probe-interval SECS]\n"
           "          [--min-gain G] [--idle-after SECS] [--shared [--user-clients N]] [--job ID]\n"
           "          [--exit-with PID] [--state-dir DIR | --no-memory]\n"
           "          [--memory-programs N] [-v] [--help] [--version]\n"
           "\n"
           "DESCRIPTION\n"
           "    scafd decides how many threads each client program may use. Programs become\n"
           "    clients when they run with libscaf_gomp.so preloaded (what `scaf run` does):\n"
           "    the layer connects to this socket, receives a shared page, and applies the\n"
           "    thread count written there at each outermost parallel region. scafd\n"
           "    reallocates at --rate Hz and at once whenever a client arrives or leaves.\n"
           "    Contexts kept busy by processes that are not clients are measured once a\n"
           "    second from /proc and are not handed out. It needs no privileges, runs in\n"
           "    the foreground and logs on stderr.\n"
           "\n"
           "OPTIONS\n"
           "    --socket PATH      listen on PATH. Default: $SCAF_SOCKET, else\n"
           "                       $XDG_RUNTIME_DIR/scaf/scafd.sock, else /tmp/scaf-$UID/scafd.sock.\n"
           "                       A missing parent directory is created (mode 0700), its own\n"
           "                       parent never. An existing one must be a real directory of\n"
           "                       yours or root's (for the default path: yours, writable by\n"
           "                       nobody else); files in it are never followed through links.\n"
           "    --policy NAME      allocation policy (default: %s). Known policies:\n",
           scaf_policy_lookup("speedup") ? "speedup" : scaf_policy_at(0)->name);
    for (size_t i = 0; i < scaf_policy_count(); i++)
        printf("                         %-14s %s\n", scaf_policy_at(i)->name, scaf_policy_at(i)->description);
    printf("    --cpus N           allocate as if N hardware contexts were available, instead of\n"
           "                       the affinity mask limited by the cgroup's CPU quota (v2 cpu.max,\n"
           "                       or v1 cpu.cfs_quota_us / cpu.cfs_period_us; the smallest quota\n"
           "                       of the cgroup and its ancestors)\n"
           "    --rate HZ          referee rate: reallocations per second, 0.01 to 1000\n"
           "                       (default 4)\n"
           "    -t, --scoreboard SECS\n"
           "                       print a PID NAME THREADS NLWP table, plus an `all` row, on\n"
           "                       stdout every SECS seconds (0.01 to 86400)\n"
           "    --log FILE         append one JSON line per allocation change to FILE (the status\n"
           "                       JSON: time, cpus, available, policy, and per client pid, name,\n"
           "                       threads, malleable, cpuset, ...)\n"
           "    --idle-exit SECS   exit (status 0) after SECS seconds without clients\n"
           "                       (0.001 to 1e9); 0 = never (default). `scaf run` starts its\n"
           "                       per-user daemon with it.\n"
           "    --max-clients N    size of the client table (default 256, at most %u); client\n"
           "                       number N+1 is refused with a clear reason\n"
           "    --chunk C          allocation granularity in contexts (default: the SMT width\n"
           "                       of the first CPU, from /sys topology)\n"
           "    --no-lookout       ignore load from processes that are not clients\n"
           "    --gang-quantum MS  fixed teams (programs whose team size scaf must not change)\n"
           "                       that together need more contexts than there are take turns:\n"
           "                       whole teams, MS milliseconds each (1 to 60000, default\n"
           "                       100), parked by their own layer at region boundaries.\n"
           "                       0: they run unconfined\n"
           "                       side by side instead, as without scaf\n"
           "    --placement WHERE  where fixed teams run when they all fit: kernel (default),\n"
           "                       where the kernel puts them, as a static split\n"
           "                       (OMP_NUM_THREADS=N/k) leaves them; cpuset, each on a CPU\n"
           "                       set of exactly its team, disjoint from the others. Their\n"
           "                       contexts are theirs either way\n"
           "    --probe-interval SECS\n"
           "                       a client the speedup policy held at one chunk this long is\n"
           "                       given an average share again until it reports from it, so a\n"
           "                       program whose phase changed can regain threads (default 10,\n"
           "                       the layer's SCAF_EXPERIMENT_INTERVAL_S; 0 = never)\n"
           "    --min-gain G       the consumption policy gives a program one more context only\n"
           "                       while that adds at least G to its modelled speedup (0.001 to\n"
           "                       1, default 0.5: half a context's worth); the rest stay idle\n"
           "    --idle-after SECS  a client that has run no parallel region and used next to no\n"
           "                       CPU (10%% of one context) for SECS seconds is idle: it holds\n"
           "                       no share until its next region or a whole thread's worth\n"
           "                       of CPU (over half a context), and its share\n"
           "                       goes to the busy clients (0.05 to 3600, default 0.25; 0 = never)\n"
           "    --shared           socket mode 0666 (and directory 0755): a system-wide daemon\n"
           "                       any user's programs may join. Users are kept apart: each\n"
           "                       may hold --user-clients clients and 16 connections that have\n"
           "                       not said HELLO (which must finish a message within 3 s); when\n"
           "                       several users' programs wait for CPUs, the contexts are split\n"
           "                       between users first and only then between each user's\n"
           "                       programs; `scaf status` shows a user the other users'\n"
           "                       clients only as counts (root and scafd's own user see all)\n"
           "    --user-clients N   with --shared: the most clients one user may hold (default: a\n"
           "                       quarter of --max-clients, at least 1)\n"
           "    --job ID           the batch system's job this daemon serves (Slurm's\n"
           "                       $SLURM_JOB_ID): named in its first log line, its status\n"
           "                       (`job`), each --log line and scaf status --prometheus\n"
           "                       (label job_id). 1 to 64 letters, digits, '.', '_', '+', '-'\n"
           "    --exit-with PID    exit (status 0) once process PID has ended and no client is\n"
           "                       left: a daemon that lives as long as a job's script or shell.\n"
           "                       Clients still running when PID ends are waited for, so their\n"
           "                       departures are seen. PID must exist at start\n"
           "    --state-dir DIR    keep the memory here: what scafd learned of each program\n"
           "                       (whether it must keep its team, its region sites known to\n"
           "                       be safe to steer, its speedup curve, the programs it runs\n"
           "                       beside), so that the next run of the same code starts from\n"
           "                       it. One file per user, DIR/memory-UID.bin (mode 0600), each\n"
           "                       user's own: every request is answered for the uid the kernel\n"
           "                       gives for the connection. Default: $STATE_DIRECTORY (systemd's\n"
           "                       StateDirectory=, /var/lib/scaf for the system-wide unit), else\n"
           "                       $XDG_STATE_HOME/scaf, else ~/.local/state/scaf. A missing DIR\n"
           "                       is created (mode 0700; for the defaults, the XDG directories\n"
           "                       above it too); an existing one must be a real directory of\n"
           "                       yours, writable by nobody else. A DIR given here that cannot\n"
           "                       be used is an error; a default one turns the memory off, with\n"
           "                       one line saying why\n"
           "    --no-memory        keep no memory: every run is learned afresh, and scaf run,\n"
           "                       scaf forget and scaf check are told that the daemon keeps none\n"
           "    --memory-programs N\n"
           "                       the most programs remembered per user (1 to %u, default\n"
           "                       %u); past it the least recently seen is forgotten\n"
           "    -v, --verbose      log arrivals, departures and allocations on stderr\n"
           "    -h, --help         show this help and exit\n"
           "    -V, --version      show version and protocol and exit\n"
           "\n"
           "SIGNALS\n"
           "    SIGUSR1            switch to the next policy (in the order listed above)\n"
           "    SIGTERM, SIGINT    exit 0 and remove the socket; clients keep their last\n"
           "                       allocation and reconnect when a daemon returns\n"
           "\n"
           "SOCKET ACTIVATION\n"
           "    Started with LISTEN_PID set to its own pid and LISTEN_FDS=1 (by systemd's\n"
           "    scafd.socket unit, or systemd-socket-activate), scafd serves the listening\n"
           "    Unix socket passed as fd 3 and ignores --socket: it neither creates, locks\n"
           "    nor removes that socket's path, which stays with whoever passed it. Units\n"
           "    are installed for a system-wide daemon (/run/scaf/scafd.sock, --shared) and\n"
           "    for systemctl --user ($XDG_RUNTIME_DIR/scaf/scafd.sock).\n"
           "\n"
           "FILES\n"
           "    PATH.lock          next to the socket: held while scafd runs, so only one daemon\n"
           "                       serves a path; a socket left by a dead daemon is replaced. It\n"
           "                       names the holder's pid and --idle-exit, so that a second\n"
           "                       daemon can say who is there and whether it leaves by itself\n"
           "    DIR/memory-UID.bin\n"
           "                       the memory of user UID's programs (--state-dir): read at that\n"
           "                       user's first program or request, written at most once a\n"
           "                       second after a program of theirs leaves and at exit, always\n"
           "                       whole (a temporary file, fsynced, renamed over it). A file\n"
           "                       that is damaged or not scafd's is never believed: it is\n"
           "                       renamed DIR/memory-UID.bin.bad-TIMESTAMP, with one line on\n"
           "                       stderr, and the user starts with an empty memory\n"
           "\n"
           "EXIT STATUS\n"
           "    0  exited on SIGTERM/SIGINT, --idle-exit or --exit-with\n"
           "    1  could not start or keep serving (socket path unusable, another daemon\n"
           "       already serving it, log file unwritable, ...)\n"
           "    2  bad command line\n"
           "\n"
           "EXAMPLES\n"
           "    scafd                                  per-user daemon on the default socket\n"
           "    scafd --policy equipartition -t 5      equal shares, scoreboard every 5 s\n"
           "    scafd --policy consumption --min-gain 0.3   leave contexts idle that add < 0.3 each\n"
           "    scafd --cpus 16 --log alloc.jsonl      allocate as if there were 16 contexts\n"
           "    sudo scafd --socket /run/scaf/scafd.sock --shared\n"
           "                                           system-wide daemon; clients then set\n"
           "                                           SCAF_SOCKET=/run/scaf/scafd.sock\n"
           "    systemctl enable --now scafd.socket    the same through systemd, started at the\n"
           "                                           first connection\n"
           "    kill -USR1 $(pidof scafd)              switch policy at run time\n"
           "    scafd --socket \"$TMPDIR/scafd.sock\" --job \"$SLURM_JOB_ID\" --exit-with $$\n"
           "                                           one daemon for a batch job, gone with its\n"
           "                                           script (what scaf's Slurm TaskProlog runs)\n"
           "\n"
           "SEE ALSO\n"
           "    scaf(1): scaf run, scaf status; docs/daemon.md and docs/memory.md in the\n"
           "    source tree\n",
           SCAFD_MAX_CLIENTS_LIMIT, SCAF_MEMFILE_MAX_RECORDS, SCAF_MEMORY_PROGRAMS_DEFAULT);
}

static int bad(const char *opt, const char *arg, const char *why)
{
    fprintf(stderr, "scafd: invalid %s '%s': %s\n%s", opt, arg, why, USAGE);
    return -1;
}

static int parse_u32(const char *opt, const char *arg, uint32_t lo, uint32_t hi, uint32_t *out)
{
    char *end;
    unsigned long v;
    char why[64];

    errno = 0;
    v = strtoul(arg, &end, 10);
    snprintf(why, sizeof why, "expected an integer from %u to %u", lo, hi);
    if (errno || end == arg || *end || arg[0] == '-' || v < lo || v > hi)
        return bad(opt, arg, why);
    *out = (uint32_t)v;
    return 0;
}

/* A number in [lo, hi]; with zero_ok, 0 too (the option's "off"). */
static int parse_secs(const char *opt, const char *arg, double lo, bool zero_ok, double hi, double *out)
{
    char *end;
    char why[80];
    double v;

    errno = 0;
    v = strtod(arg, &end);
    if (zero_ok)
        snprintf(why, sizeof why, "expected 0 or a number from %g to %g", lo, hi);
    else
        snprintf(why, sizeof why, "expected a number from %g to %g", lo, hi);
    if (errno || end == arg || *end || !isfinite(v) || v > hi || (v < lo && !(zero_ok && v == 0)))
        return bad(opt, arg, why);
    *out = v;
    return 0;
}

/* A job id goes into log lines, JSON and Prometheus labels as it is: only characters none of them escape. */
static int parse_job(const char *arg, const char **out)
{
    size_t n = strlen(arg);

    if (n < 1 || n > 64 || strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+-") != n)
        return bad("--job", arg, "expected 1 to 64 letters, digits, '.', '_', '+' or '-'");
    *out = arg;
    return 0;
}

static void unknown_policy(const char *name)
{
    fprintf(stderr, "scafd: unknown policy '%s' (known:", name);
    for (size_t i = 0; i < scaf_policy_count(); i++)
        fprintf(stderr, " %s", scaf_policy_at(i)->name);
    fprintf(stderr, ")\n");
}

/* What the command line asks for. */
enum parse_result {
    PARSE_RUN = 0,    /* serve */
    PARSE_DONE,       /* --help or --version was printed: exit 0 */
    PARSE_USAGE,      /* bad command line (said on stderr): exit 2 */
    PARSE_BAD_SOCKET, /* the socket path cannot be a Unix socket address (said on stderr): exit 1, like a failed bind */
};

/* Fills d->opt, d->policy and d->policy_index from argv. */
static enum parse_result parse_args(struct scafd *d, int argc, char **argv)
{
    enum { O_SOCKET = 256, O_POLICY, O_CPUS, O_RATE, O_LOG, O_IDLE, O_MAXC, O_CHUNK, O_NOLOOK, O_SHARED, O_GANG, O_USERC, O_PROBE, O_MINGAIN, O_JOB, O_EXITWITH, O_STATEDIR, O_NOMEMORY, O_MEMPROGS, O_IDLEAFTER, O_PLACEMENT };
    static const struct option opts[] = {
        {"socket", required_argument, NULL, O_SOCKET},
        {"policy", required_argument, NULL, O_POLICY},
        {"cpus", required_argument, NULL, O_CPUS},
        {"rate", required_argument, NULL, O_RATE},
        {"scoreboard", required_argument, NULL, 't'},
        {"log", required_argument, NULL, O_LOG},
        {"idle-exit", required_argument, NULL, O_IDLE},
        {"max-clients", required_argument, NULL, O_MAXC},
        {"chunk", required_argument, NULL, O_CHUNK},
        {"no-lookout", no_argument, NULL, O_NOLOOK},
        {"gang-quantum", required_argument, NULL, O_GANG},
        {"placement", required_argument, NULL, O_PLACEMENT},
        {"probe-interval", required_argument, NULL, O_PROBE},
        {"min-gain", required_argument, NULL, O_MINGAIN},
        {"idle-after", required_argument, NULL, O_IDLEAFTER},
        {"shared", no_argument, NULL, O_SHARED},
        {"user-clients", required_argument, NULL, O_USERC},
        {"job", required_argument, NULL, O_JOB},
        {"exit-with", required_argument, NULL, O_EXITWITH},
        {"state-dir", required_argument, NULL, O_STATEDIR},
        {"no-memory", no_argument, NULL, O_NOMEMORY},
        {"memory-programs", required_argument, NULL, O_MEMPROGS},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {0, 0, 0, 0},
    };
    const char *policy = NULL, *socket = NULL;
    struct scafd_opts *o = &d->opt;
    int ch;

    o->rate_hz = 4;
    /* A CPU set of exactly the team leaves no room for the process's other threads (an interpreter's main
     * thread, BLAS pools): on 16 CPUs two warm XGBoost trainings took 1.24X as long pinned as unpinned. */
    o->place_kernel = true;
    o->max_clients = 256;
    o->lookout = true;
    o->gang_quantum_s = 0.1;
    o->probe_interval_s = 10.0;
    o->min_gain = SCAF_MIN_GAIN_DEFAULT;
    o->idle_after_s = SCAF_IDLE_WINDOW_NS / 1e9;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":t:vhV", opts, NULL)) != -1) {
        int r = 0;
        switch (ch) {
        case O_SOCKET:
            socket = optarg;
            break;
        case O_POLICY:
            policy = optarg;
            break;
        case O_CPUS:
            r = parse_u32("--cpus", optarg, 1, SCAF_MAX_CPUS, &o->cpus);
            break;
        case O_RATE:
            r = parse_secs("--rate", optarg, SCAFD_RATE_MIN, false, SCAFD_RATE_MAX, &o->rate_hz);
            break;
        case 't':
            r = parse_secs("-t", optarg, SCAFD_SCOREBOARD_MIN, false, 86400, &o->scoreboard_s);
            break;
        case O_LOG:
            o->log_path = optarg;
            break;
        case O_IDLE:
            r = parse_secs("--idle-exit", optarg, 0.001, true, 1e9, &o->idle_exit_s);
            break;
        case O_MAXC:
            r = parse_u32("--max-clients", optarg, 1, SCAFD_MAX_CLIENTS_LIMIT, &o->max_clients);
            break;
        case O_CHUNK:
            r = parse_u32("--chunk", optarg, 1, SCAF_MAX_CPUS, &o->chunk);
            break;
        case O_NOLOOK:
            o->lookout = false;
            break;
        case O_GANG:
            r = parse_secs("--gang-quantum", optarg, 1, true, 60000, &o->gang_quantum_s);
            o->gang_quantum_s /= 1000.0;
            break;
        case O_PLACEMENT:
            o->place_kernel = strcmp(optarg, "kernel") == 0;
            if (!o->place_kernel && strcmp(optarg, "cpuset") != 0)
                r = bad("--placement", optarg, "expected cpuset or kernel");
            break;
        case O_PROBE:
            r = parse_secs("--probe-interval", optarg, 0, false, 86400, &o->probe_interval_s);
            break;
        case O_MINGAIN:
            r = parse_secs("--min-gain", optarg, 0.001, false, 1, &o->min_gain);
            break;
        case O_IDLEAFTER:
            r = parse_secs("--idle-after", optarg, 0.05, true, 3600, &o->idle_after_s);
            break;
        case O_SHARED:
            o->shared = true;
            break;
        case O_USERC:
            r = parse_u32("--user-clients", optarg, 1, SCAFD_MAX_CLIENTS_LIMIT, &o->user_clients);
            break;
        case O_JOB:
            r = parse_job(optarg, &o->job);
            break;
        case O_EXITWITH: {
            uint32_t pid = 0;
            r = parse_u32("--exit-with", optarg, 1, INT32_MAX, &pid);
            o->exit_with = (pid_t)pid;
            break;
        }
        case O_STATEDIR:
            o->memory.state_dir = optarg;
            break;
        case O_NOMEMORY:
            o->memory.off = true;
            break;
        case O_MEMPROGS:
            r = parse_u32("--memory-programs", optarg, 1, SCAF_MEMFILE_MAX_RECORDS, &o->memory.programs);
            break;
        case 'v':
            o->verbose++;
            break;
        case 'h':
            help();
            return PARSE_DONE;
        case 'V':
            printf("scafd (scaf) 0.1.0, protocol %u\n", SCAF_PROTO_VERSION);
            return PARSE_DONE;
        case ':':
            fprintf(stderr, "scafd: option %s needs a value\n%s", argv[optind - 1], USAGE);
            return PARSE_USAGE;
        default:
            fprintf(stderr, "scafd: unknown option %s\n%s", argv[optind - 1], USAGE);
            return PARSE_USAGE;
        }
        if (r < 0)
            return PARSE_USAGE;
    }
    if (optind < argc) {
        fprintf(stderr, "scafd: unexpected argument '%s'\n%s", argv[optind], USAGE);
        return PARSE_USAGE;
    }
    if (o->user_clients && !o->shared) {
        fprintf(stderr, "scafd: --user-clients needs --shared (a per-user daemon has one user)\n%s", USAGE);
        return PARSE_USAGE;
    }
    if (o->user_clients > o->max_clients) {
        fprintf(stderr, "scafd: --user-clients %u is more than --max-clients %u\n%s", o->user_clients,
                o->max_clients, USAGE);
        return PARSE_USAGE;
    }
    if (!o->user_clients)
        o->user_clients = o->max_clients / 4 ? o->max_clients / 4 : 1;
    if (o->memory.state_dir && !*o->memory.state_dir) {
        fprintf(stderr, "scafd: --state-dir needs a path, not an empty string\n%s", USAGE);
        return PARSE_USAGE;
    }
    if (o->memory.off && (o->memory.state_dir || o->memory.programs)) {
        fprintf(stderr, "scafd: --no-memory keeps no memory: --state-dir and --memory-programs do not go with it\n%s",
                USAGE);
        return PARSE_USAGE;
    }

    d->policy = policy ? scaf_policy_lookup(policy) : scaf_policy_lookup("speedup");
    if (!d->policy && policy) {
        unknown_policy(policy);
        return PARSE_USAGE;
    }
    if (!d->policy)
        d->policy = scaf_policy_at(0);
    for (size_t i = 0; i < scaf_policy_count(); i++)
        if (scaf_policy_at(i) == d->policy)
            d->policy_index = i;

    if (socket) {
        if (!*socket) {
            /* An empty value is a mistake (an unset shell variable), not a request for the search order. */
            fprintf(stderr, "scafd: --socket needs a path, not an empty string\n%s", USAGE);
            return PARSE_USAGE;
        }
        if (strlen(socket) >= sizeof o->socket) {
            fprintf(stderr, "scafd: cannot use socket path '%s': longer than a Unix socket address allows\n",
                    socket);
            return PARSE_BAD_SOCKET;
        }
        snprintf(o->socket, sizeof o->socket, "%s", socket);
    } else {
        const char *env = getenv("SCAF_SOCKET");
        if (scaf_sockpath_default(o->socket, sizeof o->socket) < 0) {
            fprintf(stderr, "scafd: the default socket path is too long for a Unix socket; use --socket\n");
            return PARSE_BAD_SOCKET;
        }
        o->socket_is_default = !(env && *env);
    }
    return PARSE_RUN;
}

/* Room for the client table's descriptors: the soft limit is often 1024. Returns the limit now, 0 if unknown. */
static unsigned long raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 0;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur == RLIM_INFINITY ? 0 : (unsigned long)rl.rlim_cur;
}

int main(int argc, char **argv)
{
    struct scafd d = {0};
    struct scaf_listener listener = {0};
    sigset_t mask;
    int rc = EXIT_RUNTIME;
    char quota[700] = "";

    d.sigfd = d.epfd = d.spare_fd = -1;
    d.killed_sid = -1;
    d.listen_fd = listener.fd = listener.lockfd = -1;
    d.referee_tfd = d.lookout_tfd = d.score_tfd = d.idle_tfd = d.gang_tfd = d.owner_fd = -1;
    d.memory.dirfd = -1;
    switch (parse_args(&d, argc, argv)) {
    case PARSE_RUN:
        break;
    case PARSE_DONE:
        return 0;
    case PARSE_USAGE:
        return EXIT_USAGE;
    case PARSE_BAD_SOCKET:
        return EXIT_RUNTIME;
    }

    /* Checked before the socket is taken: a daemon tied to a process that is already gone would serve nobody. */
    if (d.opt.exit_with && kill(d.opt.exit_with, 0) < 0 && errno == ESRCH) {
        scaf_say("--exit-with %d: no such process", (int)d.opt.exit_with);
        return EXIT_RUNTIME;
    }

    /* For tests only: read /proc/self/cgroup, mountinfo and the cgroup files under a fake root. */
    if (scaf_capacity_detect(&d.capacity, d.opt.cpus, getenv("SCAFD_TEST_CGROUP_ROOT")) < 0) {
        scaf_say("cannot read this process's CPU affinity: %s", strerror(errno));
        return EXIT_RUNTIME;
    }
    d.chunk = d.opt.chunk ? d.opt.chunk : d.capacity.smt;
    scaf_lookout_init(&d.lookout, d.opt.lookout, d.capacity.cpus);
    if (scaf_foreign_init(&d.foreign, d.opt.lookout, d.opt.socket) < 0)
        scaf_say("out of memory for the list of foreign processes: foreign load is counted, not named");
    d.fd_limit = raise_nofile();
    /* Given up for a moment when descriptors run out, to accept and close a peer (transport/conn.c). */
    d.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    /* Blocked before anything else exists: they are read through a signalfd in the loop. */
    scaf_loop_signals(&mask);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (scaf_clients_init(&d) < 0 || scaf_conn_table_init(&d) < 0 || scaf_pipeline_init(&d) < 0) {
        scaf_say("out of memory for %u clients", d.opt.max_clients);
        goto out;
    }
    if (scaf_alloclog_open(&d.log, d.opt.log_path) < 0)
        goto out;
    switch (scaf_activation_take(&listener.fd, d.opt.socket, sizeof d.opt.socket)) {
    case SCAF_ACTIVATION_NONE:
        break;
    case SCAF_ACTIVATION_OK:
        listener.inherited = true;
        break;
    case SCAF_ACTIVATION_BAD:
        goto out;
    }
    listener.path = d.opt.socket;
    listener.path_is_default = d.opt.socket_is_default;
    listener.shared = d.opt.shared;
    listener.verbose = d.opt.verbose;
    listener.idle_exit_s = d.opt.idle_exit_s;
    if (scaf_listener_open(&listener) < 0)
        goto out;
    d.listen_fd = listener.fd;
    /* After the socket: a daemon that cannot serve says that alone, not where it would have remembered. */
    if (scaf_memory_open(&d.memory, &d.opt.memory) < 0)
        goto out;
    if (d.capacity.quota)
        snprintf(quota, sizeof quota, ", cgroup v%d quota %u from %s", d.capacity.cgroup_version, d.capacity.quota,
                 d.capacity.quota_file);
    else if (d.capacity.cgroup_version)
        snprintf(quota, sizeof quota, ", cgroup v%d: no quota", d.capacity.cgroup_version);
    scaf_say("serving %s%s%s%s: policy %s, %u contexts (%u CPUs in affinity%s%s), chunk %u, lookout %s, memory %s%s",
             d.opt.socket, listener.inherited ? " (passed by socket activation)" : "", d.opt.job ? " for job " : "",
             d.opt.job ? d.opt.job : "", d.policy->name, d.capacity.cpus,
             d.capacity.cpu_list_len, quota, d.opt.cpus ? ", --cpus override" : "", d.chunk, d.opt.lookout ? "on" : "off",
             d.memory.on ? "in " : "off", d.memory.on ? d.memory.dir : "");
    rc = scaf_loop_run(&d);
out:
    /* What the last departures taught is written before the daemon goes (SIGTERM, --idle-exit, --exit-with). */
    scaf_memory_close(&d.memory);
    scaf_listener_close(&listener);
    scaf_clients_free(&d);
    scaf_conn_table_free(&d);
    scaf_pipeline_free(&d);
    scaf_alloclog_close(&d.log);
    scaf_lookout_free(&d.lookout);
    scaf_foreign_free(&d.foreign);
    {
        int fds[] = {d.spare_fd, d.sigfd, d.epfd, d.referee_tfd, d.lookout_tfd, d.score_tfd, d.idle_tfd, d.gang_tfd,
                     d.owner_fd};
        for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
            if (fds[i] >= 0)
                close(fds[i]);
    }
    return rc;
}
