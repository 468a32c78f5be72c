/* foreign.c — which processes that are not clients take CPU, by name, and why scaf does not steer them. */
#include "foreign.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scaf/clock.h"
#include "scaf/procfs.h"
#include "scaf/tbblib.h"

/* Processes followed at once (the table holds twice as many slots): a machine with more is followed in part. */
#define FOREIGN_MAX_PROCS 4096
/* Name/maps/environ reads per sample, and how often a listed process's are read again. */
#define FOREIGN_DETAILS_PER_SAMPLE 4
#define FOREIGN_DETAIL_REFRESH_S 10.0

struct rt_pattern {
    const char *prefix; /* matched at the start of a mapped file's basename */
    unsigned bit;
};

static const struct rt_pattern RT_PATTERNS[] = {
    {"libgomp", SCAF_RT_GOMP},          {"libomp.so", SCAF_RT_LLVM_OMP},   {"libomp-", SCAF_RT_LLVM_OMP},
    {"libiomp5", SCAF_RT_INTEL_OMP},    {"libtbb.so", SCAF_RT_TBB},        {"libtbb-", SCAF_RT_TBB},
    {"libtbb12", SCAF_RT_TBB},          {"libopenblas", SCAF_RT_OPENBLAS}, {"libscipy_openblas", SCAF_RT_OPENBLAS},
    {"libmkl_", SCAF_RT_MKL},           {"libblis", SCAF_RT_BLIS},         {"libscaf_gomp", SCAF_RT_LAYER_GOMP},
    {"libscaf_omp", SCAF_RT_LAYER_OMP}, {"libscaf_tcm", SCAF_RT_LAYER_TCM},
};

/* Runtime names in the order scaf_foreign_runtime_name reports them: the ones scaf cannot steer first. */
static const struct {
    unsigned bit;
    const char *name;
} RT_NAMES[] = {
    {SCAF_RT_TBB, "libtbb"},   {SCAF_RT_BLIS, "blis"},           {SCAF_RT_LLVM_OMP, "libomp"},
    {SCAF_RT_INTEL_OMP, "libiomp5"}, {SCAF_RT_GOMP, "libgomp"},  {SCAF_RT_MKL, "mkl"},
    {SCAF_RT_OPENBLAS, "openblas"},
};

#define RT_NEVER (SCAF_RT_TBB | SCAF_RT_BLIS)
#define RT_LAYERS (SCAF_RT_LAYER_GOMP | SCAF_RT_LAYER_OMP | SCAF_RT_LAYER_TCM)

unsigned scaf_foreign_maps_mask(const char *maps)
{
    unsigned mask = 0;
    const char *line = maps;

    while (line && *line) {
        const char *end = strchr(line, '\n');
        const char *slash = NULL;

        if (!end)
            end = line + strlen(line);
        /* The path is the last field; its basename starts after the last '/' of the line. */
        for (const char *p = line; p < end; p++)
            if (*p == '/')
                slash = p;
        if (slash) {
            size_t n = (size_t)(end - slash - 1);
            for (size_t i = 0; i < sizeof RT_PATTERNS / sizeof *RT_PATTERNS; i++) {
                size_t k = strlen(RT_PATTERNS[i].prefix);
                if (n >= k && strncmp(slash + 1, RT_PATTERNS[i].prefix, k) == 0)
                    mask |= RT_PATTERNS[i].bit;
            }
        }
        line = *end ? end + 1 : NULL;
    }
    return mask;
}

int scaf_foreign_tbb_path(const char *maps, char *out, size_t len)
{
    static const char NAME[] = "/libtbb.so";
    const char *p = maps ? strstr(maps, NAME) : NULL;
    const char *start, *end;

    if (!p)
        return -1;
    /* The path is the line's last field: it starts at its first '/' and runs to the line's end. */
    start = p;
    while (start > maps && start[-1] != '\n')
        start--;
    start = strchr(start, '/');
    end = strchr(p, '\n');
    if (!end)
        end = p + strlen(p);
    if (!start || start > p || (size_t)(end - start) >= len)
        return -1;
    memcpy(out, start, (size_t)(end - start));
    out[end - start] = '\0';
    return 0;
}

const char *scaf_foreign_runtime_name(unsigned mask)
{
    for (size_t i = 0; i < sizeof RT_NAMES / sizeof *RT_NAMES; i++)
        if (mask & RT_NAMES[i].bit)
            return RT_NAMES[i].name;
    return NULL;
}

/* The runtimes a mapped layer steers: each layer its OpenMP runtime, both the BLAS pools; the TCM provider oneTBB. */
static unsigned covered_by(unsigned mask)
{
    unsigned c = 0;

    if (mask & SCAF_RT_LAYER_TCM)
        c |= SCAF_RT_TBB;

    if (mask & SCAF_RT_LAYER_GOMP)
        c |= SCAF_RT_GOMP | SCAF_RT_OPENBLAS | SCAF_RT_MKL;
    if (mask & SCAF_RT_LAYER_OMP)
        c |= SCAF_RT_LLVM_OMP | SCAF_RT_INTEL_OMP | SCAF_RT_OPENBLAS | SCAF_RT_MKL;
    return c;
}

/* Why a oneTBB cannot be steered: too old to ask a TCM (its version), or of a version not known. */
static void tbb_never(const struct scaf_foreign_facts *f, const char *prefix, char *out, size_t len)
{
    if (f->tbb_tcm == 0)
        snprintf(out, len, "%soneTBB %s asks no TCM (older than " SCAF_TBBLIB_TCM_FIRST "): scaf cannot steer it", prefix,
                 f->tbb_version && f->tbb_version[0] ? f->tbb_version : "(version unknown)");
    else
        snprintf(out, len, "%sparallel runtime libtbb, unreadable by the daemon, that scaf cannot steer", prefix);
}

void scaf_foreign_reason(const struct scaf_foreign_facts *f, char *out, size_t len)
{
    unsigned rt = f->mask & ~RT_LAYERS;
    unsigned never = rt & RT_NEVER;

    if (len == 0)
        return;
    /* A oneTBB that asks a TCM is steered by scaf run (the provider), like an OpenMP runtime. */
    if ((rt & SCAF_RT_TBB) && f->tbb_tcm == 1)
        never &= ~SCAF_RT_TBB;
    if (!f->maps_known) {
        snprintf(out, len, "not a client (its /proc details are not readable by the daemon)");
        return;
    }
    if (f->mask & RT_LAYERS) {
        unsigned uncovered = rt & ~covered_by(f->mask);

        if (f->env_known && f->disabled)
            snprintf(out, len, "layer inert: SCAF_DISABLE=1");
        else if (f->env_known && f->socket && f->our_socket && strcmp(f->socket, f->our_socket) != 0)
            snprintf(out, len, "layer inert: SCAF_SOCKET names another daemon (%s)", f->socket);
        else if ((uncovered & SCAF_RT_TBB) && !(never & SCAF_RT_TBB))
            snprintf(out, len, "layer inert: oneTBB without scaf's TCM provider (start it with scaf run)");
        else if (uncovered & never & SCAF_RT_TBB)
            tbb_never(f, "layer inert: ", out, len);
        else if (uncovered)
            snprintf(out, len, "layer inert: parallel runtime %s that this layer cannot steer",
                     scaf_foreign_runtime_name(uncovered));
        else
            snprintf(out, len, "layer loaded, not a client: no daemon when it tried, refused, or no region yet");
        return;
    }
    if (never & SCAF_RT_TBB)
        tbb_never(f, "", out, len);
    else if (never)
        snprintf(out, len, "parallel runtime %s that scaf cannot steer", scaf_foreign_runtime_name(never));
    else if (rt)
        snprintf(out, len, "not started under scaf run (uses %s)", scaf_foreign_runtime_name(rt));
    else
        snprintf(out, len, "not started under scaf run (no parallel runtime)");
}

static const char *base(const char *s)
{
    const char *slash = strrchr(s, '/');

    return slash ? slash + 1 : s;
}

static bool interpreter(const char *name)
{
    static const char *const NAMES[] = {"python", "perl", "ruby", "sh", "bash", "dash", "node", "Rscript", "julia"};

    for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++)
        if (strncmp(name, NAMES[i], strlen(NAMES[i])) == 0)
            return true;
    return false;
}

void scaf_foreign_cmd(const char *cmdline, size_t n, char *out, size_t len)
{
    const char *arg0, *arg1 = NULL;
    size_t l0;

    if (len == 0)
        return;
    out[0] = 0;
    if (n == 0 || !cmdline || !cmdline[0])
        return;
    /* argv[0] ends at the first NUL (or the end: the bytes need not be terminated). */
    l0 = strnlen(cmdline, n);
    arg0 = cmdline;
    if (l0 + 1 < n && cmdline[l0 + 1] != '-')
        arg1 = cmdline + l0 + 1;
    {
        char a0[256], a1[256] = "";
        snprintf(a0, sizeof a0, "%.*s", (int)l0, arg0);
        if (arg1 && interpreter(base(a0))) {
            size_t l1 = strnlen(arg1, n - l0 - 1);
            snprintf(a1, sizeof a1, "%.*s", (int)l1, arg1);
        }
        snprintf(out, len, "%s%s%s", base(a0), a1[0] ? " " : "", a1[0] ? base(a1) : "");
    }
}

int scaf_foreign_stat_parse(const char *text, struct scaf_foreign_stat *out)
{
    const char *open = text ? strchr(text, '(') : NULL;
    const char *close = text ? strrchr(text, ')') : NULL;
    unsigned long long ut, st, start;
    long ppid;
    size_t n;

    /* After "pid (comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
     * cutime cstime priority nice num_threads itrealvalue starttime. */
    if (!open || !close || close < open ||
        sscanf(close + 1, " %*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu",
               &ppid, &ut, &st, &start) != 4) {
        errno = EINVAL;
        return -1;
    }
    n = (size_t)(close - open - 1);
    if (n >= sizeof out->comm)
        n = sizeof out->comm - 1;
    memcpy(out->comm, open + 1, n);
    out->comm[n] = 0;
    out->ppid = (pid_t)ppid;
    out->ticks = ut + st;
    out->starttime = start;
    return 0;
}

int scaf_foreign_init(struct scaf_foreign *f, bool on, const char *our_socket)
{
    memset(f, 0, sizeof *f);
    f->our_socket = our_socket;
    if (!on)
        return 0;
    f->cap = 2 * FOREIGN_MAX_PROCS;
    f->table = calloc(f->cap, sizeof *f->table);
    f->next = calloc(f->cap, sizeof *f->next);
    if (!f->table || !f->next) {
        scaf_foreign_free(f);
        errno = ENOMEM;
        return -1;
    }
    f->on = true;
    return 0;
}

void scaf_foreign_free(struct scaf_foreign *f)
{
    free(f->table);
    free(f->next);
    free(f->buf);
    f->table = f->next = NULL;
    f->buf = NULL;
    f->cap = f->buf_cap = 0;
    f->on = false;
}

/* The slot of `pid` in `t` (pid 0 marks an empty slot): its own, or the empty one where it would go. */
static struct scaf_foreign_proc *slot(struct scaf_foreign_proc *t, size_t cap, pid_t pid)
{
    size_t i = ((size_t)pid * 2654435761u) & (cap - 1);

    while (t[i].pid != 0 && t[i].pid != pid)
        i = (i + 1) & (cap - 1);
    return &t[i];
}

static bool is_known(pid_t pid, const pid_t *known, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (known[i] == pid)
            return true;
    return false;
}

/* "KEY=value" of /proc/PID/environ (NUL-separated), or NULL. */
static const char *env_get(const char *env, size_t n, const char *key)
{
    size_t k = strlen(key);

    for (size_t i = 0; i < n;) {
        size_t l = strnlen(env + i, n - i);
        if (l > k && strncmp(env + i, key, k) == 0 && env[i + k] == '=')
            return env + i + k + 1;
        i += l + 1;
    }
    return NULL;
}

/* Name, owner and reason of one process: a few small /proc reads; any may fail (gone, another user's). */
static void detail(struct scaf_foreign *f, struct scaf_foreign_proc *p, double now)
{
    struct scaf_foreign_facts facts = {.tbb_tcm = -1, .our_socket = f->our_socket};
    struct scaf_tbblib tbb;
    char tbb_path[PATH_MAX];
    char small[4096], sock[108];
    char path[64];
    ssize_t n;

    p->detail = true;
    p->detail_at = now;
    n = scaf_procfs_read_pid(p->pid, "cmdline", small, sizeof small);
    if (n > 0)
        scaf_foreign_cmd(small, (size_t)n, p->cmd, sizeof p->cmd);
    if (!p->cmd[0])
        snprintf(p->cmd, sizeof p->cmd, "%s", p->comm);
    if (scaf_procfs_read_pid(p->pid, "status", small, sizeof small) > 0) {
        const char *uid = strstr(small, "\nUid:");
        unsigned long u;
        if (uid && sscanf(uid + 5, "%lu", &u) == 1)
            p->uid = (uint32_t)u;
    }
    snprintf(path, sizeof path, "/proc/%d/maps", (int)p->pid);
    if (scaf_procfs_read_grow(path, &f->buf, &f->buf_cap) >= 0) {
        facts.maps_known = true;
        facts.mask = scaf_foreign_maps_mask(f->buf);
        if ((facts.mask & SCAF_RT_TBB) && scaf_foreign_tbb_path(f->buf, tbb_path, sizeof tbb_path) == 0 &&
            scaf_tbblib_read(tbb_path, &tbb) == 0) {
            facts.tbb_tcm = tbb.tcm;
            facts.tbb_version = tbb.version;
        }
    }
    if (facts.mask & RT_LAYERS) {
        snprintf(path, sizeof path, "/proc/%d/environ", (int)p->pid);
        n = scaf_procfs_read_grow(path, &f->buf, &f->buf_cap);
        if (n >= 0) {
            const char *v;
            facts.env_known = true;
            v = env_get(f->buf, (size_t)n, "SCAF_DISABLE");
            facts.disabled = v && strcmp(v, "1") == 0;
            v = env_get(f->buf, (size_t)n, "SCAF_SOCKET");
            if (v) {
                snprintf(sock, sizeof sock, "%s", v);
                facts.socket = sock;
            }
        }
    }
    scaf_foreign_reason(&facts, p->reason, sizeof p->reason);
}

void scaf_foreign_sample(struct scaf_foreign *f, const pid_t *known, size_t nknown)
{
    double now = scaf_clock_s(CLOCK_MONOTONIC);
    double dt = f->last_s > 0 ? now - f->last_s : 0;
    long hz = sysconf(_SC_CLK_TCK);
    size_t followed = 0, details = 0;
    pid_t self = getpid();
    struct scaf_foreign_proc *swap;
    struct dirent *de;
    DIR *dir;

    if (!f->on)
        return;
    dir = opendir("/proc");
    if (!dir)
        return; /* the list keeps its last state */
    memset(f->next, 0, f->cap * sizeof *f->next);
    while ((de = readdir(dir)) != NULL && followed < FOREIGN_MAX_PROCS) {
        struct scaf_foreign_stat st;
        struct scaf_foreign_proc *old, *p;
        char buf[1024];
        char *end;
        long pid = strtol(de->d_name, &end, 10);

        if (*end != 0 || pid <= 0 || pid == self || is_known((pid_t)pid, known, nknown))
            continue;
        /* Gone meanwhile, or unreadable: not followed this time. */
        if (scaf_procfs_read_pid((pid_t)pid, "stat", buf, sizeof buf) <= 0 || scaf_foreign_stat_parse(buf, &st) != 0)
            continue;
        /* Kernel threads (kthreadd and its children) are no program a user could start under scaf run. */
        if (pid == 2 || st.ppid == 2)
            continue;
        p = slot(f->next, f->cap, (pid_t)pid);
        old = slot(f->table, f->cap, (pid_t)pid);
        if (old->pid == (pid_t)pid && old->starttime == st.starttime) {
            *p = *old;
            if (dt > 0 && hz > 0 && st.ticks >= old->ticks) {
                double c = (double)(st.ticks - old->ticks) / (double)hz / dt;
                p->cpu = scaf_foreignload_ema(old->cpu, c); /* the lookout's average, per process */
            }
        } else {
            /* New, or the pid was reused by another process: starts from nothing. */
            memset(p, 0, sizeof *p);
            p->pid = (pid_t)pid;
            p->starttime = st.starttime;
        }
        p->ticks = st.ticks;
        memcpy(p->comm, st.comm, sizeof p->comm);
        followed++;
        if (p->cpu >= SCAF_FOREIGN_MIN_CPU && details < FOREIGN_DETAILS_PER_SAMPLE &&
            (!p->detail || now - p->detail_at >= FOREIGN_DETAIL_REFRESH_S)) {
            detail(f, p, now);
            details++;
        }
    }
    closedir(dir);
    swap = f->table;
    f->table = f->next;
    f->next = swap;
    f->last_s = now;
}

size_t scaf_foreign_top(const struct scaf_foreign *f, const struct scaf_foreign_proc **out, size_t max)
{
    size_t n = 0;

    if (!f->on)
        return 0;
    for (size_t i = 0; i < f->cap; i++) {
        const struct scaf_foreign_proc *p = &f->table[i];
        size_t j;

        if (p->pid == 0 || !p->detail || p->cpu < SCAF_FOREIGN_MIN_CPU)
            continue;
        /* Insertion into the short sorted list: max is a handful. */
        if (n == max && out[n - 1]->cpu >= p->cpu)
            continue;
        j = n < max ? n++ : max - 1;
        while (j > 0 && out[j - 1]->cpu < p->cpu) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = p;
    }
    return n;
}

double scaf_foreign_gone_cpu(const struct scaf_foreign *f)
{
    double gone = 0.0;
    char buf[1024];

    if (!f->on)
        return 0.0;
    for (size_t i = 0; i < f->cap; i++) {
        const struct scaf_foreign_proc *p = &f->table[i];
        struct scaf_foreign_stat st;

        if (p->pid == 0 || scaf_foreignload_gone(p->cpu) <= 0.0)
            continue;
        /* Gone: no such process now, or another one under its pid (a different start time). */
        if (scaf_procfs_read_pid(p->pid, "stat", buf, sizeof buf) <= 0 || scaf_foreign_stat_parse(buf, &st) != 0 ||
            st.starttime != p->starttime)
            gone += p->cpu;
    }
    return gone;
}
