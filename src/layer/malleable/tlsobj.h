/* tlsobj.h — whether the object that holds a region's code has thread-local storage (threadprivate, __thread). */
#ifndef SCAF_LAYER_TLSOBJ_H
#define SCAF_LAYER_TLSOBJ_H

/* 1 when the loaded object holding `fn` has a PT_TLS segment, 0 otherwise (or when no object holds it). Cached
 * per object (up to 32); thread-safe. */
int scaf_tlsobj_has_tls(void (*fn)(void *));

#endif
