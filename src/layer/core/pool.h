/* pool.h — thread pools the layer steers between regions (BLAS libraries, Arrow's CPU pool): registration by an adapter, polling by the helper. */
#ifndef SCAF_LAYER_POOL_H
#define SCAF_LAYER_POOL_H

struct scaf_page;

/*
 * One library-owned thread pool whose size is set through the library's own
 * entry point, from the helper thread, whenever the daemon's allocation
 * changes. The adapter that found it fills everything but the core's fields
 * and only uses entry points that its library documents (or its source
 * shows) as safe to call from another thread while a call is running.
 */
struct scaf_pool {
    /* the adapter's part, set before scaf_pool_add */
    const char *lib;                 /* library family, for logs: "openblas", "mkl" */
    char path[160];                  /* the object that defines the entry points (may be truncated) */
    void *set_fn, *get_fn;           /* the library's entry points, called only through the two below */
    void (*set)(const struct scaf_pool *p, unsigned n);
    unsigned (*get)(const struct scaf_pool *p); /* 0 when unknown */
    unsigned bound;                  /* the pool's size when found: never raised above */
    /* the core's part */
    unsigned applied; /* what the pool was last left at (by us, or as found) */
    int fixed;        /* the program set the pool itself: left alone for good */
};

/*
 * An adapter's discovery, run by the helper thread each time the set of
 * loaded objects changed (and once at start). It calls scaf_pool_add for
 * every pool it finds; it must tolerate being run again over the same
 * objects (scaf_pool_add ignores a pool whose set_fn is already known).
 * Up to 4 adapters register one each (the same one twice is once); NULL
 * takes every scanner away (SCAF_BLAS=0).
 */
void scaf_pool_set_scanner(void (*scan)(void));

/* Nonzero when an adapter registered a scanner (the helper then starts at once, not at the first region). */
int scaf_pool_watching(void);

/*
 * Registers a copy of `p` (helper thread only, from the scanner). Returns 1
 * when added, 0 when already known, -1 with errno ENOSPC when the table is full.
 */
int scaf_pool_add(const struct scaf_pool *p);

/*
 * For an adapter whose library tears its pool down at exit (a C++ static: Arrow's CPU pool): called after the
 * adapter's first call into the pool, which built it and so registered its destructor, it registers with atexit
 * a handler that exit() runs before that destructor (handlers run in the reverse order of registration), after
 * which the helper never calls a pool again. Once per process.
 */
void scaf_pool_stop_at_exit(void);

/* A ready `get` for the common getter, `int f(void)` in get_fn (OpenBLAS, MKL, Arrow): 0 for a count below 1. */
unsigned scaf_pool_get_int(const struct scaf_pool *p);

/* Pools registered so far. */
unsigned scaf_pool_count(void);

/* The largest pool bound (0 when none): the HELLO's max_threads covers it. */
unsigned scaf_pool_max_bound(void);

/*
 * Helper thread only, each tick: rescans when the set of loaded objects
 * changed; when `page` is not NULL, applies min(page->threads, bound) to every
 * pool the program has not taken over. Returns the number of pools known.
 */
unsigned scaf_pool_poll(struct scaf_page *page);

#endif
