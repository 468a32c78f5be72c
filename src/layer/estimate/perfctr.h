/* perfctr.h — hardware instruction and cycle counters through perf_event_open, when the machine offers them. */
#ifndef SCAF_LAYER_PERFCTR_H
#define SCAF_LAYER_PERFCTR_H

#include <stdint.h>

/* A counter group on one thread: instructions (leader) and CPU cycles. */
struct scaf_perfctr {
    int leader; /* -1 when closed */
    int member;
};

/*
 * Detect once whether hardware instructions and cycles can be counted for this
 * process. `mode`: 0 = off (never try), 1 = wanted (try; the caller may say so
 * when it fails), -1 = auto. Returns 1 when available, 0 otherwise. Silent:
 * the caller decides what to report. Later calls return the first answer.
 */
int scaf_perfctr_detect(int mode);

/* The answer of scaf_perfctr_detect (0 before it ran). */
int scaf_perfctr_available(void);

/* Open a disabled group counting the calling thread (user space only). 0, or -1 with errno. */
int scaf_perfctr_open(struct scaf_perfctr *pc);

/* Zero and enable the group. 0, or -1 with errno. */
int scaf_perfctr_start(const struct scaf_perfctr *pc);

/* Read both counts (async-signal-safe: one read(2)). 0, or -1 with errno. */
int scaf_perfctr_read(const struct scaf_perfctr *pc, uint64_t *ins, uint64_t *cyc);

void scaf_perfctr_close(struct scaf_perfctr *pc);

#endif
