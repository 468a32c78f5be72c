/* test_daemon_lookout.c — /proc/stat and /proc/PID/stat parsing from fixture text, and the foreign-load math. */
#include "../../src/daemon/collect/lookout.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* A real 4-CPU /proc/stat (trimmed after the per-CPU lines). */
static const char STAT[] = "cpu  4705 150 1120 16250 520 0 34 7 0 0\n"
                           "cpu0 1393 32 458 3780 130 0 30 2 0 0\n"
                           "cpu1 1110 59 218 4233 95 0 2 1 0 0\n"
                           "cpu2 1076 49 209 4239 170 0 1 3 0 0\n"
                           "cpu3 1126 10 235 3998 125 0 1 1 0 0\n"
                           "intr 1462898 23 9 0 0 0 0 0 0 1 0\n"
                           "ctxt 3129370\n"
                           "btime 1700000000\n"
                           "cpu9 this line is not what it seems\n";

static void procstat(void)
{
    struct scaf_cpustat st;
    int mine[] = {1, 3};

    CHECK(scaf_procstat_sum(STAT, NULL, 0, &st) == 0, "all");
    /* busy = user+nice+system+irq+softirq+steal per CPU; total adds idle+iowait. */
    CHECK(st.ncpu == 4, "ncpu %u", st.ncpu);
    CHECK(st.busy == (1393 + 32 + 458 + 30 + 2) + (1110 + 59 + 218 + 2 + 1) + (1076 + 49 + 209 + 1 + 3) +
                         (1126 + 10 + 235 + 1 + 1),
          "busy %llu", (unsigned long long)st.busy);
    CHECK(st.total == st.busy + 3780 + 130 + 4233 + 95 + 4239 + 170 + 3998 + 125, "total %llu",
          (unsigned long long)st.total);

    CHECK(scaf_procstat_sum(STAT, mine, 2, &st) == 0, "subset");
    CHECK(st.ncpu == 2 && st.busy == (1110 + 59 + 218 + 2 + 1) + (1126 + 10 + 235 + 1 + 1), "subset busy %llu",
          (unsigned long long)st.busy);

    /* Old kernels print only 4 or 7 columns. */
    CHECK(scaf_procstat_sum("cpu0 10 0 5 100\n", NULL, 0, &st) == 0 && st.busy == 15 && st.total == 115,
          "4 columns: %llu/%llu", (unsigned long long)st.busy, (unsigned long long)st.total);

    errno = 0;
    CHECK(scaf_procstat_sum("intr 1 2 3\n", NULL, 0, &st) == -1 && errno == EINVAL, "no cpu lines");
    CHECK(scaf_procstat_sum(STAT, (int[]){42}, 1, &st) == -1, "cpus not present");
    CHECK(scaf_procstat_sum("", NULL, 0, &st) == -1, "empty");
}

static void pidstat(void)
{
    struct scaf_pidstat ps;
    /* comm with spaces and a ')' inside: only the last ')' ends it. */
    static const char S[] = "4242 (my (odd) prog) R 17 4242 4242 0 -1 4194304 1234 0 0 0 "
                            "250 40 9 3 20 0 5 0 9999 12345678 1000 18446744073709551615";
    char self[1024];
    FILE *f;
    size_t n;

    CHECK(scaf_pidstat_parse(S, &ps) == 0, "parse");
    CHECK(ps.ppid == 17, "ppid %d", (int)ps.ppid);
    CHECK(ps.utime == 250 && ps.stime == 40 && ps.cutime == 9 && ps.cstime == 3, "times %llu %llu %llu %llu",
          (unsigned long long)ps.utime, (unsigned long long)ps.stime, (unsigned long long)ps.cutime,
          (unsigned long long)ps.cstime);
    CHECK(ps.nlwp == 5, "nlwp %u", ps.nlwp);
    CHECK(scaf_pidstat_parse("12 (x) R 1 2", &ps) == -1, "truncated");
    CHECK(scaf_pidstat_parse("no parenthesis at all", &ps) == -1, "no comm");
    CHECK(scaf_pidstat_parse(NULL, &ps) == -1, "NULL");

    /* And the real file of this very process. */
    f = fopen("/proc/self/stat", "r");
    CHECK(f != NULL, "open /proc/self/stat");
    if (f) {
        n = fread(self, 1, sizeof self - 1, f);
        self[n] = '\0';
        fclose(f);
        CHECK(scaf_pidstat_parse(self, &ps) == 0 && ps.ppid == getppid() && ps.nlwp == 1, "self: ppid %d nlwp %u",
              (int)ps.ppid, ps.nlwp);
    }
}

static void foreign(void)
{
    /* 4 CPUs for 100 ticks each: 400 total. 150 busy, clients 50: 100 ticks foreign = 1 context. */
    CHECK(fabs(scaf_lookout_foreign(150, 50, 400, 4) - 1.0) < 1e-9, "one context");
    CHECK(scaf_lookout_foreign(150, 150, 400, 4) == 0.0, "all clients");
    CHECK(scaf_lookout_foreign(100, 180, 400, 4) == 0.0, "clients over-counted clamp to 0");
    CHECK(fabs(scaf_lookout_foreign(400, 0, 400, 4) - 4.0) < 1e-9, "saturated");
    CHECK(scaf_lookout_foreign(900, 0, 400, 4) == 4.0, "never above ncpu");
    CHECK(scaf_lookout_foreign(10, 0, 0, 4) == 0.0, "empty interval");
    CHECK(scaf_lookout_foreign(10, 0, 100, 0) == 0.0, "no cpus");
}

int main(void)
{
    procstat();
    pidstat();
    foreign();
    return check_exit("test_daemon_lookout");
}
