/* pagewrite.h — the daemon half of a client's shared page: made and sealed, written, the client woken (not an installed interface). */
#ifndef SCAFD_APPLY_PAGEWRITE_H
#define SCAFD_APPLY_PAGEWRITE_H

#include "scaf/proto.h"

#include <stdint.h>

/*
 * A new page: a sealed memfd (the client can neither shrink it, which would be
 * a SIGBUS here, nor grow it), mapped at *out, threads 1 until the referee
 * writes. Returns the memfd for the WELCOME, or -1 with errno.
 */
int scaf_pagewrite_create(uint32_t cpus, struct scaf_page **out);
void scaf_pagewrite_unmap(struct scaf_page *pg);

/* Seqlock write of the daemon half, then a FUTEX_WAKE for the client's helper thread. */
void scaf_pagewrite_alloc(struct scaf_page *pg, uint32_t threads, uint32_t control, const uint64_t *cpuset,
                     uint32_t nclients, uint32_t cpus);
/* The gang word (enum scaf_gang), outside the seqlock; woken only when it changes. */
void scaf_pagewrite_gang(struct scaf_page *pg, uint32_t gang);
/* The idle word, outside the seqlock: 0, or the client's idle period. Nobody waits on it: the layer
 * reads it at each region. */
void scaf_pagewrite_idle(struct scaf_page *pg, uint32_t idle);

/* The daemon's memory half of a page (protocol 6, docs/memory.md). */
struct scaf_page_recall {
    uint32_t start_team; /* the program's share at its arrival; 0 = none */
    uint32_t runs;       /* runs remembered; 0 = nothing known */
    uint32_t verdict;    /* enum scaf_verdict remembered */
    uint32_t source;     /* enum scaf_verdict_source of it */
    uint32_t nsites;     /* entries of sites, at most SCAF_MEMORY_SITES (more are cut) */
    const struct scaf_site_memo *sites;
};

/* Writes the memory half once, before the WELCOME is sent and never after: the layer reads it without a seqlock. */
void scaf_pagewrite_memory(struct scaf_page *pg, const struct scaf_page_recall *m);

#endif
