/* perfctr.c — perf_event_open for PERF_COUNT_HW_INSTRUCTIONS and CPU_CYCLES, with detection and a clean "absent". */
#include "perfctr.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int detected = -1; /* -1 not yet, else the answer */

static int open_one(uint64_t config, int group)
{
    struct perf_event_attr a;

    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = config;
    a.disabled = group < 0; /* the leader starts disabled; members follow it */
    a.exclude_kernel = 1;   /* also what an unprivileged process may count (perf_event_paranoid 2) */
    a.exclude_hv = 1;
    a.read_format = PERF_FORMAT_GROUP;
    return (int)syscall(SYS_perf_event_open, &a, 0 /* this thread */, -1, group, PERF_FLAG_FD_CLOEXEC);
}

int scaf_perfctr_open(struct scaf_perfctr *pc)
{
    int saved;

    pc->leader = open_one(PERF_COUNT_HW_INSTRUCTIONS, -1);
    pc->member = -1;
    if (pc->leader < 0)
        goto fail;
    pc->member = open_one(PERF_COUNT_HW_CPU_CYCLES, pc->leader);
    if (pc->member < 0)
        goto fail;
    return 0;
fail:
    saved = errno;
    scaf_perfctr_close(pc);
    errno = saved;
    return -1;
}

int scaf_perfctr_start(const struct scaf_perfctr *pc)
{
    if (pc->leader < 0) {
        errno = EBADF;
        return -1;
    }
    if (ioctl(pc->leader, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP) < 0)
        return -1;
    return ioctl(pc->leader, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) < 0 ? -1 : 0;
}

int scaf_perfctr_read(const struct scaf_perfctr *pc, uint64_t *ins, uint64_t *cyc)
{
    uint64_t buf[3]; /* nr, instructions, cycles */
    ssize_t n;

    if (pc->leader < 0) {
        errno = EBADF;
        return -1;
    }
    n = read(pc->leader, buf, sizeof buf);
    if (n != (ssize_t)sizeof buf || buf[0] != 2) {
        errno = EIO;
        return -1;
    }
    *ins = buf[1];
    *cyc = buf[2];
    return 0;
}

void scaf_perfctr_close(struct scaf_perfctr *pc)
{
    if (pc->member >= 0)
        close(pc->member);
    if (pc->leader >= 0)
        close(pc->leader);
    pc->leader = pc->member = -1;
}

int scaf_perfctr_detect(int mode)
{
    int d = atomic_load(&detected);
    struct scaf_perfctr pc;
    uint64_t ins = 0, cyc = 0;
    int ok = 0;

    if (d >= 0)
        return d;
    if (mode != 0 && scaf_perfctr_open(&pc) == 0) {
        /* Some hypervisors accept the open and then never count: insist on a nonzero reading. */
        if (scaf_perfctr_start(&pc) == 0) {
            for (volatile int i = 0; i < 10000; i++)
                ;
            ok = scaf_perfctr_read(&pc, &ins, &cyc) == 0 && ins > 0 && cyc > 0;
        }
        scaf_perfctr_close(&pc);
    }
    d = -1;
    atomic_compare_exchange_strong(&detected, &d, ok);
    return atomic_load(&detected);
}

int scaf_perfctr_available(void)
{
    return atomic_load(&detected) > 0;
}
