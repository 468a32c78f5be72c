/* settings.c — one table of the layer's SCAF_* variables, one parsing rule per kind, read once at load. */
#include "settings.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "say.h"
#include "scaf/startrule.h"
#include "scaf/proto.h"

struct scaf_settings scaf_settings = {
    .malleable = -1,
    .blas = 1,
    .memory = 1,
    .estimate = 1,
    .lazy = 1,
    .alone_share = 0.01,
    .experiments = 1,
    .tls_check = 1,
    .run_delay = 1,
    .counters = -1,
    .tau_s = 1.0,
    .interval_ns = 10000000000ull,
    .long_ns = 10000000000ull,
    .stall_ns = 10000000000ull,
    .inplace_ns = 5000000ull,
    .exp_max_ns = 10000000000ull,
    .window_ns = 100000000ull,
    .assumed = 0.5,
};

/*
 * How a value is read. docs/settings.md documents two boolean rules and both
 * are kept, because users rely on each as written there:
 *  - SWITCH (SCAF_DISABLE, SCAF_VERBOSE): on for any value but empty or 0;
 *    nothing is malformed.
 *  - BOOL (the estimator's): exactly 0 or 1; anything else is malformed.
 */
enum kind {
    SWITCH,   /* int: any value but empty or "0" is 1 */
    BOOL,     /* int: "0" or "1" */
    WORDS,    /* int: yes|1|true|on|malleable, no|0|false|off|fixed, auto; case-insensitive */
    SEED,     /* uint64 + int flag at `off2`: an unsigned decimal integer */
    PATH,     /* const char *: kept when non-empty (copied: the program may change its environment) */
    PATHLIST, /* const char *: kept even when empty */
    NUMBER,   /* double in [lo, hi] */
    COUNT,    /* unsigned in [lo, hi]: a decimal integer */
    DURATION, /* uint64 ns: a number in [lo, hi] of the unit `scale` ns */
};

struct entry {
    const char *name;
    enum kind kind;
    size_t off, off2;
    double lo, hi, scale;
    const char *want; /* what a valid value looks like, for the complaint */
};

#define AT(f) offsetof(struct scaf_settings, f)

static const struct entry table[] = {
    {"SCAF_VERBOSE", SWITCH, AT(verbose), 0, 0, 0, 0, NULL},
    {"SCAF_DISABLE", SWITCH, AT(disable), 0, 0, 0, 0, NULL},
    {"SCAF_BLAS", SWITCH, AT(blas), 0, 0, 0, 0, NULL},
    {"SCAF_CHECK_SEED", SEED, AT(check_seed), AT(check), 0, 0, 0, "an unsigned integer"},
    {"SCAF_MALLEABLE", WORDS, AT(malleable), 0, 0, 0, 0, "yes, no or auto"},
    {"SCAF_REPORT", PATH, AT(report), 0, 0, 0, 0, NULL},
    {"SCAF_RULES", PATHLIST, AT(rules), 0, 0, 0, 0, NULL},
    {"SCAF_DAEMON_USER", PATH, AT(daemon_user), 0, 0, 0, 0, NULL},
    {"SCAF_MEMORY", BOOL, AT(memory), 0, 0, 0, 0, "0 or 1"},
    {"SCAF_START_TEAM", COUNT, AT(start_team), 0, 1.0, (double)SCAF_MAX_CPUS, 1.0, "a team of 1 to 1024 threads"},
    {"SCAF_START_SHARE", COUNT, AT(start_share), 0, 1.0, (double)SCAF_MAX_CPUS, 1.0, "a share of 1 to 1024 CPUs"},
    {"SCAF_RUNTIMES", PATH, AT(runtimes), 0, 0, 0, 0, NULL},
    {"SCAF_START_PARENT", COUNT, AT(start_parent), 0, 1.0, 4194304.0, 1.0, "a process ID (1 to 4194304)"},
    {"SCAF_ESTIMATE", BOOL, AT(estimate), 0, 0, 0, 0, "0 or 1"},
    {"SCAF_LAZY", BOOL, AT(lazy), 0, 0, 0, 0, "0 or 1"},
    {"SCAF_ALONE_SHARE", NUMBER, AT(alone_share), 0, 0.0, 1.0, 1.0, "a number in [0, 1]"},
    {"SCAF_EXPERIMENTS", BOOL, AT(experiments), 0, 0, 0, 0, "0 or 1"},
    {"SCAF_TLS_CHECK", BOOL, AT(tls_check), 0, 0, 0, 0, "0 or 1"},
    {"SCAF_CPU_VIEW", BOOL, AT(cpu_view), 0, 0, 0, 0, "0 or 1"},
    {"SCAF_RUN_DELAY", BOOL, AT(run_delay), 0, 0, 0, 0, "0 or 1"},
    {"SCAF_COUNTERS", BOOL, AT(counters), 0, 0, 0, 0, "0 or 1"},
    {"SCAF_RC_TAU_S", NUMBER, AT(tau_s), 0, 0.0, 3600.0, 1.0, "seconds in [0, 3600]"},
    {"SCAF_EXPERIMENT_INTERVAL_S", DURATION, AT(interval_ns), 0, 0.0, 86400.0, 1e9, "seconds in [0, 86400]"},
    {"SCAF_LONG_REGION_S", DURATION, AT(long_ns), 0, 0.0, 86400.0, 1e9, "seconds in [0, 86400]"},
    {"SCAF_STALL_S", DURATION, AT(stall_ns), 0, 0.0, 86400.0, 1e9, "seconds in [0, 86400]"},
    {"SCAF_INPLACE_MAX_MS", DURATION, AT(inplace_ns), 0, 0.0, 60000.0, 1e6, "milliseconds in [0, 60000]"},
    {"SCAF_EXPERIMENT_MAX_S", DURATION, AT(exp_max_ns), 0, 0.0, 3600.0, 1e9, "seconds in [0, 3600]"},
    {"SCAF_WINDOW_MS", DURATION, AT(window_ns), 0, 0.0, 60000.0, 1e6, "milliseconds in [0, 60000]"},
    {"SCAF_ASSUMED_EFFICIENCY", NUMBER, AT(assumed), 0, 0.0, 1.0, 1.0, "a number in [0, 1]"},
};

#define NENTRIES (sizeof table / sizeof table[0])

/* Values found malformed (nonzero in bad[]), with a copy of what was given, for the complaints. */
static char bad_value[NENTRIES][65];
static int bad[NENTRIES];
static int read_once, complained;


/* A finite number in [lo, hi], the whole string. 0, or -1 when malformed. */
static int parse_number(const char *v, double lo, double hi, double *out)
{
    char *end;
    double d;

    errno = 0;
    d = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(d) || d < lo || d > hi)
        return -1;
    *out = d;
    return 0;
}

/* Stores one set, non-empty value. Returns 0, or -1 when it is malformed (the default stays). */
static int parse_entry(const struct entry *e, const char *v)
{
    char *base = (char *)&scaf_settings;
    int *ip = (int *)(base + e->off);
    double d;

    switch (e->kind) {
    case SWITCH:
        *ip = strcmp(v, "0") != 0;
        return 0;
    case BOOL:
        if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
            return -1;
        *ip = v[0] == '1';
        return 0;
    case WORDS: {
        int w = scaf_start_word(v);
        if (w == -2)
            return -1;
        *ip = w;
        return 0;
    }
    case SEED: {
        char *end;
        unsigned long long s;

        errno = 0;
        s = strtoull(v, &end, 10);
        if (errno != 0 || *end != 0)
            return -1;
        *(uint64_t *)(base + e->off) = s;
        *(int *)(base + e->off2) = 1;
        return 0;
    }
    case PATH:
    case PATHLIST:
        *(const char **)(base + e->off) = strdup(v);
        return 0;
    case NUMBER:
        if (parse_number(v, e->lo, e->hi, &d) != 0)
            return -1;
        *(double *)(base + e->off) = d;
        return 0;
    case COUNT: {
        char *end;
        unsigned long long n;

        errno = 0;
        n = strtoull(v, &end, 10);
        if (errno != 0 || *end != 0 || v[0] == '-' || (double)n < e->lo || (double)n > e->hi)
            return -1;
        *(unsigned *)(base + e->off) = (unsigned)n;
        return 0;
    }
    case DURATION:
        if (parse_number(v, e->lo, e->hi, &d) != 0)
            return -1;
        *(uint64_t *)(base + e->off) = (uint64_t)(d * e->scale);
        return 0;
    }
    return -1;
}

void scaf_settings_read(void)
{
    if (read_once)
        return;
    read_once = 1;
    for (size_t i = 0; i < NENTRIES; i++) {
        const struct entry *e = &table[i];
        const char *v = getenv(e->name);

        if (!v || (!*v && e->kind != PATHLIST))
            continue;
        if (parse_entry(e, v) == 0)
            continue;
        bad[i] = 1;
        snprintf(bad_value[i], sizeof bad_value[i], "%s", v);
    }
    if (scaf_settings.long_ns == 0)
        scaf_settings.long_ns = 1; /* 0 s: every region is long at once (tests) */
    if (scaf_settings.exp_max_ns < 1000000ull)
        scaf_settings.exp_max_ns = 1000000ull;
    scaf_say_init(scaf_settings.verbose);
    /* The connection settings are read by every process, most of which never connect: verbose only. */
    for (size_t i = 0; i < NENTRIES; i++)
        if (bad[i] && table[i].kind == WORDS && !scaf_settings.check) /* scaf check's seed overrides it anyway */
            scaf_layer_log("%s=%s not understood (%s): auto", table[i].name, bad_value[i], table[i].want);
        else if (bad[i] && table[i].kind == SEED)
            scaf_layer_log("%s=%s is not an unsigned integer: ignored", table[i].name, bad_value[i]);
}

void scaf_settings_complain(void)
{
    if (complained)
        return;
    complained = 1;
    for (size_t i = 0; i < NENTRIES; i++)
        if (bad[i] && table[i].kind != WORDS && table[i].kind != SEED)
            scaf_say_always("ignoring %s=\"%.64s\": expected %s", table[i].name, bad_value[i], table[i].want);
}
