/* call.h — the one assembly helper of the LLVM adapter (call_x86_64.S). */
#ifndef SCAF_LAYER_KMPC_CALL_H
#define SCAF_LAYER_KMPC_CALL_H

/*
 * Calls fn(args[0], ..., args[n-1]), every argument passed as an integer or
 * pointer, the way a variadic call with those arguments would pass them.
 * `args` must hold at least n + 6 entries (the last six readable, any value).
 * x86-64 only.
 */
void scaf_kmpc_call(void *fn, long n, void *const *args);

#endif
