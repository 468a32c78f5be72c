/* idlewatch.c — while the daemon counts the process idle, whether the CPU it burns without regions is work that wants its share back now. */
#include "idlewatch.h"

#include <string.h>

int scaf_idlewatch_step(struct scaf_idlewatch *w, uint32_t idle, uint64_t now_ns, uint64_t cpu_ns,
                        uint64_t window_ns, double busy_frac)
{
    unsigned i;

    if (idle == 0 || idle != w->period) {
        /* Not idle, or a new idle period: what came before says nothing about this one. */
        memset(w, 0, sizeof *w);
        w->period = idle;
        if (idle == 0)
            return 0;
    }
    if (w->sent)
        return 0;
    if (w->n == SCAF_IDLEWATCH_SAMPLES) {
        memmove(w->at, w->at + 1, (SCAF_IDLEWATCH_SAMPLES - 1) * sizeof w->at[0]);
        memmove(w->cpu, w->cpu + 1, (SCAF_IDLEWATCH_SAMPLES - 1) * sizeof w->cpu[0]);
        w->n--;
    }
    w->at[w->n] = now_ns;
    w->cpu[w->n] = cpu_ns;
    w->n++;
    /* The newest sample at least a window older than this one: the span judged is a whole window or more. */
    for (i = w->n - 1; i-- > 0;) {
        uint64_t span = now_ns - w->at[i];

        if (now_ns < w->at[i] || cpu_ns < w->cpu[i])
            return 0; /* a clock that went back: judge nothing */
        if (span >= window_ns) {
            if ((double)(cpu_ns - w->cpu[i]) > busy_frac * (double)span) {
                w->sent = 1;
                return 1;
            }
            return 0;
        }
    }
    return 0;
}

void scaf_idlewatch_unsent(struct scaf_idlewatch *w)
{
    w->sent = 0;
}
