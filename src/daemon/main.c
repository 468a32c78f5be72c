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
#include "transport/session.h"
#include "transport/activation.h"
#include "transport/listener.h"
#include "scaf/sockpath.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
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
           SCAFD_MAX_CLIENTS_LIMIT, SCAF_MEMFILE_MAX_RECORDS, SCAF_KEEP_PROGRAMS_DEFAULT);
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

/*
 * The options, one row each: how the value is read and where it goes. A new option is a row here and a
 * paragraph in help(); the ranges are the ones help() says.
 */
enum opt_kind {
    OPT_STR,     /* a const char * in the options, taken as given */
    OPT_FLAG,    /* a bool set to `flag` */
    OPT_U32,     /* a uint32_t in [lo, hi] */
    OPT_PID,     /* a pid_t in [lo, hi] */
    OPT_SECS,    /* a double in [lo, hi], or 0 with zero_ok; times `scale` */
    OPT_COUNT,   /* an int counted up (-v) */
    OPT_SPECIAL, /* handled in parse_args: --policy, --socket, --placement, --job, --help, --version */
};

struct opt_row {
    const char *name;
    int shortname; /* 0: none */
    enum opt_kind kind;
    size_t off;    /* in struct scafd_opts */
    double lo, hi, scale;
    bool zero_ok, flag;
};

#define AT(f) offsetof(struct scafd_opts, f)

static const struct opt_row rows[] = {
    {"socket", 0, OPT_SPECIAL, 0, 0, 0, 0, false, false},
    {"policy", 0, OPT_SPECIAL, 0, 0, 0, 0, false, false},
    {"cpus", 0, OPT_U32, AT(cpus), 1, SCAF_MAX_CPUS, 1, false, false},
    {"rate", 0, OPT_SECS, AT(rate_hz), SCAFD_RATE_MIN, SCAFD_RATE_MAX, 1, false, false},
    {"scoreboard", 't', OPT_SECS, AT(scoreboard_s), SCAFD_SCOREBOARD_MIN, 86400, 1, false, false},
    {"log", 0, OPT_STR, AT(log_path), 0, 0, 0, false, false},
    {"idle-exit", 0, OPT_SECS, AT(idle_exit_s), 0.001, 1e9, 1, true, false},
    {"max-clients", 0, OPT_U32, AT(max_clients), 1, SCAFD_MAX_CLIENTS_LIMIT, 1, false, false},
    {"chunk", 0, OPT_U32, AT(chunk), 1, SCAF_MAX_CPUS, 1, false, false},
    {"no-lookout", 0, OPT_FLAG, AT(lookout), 0, 0, 0, false, false},
    {"gang-quantum", 0, OPT_SECS, AT(gang_quantum_s), 1, 60000, 1e-3, true, false}, /* given in ms */
    {"placement", 0, OPT_SPECIAL, 0, 0, 0, 0, false, false},
    {"probe-interval", 0, OPT_SECS, AT(probe_interval_s), 0, 86400, 1, false, false},
    {"min-gain", 0, OPT_SECS, AT(min_gain), 0.001, 1, 1, false, false},
    {"idle-after", 0, OPT_SECS, AT(idle_after_s), 0.05, 3600, 1, true, false},
    {"shared", 0, OPT_FLAG, AT(shared), 0, 0, 0, false, true},
    {"user-clients", 0, OPT_U32, AT(user_clients), 1, SCAFD_MAX_CLIENTS_LIMIT, 1, false, false},
    {"job", 0, OPT_SPECIAL, 0, 0, 0, 0, false, false},
    {"exit-with", 0, OPT_PID, AT(exit_with), 1, INT32_MAX, 1, false, false},
    {"state-dir", 0, OPT_STR, AT(memory.state_dir), 0, 0, 0, false, false},
    {"no-memory", 0, OPT_FLAG, AT(memory.off), 0, 0, 0, false, true},
    {"memory-programs", 0, OPT_U32, AT(memory.programs), 1, SCAF_MEMFILE_MAX_RECORDS, 1, false, false},
    {"verbose", 'v', OPT_COUNT, AT(verbose), 0, 0, 0, false, false},
    {"help", 'h', OPT_SPECIAL, 0, 0, 0, 0, false, false},
    {"version", 'V', OPT_SPECIAL, 0, 0, 0, 0, false, false},
};

#define NROWS (sizeof rows / sizeof rows[0])

/* One value into the options as its row says. Returns 0, or -1 (said on stderr). */
static int store(struct scafd_opts *o, const struct opt_row *r, const char *arg)
{
    char *base = (char *)o, opt[40];
    uint32_t u = 0;
    double v = 0;

    /* The scoreboard is -t in the help and in users' hands: its complaints say so, whichever form was given. */
    if (r->shortname == 't')
        snprintf(opt, sizeof opt, "-t");
    else
        snprintf(opt, sizeof opt, "--%s", r->name);
    switch (r->kind) {
    case OPT_STR:
        *(const char **)(base + r->off) = arg;
        return 0;
    case OPT_FLAG:
        *(bool *)(base + r->off) = r->flag;
        return 0;
    case OPT_COUNT:
        (*(int *)(base + r->off))++;
        return 0;
    case OPT_U32:
        if (parse_u32(opt, arg, (uint32_t)r->lo, (uint32_t)r->hi, &u) < 0)
            return -1;
        *(uint32_t *)(base + r->off) = u;
        return 0;
    case OPT_PID:
        if (parse_u32(opt, arg, (uint32_t)r->lo, (uint32_t)r->hi, &u) < 0)
            return -1;
        *(pid_t *)(base + r->off) = (pid_t)u;
        return 0;
    case OPT_SECS:
        if (parse_secs(opt, arg, r->lo, r->zero_ok, r->hi, &v) < 0)
            return -1;
        *(double *)(base + r->off) = v * r->scale;
        return 0;
    case OPT_SPECIAL:
        break;
    }
    return 0;
}

/* Fills d->opt, d->policy and d->policy_index from argv. */
static enum parse_result parse_args(struct scafd *d, int argc, char **argv)
{
    struct option opts[NROWS + 1];
    const char *policy = NULL, *socket = NULL;
    struct scafd_opts *o = &d->opt;
    int ch;

    /* getopt's table from ours: a long option's value is its row's index (past any short option's letter). */
    for (size_t i = 0; i < NROWS; i++)
        opts[i] = (struct option){rows[i].name,
                                  rows[i].kind == OPT_FLAG || rows[i].kind == OPT_COUNT ||
                                          !strcmp(rows[i].name, "help") || !strcmp(rows[i].name, "version")
                                      ? no_argument
                                      : required_argument,
                                  NULL, 256 + (int)i};
    opts[NROWS] = (struct option){0, 0, 0, 0};
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
        const struct opt_row *r = NULL;

        if (ch >= 256 && ch < 256 + (int)NROWS)
            r = &rows[ch - 256];
        for (size_t i = 0; !r && i < NROWS; i++)
            if (rows[i].shortname == ch)
                r = &rows[i];
        if (ch == ':') {
            fprintf(stderr, "scafd: option %s needs a value\n%s", argv[optind - 1], USAGE);
            return PARSE_USAGE;
        }
        if (!r) {
            fprintf(stderr, "scafd: unknown option %s\n%s", argv[optind - 1], USAGE);
            return PARSE_USAGE;
        }
        if (r->kind != OPT_SPECIAL) {
            if (store(o, r, optarg) < 0)
                return PARSE_USAGE;
        } else if (!strcmp(r->name, "socket")) {
            socket = optarg;
        } else if (!strcmp(r->name, "policy")) {
            policy = optarg;
        } else if (!strcmp(r->name, "placement")) {
            o->place_kernel = strcmp(optarg, "kernel") == 0;
            if (!o->place_kernel && strcmp(optarg, "cpuset") != 0) {
                bad("--placement", optarg, "expected cpuset or kernel");
                return PARSE_USAGE;
            }
        } else if (!strcmp(r->name, "job")) {
            if (parse_job(optarg, &o->job) < 0)
                return PARSE_USAGE;
        } else if (!strcmp(r->name, "help")) {
            help();
            return PARSE_DONE;
        } else {
            printf("scafd (scaf) 0.1.0, protocol %u\n", SCAF_PROTO_VERSION);
            return PARSE_DONE;
        }
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
    d.keep.dirfd = -1;
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
    /* Given up for a moment when descriptors run out, to accept and close a peer (transport/session.c). */
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
    if (scaf_keep_open(&d.keep, &d.opt.memory) < 0)
        goto out;
    d.recall = (struct scaf_recall){.keep = &d.keep, .verbose = d.opt.verbose};
    if (d.capacity.quota)
        snprintf(quota, sizeof quota, ", cgroup v%d quota %u from %s", d.capacity.cgroup_version, d.capacity.quota,
                 d.capacity.quota_file);
    else if (d.capacity.cgroup_version)
        snprintf(quota, sizeof quota, ", cgroup v%d: no quota", d.capacity.cgroup_version);
    scaf_say("serving %s%s%s%s: policy %s, %u contexts (%u CPUs in affinity%s%s), chunk %u, lookout %s, memory %s%s",
             d.opt.socket, listener.inherited ? " (passed by socket activation)" : "", d.opt.job ? " for job " : "",
             d.opt.job ? d.opt.job : "", d.policy->name, d.capacity.cpus,
             d.capacity.cpu_list_len, quota, d.opt.cpus ? ", --cpus override" : "", d.chunk, d.opt.lookout ? "on" : "off",
             d.keep.on ? "in " : "off", d.keep.on ? d.keep.dir : "");
    rc = scaf_loop_run(&d);
out:
    /* What the last departures taught is written before the daemon goes (SIGTERM, --idle-exit, --exit-with). */
    scaf_keep_close(&d.keep);
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
