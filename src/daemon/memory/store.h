/* store.h — one user's remembered programs in the daemon's memory: found by key, added with eviction, forgotten; no I/O (not an installed interface). */
#ifndef SCAFD_MEMORY_STORE_H
#define SCAFD_MEMORY_STORE_H

#include "memo.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* One user's table: loaded from memory-UID.bin at that user's first HELLO or MEMORY, written back when dirty. */
struct scaf_store {
    uid_t uid;
    struct scaf_memo_record *recs; /* count records, in no particular order */
    uint32_t count;
    uint32_t cap;     /* records allocated */
    bool dirty;       /* changed since it was last written */
    uint64_t changes; /* counts every change: a write that took a snapshot at N leaves it dirty when more came */
    bool failing;     /* the last write failed (said once, until one succeeds) */
    bool unreadable;  /* its file could not be read: neither believed nor replaced, nothing kept */
    double written_at; /* CLOCK_MONOTONIC of the last write attempt: at most one a second */
};

/* Marks a change: the table is written again at the next flush. */
static inline void scaf_store_changed(struct scaf_store *s)
{
    s->dirty = true;
    s->changes++;
}

/* The record of `key`, or NULL. */
struct scaf_memo_record *scaf_store_find(struct scaf_store *s, uint64_t key);

/*
 * The record of `key`, added fresh (scaf_memo_record_init) when there is
 * none: with `max` records already, the least recently seen
 * (scaf_memo_evict_choice) makes room, its key in *evicted (else 0). Returns
 * NULL with errno = ENOMEM when the table cannot grow (nothing changed).
 */
struct scaf_memo_record *scaf_store_add(struct scaf_store *s, uint64_t key, int64_t now_ns, uint32_t max,
                                             uint64_t *evicted);

/* Forgets `key`: 1, or 0 when it was not remembered. */
uint32_t scaf_store_forget(struct scaf_store *s, uint64_t key);
/* Forgets every program; returns how many there were. */
uint32_t scaf_store_forget_all(struct scaf_store *s);
/* Evicts the least recently seen until at most `max` remain (a file from a daemon with a larger
 * --memory-programs); returns how many went. */
uint32_t scaf_store_trim(struct scaf_store *s, uint32_t max);
/* Takes `n` records (a loaded file) as the whole table; `recs` becomes the store's (malloc'd). */
void scaf_store_adopt(struct scaf_store *s, struct scaf_memo_record *recs, uint32_t n);
void scaf_store_free(struct scaf_store *s);

#endif
