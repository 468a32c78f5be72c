/* idle.h — whether a client is idle: no region and next to no CPU for a while, decided each referee turn, pure (not an installed interface). */
#ifndef SCAFD_IDLE_H
#define SCAFD_IDLE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The rule's numbers (docs/daemon.md, "Idle clients", gives the measurements
 * behind them). A client is idle once, for `window_ns`, its page's `regions`
 * counter has not moved, no WAKE came, and every CPU span of at least
 * `span_ns` in that time (one at least) burned at most `cpu_frac` of one
 * context (plus `slack_ticks`, the rounding of /proc's clock ticks).
 */
struct scaf_idle_rule {
    uint64_t window_ns;   /* quiet this long: idle */
    uint64_t span_ns;     /* the shortest CPU span judged: /proc counts whole ticks */
    double cpu_frac;      /* of one context: at most this much CPU is still quiet */
    double wake_frac;     /* of one context: an idle client is busy again past this much (hysteresis) */
    uint32_t slack_ticks; /* ticks a quiet span may exceed cpu_frac by (a tick straddles the span's edges) */
    uint32_t hz;          /* clock ticks per second (sysconf(_SC_CLK_TCK)) */
};

/* The daemon's rule: 0.25 s quiet, CPU judged over spans of 0.2 s or more, at most 10% of one context to turn
 * idle, more than half of one to be busy again without a region or a WAKE. */
#define SCAF_IDLE_WINDOW_NS 250000000ull
#define SCAF_IDLE_SPAN_NS 200000000ull
#define SCAF_IDLE_CPU_FRAC 0.10
#define SCAF_IDLE_WAKE_FRAC 0.50
#define SCAF_IDLE_SLACK_TICKS 1u

/* What one referee turn saw of one client. */
struct scaf_idle_obs {
    uint64_t now_ns;    /* CLOCK_MONOTONIC of the turn */
    uint64_t regions;   /* the page's outermost region count, as decoded this turn */
    bool woke;          /* a WAKE came on its connection since the last turn */
    bool cpu_ok;        /* cpu_ticks was read this turn */
    uint64_t cpu_ticks; /* utime + stime of the process (/proc/PID/stat), all its threads */
};

/* Per client, kept between turns; zero-initialised: nothing seen yet. */
struct scaf_idle {
    bool started;            /* a first observation was taken */
    bool idle;               /* counted idle now */
    bool have_mark;          /* mark_* hold a CPU reading to judge the next span from */
    bool judged;             /* a quiet span was judged since quiet_since_ns */
    uint64_t regions;        /* the count at the last turn */
    uint64_t quiet_since_ns; /* the turn that last saw activity */
    uint64_t mark_ns;        /* the start of the CPU span being judged */
    uint64_t mark_ticks;
    uint32_t epoch;          /* idle periods so far, never 0 once idle: the page's `idle` word while idle */
};

/*
 * One turn. Activity is a moved region count, a WAKE, a CPU reading that
 * failed (a process the daemon cannot see is never called idle: BLAS or
 * oneTBB work would be invisible), or a span that burned more than the rule
 * allows: `cpu_frac` of one context while busy, `wake_frac` while idle (a
 * worker's bookkeeping between tasks, a garbage collection, a heartbeat, does
 * not take a share back; a serial phase or BLAS work does); activity makes
 * the client busy at once. Otherwise it turns idle
 * once it has been quiet for the window, and a new idle period gets the next
 * epoch. Returns s->idle.
 */
bool scaf_idle_step(struct scaf_idle *s, const struct scaf_idle_obs *o, const struct scaf_idle_rule *r);

/* The daemon's rule, with `hz` ticks per second. */
struct scaf_idle_rule scaf_idle_rule_default(uint32_t hz);

#endif
