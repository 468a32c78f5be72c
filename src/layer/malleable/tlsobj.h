/* tlsobj.h — the object that holds a region's code: whether it has thread-local storage (threadprivate, __thread), and its identity for the memory. */
#ifndef SCAF_LAYER_TLSOBJ_H
#define SCAF_LAYER_TLSOBJ_H

#include <stdint.h>

/* 1 when the loaded object holding `fn` has a PT_TLS segment, 0 otherwise (or when no object holds it). Cached
 * per object (up to 32); thread-safe. */
int scaf_tlsobj_has_tls(void (*fn)(void *));

/*
 * The identity of the code of `fn` for the daemon's memory (struct
 * scaf_site_memo): its object's build-ID hash (0 when the object has none:
 * its sites are not remembered) and the offset of fn in that object. Returns
 * whether the object has thread-local storage (0 or 1), or -1 when no loaded
 * object holds fn (both outputs 0 then).
 */
int scaf_tlsobj_identify(void (*fn)(void *), uint64_t *object, uint32_t *offset);

/* The cached objects whose code overlaps [lo, hi) are forgotten: that code was unloaded (dlclose). */
void scaf_tlsobj_forget_range(uintptr_t lo, uintptr_t hi);

#endif
