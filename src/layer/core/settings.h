/* settings.h — every SCAF_* environment variable the layer reads, parsed once into one typed struct. */
#ifndef SCAF_LAYER_SETTINGS_H
#define SCAF_LAYER_SETTINGS_H

#include <stdint.h>

/*
 * The values in force (docs/settings.md). Written once by scaf_settings_read,
 * in the layer's constructor before any other thread of ours exists; read-only
 * afterwards, so readers need no ordering.
 */
struct scaf_settings {
    /* connection and control */
    int disable;           /* SCAF_DISABLE */
    int verbose;           /* SCAF_VERBOSE */
    int malleable;         /* SCAF_MALLEABLE: 1 yes, 0 no, -1 auto (also for a word not understood) */
    int check;             /* SCAF_CHECK_SEED given (and an unsigned integer) */
    uint64_t check_seed;
    const char *report;    /* SCAF_REPORT, NULL when unset or empty */
    const char *rules;     /* SCAF_RULES, NULL when unset (an empty list is a list) */
    int blas;              /* SCAF_BLAS: steer BLAS thread pools (default 1) */
    const char *daemon_user; /* SCAF_DAEMON_USER: a shared daemon's user (name or uid) the layer also trusts */
    int memory;            /* SCAF_MEMORY: the daemon's memory of this program (key, start team, sites; default 1) */
    unsigned start_team;   /* SCAF_START_TEAM: the team scaf run started the program with, 0 = none */
    unsigned start_parent; /* SCAF_START_PARENT: the pid of the scaf run that set it, 0 = not named */
    unsigned start_share;  /* SCAF_START_SHARE: the share scaf run started the program's runtimes with, 0 = none */
    const char *runtimes;  /* SCAF_RUNTIMES: the runtimes scaf run found in the program ("polars,jvm"), NULL */
    /* efficiency estimation */
    int estimate;          /* SCAF_ESTIMATE */
    int lazy;              /* SCAF_LAZY */
    double alone_share;    /* SCAF_ALONE_SHARE: the most of a lone program's time its baselines may lose; 0 = none */
    int experiments;       /* SCAF_EXPERIMENTS */
    int tls_check;         /* SCAF_TLS_CHECK: check regions in code with thread-local data (else fixed) */
    int cpu_view;          /* SCAF_CPU_VIEW */
    int run_delay;         /* SCAF_RUN_DELAY */
    int counters;          /* SCAF_COUNTERS: -1 auto (unset), 0 off, 1 wanted */
    double tau_s;          /* SCAF_RC_TAU_S */
    uint64_t interval_ns;  /* SCAF_EXPERIMENT_INTERVAL_S */
    uint64_t long_ns;      /* SCAF_LONG_REGION_S, at least 1 ns */
    uint64_t stall_ns;     /* SCAF_STALL_S: the stall net's shortest limit (client/stall.h); 0 = no net */
    uint64_t inplace_ns;   /* SCAF_INPLACE_MAX_MS */
    uint64_t exp_max_ns;   /* SCAF_EXPERIMENT_MAX_S, at least 1 ms */
    uint64_t window_ns;    /* SCAF_WINDOW_MS */
    double assumed;        /* SCAF_ASSUMED_EFFICIENCY */
};

extern struct scaf_settings scaf_settings;

/*
 * Reads the environment once (later calls do nothing). Values not understood
 * keep their default; for the connection settings that is logged with
 * SCAF_VERBOSE at once, for the estimator's it is kept for
 * scaf_settings_complain.
 */
void scaf_settings_read(void);

/*
 * Writes one line per malformed estimator setting on stderr, even without
 * SCAF_VERBOSE (the user's mistake should not pass silently), once per
 * process. Called when the layer first connects, so the many processes of a
 * pipeline that never run OpenMP stay silent.
 */
void scaf_settings_complain(void);

#endif
