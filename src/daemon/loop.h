/* loop.h — scafd's epoll loop (not an installed interface). */
#ifndef SCAFD_LOOP_H
#define SCAFD_LOOP_H

#include <signal.h>

struct scafd;

/* The signals the loop reads through its signalfd: main blocks exactly these before anything else exists. */
void scaf_loop_signals(sigset_t *mask);

/* Runs until SIGTERM/SIGINT, --idle-exit or --exit-with. Returns the exit status (0 or 1). */
int scaf_loop_run(struct scafd *d);

#endif
