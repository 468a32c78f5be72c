/* lookout.c — once a second: contexts kept busy by processes that are not clients become unavailable. */
#include "daemon.h"
#include "scaf/procfs.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Weight of the newest sample in the moving average: a busy loop shows up within 2-3 s. */
#define LOOKOUT_ALPHA 0.5

int scaf_procstat_sum(const char *text, const int *cpus, size_t ncpus, struct scaf_cpustat *out)
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
            bool mine = cpus == NULL;
            for (size_t i = 0; !mine && i < ncpus; i++)
                mine = cpus[i] == cpu;
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

double scaf_lookout_foreign(uint64_t dbusy, uint64_t dclients, uint64_t dtotal, uint32_t ncpu)
{
    double per_cpu, f;

    if (dtotal == 0 || ncpu == 0 || dclients >= dbusy)
        return 0.0;
    /* dtotal covers ncpu CPUs: dtotal/ncpu ticks is the interval's length on one CPU. */
    per_cpu = (double)dtotal / ncpu;
    f = (double)(dbusy - dclients) / per_cpu;
    return f > ncpu ? ncpu : f;
}

/* /proc/PID/stat of one process (pid <= 0: scafd itself); 0 or -1 (gone, unreadable). */
static int read_pidstat(pid_t pid, struct scaf_pidstat *ps)
{
    char buf[1024];

    if (scaf_procfs_read_pid(pid, "stat", buf, sizeof buf) <= 0)
        return -1;
    return scaf_pidstat_parse(buf, ps);
}

/* Ticks this client burned since the last sample, its experiment child included. */
static uint64_t client_delta(struct scafd_conn *c)
{
    struct scaf_pidstat ps, es;
    uint64_t ticks, delta = 0, exp_ticks = 0;
    pid_t exp;

    if (read_pidstat(c->pid, &ps) < 0)
        return 0; /* gone: its socket closes in this same loop turn */
    c->nlwp = ps.nlwp;
    /* A reaped experiment child's time lands in cutime/cstime. */
    ticks = ps.utime + ps.stime + ps.cutime + ps.cstime;
    if (c->have_ticks && ticks >= c->ticks)
        delta = ticks - c->ticks;

    /* The page is client-written: trust experiment_pid only if that process is really its child,
     * or a client could hide foreign load behind someone else's pid. */
    exp = atomic_load_explicit(&c->page->experiment_pid, memory_order_relaxed);
    if (exp > 0 && read_pidstat(exp, &es) == 0 && es.ppid == c->pid) {
        exp_ticks = es.utime + es.stime;
        delta += exp == c->exp_pid && exp_ticks >= c->exp_ticks ? exp_ticks - c->exp_ticks : exp_ticks;
    } else {
        exp = 0;
    }
    /* The previous child ended: what we already counted of it is now in cutime as well. */
    if (c->exp_pid != 0 && c->exp_pid != exp)
        delta = delta > c->exp_ticks ? delta - c->exp_ticks : 0;

    c->ticks = ticks;
    c->have_ticks = true;
    c->exp_pid = exp;
    c->exp_ticks = exp_ticks;
    return delta;
}

void scaf_lookout_client_start(struct scafd_conn *c)
{
    c->have_ticks = false;
    c->exp_pid = 0;
    c->exp_ticks = 0;
    (void)client_delta(c);
}

void scaf_lookout_sample(struct scafd *d)
{
    struct scaf_cpustat st;
    struct scaf_pidstat self;
    uint64_t dclients = 0, self_ticks = 0;
    int32_t avail;

    for (uint32_t i = 0; i < d->nconns; i++)
        if (d->conns[i].state == SCAFD_CONN_CLIENT)
            dclients += client_delta(&d->conns[i]);
    if (!d->opt.lookout)
        goto out;

    if (scaf_procfs_read_grow("/proc/stat", &d->stat_buf, &d->stat_cap) < 0 ||
        scaf_procstat_sum(d->stat_buf, d->cap.cpu, d->cap.ncpu, &st) < 0) {
        if (d->opt.verbose)
            scaf_say("lookout: cannot read /proc/stat; assuming no foreign load");
        goto out;
    }
    if (read_pidstat(0, &self) == 0)
        self_ticks = self.utime + self.stime;
    if (d->have_stat && st.busy >= d->last_stat.busy && st.total > d->last_stat.total) {
        uint64_t dself = self_ticks >= d->last_self_ticks ? self_ticks - d->last_self_ticks : 0;
        double f = scaf_lookout_foreign(st.busy - d->last_stat.busy, dclients + dself,
                                        st.total - d->last_stat.total, st.ncpu);
        d->foreign = LOOKOUT_ALPHA * f + (1.0 - LOOKOUT_ALPHA) * d->foreign;
    }
    d->last_stat = st;
    d->last_self_ticks = self_ticks;
    d->have_stat = true;
out:
    avail = (int32_t)d->cap.n - (int32_t)lround(d->foreign);
    d->available = avail < 1 ? 1 : (uint32_t)avail;
}
