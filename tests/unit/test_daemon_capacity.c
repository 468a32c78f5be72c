/* test_daemon_capacity.c — cgroup cpu.max and CPU-list parsing, and detection on this machine. */
#include "../../src/daemon/collect/capacity.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

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
    CHECK(scaf_capacity_detect(&cap, 0) == 0, "detect: %s", strerror(errno));
    CHECK(cap.cpu_list_len == (uint32_t)CPU_COUNT(&set), "cpu_list_len %u vs affinity %d", cap.cpu_list_len, CPU_COUNT(&set));
    CHECK(cap.cpus >= 1 && cap.cpus <= cap.cpu_list_len, "cpus %u of %u", cap.cpus, cap.cpu_list_len);
    CHECK(cap.quota == 0 || cap.cpus == (cap.quota < cap.cpu_list_len ? cap.quota : cap.cpu_list_len), "quota %u cpus %u", cap.quota,
          cap.cpus);
    CHECK(cap.smt >= 1, "smt %u", cap.smt);
    for (uint32_t i = 0; i + 1 < cap.cpu_list_len; i++)
        CHECK(cap.cpu_list[i] < cap.cpu_list[i + 1], "cpu list ascending");
    CHECK(scaf_capacity_detect(&cap, 37) == 0 && cap.cpus == 37, "override: %u", cap.cpus);
}

int main(void)
{
    cpumax();
    cpulist();
    detect();
    return check_exit("test_daemon_capacity");
}
