/* resolve.h — an entry point from the loaded objects of one runtime, for when RTLD_NEXT does not reach it. */
#ifndef SCAF_LAYER_RESOLVE_H
#define SCAF_LAYER_RESOLVE_H

/*
 * Looks `name` up in each loaded object whose file name starts with one of
 * `prefixes` (NULL-terminated; "libgomp" also matches a wheel's renamed
 * "libgomp-a34b3233.so.1"), in load order. Returns the address, or NULL
 * when no such object has it. Safe from any thread: the names are copied
 * out of dl_iterate_phdr first and opened (RTLD_NOLOAD) only after it
 * returns, so the loader's lock is never taken inside its own walk.
 */
void *scaf_resolve_loaded(const char *const *prefixes, const char *name);

/*
 * Resolves `name` with `resolve` and stores it into `slot` (a function
 * pointer's storage), for an entry point first called after start-up. When
 * no loaded `runtime` has it, nothing can run the call: says so on stderr and
 * aborts, as the program would have failed to link without the layer.
 */
void *scaf_resolve_late(void *slot, void *(*resolve)(const char *name), const char *name, const char *runtime);

#endif
