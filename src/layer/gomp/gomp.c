/* gomp.c — the GNU OpenMP ABI adapter: wraps GOMP_* and omp_* around the core (libgomp, and libomp's and libiomp5's compatibility names). */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../client/helper.h"
#include "../client/region.h"
#include "../core/blascount.h"
#include "../core/blasobj.h"
#include "../core/resolve.h"
#include "../core/say.h"
#include "../malleable/malleable.h"
#include "gomp.h"

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
    int (*get_num_procs)(void);
    int (*get_num_procs_f)(void);
    int (*get_level)(void);
    int (*get_thread_num)(void);
    int (*get_thread_num_f)(void);
    int (*get_num_threads)(void);
    int (*get_num_threads_f)(void);
};
static struct scaf_real scaf_real;

/* ---- resolving the real entry points ---- */

static const char *const GOMP_LIBS[] = {"libgomp", NULL};

/*
 * The system libgomp comes first: it is our DT_NEEDED, so RTLD_NEXT finds it
 * in the global scope ahead of any bundled copy, and every caller (the
 * program and a wheel's extension modules alike) gets one coherent runtime.
 * The fallbacks only matter for a symbol that the system libgomp is too old
 * to have.
 */
static void *resolve(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);

    if (!f) {
        void *h = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            f = dlsym(h, name);
            dlclose(h);
        }
    }
    if (!f)
        f = scaf_resolve_loaded(GOMP_LIBS, name);
    return f;
}

#define REAL(member, name)                                                                     \
    (__builtin_expect(scaf_real.member != NULL, 1)                                             \
         ? scaf_real.member                                                                    \
         : (__typeof__(scaf_real.member))scaf_resolve_late(&scaf_real.member, resolve, name, "OpenMP runtime"))

static void resolve_all(void)
{
#define R(member, name) scaf_real.member = (__typeof__(scaf_real.member))resolve(name)
    R(parallel, "GOMP_parallel");
    R(parallel_start, "GOMP_parallel_start");
    R(parallel_end, "GOMP_parallel_end");
    R(loop_static, "GOMP_parallel_loop_static");
    R(loop_dynamic, "GOMP_parallel_loop_dynamic");
    R(loop_guided, "GOMP_parallel_loop_guided");
    R(loop_nonmonotonic_dynamic, "GOMP_parallel_loop_nonmonotonic_dynamic");
    R(loop_nonmonotonic_guided, "GOMP_parallel_loop_nonmonotonic_guided");
    R(loop_runtime, "GOMP_parallel_loop_runtime");
    R(loop_nonmonotonic_runtime, "GOMP_parallel_loop_nonmonotonic_runtime");
    R(loop_maybe_nonmonotonic_runtime, "GOMP_parallel_loop_maybe_nonmonotonic_runtime");
    R(loop_static_start, "GOMP_parallel_loop_static_start");
    R(loop_dynamic_start, "GOMP_parallel_loop_dynamic_start");
    R(loop_guided_start, "GOMP_parallel_loop_guided_start");
    R(loop_runtime_start, "GOMP_parallel_loop_runtime_start");
    R(sections, "GOMP_parallel_sections");
    R(sections_start, "GOMP_parallel_sections_start");
    R(reductions, "GOMP_parallel_reductions");
    R(set_num_threads, "omp_set_num_threads");
    R(set_num_threads_f, "omp_set_num_threads_");
    R(set_num_threads_8_f, "omp_set_num_threads_8_");
    R(get_max_threads, "omp_get_max_threads");
    R(get_max_threads_f, "omp_get_max_threads_");
    R(get_num_procs, "omp_get_num_procs");
    R(get_num_procs_f, "omp_get_num_procs_");
    R(get_level, "omp_get_level");
    R(get_thread_num, "omp_get_thread_num");
    R(get_thread_num_f, "omp_get_thread_num_");
    R(get_num_threads, "omp_get_num_threads");
    R(get_num_threads_f, "omp_get_num_threads_");
#undef R
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
/* Set on the thread running init(): what init calls (a BLAS library's pool query at start-up, which may ask the
 * runtime's omp_get_max_threads through our wrapper) must not wait on the pthread_once it is inside. */
static _Thread_local int initialising;

static void init(void)
{
    struct scaf_runtime rt = {0};

    initialising = 1;
    resolve_all();
    rt.level = scaf_real.get_level;
    rt.get_threads = scaf_real.get_max_threads;
    rt.set_threads = scaf_real.set_num_threads;
    /* libgomp's constructor ran first (it is our DT_NEEDED): this is the initial nthreads-var. In
     * libscaf_omp.so the runtime is libomp or libiomp5, which initialises itself on this call. */
    rt.max_threads = scaf_real.get_max_threads ? scaf_real.get_max_threads() : 0;
    if (!scaf_real.parallel || !scaf_real.get_level || !scaf_real.get_max_threads)
        rt.unusable = "no OpenMP runtime's entry points found";
    scaf_region_init(&rt);
    initialising = 0;
}

/*
 * The adapter's initialisation, from an omp_* wrapper (the program's first call may come before our
 * constructor). Returns nonzero when the call is the program's; zero on a thread of the layer's own (init
 * itself, the helper), whose calls are neither evidence nor the program's first touch.
 */
static inline int ensure_init(void)
{
    if (initialising)
        return 0;
    pthread_once(&init_once, init);
    return !scaf_helper_self();
}

void scaf_gomp_init(void)
{
    pthread_once(&init_once, init);
}

/* Connecting is lazy (first outermost region), so the constructor only resolves and reads settings. */
__attribute__((constructor)) static void scaf_layer_ctor(void)
{
    pthread_once(&init_once, init);
}

/* ---- evidence for the malleability verdict (malleable.c) ---- */

static inline int outside_parallel(void)
{
    return REAL(get_level, "omp_get_level")() == 0;
}

/* The program chose its team outside any region: it may depend on it from now on. */
static void note_set(void *caller)
{
    int saved = errno;

    scaf_malleable_set(caller, REAL(get_max_threads, "omp_get_max_threads")());
    errno = saved;
}

/* The program read a count outside any region: evidence, not a verdict. */
static void note_query(void *caller)
{
    int saved = errno;

    scaf_malleable_query(caller);
    errno = saved;
}

/*
 * The program's own count, set before the runtime's: a start team no longer applies (client/start.h).
 * OpenBLAS passing on the count the layer just answered it is not the program's: kept from the runtime
 * (core/blascount.h), so that the program's nthreads-var stays what it is without scaf.
 */
SCAF_EXPORT void omp_set_num_threads(int n)
{
    int program = ensure_init();

    if (program && scaf_blascount_echo(n, __builtin_return_address(0)))
        return;
    if (program)
        scaf_start_touch(SCAF_TOUCH_SET);
    REAL(set_num_threads, "omp_set_num_threads")(n);
    if (program && outside_parallel())
        note_set(__builtin_return_address(0));
}

SCAF_EXPORT void omp_set_num_threads_(const int *n)
{
    int program = ensure_init();

    if (program)
        scaf_start_touch(SCAF_TOUCH_SET);
    REAL(set_num_threads_f, "omp_set_num_threads_")(n);
    if (program && outside_parallel())
        note_set(__builtin_return_address(0));
}

SCAF_EXPORT void omp_set_num_threads_8_(const int64_t *n)
{
    int program = ensure_init();

    if (program)
        scaf_start_touch(SCAF_TOUCH_SET);
    REAL(set_num_threads_8_f, "omp_set_num_threads_8_")(n);
    if (program && outside_parallel())
        note_set(__builtin_return_address(0));
}

/*
 * Returns exactly what plain libgomp returns to the program. The layer changes nthreads-var
 * at one moment only, the program's first touch of the API (this call, if it
 * comes first), and only to start a program that keeps its team with its
 * share, as OMP_NUM_THREADS would have (client/start.h). Outside a region
 * the call is evidence (a count the program may divide work by), not a
 * verdict; inside one it is the task's own ICV. A BLAS library that asks is
 * answered the program's share (core/blascount.h).
 */
SCAF_EXPORT int omp_get_max_threads(void)
{
    int program = ensure_init(), n;
    void *caller = __builtin_return_address(0);

    if (program)
        scaf_start_touch(SCAF_TOUCH_QUERY);
    n = REAL(get_max_threads, "omp_get_max_threads")();
    if (program && outside_parallel()) {
        /* A BLAS library sizing its next call (OpenBLAS does at every call): the share, and not the program's
         * evidence, since its regions keep the team it asks for (core/blascount.h). */
        if (scaf_blasobj_of(caller, NULL) != SCAF_BLASOBJ_NONE)
            return scaf_blascount_answer(n);
        note_query(caller);
    }
    return n;
}

SCAF_EXPORT int omp_get_max_threads_(void)
{
    int program = ensure_init(), n;

    if (program)
        scaf_start_touch(SCAF_TOUCH_QUERY);
    n = REAL(get_max_threads_f, "omp_get_max_threads_")();
    if (program && outside_parallel())
        note_query(__builtin_return_address(0));
    return n;
}

/*
 * What plain libgomp returns, except in a program started with its share:
 * then no more than that share, as inside a cpuset of that many CPUs (where
 * the runtime's own answer would be that count). A program that counts the
 * CPUs through OpenMP after it read its count (data.table's setDTthreads(0),
 * which ignores OMP_NUM_THREADS) then sizes itself by its share too. Not
 * evidence: a count of processors is not a team the program was given.
 */
SCAF_EXPORT int omp_get_num_procs(void)
{
    if (ensure_init())
        scaf_start_touch(SCAF_TOUCH_QUERY);
    return scaf_start_procs(REAL(get_num_procs, "omp_get_num_procs")());
}

SCAF_EXPORT int omp_get_num_procs_(void)
{
    if (ensure_init())
        scaf_start_touch(SCAF_TOUCH_QUERY);
    return scaf_start_procs(REAL(get_num_procs_f, "omp_get_num_procs_")());
}

/* The first call of a region instance counts only at the outermost level; later ones cost two loads. */
static inline void note_tid(void)
{
    unsigned e;

    if (scaf_malleable_tid_new(&e) && scaf_real.get_level && scaf_real.get_level() == 1)
        scaf_malleable_saw_tid(e);
}

static inline void note_nth(void)
{
    unsigned e;

    if (scaf_malleable_nth_new(&e) && scaf_real.get_level && scaf_real.get_level() == 1)
        scaf_malleable_saw_nth(e);
}

/* Inside regions: two loads and a compare per call after the first of each region instance. */
SCAF_EXPORT int omp_get_thread_num(void)
{
    note_tid();
    return REAL(get_thread_num, "omp_get_thread_num")();
}

SCAF_EXPORT int omp_get_thread_num_(void)
{
    note_tid();
    return REAL(get_thread_num_f, "omp_get_thread_num_")();
}

SCAF_EXPORT int omp_get_num_threads(void)
{
    note_nth();
    return REAL(get_num_threads, "omp_get_num_threads")();
}

SCAF_EXPORT int omp_get_num_threads_(void)
{
    note_nth();
    return REAL(get_num_threads_f, "omp_get_num_threads_")();
}

/* ---- team size at a region entry: the core decides ---- */

/*
 * Returns the num_threads argument for the real entry point (the core's
 * scaf_region_begin). `serial`: the entry point again with one thread (a
 * complete serial execution, for the TLS check), NULL where fn(data) is one
 * (FORKABLE) or none is made.
 */
static inline unsigned region_begin(struct scaf_region_rec *r, scaf_fn_t fn, void *data, unsigned num_threads,
                                    unsigned flags, void (*serial)(void *), void *serial_data)
{
    r->run = NULL;
    r->serial = serial;
    r->serial_data = serial_data;
    return scaf_region_begin(r, fn, data, num_threads, flags, scaf_gomp_init);
}

/*
 * The combined entry points again, with one thread: what a TLS check's child
 * runs for a region whose outlined function alone is not the whole region (its
 * work-sharing needs the entry's setup). In a forked child the runtime can
 * run a team of one (no pool thread is needed).
 */
struct serial_call {
    int kind; /* which member of the union below */
    scaf_fn_t fn;
    void *data;
    long start, end, incr, chunk;
    unsigned count, flags;
    union {
        void (*chunked)(scaf_fn_t, void *, unsigned, long, long, long, long, unsigned);
        void (*runtime)(scaf_fn_t, void *, unsigned, long, long, long, unsigned);
        void (*sections)(scaf_fn_t, void *, unsigned, unsigned, unsigned);
        unsigned (*reductions)(scaf_fn_t, void *, unsigned, unsigned);
    } real;
};

enum { SERIAL_CHUNKED, SERIAL_RUNTIME, SERIAL_SECTIONS, SERIAL_REDUCTIONS };

static void serial_run(void *p)
{
    const struct serial_call *c = p;

    switch (c->kind) {
    case SERIAL_CHUNKED:
        c->real.chunked(c->fn, c->data, 1, c->start, c->end, c->incr, c->chunk, c->flags);
        break;
    case SERIAL_RUNTIME:
        c->real.runtime(c->fn, c->data, 1, c->start, c->end, c->incr, c->flags);
        break;
    case SERIAL_SECTIONS:
        c->real.sections(c->fn, c->data, 1, c->count, c->flags);
        break;
    default:
        (void)c->real.reductions(c->fn, c->data, 1, c->flags);
        break;
    }
}

/* ---- combined entry points (gcc >= 4.9 emits these) ---- */

SCAF_EXPORT void GOMP_parallel(scaf_fn_t fn, void *data, unsigned num_threads, unsigned flags)
{
    struct scaf_region_rec r;
    unsigned n = region_begin(&r, fn, data, num_threads, SCAF_REGION_FORKABLE, NULL, NULL);

    REAL(parallel, "GOMP_parallel")(fn, data, n, flags);
    scaf_region_end(&r);
}

SCAF_EXPORT unsigned GOMP_parallel_reductions(scaf_fn_t fn, void *data, unsigned num_threads,
                                              unsigned flags)
{
    struct scaf_region_rec r;
    struct serial_call sc = {.kind = SERIAL_REDUCTIONS, .fn = fn, .data = data, .flags = flags,
                             .real.reductions = REAL(reductions, "GOMP_parallel_reductions")};
    unsigned n = region_begin(&r, fn, data, num_threads, 0, serial_run, &sc);
    unsigned ret = sc.real.reductions(fn, data, n, flags);

    scaf_region_end(&r);
    return ret;
}

SCAF_EXPORT void GOMP_parallel_sections(scaf_fn_t fn, void *data, unsigned num_threads,
                                        unsigned count, unsigned flags)
{
    struct scaf_region_rec r;
    struct serial_call sc = {.kind = SERIAL_SECTIONS, .fn = fn, .data = data, .count = count, .flags = flags,
                             .real.sections = REAL(sections, "GOMP_parallel_sections")};
    unsigned n = region_begin(&r, fn, data, num_threads, 0, serial_run, &sc);

    sc.real.sections(fn, data, n, count, flags);
    scaf_region_end(&r);
}

#define LOOP_CHUNKED(suffix, member)                                                           \
    SCAF_EXPORT void GOMP_parallel_loop_##suffix(scaf_fn_t fn, void *data, unsigned num_threads, \
                                                 long start, long end, long incr, long chunk,  \
                                                 unsigned flags)                               \
    {                                                                                          \
        struct scaf_region_rec r;                                                              \
        struct serial_call sc = {.kind = SERIAL_CHUNKED, .fn = fn, .data = data, .start = start,  \
                                 .end = end, .incr = incr, .chunk = chunk, .flags = flags,        \
                                 .real.chunked = REAL(member, "GOMP_parallel_loop_" #suffix)};    \
        unsigned n = region_begin(&r, fn, data, num_threads, 0, serial_run, &sc);              \
        sc.real.chunked(fn, data, n, start, end, incr, chunk, flags);                          \
        scaf_region_end(&r);                                                                   \
    }

#define LOOP_RUNTIME(suffix, member)                                                           \
    SCAF_EXPORT void GOMP_parallel_loop_##suffix(scaf_fn_t fn, void *data, unsigned num_threads, \
                                                 long start, long end, long incr,              \
                                                 unsigned flags)                               \
    {                                                                                          \
        struct scaf_region_rec r;                                                              \
        struct serial_call sc = {.kind = SERIAL_RUNTIME, .fn = fn, .data = data, .start = start,  \
                                 .end = end, .incr = incr, .flags = flags,                        \
                                 .real.runtime = REAL(member, "GOMP_parallel_loop_" #suffix)};    \
        unsigned n = region_begin(&r, fn, data, num_threads, 0, serial_run, &sc);              \
        sc.real.runtime(fn, data, n, start, end, incr, flags);                                 \
        scaf_region_end(&r);                                                                   \
    }

LOOP_CHUNKED(static, loop_static)
LOOP_CHUNKED(dynamic, loop_dynamic)
LOOP_CHUNKED(guided, loop_guided)
LOOP_CHUNKED(nonmonotonic_dynamic, loop_nonmonotonic_dynamic)
LOOP_CHUNKED(nonmonotonic_guided, loop_nonmonotonic_guided)
LOOP_RUNTIME(runtime, loop_runtime)
LOOP_RUNTIME(nonmonotonic_runtime, loop_nonmonotonic_runtime)
LOOP_RUNTIME(maybe_nonmonotonic_runtime, loop_maybe_nonmonotonic_runtime)

/* ---- split entry points (GOMP 1.0 ABI: old binaries): *_start ... GOMP_parallel_end ---- */

/*
 * The region record lives in a thread-local between _start and _end. `depth`
 * counts split regions started inside ours on this thread (nested, passed
 * through), so that only our own region's _end closes the record.
 */
struct split_region {
    struct scaf_region_rec r;
    int active;
    unsigned depth;
};
static _Thread_local struct split_region split_tls;

static unsigned split_begin(scaf_fn_t fn, void *data, unsigned num_threads)
{
    struct split_region *s = &split_tls;
    unsigned n;

    if (s->active) {
        s->depth++;
        return num_threads;
    }
    n = region_begin(&s->r, fn, data, num_threads, 0, NULL, NULL);
    if (s->r.live) {
        s->active = 1;
        s->depth = 0;
    }
    return n;
}

SCAF_EXPORT void GOMP_parallel_start(scaf_fn_t fn, void *data, unsigned num_threads)
{
    unsigned n = split_begin(fn, data, num_threads);

    REAL(parallel_start, "GOMP_parallel_start")(fn, data, n);
}

SCAF_EXPORT void GOMP_parallel_end(void)
{
    struct split_region *s = &split_tls;

    REAL(parallel_end, "GOMP_parallel_end")();
    if (!s->active)
        return;
    if (s->depth > 0) {
        s->depth--;
        return;
    }
    s->active = 0;
    scaf_region_end(&s->r);
}

SCAF_EXPORT void GOMP_parallel_sections_start(scaf_fn_t fn, void *data, unsigned num_threads,
                                              unsigned count)
{
    unsigned n = split_begin(fn, data, num_threads);

    REAL(sections_start, "GOMP_parallel_sections_start")(fn, data, n, count);
}

#define LOOP_START_CHUNKED(kind)                                                               \
    SCAF_EXPORT void GOMP_parallel_loop_##kind##_start(scaf_fn_t fn, void *data,               \
                                                       unsigned num_threads, long start,       \
                                                       long end, long incr, long chunk)        \
    {                                                                                          \
        unsigned n = split_begin(fn, data, num_threads);                                       \
        REAL(loop_##kind##_start, "GOMP_parallel_loop_" #kind "_start")(fn, data, n, start, end, \
                                                                        incr, chunk);          \
    }

LOOP_START_CHUNKED(static)
LOOP_START_CHUNKED(dynamic)
LOOP_START_CHUNKED(guided)

SCAF_EXPORT void GOMP_parallel_loop_runtime_start(scaf_fn_t fn, void *data, unsigned num_threads,
                                                  long start, long end, long incr)
{
    unsigned n = split_begin(fn, data, num_threads);

    REAL(loop_runtime_start, "GOMP_parallel_loop_runtime_start")(fn, data, n, start, end, incr);
}
