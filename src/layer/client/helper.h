/* helper.h — the one thread the layer adds: page futex, CPU-set affinity, daemon-death detection, reconnect. */
#ifndef SCAF_LAYER_HELPER_H
#define SCAF_LAYER_HELPER_H

/* Start the helper thread (once per process). Returns 0, or -1 with errno from pthread_create. */
int scaf_helper_start(void);

/* Nonzero on the helper thread: its calls into the runtime are not the program's (no evidence, no first touch). */
int scaf_helper_self(void);

/* In a forked child: the helper thread does not exist there; let the child start its own. */
void scaf_helper_forget(void);

#endif
