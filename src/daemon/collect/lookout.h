/* lookout.h — foreign load: contexts kept busy by processes that are not clients (not an installed interface). */
#ifndef SCAFD_LOOKOUT_H
#define SCAFD_LOOKOUT_H

#include "capacity.h"
#include "foreignload.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct scaf_cpustat {
    uint64_t busy;  /* user + nice + system + irq + softirq + steal */
    uint64_t total; /* busy + idle + iowait */
    uint32_t ncpu;  /* per-CPU lines summed */
};

/* Sums the per-CPU lines of /proc/stat text for the CPUs in cpu_list[] (all of them when it is NULL).
 * Returns 0, or -1 with errno = EINVAL when no matching line was found. */
int scaf_procstat_sum(const char *text, const int *cpu_list, size_t len, struct scaf_cpustat *out);

struct scaf_pidstat {
    pid_t ppid;
    uint64_t utime, stime, cutime, cstime; /* clock ticks */
    uint32_t nlwp;
};

/* Parses /proc/PID/stat text (comm may hold spaces and parentheses). Returns 0 or -1, errno = EINVAL. */
int scaf_pidstat_parse(const char *text, struct scaf_pidstat *out);

/* One client's CPU time as the lookout last saw it. */
struct scaf_lookout_client {
    bool have_ticks;
    uint64_t ticks;  /* utime+stime+cutime+cstime at the last sample */
    pid_t exp_pid;   /* experiment child seen at the last sample */
    uint64_t exp_ticks;
    uint32_t nlwp;   /* threads of the client at the last sample */
    uint64_t last_delta; /* ticks it burned in the interval before the last sample */
    uint64_t last_ns;    /* CLOCK_MONOTONIC of the last sample */
};

struct scaf_lookout {
    bool on;            /* false with --no-lookout: available stays cpus */
    double foreign;     /* smoothed busy contexts of non-clients */
    double foreign_prev; /* the same one sample earlier: `available` takes the smaller of the two */
    uint32_t available; /* cpus - round(foreign), >= 1 */
    bool have_stat;
    struct scaf_cpustat last_stat;
    uint64_t last_self_ticks;
    uint64_t departed_ticks; /* burned since the last sample by clients that have left since */
    char *stat_buf; /* /proc/stat, kept between samples */
    size_t stat_cap;
};

void scaf_lookout_init(struct scaf_lookout *lk, bool on, uint32_t cpus);
void scaf_lookout_free(struct scaf_lookout *lk);
/* utime + stime of a client's process (all its threads, not its children) into *ticks: what the idle rule
 * (decide/idle.h) judges at every referee turn. Returns 0, or -1 when /proc cannot tell (gone, hidden). */
int scaf_lookout_client_cpu(pid_t pid, uint64_t *ticks);
/* Takes a new client's CPU-time baseline, so its past does not count as foreign load. */
void scaf_lookout_client_start(struct scaf_lookout_client *lc, pid_t pid);
/* Ticks the client burned since its last sample, its experiment child included (`experiment_pid`
 * is client-written: it counts only if /proc shows it is the client's child). Updates nlwp. */
uint64_t scaf_lookout_client_sample(struct scaf_lookout_client *lc, pid_t pid, pid_t experiment_pid);
/*
 * A client leaves: what it burned since its last sample is added to what the next sample counts as
 * the clients', not as foreign load. Read from /proc/PID/stat while the process is still there (on
 * its way out, or a zombie); once reaped, estimated at the rate of its last interval. Without this
 * a program that ends would leave its last second's CPU as phantom foreign load, and the programs
 * that stay would be held below the CPUs it freed for a sample or two.
 */
void scaf_lookout_client_leave(struct scaf_lookout *lk, const struct scaf_lookout_client *lc, pid_t pid);
/*
 * One sample: what the clients burned (`dclients`, summed from the above) against /proc/stat. `gone` is the
 * smoothed load of foreign processes that ended since the last sample (scaf_foreign_gone_cpu): it leaves the
 * average at once, instead of holding the clients below the CPUs it freed for seconds while it decays.
 */
void scaf_lookout_sample(struct scaf_lookout *lk, const struct scaf_capacity *cap, uint64_t dclients, double gone,
                         bool verbose);

#endif
