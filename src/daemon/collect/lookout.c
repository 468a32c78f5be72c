/* lookout.c — once a second: contexts kept busy by processes that are not clients become unavailable. */
#include "lookout.h"
#include "../say.h"
#include "scaf/clock.h"
#include "scaf/procfs.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lookout's sampling interval (loop.c's lookout timer). */
#define LOOKOUT_INTERVAL_NS 1000000000ull

int scaf_procstat_sum(const char *text, const int *cpu_list, size_t len, struct scaf_cpustat *out)
{
    const char *line = text;

    memset(out, 0, sizeof *out);
    while (line && *line) {
        unsigned long long v[8] = {0};
        int cpu, k;

        /* Only "cpuN ..." lines; the aggregate "cpu " line covers CPUs we may not own. */
        if (strncmp(line, "cpu", 3) == 0 && line[3] >= '0' && line[3] <= '9' &&
            (k = sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2], &v[3],
                        &v[4], &v[5], &v[6], &v[7])) >= 5) {
            bool mine = cpu_list == NULL;
            for (size_t i = 0; !mine && i < len; i++)
                mine = cpu_list[i] == cpu;
            if (mine) {
                /* user nice system idle iowait irq softirq steal; guest time is inside user already. */
                uint64_t busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
                out->busy += busy;
                out->total += busy + v[3] + v[4];
                out->ncpu++;
            }
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    if (out->ncpu == 0) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

int scaf_pidstat_parse(const char *text, struct scaf_pidstat *out)
{
    const char *p = text ? strrchr(text, ')') : NULL;
    unsigned long long ut, st, cut, cst;
    long ppid, nlwp;

    /* After "pid (comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
     * utime stime cutime cstime priority nice num_threads. The last ')' ends comm whatever it holds. */
    if (!p || sscanf(p + 1, " %*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu %*d %*d %ld", &ppid,
                     &ut, &st, &cut, &cst, &nlwp) != 6 ||
        nlwp < 0) {
        errno = EINVAL;
        return -1;
    }
    out->ppid = (pid_t)ppid;
    out->utime = ut;
    out->stime = st;
    out->cutime = cut;
    out->cstime = cst;
    out->nlwp = nlwp > UINT32_MAX ? UINT32_MAX : (uint32_t)nlwp;
    return 0;
}

/* /proc/PID/stat of one process (pid <= 0: scafd itself); 0 or -1 (gone, unreadable). */
static int read_pidstat(pid_t pid, struct scaf_pidstat *ps)
{
    char buf[1024];

    if (scaf_procfs_read_pid(pid, "stat", buf, sizeof buf) <= 0)
        return -1;
    return scaf_pidstat_parse(buf, ps);
}

int scaf_lookout_client_cpu(pid_t pid, uint64_t *ticks)
{
    struct scaf_pidstat ps;

    if (pid <= 0 || read_pidstat(pid, &ps) < 0)
        return -1;
    *ticks = ps.utime + ps.stime;
    return 0;
}

uint64_t scaf_lookout_client_sample(struct scaf_lookout_client *lc, pid_t pid, pid_t exp)
{
    struct scaf_pidstat ps, es;
    uint64_t ticks, delta = 0, exp_ticks = 0;

    if (read_pidstat(pid, &ps) < 0)
        return 0; /* gone: its socket closes in this same loop turn */
    lc->nlwp = ps.nlwp;
    /* A reaped experiment child's time lands in cutime/cstime. */
    ticks = ps.utime + ps.stime + ps.cutime + ps.cstime;
    if (lc->have_ticks && ticks >= lc->ticks)
        delta = ticks - lc->ticks;

    /* The page is client-written: trust experiment_pid only if that process is really its child,
     * or a client could hide foreign load behind someone else's pid. */
    if (exp > 0 && read_pidstat(exp, &es) == 0 && es.ppid == pid) {
        exp_ticks = es.utime + es.stime;
        delta += exp == lc->exp_pid && exp_ticks >= lc->exp_ticks ? exp_ticks - lc->exp_ticks : exp_ticks;
    } else {
        exp = 0;
    }
    /* The previous child ended: what we already counted of it is now in cutime as well. */
    if (lc->exp_pid != 0 && lc->exp_pid != exp)
        delta = delta > lc->exp_ticks ? delta - lc->exp_ticks : 0;

    lc->ticks = ticks;
    lc->have_ticks = true;
    lc->last_delta = delta;
    lc->last_ns = scaf_clock_ns(CLOCK_MONOTONIC);
    lc->exp_pid = exp;
    lc->exp_ticks = exp_ticks;
    return delta;
}

void scaf_lookout_client_leave(struct scaf_lookout *lk, const struct scaf_lookout_client *lc, pid_t pid)
{
    struct scaf_pidstat ps;
    uint64_t burned = 0;

    if (!lk->on || !lc->have_ticks)
        return;
    if (read_pidstat(pid, &ps) == 0 && ps.utime + ps.stime + ps.cutime + ps.cstime >= lc->ticks) {
        burned = ps.utime + ps.stime + ps.cutime + ps.cstime - lc->ticks;
    } else {
        uint64_t since = scaf_clock_ns(CLOCK_MONOTONIC) - lc->last_ns;
        /* The lookout samples once a second: a longer gap is still one interval at most. */
        burned = since >= LOOKOUT_INTERVAL_NS ? lc->last_delta
                                               : (uint64_t)((double)lc->last_delta * (double)since / LOOKOUT_INTERVAL_NS);
    }
    lk->departed_ticks += burned;
}

void scaf_lookout_client_start(struct scaf_lookout_client *lc, pid_t pid)
{
    lc->last_delta = 0;
    lc->last_ns = 0;
    lc->have_ticks = false;
    lc->exp_pid = 0;
    lc->exp_ticks = 0;
    lc->nlwp = 0;
    (void)scaf_lookout_client_sample(lc, pid, 0);
}

void scaf_lookout_init(struct scaf_lookout *lk, bool on, uint32_t cpus)
{
    memset(lk, 0, sizeof *lk);
    lk->on = on;
    lk->available = cpus;
}

void scaf_lookout_free(struct scaf_lookout *lk)
{
    free(lk->stat_buf);
    lk->stat_buf = NULL;
    lk->stat_cap = 0;
}

void scaf_lookout_sample(struct scaf_lookout *lk, const struct scaf_capacity *cap, uint64_t dclients, double gone,
                         bool verbose)
{
    struct scaf_cpustat st;
    struct scaf_pidstat self;
    uint64_t self_ticks = 0;

    if (!lk->on)
        goto out;
    if (scaf_procfs_read_grow("/proc/stat", &lk->stat_buf, &lk->stat_cap) < 0 ||
        scaf_procstat_sum(lk->stat_buf, cap->cpu_list, cap->cpu_list_len, &st) < 0) {
        if (verbose)
            scaf_say("lookout: cannot read /proc/stat; assuming no foreign load");
        goto out;
    }
    if (read_pidstat(0, &self) == 0)
        self_ticks = self.utime + self.stime;
    if (lk->have_stat && st.busy >= lk->last_stat.busy && st.total > lk->last_stat.total) {
        uint64_t dself = self_ticks >= lk->last_self_ticks ? self_ticks - lk->last_self_ticks : 0;
        double f = scaf_foreignload_measure(st.busy - lk->last_stat.busy, dclients + dself + lk->departed_ticks,
                                            st.total - lk->last_stat.total, st.ncpu);
        lk->foreign = scaf_foreignload_smooth(lk->foreign, f, gone, &lk->foreign_prev);
    }
    lk->last_stat = st;
    lk->last_self_ticks = self_ticks;
    lk->have_stat = true;
out:
    lk->departed_ticks = 0;
    lk->available = scaf_foreignload_available(cap->cpus, lk->foreign, lk->foreign_prev, 0.0);
}
