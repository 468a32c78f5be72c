/* site.c — the per-region-site table the verdict and the estimator share: lock-free insert-only open addressing, no allocation after load. */
#include "site.h"

#include <stddef.h>

static struct scaf_site sites[SCAF_SITE_SLOTS];

static unsigned slot_of(uintptr_t key)
{
    /* Fibonacci hashing: code addresses share low bits (alignment) and high bits (the mapping). */
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;

    return (unsigned)(h >> 40) % SCAF_SITE_SLOTS;
}

struct scaf_site *scaf_site_lookup(void (*fn)(void *), int *fresh)
{
    uintptr_t key = (uintptr_t)fn;
    unsigned i;

    if (key == 0)
        return NULL;
    i = slot_of(key);
    for (unsigned n = 0; n < SCAF_SITE_SLOTS; n++, i = (i + 1) % SCAF_SITE_SLOTS) {
        uintptr_t k = atomic_load_explicit(&sites[i].key, memory_order_acquire);

        if (k == key)
            return &sites[i];
        if (k == 0) {
            uintptr_t expected = 0;

            /* Entries are never removed, so a slot once taken stays the same site forever. */
            if (atomic_compare_exchange_strong_explicit(&sites[i].key, &expected, key, memory_order_acq_rel,
                                                        memory_order_acquire)) {
                *fresh = 1;
                return &sites[i];
            }
            if (expected == key)
                return &sites[i];
        }
    }
    return NULL;
}

unsigned scaf_site_forget_range(uintptr_t lo, uintptr_t hi)
{
    unsigned n = 0;

    for (unsigned i = 0; i < SCAF_SITE_SLOTS; i++) {
        struct scaf_site *s = &sites[i];
        uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);

        if (k == 0 || k < lo || k >= hi)
            continue;
        atomic_store_explicit(&s->verdict, 0, memory_order_relaxed);
        atomic_store_explicit(&s->tls_result, 0, memory_order_relaxed);
        atomic_store_explicit(&s->memo, 0, memory_order_relaxed);
        atomic_store_explicit(&s->instances, 0, memory_order_relaxed);
        atomic_store_explicit(&s->par_ns, 0, memory_order_relaxed);
        atomic_store_explicit(&s->par_threads, 0, memory_order_relaxed);
        atomic_store_explicit(&s->serial_ns, 0, memory_order_relaxed);
        atomic_store_explicit(&s->serial_at_ns, 0, memory_order_relaxed);
        atomic_store_explicit(&s->serial_n, 0.0, memory_order_relaxed);
        atomic_store_explicit(&s->serial_sum, 0.0, memory_order_relaxed);
        atomic_store_explicit(&s->serial_sq, 0.0, memory_order_relaxed);
        atomic_store_explicit(&s->mean_team, 0, memory_order_relaxed);
        atomic_store_explicit(&s->mean_n, 0.0, memory_order_relaxed);
        atomic_store_explicit(&s->mean_sum, 0.0, memory_order_relaxed);
        atomic_store_explicit(&s->mean_at_ns, 0, memory_order_relaxed);
        atomic_store_explicit(&s->next_try_ns, 0, memory_order_relaxed);
        atomic_store_explicit(&s->serial_ins, 0, memory_order_relaxed);
        atomic_store_explicit(&s->serial_cyc, 0, memory_order_relaxed);
        atomic_store_explicit(&s->flags, 0, memory_order_relaxed);
        atomic_store_explicit(&s->failures, 0, memory_order_relaxed);
        atomic_store_explicit(&s->delay_ppm, 0, memory_order_relaxed);
        atomic_store_explicit(&s->busy, 0, memory_order_release);
        n++;
    }
    return n;
}

int scaf_site_claim(struct scaf_site *s)
{
    uint32_t expected = 0;

    return atomic_compare_exchange_strong_explicit(&s->busy, &expected, 1, memory_order_acquire,
                                                   memory_order_relaxed);
}

void scaf_site_release(struct scaf_site *s)
{
    atomic_store_explicit(&s->busy, 0, memory_order_release);
}
