/* test_daemon_capacity.c — cgroup quota and CPU-list parsing, quotas read from fake v1/v2 cgroup trees, and detection on this machine. */
#include "../../src/daemon/collect/capacity.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static void cpumax(void)
{
    static const struct {
        const char *text;
        int rc;
        uint32_t limit;
    } cases[] = {
        {"max 100000\n", 0, 0},
        {"200000 100000\n", 0, 2},
        {"150000 100000\n", 0, 2}, /* 1.5 CPUs: rounded up */
        {"100000 100000", 0, 1},
        {"1000 100000\n", 0, 1},   /* a sliver is still one context */
        {"1600000 100000\n", 0, 16},
        {"", -1, 0},
        {"max\n", -1, 0},
        {"abc 100000\n", -1, 0},
        {"100000 0\n", -1, 0},
        {"0 100000\n", -1, 0},
        {"-5 100000\n", -1, 0},
        {"100000 100000 7\n", -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t lim = 12345;
        int rc;
        errno = 0;
        rc = scaf_cpumax_parse(cases[i].text, &lim);
        CHECK(rc == cases[i].rc, "cpumax '%s': rc %d, want %d", cases[i].text, rc, cases[i].rc);
        if (rc == 0)
            CHECK(lim == cases[i].limit, "cpumax '%s': %u, want %u", cases[i].text, lim, cases[i].limit);
        else
            CHECK(errno == EINVAL, "cpumax '%s': errno %d", cases[i].text, errno);
    }
    CHECK(scaf_cpumax_parse(NULL, &(uint32_t){0}) == -1, "NULL accepted");
}

static void cfs_quota(void)
{
    static const struct {
        const char *quota, *period;
        int rc;
        uint32_t limit;
    } cases[] = {
        {"-1\n", "100000\n", 0, 0},
        {"200000\n", "100000\n", 0, 2},
        {"150000\n", "100000\n", 0, 2},
        {"50000\n", "100000\n", 0, 1},
        {"100000", "50000", 0, 2},
        {"", "100000\n", -1, 0},
        {"abc\n", "100000\n", -1, 0},
        {"0\n", "100000\n", -1, 0},
        {"-2\n", "100000\n", -1, 0},
        {"100000\n", "0\n", -1, 0},
        {"100000\n", "-5\n", -1, 0},
        {"100000 7\n", "100000\n", -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t lim = 12345;
        int rc;
        errno = 0;
        rc = scaf_cfs_quota_parse(cases[i].quota, cases[i].period, &lim);
        CHECK(rc == cases[i].rc, "cfs '%s'/'%s': rc %d, want %d", cases[i].quota, cases[i].period, rc, cases[i].rc);
        if (rc == 0)
            CHECK(lim == cases[i].limit, "cfs '%s': %u, want %u", cases[i].quota, lim, cases[i].limit);
        else
            CHECK(errno == EINVAL, "cfs '%s': errno %d", cases[i].quota, errno);
    }
    CHECK(scaf_cfs_quota_parse(NULL, "100000", &(uint32_t){0}) == -1, "NULL accepted");
}

/* Writes text to root/rel, creating the directories on the way. */
static void put(const char *root, const char *rel, const char *text)
{
    char path[1024];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    f = fopen(path, "w");
    CHECK(f != NULL, "create %s", path);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

#define V1_MOUNTS                                                                                  \
    "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"                                   \
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw shared:9 - cgroup cgroup rw,cpu,cpuacct\n"          \
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"                             \
    "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
#define V1_CPU "sys/fs/cgroup/cpu,cpuacct"
#define V2_MOUNTS "25 23 0:22 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"

/* Fake trees: /proc/self/{cgroup,mountinfo} and the cgroup files they lead to, under a temp root. */
static void trees(void)
{
    static const struct {
        const char *what;
        const char *files[8][2]; /* path under root, content; {NULL} ends */
        int version;
        uint32_t limit;
        const char *file; /* where the winning quota is, under root */
    } cases[] = {
        {"v1 quota on our cgroup",
         {{"proc/self/cgroup", "4:cpuset:/\n3:cpu,cpuacct:/batch/job1\n0::/\n"},
          {"proc/self/mountinfo", V1_MOUNTS},
          {V1_CPU "/batch/job1/cpu.cfs_quota_us", "200000\n"},
          {V1_CPU "/batch/job1/cpu.cfs_period_us", "100000\n"},
          {V1_CPU "/batch/cpu.cfs_quota_us", "-1\n"},
          {V1_CPU "/batch/cpu.cfs_period_us", "100000\n"}},
         1, 2, V1_CPU "/batch/job1/cpu.cfs_quota_us"},
        {"v1 nested: the parent's smaller quota wins",
         {{"proc/self/cgroup", "3:cpu,cpuacct:/batch/job1\n"},
          {"proc/self/mountinfo", V1_MOUNTS},
          {V1_CPU "/batch/job1/cpu.cfs_quota_us", "300000\n"},
          {V1_CPU "/batch/job1/cpu.cfs_period_us", "100000\n"},
          {V1_CPU "/batch/cpu.cfs_quota_us", "75000\n"},
          {V1_CPU "/batch/cpu.cfs_period_us", "50000\n"}},
         1, 2, V1_CPU "/batch/cpu.cfs_quota_us"},
        {"v1 nested: our own smaller quota wins",
         {{"proc/self/cgroup", "3:cpu,cpuacct:/batch/job1\n"},
          {"proc/self/mountinfo", V1_MOUNTS},
          {V1_CPU "/batch/job1/cpu.cfs_quota_us", "100000\n"},
          {V1_CPU "/batch/job1/cpu.cfs_period_us", "100000\n"},
          {V1_CPU "/batch/cpu.cfs_quota_us", "400000\n"},
          {V1_CPU "/batch/cpu.cfs_period_us", "100000\n"}},
         1, 1, V1_CPU "/batch/job1/cpu.cfs_quota_us"},
        {"v1 without a quota",
         {{"proc/self/cgroup", "3:cpu,cpuacct:/\n"},
          {"proc/self/mountinfo", V1_MOUNTS},
          {V1_CPU "/cpu.cfs_quota_us", "-1\n"},
          {V1_CPU "/cpu.cfs_period_us", "100000\n"}},
         1, 0, ""},
        {"v1 beats an empty unified hierarchy (hybrid host)",
         {{"proc/self/cgroup", "3:cpu,cpuacct:/a\n0::/a\n"},
          {"proc/self/mountinfo", V1_MOUNTS},
          {V1_CPU "/a/cpu.cfs_quota_us", "500000\n"},
          {V1_CPU "/a/cpu.cfs_period_us", "100000\n"},
          {"sys/fs/cgroup/unified/a/cpu.max", "100000 100000\n"}},
         1, 5, V1_CPU "/a/cpu.cfs_quota_us"},
        {"v1 container: the mount's root is our cgroup's ancestor",
         {{"proc/self/cgroup", "3:cpu,cpuacct:/docker/abc/sub\n"},
          {"proc/self/mountinfo", "32 31 0:29 /docker/abc /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct\n"},
          {"sys/fs/cgroup/cpu/sub/cpu.cfs_quota_us", "-1\n"},
          {"sys/fs/cgroup/cpu/sub/cpu.cfs_period_us", "100000\n"},
          {"sys/fs/cgroup/cpu/cpu.cfs_quota_us", "250000\n"},
          {"sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n"}},
         1, 3, "sys/fs/cgroup/cpu/cpu.cfs_quota_us"},
        {"v1 unreadable quota text is no quota",
         {{"proc/self/cgroup", "3:cpu:/x\n"},
          {"proc/self/mountinfo", "32 31 0:29 / /cg/cpu rw - cgroup cgroup rw,cpu\n"},
          {"cg/cpu/x/cpu.cfs_quota_us", "lots\n"},
          {"cg/cpu/x/cpu.cfs_period_us", "100000\n"}},
         1, 0, ""},
        {"v2 quota on our cgroup",
         {{"proc/self/cgroup", "0::/user.slice/job\n"},
          {"proc/self/mountinfo", V2_MOUNTS},
          {"sys/fs/cgroup/user.slice/job/cpu.max", "300000 100000\n"},
          {"sys/fs/cgroup/user.slice/cpu.max", "max 100000\n"}},
         2, 3, "sys/fs/cgroup/user.slice/job/cpu.max"},
        {"v2 nested: the grandparent's smaller quota wins",
         {{"proc/self/cgroup", "0::/a/b/c\n"},
          {"proc/self/mountinfo", V2_MOUNTS},
          {"sys/fs/cgroup/a/b/c/cpu.max", "max 100000\n"},
          {"sys/fs/cgroup/a/b/cpu.max", "800000 100000\n"},
          {"sys/fs/cgroup/a/cpu.max", "150000 100000\n"}},
         2, 2, "sys/fs/cgroup/a/cpu.max"},
        {"v2 without cpu.max files (controller not enabled)",
         {{"proc/self/cgroup", "0::/a\n"}, {"proc/self/mountinfo", V2_MOUNTS}, {"sys/fs/cgroup/a/cgroup.procs", ""}},
         2, 0, ""},
        {"no cgroup cpu controller mounted",
         {{"proc/self/cgroup", "3:cpu,cpuacct:/a\n0::/a\n"},
          {"proc/self/mountinfo", "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"}},
         0, 0, ""},
        {"no /proc/self/cgroup", {{"proc/self/mountinfo", V2_MOUNTS}}, 0, 0, ""},
        {"a v1 controller named like cpu is not cpu",
         {{"proc/self/cgroup", "3:cpuset:/a\n"},
          {"proc/self/mountinfo", "34 31 0:31 / /cg/cpuset rw - cgroup cgroup rw,cpuset\n"},
          {"cg/cpuset/a/cpu.cfs_quota_us", "100000\n"},
          {"cg/cpuset/a/cpu.cfs_period_us", "100000\n"}},
         0, 0, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char root[] = "/tmp/scaf-cgroup-XXXXXX", want[1024], cmd[1100];
        struct scaf_cgroup_quota q;

        if (!mkdtemp(root)) {
            fail("mkdtemp", strerror(errno));
            return;
        }
        for (size_t f = 0; f < 8 && cases[i].files[f][0]; f++)
            put(root, cases[i].files[f][0], cases[i].files[f][1]);
        scaf_cgroup_quota_read(root, &q);
        CHECK(q.version == cases[i].version, "%s: version %d, want %d", cases[i].what, q.version, cases[i].version);
        CHECK(q.limit == cases[i].limit, "%s: limit %u, want %u", cases[i].what, q.limit, cases[i].limit);
        if (cases[i].file[0])
            snprintf(want, sizeof want, "%s/%s", root, cases[i].file);
        else
            want[0] = '\0';
        CHECK(strcmp(q.file, want) == 0, "%s: file '%s', want '%s'", cases[i].what, q.file, want);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        CHECK(system(cmd) == 0, "rm %s", root);
    }
}

static void cpulist(void)
{
    int cpus[16];
    int n;

    n = scaf_cpulist_parse("0-3,8,10-11\n", cpus, 16);
    CHECK(n == 7, "0-3,8,10-11: %d", n);
    CHECK(n == 7 && cpus[0] == 0 && cpus[3] == 3 && cpus[4] == 8 && cpus[5] == 10 && cpus[6] == 11, "order");
    CHECK(scaf_cpulist_parse("5", cpus, 16) == 1 && cpus[0] == 5, "single");
    CHECK(scaf_cpulist_parse("0,64\n", cpus, 16) == 2 && cpus[1] == 64, "sparse");
    CHECK(scaf_cpulist_parse("", cpus, 16) == 0, "empty list is zero CPUs");
    errno = 0;
    CHECK(scaf_cpulist_parse("3-1", cpus, 16) == -1 && errno == EINVAL, "reversed range");
    CHECK(scaf_cpulist_parse("a", cpus, 16) == -1, "letters");
    CHECK(scaf_cpulist_parse("1-", cpus, 16) == -1, "open range");
    CHECK(scaf_cpulist_parse("1;2", cpus, 16) == -1, "bad separator");
    errno = 0;
    CHECK(scaf_cpulist_parse("0-99", cpus, 16) == -1 && errno == E2BIG, "too many");
}

static void detect(void)
{
    struct scaf_capacity cap;
    cpu_set_t set;

    CPU_ZERO(&set);
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0, "sched_getaffinity");
    CHECK(scaf_capacity_detect(&cap, 0, NULL) == 0, "detect: %s", strerror(errno));
    CHECK(cap.cpu_list_len == (uint32_t)CPU_COUNT(&set), "cpu_list_len %u vs affinity %d", cap.cpu_list_len, CPU_COUNT(&set));
    CHECK(cap.cpus >= 1 && cap.cpus <= cap.cpu_list_len, "cpus %u of %u", cap.cpus, cap.cpu_list_len);
    CHECK(cap.quota == 0 || cap.cpus == (cap.quota < cap.cpu_list_len ? cap.quota : cap.cpu_list_len), "quota %u cpus %u", cap.quota,
          cap.cpus);
    CHECK(cap.smt >= 1, "smt %u", cap.smt);
    for (uint32_t i = 0; i + 1 < cap.cpu_list_len; i++)
        CHECK(cap.cpu_list[i] < cap.cpu_list[i + 1], "cpu list ascending");
    CHECK(scaf_capacity_detect(&cap, 37, NULL) == 0 && cap.cpus == 37, "override: %u", cap.cpus);
    /* This machine's own cgroups, read-only: whatever version it runs, a quota names its file. */
    CHECK(scaf_capacity_detect(&cap, 0, "/") == 0, "detect at /");
    CHECK((cap.quota == 0) == (cap.quota_file[0] == '\0'), "quota %u file '%s'", cap.quota, cap.quota_file);
    CHECK(cap.cgroup_version >= 0 && cap.cgroup_version <= 2, "version %d", cap.cgroup_version);
}

int main(void)
{
    cpumax();
    cfs_quota();
    trees();
    cpulist();
    detect();
    return check_exit("test_daemon_capacity");
}
