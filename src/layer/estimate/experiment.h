/* experiment.h — the serial experiment: a forked, sandboxed child runs one region instance on one thread and reports its time. */
#ifndef SCAF_LAYER_EXPERIMENT_H
#define SCAF_LAYER_EXPERIMENT_H

#include <stdint.h>
#include <sys/types.h>

struct scaf_exp_config {
    uint64_t bound_ns; /* the child ends itself (SIGPROF) after this much CPU time, plus an allowance
                          for copy-on-write proportional to the time fork() took */
    int counters;      /* nonzero: the child counts its instructions and cycles and may be stopped early */
};

/* What a child reported. */
struct scaf_exp_result {
    uint64_t cpu_ns;  /* the child's thread CPU time for the region: the serial baseline */
    uint64_t wall_ns; /* its wall time */
    uint64_t ins;     /* instructions, 0 without counters */
    uint64_t cyc;     /* cycles, 0 without counters */
    uint64_t utime_us; /* user and system share of cpu_ns (tick-sampled; both 0 for short runs) */
    uint64_t stime_us;
    int complete;     /* 1: the region ran to its end; 0: stopped early (counters only) */
};

enum scaf_exp_outcome {
    SCAF_EXP_RUNNING = 0, /* no final outcome yet */
    SCAF_EXP_DONE = 1,    /* result valid */
    SCAF_EXP_BLOCKED = 2, /* seccomp ended it: the region made a call that could change the world */
    SCAF_EXP_BOUND = 3,   /* it ran past its time bound (its own CPU timer, or the parent's wall-clock kill) */
    SCAF_EXP_FAILED = 4,  /* it crashed, or vanished without a result (reaped by the program) */
    SCAF_EXP_NOSANDBOX = 5, /* the kernel refused the seccomp filter: experiments cannot be made safe here */
};

/* One running experiment, owned by the parent. pid == 0: none. */
struct scaf_experiment {
    pid_t pid;
    int fd;            /* read end of the result pipe, nonblocking */
    uint64_t start_ns; /* CLOCK_MONOTONIC at fork */
    uint64_t fork_ns;  /* how long fork() took in the parent (grows with the heap) */
    uint64_t kill_ns;  /* the parent kills it if it is still running at this time */
};

/*
 * Fork a child that runs fn(data) serially under the sandbox and reports
 * through a pipe. Returns 0 in the parent with *e filled, or -1 with errno
 * (pipe or fork failed; nothing is left behind). Never returns in the child.
 * The caller must be at an outermost region entry: the child has only the
 * calling thread.
 */
int scaf_experiment_start(struct scaf_experiment *e, void (*fn)(void *), void *data,
                          const struct scaf_exp_config *cfg, uint64_t now_ns);

/*
 * Nonblocking: read the pipe and reap the exact pid with WNOHANG. Kills the
 * child once now_ns passes e->kill_ns. When it returns anything but
 * SCAF_EXP_RUNNING the experiment is over: fd closed, e->pid = 0, and *out is
 * filled for SCAF_EXP_DONE. A child that reported but has not exited yet is
 * reaped by a later call (never blocks, never reaps another pid).
 */
enum scaf_exp_outcome scaf_experiment_poll(struct scaf_experiment *e, uint64_t now_ns,
                                           struct scaf_exp_result *out);

/* Counters mode: ask the child to report what it has counted so far and exit. */
void scaf_experiment_stop_early(struct scaf_experiment *e);

/* Kill the child (if still ours and alive) and forget it; reaped later. */
void scaf_experiment_abort(struct scaf_experiment *e);

/* Human-readable outcome, for diagnostics. */
const char *scaf_experiment_outcome_name(enum scaf_exp_outcome o);

#endif
