/* pipeline.h — the referee's turn at the end of a loop batch: collect -> decide -> apply -> log (not an installed interface). */
#ifndef SCAFD_PIPELINE_H
#define SCAFD_PIPELINE_H

#include <stdbool.h>

struct scafd;

/* The scratch one turn needs for d->opt.max_clients clients. Returns 0, or -1 with errno = ENOMEM. */
int scaf_pipeline_init(struct scafd *d);
void scaf_pipeline_free(struct scafd *d);

/*
 * Decodes every client's page once (collect) when the referee is due
 * (d->referee_due, or `members`: a client came or went in this batch) or a
 * status reply waits; then, when the referee is due, decides, writes the pages
 * that changed and the gang words (apply), and appends a --log line built from
 * those same reports and allocations when anything changed.
 */
void scaf_pipeline_run(struct scafd *d, bool members);

#endif
