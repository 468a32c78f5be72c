/* scoreboard.h — -t SECS: the table of clients and their threads on stdout (not an installed interface). */
#ifndef SCAFD_SCOREBOARD_H
#define SCAFD_SCOREBOARD_H

#include <stdint.h>
#include <stdio.h>

struct scaf_client;

void scaf_scoreboard_print(struct scaf_client *const *clients, uint32_t nclients, FILE *f);

#endif
