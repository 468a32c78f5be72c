/* test_daemon_lookout.c — /proc/stat and /proc/PID/stat parsing from fixture text, and the foreign-load math. */
#include "../../src/daemon/collect/foreign.h"
#include "../../src/daemon/collect/lookout.h"
#include "scaf/clock.h"
#include "scaf/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
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
    CHECK(fabs(scaf_foreignload_measure(150, 50, 400, 4) - 1.0) < 1e-9, "one context");
    CHECK(scaf_foreignload_measure(150, 150, 400, 4) == 0.0, "all clients");
    CHECK(scaf_foreignload_measure(100, 180, 400, 4) == 0.0, "clients over-counted clamp to 0");
    CHECK(fabs(scaf_foreignload_measure(400, 0, 400, 4) - 4.0) < 1e-9, "saturated");
    CHECK(scaf_foreignload_measure(900, 0, 400, 4) == 4.0, "never above ncpu");
    CHECK(scaf_foreignload_measure(10, 0, 0, 4) == 0.0, "empty interval");
    CHECK(scaf_foreignload_measure(10, 0, 100, 0) == 0.0, "no cpus");
}

/* Which runtimes and layers a process's maps show: each row a maps excerpt and the mask it must give. */
static void maps_mask(void)
{
    static const struct {
        const char *maps;
        unsigned mask;
    } ROWS[] = {
        {"", 0},
        {"7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6\n", 0},
        {"7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n", SCAF_RT_GOMP},
        /* a wheel's renamed copies */
        {"7f00-7f01 r-xp 0 08:01 1 /v/site-packages/scikit_learn.libs/libgomp-a34b3233.so.1.0.0\n", SCAF_RT_GOMP},
        {"7f00-7f01 r-xp 0 08:01 1 /v/numpy.libs/libscipy_openblas64_-32a4b2a6.so\n", SCAF_RT_OPENBLAS},
        {"7f00-7f01 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0\n", SCAF_RT_OPENBLAS},
        {"7f00-7f01 r-xp 0 08:01 1 /usr/lib/llvm-14/lib/libomp.so.5\n", SCAF_RT_LLVM_OMP},
        {"7f00-7f01 r-xp 0 08:01 1 /opt/intel/lib/libiomp5.so\n", SCAF_RT_INTEL_OMP},
        {"7f00-7f01 r-xp 0 08:01 1 /usr/lib/libtbb.so.12.8\n", SCAF_RT_TBB},
        {"7f00-7f01 r-xp 0 08:01 1 /opt/intel/lib/libmkl_core.so.2\n", SCAF_RT_MKL},
        {"7f00-7f01 r-xp 0 08:01 1 /usr/lib/libblis.so.4\n", SCAF_RT_BLIS},
        {"7f00-7f01 r-xp 0 08:01 1 /w/build/lib/libscaf_gomp.so\n"
         "7f02-7f03 r-xp 0 08:01 2 /usr/lib/x86_64-linux-gnu/libgomp.so.1\n",
         SCAF_RT_LAYER_GOMP | SCAF_RT_GOMP},
        {"7f00-7f01 r-xp 0 08:01 1 /w/build/lib/libscaf_omp.so\n", SCAF_RT_LAYER_OMP},
        /* a directory named like a runtime is not the runtime; anonymous mappings and [heap] have no path */
        {"7f00-7f01 r-xp 0 08:01 1 /home/libgomp/prog\n7f02-7f03 rw-p 0 00:00 0 [heap]\n7f04-7f05 rw-p 0 00:00 0\n",
         0},
        /* no final newline */
        {"7f00-7f01 r-xp 0 08:01 1 /usr/lib/libomp.so", SCAF_RT_LLVM_OMP},
    };

    for (size_t i = 0; i < sizeof ROWS / sizeof *ROWS; i++) {
        unsigned got = scaf_foreign_maps_mask(ROWS[i].maps);
        CHECK(got == ROWS[i].mask, "maps row %zu: mask %#x, want %#x", i, got, ROWS[i].mask);
    }
    CHECK(scaf_foreign_maps_mask(NULL) == 0, "NULL maps");
}

/* The reason for each combination of facts: each row the facts and the sentence. */
/* The mapped oneTBB's path (what the library says of itself: test_tbblib.c). */
static void tbb_path(void)
{
    static const struct {
        const char *maps;
        const char *want;
    } ROWS[] = {
        {"", NULL},
        {"7f0-7f1 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n", NULL},
        {"7f0-7f1 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libtbb.so.12.8\n", "/usr/lib/x86_64-linux-gnu/libtbb.so.12.8"},
        {"7f0-7f1 r-xp 0 08:01 1 /v/lib/libgomp.so.1\n7f2-7f3 r--p 0 08:01 1 /v/my dir/libtbb.so.12", "/v/my dir/libtbb.so.12"},
        {"7f0-7f1 r-xp 0 08:01 1 /v/lib/libtbbmalloc.so.2\n", NULL},
    };
    char path[64];

    for (size_t i = 0; i < sizeof ROWS / sizeof *ROWS; i++) {
        int rc = scaf_foreign_tbb_path(ROWS[i].maps, path, sizeof path);
        CHECK(ROWS[i].want ? rc == 0 && strcmp(path, ROWS[i].want) == 0 : rc == -1, "tbb path row %zu: %d %s", i,
              rc, rc == 0 ? path : "");
    }
    CHECK(scaf_foreign_tbb_path("1-2 r-xp 0 0:0 1 /a/very/long/folder/name/libtbb.so.12\n", path, 16) == -1,
          "a path longer than the buffer");
    CHECK(scaf_foreign_maps_mask("7f0-7f1 r-xp 0 08:01 1 /b/lib/libscaf_tcm.so\n") == SCAF_RT_LAYER_TCM, "provider bit");
}

static void reasons(void)
{
    static const char OURS[] = "/run/user/0/scaf/scafd.sock";
    static const struct {
        struct scaf_foreign_facts f;
        const char *want;
    } ROWS[] = {
        {{.maps_known = false}, "not a client (its /proc details are not readable by the daemon)"},
        {{.maps_known = true}, "not started under scaf run (no parallel runtime)"},
        {{.maps_known = true, .mask = SCAF_RT_GOMP}, "not started under scaf run (uses libgomp)"},
        {{.maps_known = true, .mask = SCAF_RT_OPENBLAS}, "not started under scaf run (uses openblas)"},
        {{.maps_known = true, .mask = SCAF_RT_TBB | SCAF_RT_GOMP, .tbb_tcm = -1},
         "parallel runtime libtbb, unreadable by the daemon, that scaf cannot steer"},
        {{.maps_known = true, .mask = SCAF_RT_TBB | SCAF_RT_GOMP, .tbb_tcm = 0, .tbb_version = "2021.8"},
         "oneTBB 2021.8 asks no TCM (older than 2021.11): scaf cannot steer it"},
        {{.maps_known = true, .mask = SCAF_RT_TBB, .tbb_tcm = 0, .tbb_version = ""},
         "oneTBB (version unknown) asks no TCM (older than 2021.11): scaf cannot steer it"},
        {{.maps_known = true, .mask = SCAF_RT_TBB, .tbb_tcm = 1, .tbb_version = "2023.2.0"},
         "not started under scaf run (uses libtbb)"},
        {{.maps_known = true, .mask = SCAF_RT_TBB | SCAF_RT_GOMP, .tbb_tcm = 1},
         "not started under scaf run (uses libtbb)"},
        {{.maps_known = true, .mask = SCAF_RT_LAYER_GOMP | SCAF_RT_LAYER_TCM | SCAF_RT_GOMP | SCAF_RT_TBB,
          .tbb_tcm = 1, .env_known = true},
         "layer loaded, not a client: no daemon when it tried, refused, or no region yet"},
        {{.maps_known = true, .mask = SCAF_RT_LAYER_GOMP | SCAF_RT_GOMP | SCAF_RT_TBB, .tbb_tcm = 1},
         "layer inert: oneTBB without scaf's TCM provider (start it with scaf run)"},
        {{.maps_known = true, .mask = SCAF_RT_LAYER_GOMP | SCAF_RT_GOMP | SCAF_RT_TBB, .tbb_tcm = 0,
          .tbb_version = "2021.8"},
         "layer inert: oneTBB 2021.8 asks no TCM (older than 2021.11): scaf cannot steer it"},
        {{.maps_known = true, .mask = SCAF_RT_BLIS}, "parallel runtime blis that scaf cannot steer"},
        {{.maps_known = true, .mask = SCAF_RT_LAYER_GOMP | SCAF_RT_GOMP, .env_known = true, .disabled = true},
         "layer inert: SCAF_DISABLE=1"},
        {{.maps_known = true, .mask = SCAF_RT_LAYER_GOMP | SCAF_RT_GOMP, .env_known = true,
          .socket = "/tmp/other.sock", .our_socket = OURS},
         "layer inert: SCAF_SOCKET names another daemon (/tmp/other.sock)"},
        {{.maps_known = true, .mask = SCAF_RT_LAYER_GOMP | SCAF_RT_GOMP, .env_known = true, .socket = OURS,
          .our_socket = OURS},
         "layer loaded, not a client: no daemon when it tried, refused, or no region yet"},
        /* the environment of another user's process is not readable: no word on it */
        {{.maps_known = true, .mask = SCAF_RT_LAYER_GOMP, .env_known = false, .disabled = true},
         "layer loaded, not a client: no daemon when it tried, refused, or no region yet"},
        {{.maps_known = true, .mask = SCAF_RT_LAYER_GOMP | SCAF_RT_LLVM_OMP, .env_known = true},
         "layer inert: parallel runtime libomp that this layer cannot steer"},
        {{.maps_known = true, .mask = SCAF_RT_LAYER_OMP | SCAF_RT_LLVM_OMP, .env_known = true},
         "layer loaded, not a client: no daemon when it tried, refused, or no region yet"},
        {{.maps_known = true, .mask = SCAF_RT_LAYER_GOMP | SCAF_RT_OPENBLAS | SCAF_RT_TBB, .tbb_tcm = -1},
         "layer inert: parallel runtime libtbb, unreadable by the daemon, that scaf cannot steer"},
        {{.maps_known = true, .mask = SCAF_RT_LAYER_GOMP | SCAF_RT_LLVM_OMP | SCAF_RT_TBB, .tbb_tcm = 1},
         "layer inert: oneTBB without scaf's TCM provider (start it with scaf run)"},
    };
    char out[112], tiny[8];

    for (size_t i = 0; i < sizeof ROWS / sizeof *ROWS; i++) {
        scaf_foreign_reason(&ROWS[i].f, out, sizeof out);
        CHECK(strcmp(out, ROWS[i].want) == 0, "reason row %zu: \"%s\", want \"%s\"", i, out, ROWS[i].want);
    }
    scaf_foreign_reason(&ROWS[1].f, tiny, sizeof tiny);
    CHECK(strlen(tiny) == sizeof tiny - 1, "truncated to the buffer");
}

/* The command shown: argv[0]'s basename, and the script for interpreters. */
static void commands(void)
{
    static const struct {
        const char *cmdline;
        size_t n;
        const char *want;
    } ROWS[] = {
        {"", 0, ""},
        {"/usr/bin/spin\0--size\0A\0", 20, "spin"},
        {"/usr/bin/python3\0/home/u/train.py\0--epochs\0", 43, "python3 train.py"},
        {"python3\0-c\0print(1)\0", 20, "python3"},
        {"bash\0./run.sh\0", 15, "bash run.sh"},
        /* not NUL-terminated at the end (a process that rewrote its argv) */
        {"/bin/prog", 9, "prog"},
        {"./a.out\0x", 9, "a.out"},
    };
    char out[64];

    for (size_t i = 0; i < sizeof ROWS / sizeof *ROWS; i++) {
        scaf_foreign_cmd(ROWS[i].cmdline, ROWS[i].n, out, sizeof out);
        CHECK(strcmp(out, ROWS[i].want) == 0, "cmd row %zu: \"%s\", want \"%s\"", i, out, ROWS[i].want);
    }
}

static void foreign_stat(void)
{
    struct scaf_foreign_stat st;
    static const char S[] = "4242 (my (odd) prog) R 17 4242 4242 0 -1 4194304 1234 0 0 0 "
                            "250 40 9 3 20 0 5 0 9999 12345678 1000 18446744073709551615";

    CHECK(scaf_foreign_stat_parse(S, &st) == 0, "parse");
    CHECK(strcmp(st.comm, "my (odd) prog") == 0, "comm %s", st.comm);
    CHECK(st.ppid == 17 && st.ticks == 290 && st.starttime == 9999, "ppid %d ticks %llu start %llu", (int)st.ppid,
          (unsigned long long)st.ticks, (unsigned long long)st.starttime);
    CHECK(scaf_foreign_stat_parse("1 (a very long command name here) S 0 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 7",
                                  &st) == 0 &&
              strlen(st.comm) == 15,
          "long comm cut to 15: %s", st.comm);
    CHECK(scaf_foreign_stat_parse("12 (x) R 1 2", &st) == -1, "truncated");
    CHECK(scaf_foreign_stat_parse(NULL, &st) == -1, "NULL");
}

/*
 * The real thing: a busy child of this test shows in the list, named, with a
 * reason; a known pid does not. The whole list is read, not the SCAF_FOREIGN_SHOW
 * a status shows, and for up to 20 s: on a machine that others oversubscribe
 * the child may rank below 8 busier processes, or hover at the threshold.
 */
static void foreign_live(void)
{
    struct scaf_foreign f;
    static const struct scaf_foreign_proc *top[4096];
    pid_t child = fork();
    int found = 0, hidden = 1;

    if (child == 0) {
        for (volatile unsigned long i = 0;; i++)
            ;
    }
    CHECK(child > 0, "fork");
    if (child <= 0)
        return;
    CHECK(scaf_foreign_init(&f, true, "/nowhere.sock") == 0, "init");
    for (int s = 0; s < 50 && !found; s++) {
        struct timespec ts = {0, 400 * 1000 * 1000};
        size_t n;

        scaf_foreign_sample(&f, NULL, 0);
        n = scaf_foreign_top(&f, top, sizeof(top) / sizeof(top[0]));
        for (size_t i = 0; i < n; i++) {
            CHECK(i == 0 || top[i - 1]->cpu >= top[i]->cpu, "busiest first");
            if (top[i]->pid == child) {
                found = 1;
                CHECK(strcmp(top[i]->comm, "test_daemon_loo") == 0, "comm %s", top[i]->comm);
                CHECK(strncmp(top[i]->reason, "not started under scaf run", 26) == 0, "reason %s", top[i]->reason);
                CHECK(top[i]->uid == (uint32_t)getuid(), "uid %u", top[i]->uid);
            }
        }
        nanosleep(&ts, NULL);
    }
    CHECK(found, "the busy child was never listed");
    /* Its pid among the known (a client's): not followed at all. */
    for (int s = 0; s < 3; s++) {
        size_t n;

        scaf_foreign_sample(&f, &child, 1);
        n = scaf_foreign_top(&f, top, sizeof(top) / sizeof(top[0]));
        for (size_t i = 0; i < n; i++)
            if (top[i]->pid == child)
                hidden = 0;
    }
    CHECK(hidden, "a known pid was listed");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    scaf_foreign_free(&f);
    CHECK(scaf_foreign_top(&f, top, SCAF_FOREIGN_SHOW) == 0, "off after free");
}

static uint64_t ticks_of(pid_t pid)
{
    char buf[1024];
    struct scaf_pidstat ps;

    if (scaf_procfs_read_pid(pid, "stat", buf, sizeof buf) <= 0 || scaf_pidstat_parse(buf, &ps) != 0)
        return 0;
    return ps.utime + ps.stime;
}

/* Only foreign load seen in two samples in a row takes a context. */
static void available(void)
{
    static const struct {
        uint32_t cpus;
        double now, before, gone;
        uint32_t want;
    } ROWS[] = {
        {2, 0.0, 0.0, 0, 2},  {2, 0.5, 0.0, 0, 2},  /* one busy second: nothing taken */
        {2, 0.75, 0.5, 0, 1}, {2, 0.25, 0.5, 0, 2}, /* a busy loop's second sample; then it stopped */
        {2, 0.6, 0.62, 0, 1}, {4, 2.0, 1.6, 0, 2},  {4, 1.4, 3.9, 0, 3}, {1, 1.0, 1.0, 0, 1}, {2, 3.0, 3.0, 0, 1},
        {8, 2.0, 2.0, 1.0, 7},  /* one of two 1-context programs ended since the sample: its context is back */
        {8, 0.8, 0.9, 1.0, 8},  /* more gone than the average (the list's average lags): never below 0 */
        {8, 2.0, 2.0, 0.01, 6}, /* gone rounds like the rest */
    };

    for (size_t i = 0; i < sizeof ROWS / sizeof *ROWS; i++) {
        uint32_t got = scaf_foreignload_available(ROWS[i].cpus, ROWS[i].now, ROWS[i].before, ROWS[i].gone);

        CHECK(got == ROWS[i].want, "available row %zu: %u, want %u", i, got, ROWS[i].want);
    }
}

/* The smoothed foreign load, step by step: a foreign program that ended leaves the average at once. */
static void smooth(void)
{
    static const struct {
        double foreign, f, gone;
        double want, want_prev;
        const char *why;
    } ROWS[] = {
        {0.0, 1.0, 0.0, 0.5, 0.0, "a busy loop's first second: half"},
        {0.5, 1.0, 0.0, 0.75, 0.5, "its second"},
        {1.0, 0.0, 0.0, 0.5, 1.0, "it stopped, nothing known of it: it decays"},
        {1.0, 0.0, 1.0, 0.0, 0.0, "it ended, as the foreign list saw it: gone at once"},
        {1.0, 0.4, 1.0, 0.2, 0.0, "its last part-second stays one sample"},
        {1.6, 0.6, 1.0, 0.6, 0.6, "one of two programs ended: the other stays"},
        {0.3, 0.0, 0.5, 0.0, 0.0, "more gone than the average (the list's average lags): never below 0"},
    };

    for (size_t i = 0; i < sizeof ROWS / sizeof *ROWS; i++) {
        double prev = -1.0, got = scaf_foreignload_smooth(ROWS[i].foreign, ROWS[i].f, ROWS[i].gone, &prev);

        CHECK(fabs(got - ROWS[i].want) < 1e-9 && fabs(prev - ROWS[i].want_prev) < 1e-9, "%s: %g (prev %g), want %g (%g)",
              ROWS[i].why, got, prev, ROWS[i].want, ROWS[i].want_prev);
    }
    /* With the smaller of the two, a machine whose foreign program ended is whole again after one sample. */
    {
        double prev, now = scaf_foreignload_smooth(1.0, 0.4, 1.0, &prev);

        CHECK(scaf_foreignload_available(2, now, prev, 0.0) == 2, "2 CPUs after a 1-CPU program ended: %u",
              scaf_foreignload_available(2, now, prev, 0.0));
        now = scaf_foreignload_smooth(1.0, 0.4, 0.0, &prev);
        CHECK(scaf_foreignload_available(2, now, prev, 0.0) == 1, "not known gone: still held: %u",
              scaf_foreignload_available(2, now, prev, 0.0));
    }
}

/* A listed foreign process's own average, and what it takes out of the lookout's when it ends. */
static void gone_and_ema(void)
{
    CHECK(fabs(scaf_foreignload_ema(0.0, 2.0) - 1.0) < 1e-9, "first second of 2 contexts: half");
    CHECK(fabs(scaf_foreignload_ema(1.0, 2.0) - 1.5) < 1e-9, "its second");
    CHECK(fabs(scaf_foreignload_ema(0.0, 2.0) - scaf_foreignload_smooth(0.0, 2.0, 0.0, &(double){0})) < 1e-12,
          "the same step as the lookout's");
    CHECK(scaf_foreignload_gone(1.5) == 1.5, "a busy process that ended leaves at once");
    CHECK(scaf_foreignload_gone(SCAF_FOREIGN_GONE_MIN_CPU) == SCAF_FOREIGN_GONE_MIN_CPU, "at the threshold");
    CHECK(scaf_foreignload_gone(0.01) == 0.0, "a process that kept next to nothing busy decays with the rest");
}

/*
 * A client that leaves: what it burned since its last sample counts as the clients' in the next
 * sample. Read from /proc while the process is a zombie; estimated from its last interval's rate
 * once it is gone.
 */
static void client_leave(void)
{
    struct scaf_lookout lk;
    struct scaf_lookout_client lc;
    struct scaf_capacity cap;
    pid_t child = fork();
    uint64_t start;

    if (child == 0) {
        for (volatile unsigned long i = 0;; i++)
            ;
    }
    CHECK(child > 0, "fork");
    if (child <= 0)
        return;
    scaf_lookout_init(&lk, true, 2);
    scaf_lookout_client_start(&lc, child);
    start = ticks_of(child);
    /* However busy the machine, wait until the child has burned 5 ticks since its baseline. */
    for (int i = 0; i < 1000 && ticks_of(child) < start + 5; i++)
        usleep(10000);
    kill(child, SIGKILL);
    for (int i = 0; i < 1000 && scaf_procfs_exiting(child) == 0; i++)
        usleep(1000);
    scaf_lookout_client_leave(&lk, &lc, child); /* a zombie: its stat is still there */
    CHECK(lk.departed_ticks >= 5, "a departed zombie's ticks since its last sample: %llu",
          (unsigned long long)lk.departed_ticks);
    waitpid(child, NULL, 0);

    /* Gone: half an interval at 100 ticks an interval is about 50. */
    lk.departed_ticks = 0;
    lc.have_ticks = true;
    lc.last_delta = 100;
    lc.last_ns = scaf_clock_ns(CLOCK_MONOTONIC) - 500000000ull;
    scaf_lookout_client_leave(&lk, &lc, child);
    CHECK(lk.departed_ticks >= 50 && lk.departed_ticks <= 100, "estimated: %llu", (unsigned long long)lk.departed_ticks);
    lc.last_ns = scaf_clock_ns(CLOCK_MONOTONIC) - 5000000000ull;
    lk.departed_ticks = 0;
    scaf_lookout_client_leave(&lk, &lc, child);
    CHECK(lk.departed_ticks == 100, "one interval at most: %llu", (unsigned long long)lk.departed_ticks);

    /* The next sample takes it and starts again from nothing. */
    memset(&cap, 0, sizeof cap);
    cap.cpus = 2;
    scaf_lookout_sample(&lk, &cap, 0, 0.0, false);
    CHECK(lk.departed_ticks == 0, "taken by the sample");

    /* --no-lookout: nothing is kept. */
    scaf_lookout_free(&lk);
    scaf_lookout_init(&lk, false, 2);
    scaf_lookout_client_leave(&lk, &lc, child);
    CHECK(lk.departed_ticks == 0, "off: nothing kept");
    scaf_lookout_free(&lk);
}

int main(void)
{
    procstat();
    pidstat();
    foreign();
    maps_mask();
    tbb_path();
    reasons();
    commands();
    foreign_stat();
    foreign_live();
    client_leave();
    available();
    smooth();
    gone_and_ema();
    return check_exit("test_daemon_lookout");
}
