/* idlewatch.h — while the daemon counts the process idle, whether the CPU it burns without regions is work that wants its share back now. */
#ifndef SCAF_LAYER_IDLEWATCH_H
#define SCAF_LAYER_IDLEWATCH_H

#include <stdint.h>

/*
 * The daemon sees an idle client's CPU only at its referee turns (4 Hz), over
 * spans of 0.2 s or more: a burst of serial work without regions (a Python
 * pool worker's garbage collection, 0.3 s of one CPU after a task) was seen
 * after it had mostly run, while the busy clients' teams already filled every
 * CPU. The helper samples the process's CPU time every few tens of
 * milliseconds instead and sends the WAKE a region would send once the CPU
 * burned over the last `window_ns` passes `busy_frac` of it: the daemon's own
 * rule to wake an idle client without a region (over half a context in a span
 * of 0.2 s or more), sampled 10 times as often. Bursts that stay under it
 * (handing a result back) leave the process idle, as the daemon's hysteresis
 * wants.
 */
#define SCAF_IDLEWATCH_SAMPLES 16

struct scaf_idlewatch {
    uint32_t period;                         /* the page's idle word the samples belong to; 0 = not watching */
    int sent;                                /* the WAKE of this period is due or gone: nothing more to judge */
    unsigned n;                              /* samples held, at most SCAF_IDLEWATCH_SAMPLES */
    uint64_t at[SCAF_IDLEWATCH_SAMPLES];     /* monotonic ns, oldest first */
    uint64_t cpu[SCAF_IDLEWATCH_SAMPLES];    /* the process's CPU ns at each */
};

/*
 * One sample: `idle` is the page's idle word now (0 = not idle), `now_ns` and
 * `cpu_ns` the monotonic clock and the process's CPU time. Returns 1 when a
 * WAKE is due for this idle period (once: the caller sends it, and the
 * watch restarts only with the next period), else 0. Pure; no clock read.
 */
int scaf_idlewatch_step(struct scaf_idlewatch *w, uint32_t idle, uint64_t now_ns, uint64_t cpu_ns,
                        uint64_t window_ns, double busy_frac);

/* The WAKE that step asked for could not go (the connection was busy with a reconnect): the next sample that
 * still finds the process busy asks again. */
void scaf_idlewatch_unsent(struct scaf_idlewatch *w);

#endif
