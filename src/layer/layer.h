/* layer.h — declarations shared by the preload layer's files (gomp.c, conn.c, helper.c, bound.c). */
#ifndef SCAF_LAYER_LAYER_H
#define SCAF_LAYER_LAYER_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "scaf/proto.h"

/* Everything in the layer is hidden except the interposed entry points. */
#define SCAF_EXPORT __attribute__((visibility("default")))

typedef void (*scaf_fn_t)(void *);

/*
 * The real libgomp entry points, resolved once. A NULL member means libgomp
 * lacks that symbol (an older libgomp): the matching wrapper then reports it
 * and aborts, since there is nothing to pass the call to.
 */
struct scaf_real {
    void (*parallel)(scaf_fn_t, void *, unsigned, unsigned);
    void (*parallel_start)(scaf_fn_t, void *, unsigned);
    void (*parallel_end)(void);
    void (*loop_static)(scaf_fn_t, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_dynamic)(scaf_fn_t, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_guided)(scaf_fn_t, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_nonmonotonic_dynamic)(scaf_fn_t, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_nonmonotonic_guided)(scaf_fn_t, void *, unsigned, long, long, long, long, unsigned);
    void (*loop_runtime)(scaf_fn_t, void *, unsigned, long, long, long, unsigned);
    void (*loop_nonmonotonic_runtime)(scaf_fn_t, void *, unsigned, long, long, long, unsigned);
    void (*loop_maybe_nonmonotonic_runtime)(scaf_fn_t, void *, unsigned, long, long, long, unsigned);
    void (*loop_static_start)(scaf_fn_t, void *, unsigned, long, long, long, long);
    void (*loop_dynamic_start)(scaf_fn_t, void *, unsigned, long, long, long, long);
    void (*loop_guided_start)(scaf_fn_t, void *, unsigned, long, long, long, long);
    void (*loop_runtime_start)(scaf_fn_t, void *, unsigned, long, long, long);
    void (*sections)(scaf_fn_t, void *, unsigned, unsigned, unsigned);
    void (*sections_start)(scaf_fn_t, void *, unsigned, unsigned);
    unsigned (*reductions)(scaf_fn_t, void *, unsigned, unsigned);
    void (*set_num_threads)(int);
    void (*set_num_threads_f)(const int *);
    void (*set_num_threads_8_f)(const int64_t *);
    int (*get_max_threads)(void);
    int (*get_max_threads_f)(void);
    int (*get_level)(void);
    int (*get_thread_num)(void);
    int (*get_thread_num_f)(void);
    int (*get_num_threads)(void);
    int (*get_num_threads_f)(void);
};
extern struct scaf_real scaf_real;

/*
 * The page the region wrappers read, NULL while the layer is inert. Published
 * with release order once mapped; an old page stays mapped forever after a
 * reconnect because a region thread may still be reading it.
 */
extern _Atomic(struct scaf_page *) scaf_layer_page;

/* Nonzero with SCAF_VERBOSE=1: diagnostics on stderr. The layer is silent otherwise. */
extern int scaf_layer_verbose;

/* Diagnostics to stderr when SCAF_VERBOSE=1 (async-signal-safe write, no stdio). */
void scaf_layer_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* bound.c: what the program could have seen at startup. Call scaf_bound_init once, early. */
void scaf_bound_init(void);
unsigned scaf_bound_threads(void);                 /* initial nthreads-var, >= 1 */
const cpu_set_t *scaf_bound_affinity(void);        /* affinity mask at startup */

#endif
