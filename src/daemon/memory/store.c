/* store.c — one user's remembered programs in memory: lookup by key, addition with least-recently-seen eviction, forgetting. */
#include "store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct scaf_memo_record *scaf_store_find(struct scaf_store *s, uint64_t key)
{
    for (uint32_t i = 0; key && i < s->count; i++)
        if (s->recs[i].key == key)
            return &s->recs[i];
    return NULL;
}

/* Removes record i; the last takes its place (the table has no order). */
static void remove_at(struct scaf_store *s, uint32_t i)
{
    s->recs[i] = s->recs[s->count - 1];
    s->count--;
    scaf_store_changed(s);
}

struct scaf_memo_record *scaf_store_add(struct scaf_store *s, uint64_t key, int64_t now_ns, uint32_t max,
                                             uint64_t *evicted)
{
    struct scaf_memo_record *rec = scaf_store_find(s, key);

    *evicted = 0;
    if (rec)
        return rec;
    if (max == 0)
        max = 1;
    if (s->count >= max) {
        uint32_t i = (uint32_t)scaf_memo_evict_choice(s->recs, s->count);
        *evicted = s->recs[i].key;
        remove_at(s, i);
        /* A table loaded larger than max shrinks on the way (scaf_store_trim does it at load). */
        while (s->count >= max)
            remove_at(s, (uint32_t)scaf_memo_evict_choice(s->recs, s->count));
    }
    if (s->count == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 16;
        struct scaf_memo_record *grown;

        if (cap > max)
            cap = max;
        grown = realloc(s->recs, (size_t)cap * sizeof *grown);
        if (!grown) {
            errno = ENOMEM;
            return NULL;
        }
        s->recs = grown;
        s->cap = cap;
    }
    rec = &s->recs[s->count++];
    scaf_memo_record_init(rec, key, now_ns);
    scaf_store_changed(s);
    return rec;
}

uint32_t scaf_store_forget(struct scaf_store *s, uint64_t key)
{
    struct scaf_memo_record *rec = scaf_store_find(s, key);

    if (!rec)
        return 0;
    remove_at(s, (uint32_t)(rec - s->recs));
    return 1;
}

uint32_t scaf_store_forget_all(struct scaf_store *s)
{
    uint32_t n = s->count;

    s->count = 0;
    if (n)
        scaf_store_changed(s);
    return n;
}

uint32_t scaf_store_trim(struct scaf_store *s, uint32_t max)
{
    uint32_t gone = 0;

    while (s->count > max && s->count > 0) {
        remove_at(s, (uint32_t)scaf_memo_evict_choice(s->recs, s->count));
        gone++;
    }
    return gone;
}

void scaf_store_adopt(struct scaf_store *s, struct scaf_memo_record *recs, uint32_t n)
{
    free(s->recs);
    s->recs = recs;
    s->count = s->cap = recs ? n : 0;
}

void scaf_store_free(struct scaf_store *s)
{
    free(s->recs);
    s->recs = NULL;
    s->count = s->cap = 0;
}
