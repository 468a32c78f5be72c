/* loop.h — scafd's epoll loop (not an installed interface). */
#ifndef SCAFD_LOOP_H
#define SCAFD_LOOP_H

struct scafd;

/* Runs until SIGTERM/SIGINT or --idle-exit. Returns the exit status (0 or 1). */
int scaf_loop_run(struct scafd *d);

#endif
