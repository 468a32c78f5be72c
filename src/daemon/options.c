/* options.c — scafd's command line: one table of options, each row how its value is read, where it goes, its default and range and its words in --help; the parser and the manual both read it. */
#include "options.h"
#include "scafd.h"
#include "memory/file.h"
#include "memory/keep.h"
#include "scaf/policy.h"
#include "scaf/proto.h"
#include "scaf/sockpath.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Option ranges: every period stays a positive whole number of nanoseconds. */
#define SCAFD_RATE_MIN 0.01
#define SCAFD_RATE_MAX 1000
#define SCAFD_SCOREBOARD_MIN 0.01
/* The policy without --policy; the registry's first when it has none of that name. */
#define SCAFD_POLICY_DEFAULT "speedup"
/* Where fixed teams that fit run without --placement: "kernel" or "cpuset". A CPU set of exactly the team leaves
 * no room for the process's other threads (an interpreter's main thread, BLAS pools): on 16 CPUs two warm XGBoost
 * trainings took 1.24X as long pinned as unpinned. */
#define SCAFD_PLACEMENT_DEFAULT "kernel"

static const char USAGE[] = "usage: scafd [OPTIONS]   (scafd --help for details)\n";

enum opt_kind {
    OPT_STR,     /* a const char * in the options, taken as given */
    OPT_FLAG,    /* a bool: `flag` with the option, !flag without it */
    OPT_U32,     /* a uint32_t in [lo, hi] */
    OPT_PID,     /* a pid_t in [lo, hi] */
    OPT_SECS,    /* a double in [lo, hi], or 0 with zero_ok; times `scale` */
    OPT_COUNT,   /* an int counted up (-v) */
    OPT_SPECIAL, /* read in scaf_options_parse: --policy, --socket, --placement, --job, --help, --version */
};

/*
 * One option. A new option is a row here: the parser reads its value by `kind`
 * into `off`, and --help writes its label from name, shortname and arg, its
 * paragraph from `help`, then its range (lo, hi, zero) and default (def,
 * deftext) as the parser applies them.
 */
struct opt_row {
    const char *name;
    int shortname;       /* 0: none */
    const char *arg;     /* the value's word in --help; NULL: it takes none */
    enum opt_kind kind;
    size_t off;          /* in struct scafd_opts */
    double lo, hi, scale;
    bool zero_ok;        /* 0 is taken too, below lo: the option's "off" */
    bool flag;
    double def;          /* numeric: the value without the option, in the option's unit (before scale) */
    const char *zero;    /* what 0 means, where 0 is taken */
    const char *deftext; /* the default in words; after a nonzero `def`, a note that follows the number */
    const char *help;    /* what it does; the range and the default are added */
    void (*more)(FILE *f); /* lines that follow the paragraph (--policy: the policies) */
};

static void policies(FILE *f);

#define AT(f) offsetof(struct scafd_opts, f)

static const struct opt_row rows[] = {
    {.name = "socket", .arg = "PATH", .kind = OPT_SPECIAL,
     .deftext = "$SCAF_SOCKET, else $XDG_RUNTIME_DIR/scaf/scafd.sock, else /tmp/scaf-$UID/scafd.sock",
     .help = "listen on PATH. A missing parent directory is created (mode 0700), its own parent never. An existing "
             "one must be a real directory of yours or root's (for the default path: yours, writable by nobody "
             "else); files in it are never followed through links."},
    {.name = "policy", .arg = "NAME", .kind = OPT_SPECIAL, .deftext = SCAFD_POLICY_DEFAULT,
     .help = "allocation policy. Known policies:", .more = policies},
    {.name = "cpus", .arg = "N", .kind = OPT_U32, .off = AT(cpus), .lo = 1, .hi = SCAF_MAX_CPUS,
     .deftext = "the affinity mask limited by the cgroup's CPU quota (v2 cpu.max, or v1 cpu.cfs_quota_us / "
                "cpu.cfs_period_us; the smallest quota of the cgroup and its ancestors)",
     .help = "allocate as if N hardware contexts were available."},
    {.name = "rate", .arg = "HZ", .kind = OPT_SECS, .off = AT(rate_hz), .lo = SCAFD_RATE_MIN, .hi = SCAFD_RATE_MAX,
     .scale = 1, .def = 4, .help = "referee rate: reallocations per second."},
    {.name = "scoreboard", .shortname = 't', .arg = "SECS", .kind = OPT_SECS, .off = AT(scoreboard_s),
     .lo = SCAFD_SCOREBOARD_MIN, .hi = 86400, .scale = 1, .deftext = "no table",
     .help = "print a PID NAME THREADS NLWP table, plus an `all` row, on stdout every SECS seconds."},
    {.name = "log", .arg = "FILE", .kind = OPT_STR, .off = AT(log_path), .deftext = "no log",
     .help = "append one JSON line per allocation change to FILE (the status JSON: time, cpus, available, policy, "
             "and per client pid, name, threads, malleable, cpuset, ...)."},
    {.name = "idle-exit", .arg = "SECS", .kind = OPT_SECS, .off = AT(idle_exit_s), .lo = 0.001, .hi = 1e9,
     .scale = 1, .zero_ok = true, .zero = "never",
     .help = "exit (status 0) after SECS seconds without clients. `scaf run` starts its per-user daemon with it."},
    {.name = "max-clients", .arg = "N", .kind = OPT_U32, .off = AT(max_clients), .lo = 1,
     .hi = SCAFD_MAX_CLIENTS_LIMIT, .def = 256,
     .help = "size of the client table; client number N+1 is refused with a clear reason."},
    {.name = "chunk", .arg = "C", .kind = OPT_U32, .off = AT(chunk), .lo = 1, .hi = SCAF_MAX_CPUS,
     .deftext = "the SMT width of the first CPU, from /sys topology",
     .help = "allocation granularity in contexts. Above 1 the model policies also read a client's curve past "
             "the cores (contexts / C), where it was not measured, at a quarter of its slope: SMT siblings."},
    {.name = "no-lookout", .kind = OPT_FLAG, .off = AT(lookout), .flag = false,
     .help = "ignore load from processes that are not clients."},
    {.name = "gang-quantum", .arg = "MS", .kind = OPT_SECS, .off = AT(gang_quantum_s), .lo = 1, .hi = 60000,
     .scale = 1e-3, .zero_ok = true, .def = 100, .zero = "they run unconfined, side by side, as without scaf",
     .help = "fixed teams (programs whose team size scaf must not change) that together need more contexts than "
             "there are take turns: whole teams, MS milliseconds each, parked by their own layer at region "
             "boundaries."},
    {.name = "placement", .arg = "WHERE", .kind = OPT_SPECIAL, .deftext = SCAFD_PLACEMENT_DEFAULT,
     .help = "where fixed teams run when they all fit: kernel, where the kernel puts them, as a static split "
             "(OMP_NUM_THREADS=N/k) leaves them; cpuset, each on a CPU set of exactly its team, disjoint from the "
             "others. Their contexts are theirs either way."},
    {.name = "probe-interval", .arg = "SECS", .kind = OPT_SECS, .off = AT(probe_interval_s), .lo = 0, .hi = 86400,
     .scale = 1, .def = 10, .zero = "never", .deftext = ", the layer's SCAF_EXPERIMENT_INTERVAL_S",
     .help = "a client the speedup policy held at one chunk this long is given an average share again until it "
             "reports from it, so a program whose phase changed can regain threads."},
    {.name = "min-gain", .arg = "G", .kind = OPT_SECS, .off = AT(min_gain), .lo = 0.001, .hi = 1, .scale = 1,
     .def = SCAF_MIN_GAIN_DEFAULT, .deftext = " (half a context's worth)",
     .help = "the consumption policy gives a program one more context only while that adds at least G to its "
             "modelled speedup; the rest stay idle."},
    {.name = "idle-after", .arg = "SECS", .kind = OPT_SECS, .off = AT(idle_after_s), .lo = 0.05, .hi = 3600,
     .scale = 1, .zero_ok = true, .def = SCAF_IDLE_WINDOW_NS / 1e9, .zero = "never",
     .help = "a client that has run no parallel region and used next to no CPU (10% of one context) for SECS "
             "seconds is idle: it holds no share until its next region or a whole thread's worth of CPU (over "
             "half a context), and its share goes to the busy clients."},
    {.name = "shared", .kind = OPT_FLAG, .off = AT(shared), .flag = true,
     .help = "socket mode 0666 (and directory 0755): a system-wide daemon any user's programs may join. Users are "
             "kept apart: each may hold --user-clients clients and 16 connections that have not said HELLO (which "
             "must finish a message within 3 s); when several users' programs wait for CPUs, the contexts are "
             "split between users first and only then between each user's programs; `scaf status` shows a user "
             "the other users' clients only as counts (root and scafd's own user see all)."},
    {.name = "user-clients", .arg = "N", .kind = OPT_U32, .off = AT(user_clients), .lo = 1,
     .hi = SCAFD_MAX_CLIENTS_LIMIT, .deftext = "a quarter of --max-clients, at least 1",
     .help = "with --shared: the most clients one user may hold."},
    {.name = "job", .arg = "ID", .kind = OPT_SPECIAL, .deftext = "none",
     .help = "the batch system's job this daemon serves (Slurm's $SLURM_JOB_ID): named in its first log line, its "
             "status (`job`), each --log line and scaf status --prometheus (label job_id). 1 to 64 letters, "
             "digits, '.', '_', '+', '-'."},
    {.name = "exit-with", .arg = "PID", .kind = OPT_PID, .off = AT(exit_with), .lo = 1, .hi = INT32_MAX,
     .help = "exit (status 0) once process PID has ended and no client is left: a daemon that lives as long as a "
             "job's script or shell. Clients still running when PID ends are waited for, so their departures are "
             "seen. PID must exist at start."},
    {.name = "state-dir", .arg = "DIR", .kind = OPT_STR, .off = AT(memory.state_dir),
     .deftext = "$STATE_DIRECTORY (systemd's StateDirectory=, /var/lib/scaf for the system-wide unit), else "
                "$XDG_STATE_HOME/scaf, else ~/.local/state/scaf",
     .help = "keep the memory here: what scafd learned of each program (whether it must keep its team, its region "
             "sites known to be safe to steer, its speedup curve, the programs it runs beside), so that the next "
             "run of the same code starts from it. One file per user, DIR/memory-UID.bin (mode 0600), each user's "
             "own: every request is answered for the uid the kernel gives for the connection. A missing DIR is "
             "created (mode 0700; for the defaults, the XDG directories above it too); an existing one must be a "
             "real directory of yours, writable by nobody else. A DIR given here that cannot be used is an error; "
             "a default one turns the memory off, with one line saying why."},
    {.name = "no-memory", .kind = OPT_FLAG, .off = AT(memory.off), .flag = true,
     .help = "keep no memory: every run is learned afresh, and scaf run, scaf forget and scaf check are told that "
             "the daemon keeps none."},
    {.name = "memory-programs", .arg = "N", .kind = OPT_U32, .off = AT(memory.programs), .lo = 1,
     .hi = SCAF_MEMFILE_MAX_RECORDS, .def = SCAF_KEEP_PROGRAMS_DEFAULT,
     .help = "the most programs remembered per user; past it the least recently seen is forgotten."},
    {.name = "verbose", .shortname = 'v', .kind = OPT_COUNT, .off = AT(verbose),
     .help = "log arrivals, departures and allocations on stderr."},
    {.name = "help", .shortname = 'h', .kind = OPT_SPECIAL, .help = "show this help and exit."},
    {.name = "version", .shortname = 'V', .kind = OPT_SPECIAL, .help = "show version and protocol and exit."},
};

#define NROWS (sizeof rows / sizeof rows[0])

/* The manual's sections around the two that the table writes, as they are printed. */
static const char NAME[] = "NAME\n"
                           "    scafd - the scaf daemon: space-shares the machine among OpenMP programs\n"
                           "\n";

static const char DESCRIPTION[] =
    "DESCRIPTION\n"
    "    scafd decides how many threads each client program may use. Programs become\n"
    "    clients when they run with libscaf_gomp.so preloaded (what `scaf run` does):\n"
    "    the layer connects to this socket, receives a shared page, and applies the\n"
    "    thread count written there at each outermost parallel region. scafd\n"
    "    reallocates at --rate Hz and at once whenever a client arrives or leaves.\n"
    "    Contexts kept busy by processes that are not clients are measured once a\n"
    "    second from /proc and are not handed out. It needs no privileges, runs in\n"
    "    the foreground and logs on stderr.\n"
    "\n";

static const char AFTER_OPTIONS[] =
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
    "    PATH.lock          next to the socket: held while scafd runs, so only one\n"
    "                       daemon serves a path; a socket left by a dead daemon is\n"
    "                       replaced. It names the holder's pid and --idle-exit, so\n"
    "                       that a second daemon can say who is there and whether it\n"
    "                       leaves by itself\n"
    "    DIR/memory-UID.bin\n"
    "                       the memory of user UID's programs (--state-dir): read at\n"
    "                       that user's first program or request, written at most\n"
    "                       once a second after a program of theirs leaves and at\n"
    "                       exit, always whole (a temporary file, fsynced, renamed\n"
    "                       over it). A file that is damaged or not scafd's is never\n"
    "                       believed: it is renamed DIR/memory-UID.bin.bad-TIMESTAMP,\n"
    "                       with one line on stderr, and the user starts with an\n"
    "                       empty memory\n"
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
    "    scafd --policy consumption --min-gain 0.3\n"
    "                                           leave contexts idle that add < 0.3\n"
    "                                           each\n"
    "    scafd --cpus 16 --log alloc.jsonl      allocate as if there were 16 contexts\n"
    "    sudo scafd --socket /run/scaf/scafd.sock --shared\n"
    "                                           system-wide daemon; clients then set\n"
    "                                           SCAF_SOCKET=/run/scaf/scafd.sock\n"
    "    systemctl enable --now scafd.socket    the same through systemd, started at\n"
    "                                           the first connection\n"
    "    kill -USR1 $(pidof scafd)              switch policy at run time\n"
    "    scafd --socket \"$TMPDIR/scafd.sock\" --job \"$SLURM_JOB_ID\" --exit-with $$\n"
    "                                           one daemon for a batch job, gone with\n"
    "                                           its script (what scaf's Slurm\n"
    "                                           TaskProlog runs)\n"
    "\n"
    "SEE ALSO\n"
    "    scaf(1): scaf run, scaf status; docs/daemon.md and docs/memory.md in the\n"
    "    source tree\n";

/* The manual's layout: a label column, then the paragraph, within WIDTH columns. */
#define WIDTH 80
#define INDENT 4
#define TEXT_COL 23

/* A number as a person writes it: 4, 0.25, 1e9. */
static void number(char *buf, size_t len, double v)
{
    char *e;

    snprintf(buf, len, "%g", v);
    if ((e = strstr(buf, "e+")))
        memmove(e + 1, e + 2 + (e[2] == '0'), strlen(e + 2 + (e[2] == '0')) + 1);
}

/* Words of `text` from column `col` on, wrapped within WIDTH at TEXT_COL. Returns the column it ended at. */
static int words(FILE *f, const char *text, int col)
{
    while (*text) {
        size_t n = strcspn(text, " ");
        const char *quote = text[0] == '`' ? strchr(text + 1, '`') : NULL;

        /* A `quoted command` stays on one line. */
        if (quote && quote > text + n)
            n = (size_t)(quote - text) + strcspn(quote, " ");

        if (n > 0) {
            if (col > TEXT_COL && col + 1 + (int)n > WIDTH) {
                fprintf(f, "\n%*s", TEXT_COL, "");
                col = TEXT_COL;
            } else if (col > TEXT_COL) {
                fputc(' ', f);
                col++;
            }
            fwrite(text, 1, n, f);
            col += (int)n;
        }
        text += n;
        text += strspn(text, " ");
    }
    return col;
}

/* "-t, --scoreboard SECS", "--rate HZ", "--shared". */
static void label(char *buf, size_t len, const struct opt_row *r)
{
    int n = r->shortname ? snprintf(buf, len, "-%c, ", r->shortname) : 0;

    snprintf(buf + n, len - (size_t)n, "--%s%s%s", r->name, r->arg ? " " : "", r->arg ? r->arg : "");
}

/* The range and default sentences of a row, as the parser applies them. */
static void range_default(char *buf, size_t len, const struct opt_row *r)
{
    char lo[32], hi[32], def[32];
    size_t n = 0;
    bool numeric = r->kind == OPT_U32 || r->kind == OPT_SECS;

    buf[0] = '\0';
    if (numeric) {
        number(lo, sizeof lo, r->lo);
        number(hi, sizeof hi, r->hi);
        n += (size_t)snprintf(buf + n, len - n, "%s to %s", lo, hi);
        if (r->zero)
            n += (size_t)snprintf(buf + n, len - n, r->zero_ok ? ", or 0: %s." : "; 0: %s.", r->zero);
        else
            n += (size_t)snprintf(buf + n, len - n, ".");
    }
    if (numeric && (r->def != 0 || r->zero_ok)) {
        number(def, sizeof def, r->def);
        snprintf(buf + n, len - n, "%sDefault: %s%s.", n ? " " : "", def, r->def != 0 && r->deftext ? r->deftext : "");
    } else if (r->deftext) {
        snprintf(buf + n, len - n, "%sDefault: %s.", n ? " " : "", r->deftext);
    }
}

static void option(FILE *f, const struct opt_row *r)
{
    char lab[64], tail[512];
    int col = fprintf(f, "%*s%s", INDENT, "", (label(lab, sizeof lab, r), lab));

    if (col + 1 > TEXT_COL - 1) {
        fprintf(f, "\n");
        col = 0;
    }
    fprintf(f, "%*s", TEXT_COL - col, "");
    col = words(f, r->help, TEXT_COL);
    if (r->more) {
        fprintf(f, "\n");
        r->more(f);
        fprintf(f, "%*s", TEXT_COL, "");
        col = TEXT_COL;
    }
    range_default(tail, sizeof tail, r);
    words(f, tail, col);
    fprintf(f, "\n");
}

static void policies(FILE *f)
{
    for (size_t i = 0; i < scaf_policy_count(); i++)
        fprintf(f, "%*s%-14s %s\n", TEXT_COL + 2, "", scaf_policy_at(i)->name, scaf_policy_at(i)->description);
}

/* "    scafd [--socket PATH] ...", wrapped under its first option. */
static void synopsis(FILE *f)
{
    int col = fprintf(f, "SYNOPSIS\n%*sscafd", INDENT, "") - (int)strlen("SYNOPSIS\n");

    for (size_t i = 0; i < NROWS; i++) {
        const struct opt_row *r = &rows[i];
        char item[64];
        int n;

        if (r->shortname)
            n = snprintf(item, sizeof item, "[-%c%s%s]", r->shortname, r->arg ? " " : "", r->arg ? r->arg : "");
        else
            n = snprintf(item, sizeof item, "[--%s%s%s]", r->name, r->arg ? " " : "", r->arg ? r->arg : "");
        if (col + 1 + n > WIDTH) {
            fprintf(f, "\n%*s", INDENT + 6, "");
            col = INDENT + 6;
        } else {
            fputc(' ', f);
            col++;
        }
        fputs(item, f);
        col += n;
    }
    fprintf(f, "\n\n");
}

void scaf_options_help(FILE *f)
{
    fputs(NAME, f);
    synopsis(f);
    fputs(DESCRIPTION, f);
    fputs("OPTIONS\n", f);
    for (size_t i = 0; i < NROWS; i++)
        option(f, &rows[i]);
    fputs("\n", f);
    fputs(AFTER_OPTIONS, f);
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

/* Each row's default into the options, as --help says it. */
static void defaults(struct scafd_opts *o)
{
    char *base = (char *)o;

    for (size_t i = 0; i < NROWS; i++) {
        const struct opt_row *r = &rows[i];

        switch (r->kind) {
        case OPT_FLAG:
            *(bool *)(base + r->off) = !r->flag;
            break;
        case OPT_U32:
            *(uint32_t *)(base + r->off) = (uint32_t)r->def;
            break;
        case OPT_PID:
            *(pid_t *)(base + r->off) = (pid_t)r->def;
            break;
        case OPT_SECS:
            *(double *)(base + r->off) = r->def * r->scale;
            break;
        case OPT_STR:
        case OPT_COUNT:
        case OPT_SPECIAL:
            break;
        }
    }
    o->place_kernel = strcmp(SCAFD_PLACEMENT_DEFAULT, "kernel") == 0;
}

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

/* The row of `name`; every name asked for is in the table. */
static size_t row(const char *name)
{
    size_t i = 0;

    while (i < NROWS - 1 && strcmp(rows[i].name, name) != 0)
        i++;
    return i;
}

/* What only some options' values need: a policy by name, a socket path that fits, a placement, a job id. */
static enum scaf_options_result special(struct scafd_opts *o, const struct opt_row *r, const char *arg,
                                        const char **policy, const char **socket)
{
    if (!strcmp(r->name, "socket")) {
        *socket = arg;
    } else if (!strcmp(r->name, "policy")) {
        *policy = arg;
    } else if (!strcmp(r->name, "placement")) {
        o->place_kernel = strcmp(arg, "kernel") == 0;
        if (!o->place_kernel && strcmp(arg, "cpuset") != 0) {
            bad("--placement", arg, "expected cpuset or kernel");
            return SCAF_OPTIONS_USAGE;
        }
    } else if (!strcmp(r->name, "job")) {
        if (parse_job(arg, &o->job) < 0)
            return SCAF_OPTIONS_USAGE;
    } else if (!strcmp(r->name, "help")) {
        scaf_options_help(stdout);
        return SCAF_OPTIONS_DONE;
    } else {
        printf("scafd (scaf) 0.1.0, protocol %u\n", SCAF_PROTO_VERSION);
        return SCAF_OPTIONS_DONE;
    }
    return SCAF_OPTIONS_RUN;
}

/* The options that do not go together, once all are read. */
static enum scaf_options_result combined(struct scafd_opts *o, const bool *given)
{
    if (given[row("user-clients")] && !o->shared) {
        fprintf(stderr, "scafd: --user-clients needs --shared (a per-user daemon has one user)\n%s", USAGE);
        return SCAF_OPTIONS_USAGE;
    }
    if (o->user_clients > o->max_clients) {
        fprintf(stderr, "scafd: --user-clients %u is more than --max-clients %u\n%s", o->user_clients,
                o->max_clients, USAGE);
        return SCAF_OPTIONS_USAGE;
    }
    if (!o->user_clients)
        o->user_clients = o->max_clients / 4 ? o->max_clients / 4 : 1;
    if (o->memory.state_dir && !*o->memory.state_dir) {
        fprintf(stderr, "scafd: --state-dir needs a path, not an empty string\n%s", USAGE);
        return SCAF_OPTIONS_USAGE;
    }
    if (o->memory.off && (given[row("state-dir")] || given[row("memory-programs")])) {
        fprintf(stderr, "scafd: --no-memory keeps no memory: --state-dir and --memory-programs do not go with it\n%s",
                USAGE);
        return SCAF_OPTIONS_USAGE;
    }
    return SCAF_OPTIONS_RUN;
}

/* The socket: --socket's path, which must fit a Unix socket address, else the per-user search order. */
static enum scaf_options_result socket_path(struct scafd_opts *o, const char *socket)
{
    if (socket) {
        if (!*socket) {
            /* An empty value is a mistake (an unset shell variable), not a request for the search order. */
            fprintf(stderr, "scafd: --socket needs a path, not an empty string\n%s", USAGE);
            return SCAF_OPTIONS_USAGE;
        }
        if (strlen(socket) >= sizeof o->socket) {
            fprintf(stderr, "scafd: cannot use socket path '%s': longer than a Unix socket address allows\n",
                    socket);
            return SCAF_OPTIONS_BAD_SOCKET;
        }
        snprintf(o->socket, sizeof o->socket, "%s", socket);
    } else {
        const char *env = getenv("SCAF_SOCKET");
        if (scaf_sockpath_default(o->socket, sizeof o->socket) < 0) {
            fprintf(stderr, "scafd: the default socket path is too long for a Unix socket; use --socket\n");
            return SCAF_OPTIONS_BAD_SOCKET;
        }
        o->socket_is_default = !(env && *env);
    }
    return SCAF_OPTIONS_RUN;
}

enum scaf_options_result scaf_options_parse(struct scafd *d, int argc, char **argv)
{
    struct option opts[NROWS + 1];
    bool given[NROWS] = {false};
    const char *policy = NULL, *socket = NULL;
    struct scafd_opts *o = &d->opt;
    enum scaf_options_result rc;
    char shorts[2 * NROWS + 2] = ":";
    int ch;

    /* getopt's tables from ours: a long option's value is its row's index (past any short option's letter). */
    for (size_t i = 0; i < NROWS; i++) {
        opts[i] = (struct option){rows[i].name, rows[i].arg ? required_argument : no_argument, NULL, 256 + (int)i};
        if (rows[i].shortname) {
            size_t n = strlen(shorts);

            shorts[n] = (char)rows[i].shortname;
            if (rows[i].arg)
                shorts[++n] = ':';
            shorts[n + 1] = '\0';
        }
    }
    opts[NROWS] = (struct option){0, 0, 0, 0};
    defaults(o);
    opterr = 0;
    while ((ch = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
        const struct opt_row *r = NULL;

        if (ch >= 256 && ch < 256 + (int)NROWS)
            r = &rows[ch - 256];
        for (size_t i = 0; !r && i < NROWS; i++)
            if (rows[i].shortname == ch)
                r = &rows[i];
        if (ch == ':') {
            fprintf(stderr, "scafd: option %s needs a value\n%s", argv[optind - 1], USAGE);
            return SCAF_OPTIONS_USAGE;
        }
        if (!r) {
            fprintf(stderr, "scafd: unknown option %s\n%s", argv[optind - 1], USAGE);
            return SCAF_OPTIONS_USAGE;
        }
        given[r - rows] = true;
        if (r->kind != OPT_SPECIAL) {
            if (store(o, r, optarg) < 0)
                return SCAF_OPTIONS_USAGE;
        } else if ((rc = special(o, r, optarg, &policy, &socket)) != SCAF_OPTIONS_RUN) {
            return rc;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "scafd: unexpected argument '%s'\n%s", argv[optind], USAGE);
        return SCAF_OPTIONS_USAGE;
    }
    if ((rc = combined(o, given)) != SCAF_OPTIONS_RUN)
        return rc;

    d->policy = scaf_policy_lookup(policy ? policy : SCAFD_POLICY_DEFAULT);
    if (!d->policy && policy) {
        unknown_policy(policy);
        return SCAF_OPTIONS_USAGE;
    }
    if (!d->policy)
        d->policy = scaf_policy_at(0);
    for (size_t i = 0; i < scaf_policy_count(); i++)
        if (scaf_policy_at(i) == d->policy)
            d->policy_index = i;
    return socket_path(o, socket);
}
