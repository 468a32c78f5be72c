/* gomp.c — the interposed libgomp entry points: pick each outermost region's team size from the page. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "estimate.h"
#include "layer.h"
#include "malleable.h"

struct scaf_real scaf_real;
_Atomic(struct scaf_page *) scaf_layer_page;
int scaf_layer_verbose;

void scaf_layer_log(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n;

    if (!scaf_layer_verbose)
        return;
    n = snprintf(buf, sizeof buf, "scaf[%d]: ", (int)getpid());
    va_start(ap, fmt);
    n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    /* Errors writing diagnostics are not the program's problem. */
    if (write(STDERR_FILENO, buf, (size_t)n) < 0)
        return;
}

/* ---- resolving the real entry points ---- */

struct gomp_search {
    const char *name;
    void *found;
};

/* Any other loaded libgomp (a wheel's bundled, renamed copy) that has `name`. */
static int search_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct gomp_search *s = arg;
    void *h;

    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libgomp"))
        return 0;
    h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    s->found = dlsym(h, s->name);
    dlclose(h);
    return s->found != NULL;
}

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
    if (!f) {
        struct gomp_search s = {name, NULL};
        dl_iterate_phdr(search_loaded, &s);
        f = s.found;
    }
    return f;
}

/* Only reached when no loaded libgomp has the entry the program called: nothing can run the region. */
static void *resolve_or_die(const char *name)
{
    void *f = resolve(name);

    if (!f) {
        char msg[160];
        int n = snprintf(msg, sizeof msg, "scaf: no libgomp in this process provides %s\n", name);
        if (write(STDERR_FILENO, msg, (size_t)n) < 0)
            abort();
        abort();
    }
    return f;
}

/* Stores the late-resolved entry into its (function pointer) slot and returns it. */
static void *resolve_late(void *slot, const char *name)
{
    void *f = resolve_or_die(name);

    memcpy(slot, &f, sizeof f);
    return f;
}

#define REAL(member, name)                                                                     \
    (__builtin_expect(scaf_real.member != NULL, 1)                                             \
         ? scaf_real.member                                                                    \
         : (__typeof__(scaf_real.member))resolve_late(&scaf_real.member, name))

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
    R(get_level, "omp_get_level");
    R(get_thread_num, "omp_get_thread_num");
    R(get_thread_num_f, "omp_get_thread_num_");
    R(get_num_threads, "omp_get_num_threads");
    R(get_num_threads_f, "omp_get_num_threads_");
#undef R
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void)
{
    const char *v = getenv("SCAF_VERBOSE");

    scaf_layer_verbose = v && *v && strcmp(v, "0") != 0;
    resolve_all();
    if (!scaf_real.parallel || !scaf_real.get_level || !scaf_real.get_max_threads) {
        /* Without these nothing can be steered; the wrappers still pass through by name. */
        scaf_layer_log("libgomp entry points not found: inert");
        atomic_store(&scaf_conn_state, SCAF_CONN_INERT);
    }
    scaf_bound_init();
    scaf_malleable_init();
    scaf_conn_init();
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

SCAF_EXPORT void omp_set_num_threads(int n)
{
    pthread_once(&init_once, init);
    REAL(set_num_threads, "omp_set_num_threads")(n);
    if (outside_parallel())
        note_set(__builtin_return_address(0));
}

SCAF_EXPORT void omp_set_num_threads_(const int *n)
{
    pthread_once(&init_once, init);
    REAL(set_num_threads_f, "omp_set_num_threads_")(n);
    if (outside_parallel())
        note_set(__builtin_return_address(0));
}

SCAF_EXPORT void omp_set_num_threads_8_(const int64_t *n)
{
    pthread_once(&init_once, init);
    REAL(set_num_threads_8_f, "omp_set_num_threads_8_")(n);
    if (outside_parallel())
        note_set(__builtin_return_address(0));
}

/*
 * Returns exactly what plain libgomp returns: the layer never changes
 * nthreads-var. Outside a region the call is evidence (a count the program
 * may divide work by), not a verdict; inside one it is the task's own ICV.
 */
SCAF_EXPORT int omp_get_max_threads(void)
{
    int n = REAL(get_max_threads, "omp_get_max_threads")();

    if (outside_parallel())
        note_query(__builtin_return_address(0));
    return n;
}

SCAF_EXPORT int omp_get_max_threads_(void)
{
    int n = REAL(get_max_threads_f, "omp_get_max_threads_")();

    if (outside_parallel())
        note_query(__builtin_return_address(0));
    return n;
}

/* Inside regions: two loads and a compare per call after the first of each region instance. */
SCAF_EXPORT int omp_get_thread_num(void)
{
    scaf_malleable_tid_call();
    return REAL(get_thread_num, "omp_get_thread_num")();
}

SCAF_EXPORT int omp_get_thread_num_(void)
{
    scaf_malleable_tid_call();
    return REAL(get_thread_num_f, "omp_get_thread_num_")();
}

SCAF_EXPORT int omp_get_num_threads(void)
{
    scaf_malleable_nth_call();
    return REAL(get_num_threads, "omp_get_num_threads")();
}

SCAF_EXPORT int omp_get_num_threads_(void)
{
    scaf_malleable_nth_call();
    return REAL(get_num_threads_f, "omp_get_num_threads_")();
}

/* ---- team size at a region entry ---- */

/* One outermost region instance, from its wrapper's entry to its exit. */
struct region_rec {
    struct scaf_region est;     /* the estimator's record */
    struct scaf_mall_region mall;
    unsigned team;              /* the team it ran with (libgomp's own count when not ours) */
    unsigned char live;         /* connected and outermost: region_end has work to do */
    unsigned char est_on;       /* the estimator timed it */
};

/*
 * Another gang's turn (docs/daemon.md, "Fixed teams"): hold this region until
 * ours comes. The whole team is parked where it would be between regions, so
 * no thread is interrupted. Bounded: a daemon that died mid-turn costs at most
 * GANG_WAIT_MAX_MS per region until the helper reconnects.
 */
#define GANG_WAIT_MAX_MS 1000
__attribute__((noinline)) static void gang_wait(struct scaf_page *p)
{
    struct timespec slice = {0, 50 * 1000 * 1000};
    int saved = errno;

    for (int waited = 0; waited < GANG_WAIT_MAX_MS; waited += 50) {
        if (atomic_load_explicit(&p->gang, memory_order_acquire) != SCAF_GANG_WAIT ||
            atomic_load_explicit(&scaf_layer_page, memory_order_acquire) != p)
            break;
        /* Shared futex: the daemon, another process, wakes it. */
        syscall(SYS_futex, &p->gang, FUTEX_WAIT, SCAF_GANG_WAIT, &slice, NULL, 0);
    }
    errno = saved;
}

/* Connected: the verdict says how the team is chosen; for a steered one, the page decides. */
static inline unsigned begin_live(struct scaf_page *p, struct region_rec *r, scaf_fn_t fn,
                                  void *data, unsigned num_threads, int forkable)
{
    unsigned t = 0;

    if (__builtin_expect(scaf_estimate_in_child(), 0))
        return 1;
    if (REAL(get_level, "omp_get_level")() != 0)
        return num_threads; /* nested: untouched */
    if (__builtin_expect(atomic_load_explicit(&p->gang, memory_order_relaxed) == SCAF_GANG_WAIT, 0))
        gang_wait(p);
    atomic_fetch_add_explicit(&p->regions, 1, memory_order_relaxed);
    r->live = 1;
    switch (scaf_malleable_region_begin(&r->mall, fn, num_threads != 0, &t)) {
    case SCAF_TEAM_KEEP:
        /* An explicit clause (an if(false) gives 1) or a fixed team: libgomp's count stands. */
        r->team = num_threads ? num_threads : scaf_malleable_fixed_team();
        atomic_store_explicit(&p->last_team, r->team, memory_order_relaxed);
        return num_threads ? num_threads : scaf_malleable_request(0);
    case SCAF_TEAM_WATCH:
        /* First look at a suspect site: the team the program has seen, libgomp's own count. */
        r->team = scaf_malleable_watch_team();
        atomic_store_explicit(&p->last_team, r->team, memory_order_relaxed);
        return scaf_malleable_request(num_threads);
    case SCAF_TEAM_CHECK:
        r->team = t;
        atomic_store_explicit(&p->last_team, t, memory_order_relaxed);
        return t;
    default:
        break;
    }
    t = atomic_load_explicit(&p->threads, memory_order_relaxed);
    if (t > scaf_malleable_cap())
        t = scaf_malleable_cap();
    if (t == 0)
        t = 1;
    t = scaf_estimate_begin(&r->est, fn, data, t, forkable);
    if (t == 0)
        t = 1;
    r->est_on = 1;
    r->team = t;
    atomic_store_explicit(&p->last_team, t, memory_order_relaxed);
    return t;
}

/* Not connected yet (or in a forked child): initialise, maybe connect, then decide. */
__attribute__((noinline)) static unsigned begin_slow(struct region_rec *r, scaf_fn_t fn,
                                                     void *data, unsigned num_threads, int forkable)
{
    struct scaf_page *p;
    int saved = errno;

    pthread_once(&init_once, init);
    if (scaf_estimate_in_child())
        return 1;
    p = atomic_load_explicit(&scaf_layer_page, memory_order_acquire);
    if (!p && atomic_load(&scaf_conn_state) == SCAF_CONN_UNTRIED &&
        REAL(get_level, "omp_get_level")() == 0)
        p = scaf_conn_first();
    errno = saved;
    if (!p)
        return num_threads;
    return begin_live(p, r, fn, data, num_threads, forkable);
}

/*
 * Returns the num_threads argument for the real entry point. Inert: one load
 * and one branch, and the original argument goes straight through.
 */
static inline unsigned region_begin(struct region_rec *r, scaf_fn_t fn, void *data,
                                    unsigned num_threads, int forkable)
{
    struct scaf_page *p = atomic_load_explicit(&scaf_layer_page, memory_order_acquire);

    r->live = 0;
    r->est_on = 0;
    if (__builtin_expect(p != NULL, 1))
        return begin_live(p, r, fn, data, num_threads, forkable);
    if (__builtin_expect(atomic_load_explicit(&scaf_conn_state, memory_order_relaxed) ==
                             SCAF_CONN_INERT, 1))
        return num_threads;
    return begin_slow(r, fn, data, num_threads, forkable);
}

/* After the real entry point returned: judge the evidence, then let the estimator time it. */
static inline void region_end(struct region_rec *r)
{
    if (!r->live)
        return;
    scaf_malleable_region_end(&r->mall, r->team);
    if (r->est_on)
        scaf_estimate_end(&r->est);
}

/* ---- combined entry points (gcc >= 4.9 emits these) ---- */

SCAF_EXPORT void GOMP_parallel(scaf_fn_t fn, void *data, unsigned num_threads, unsigned flags)
{
    struct region_rec r;
    unsigned n = region_begin(&r, fn, data, num_threads, 1);

    REAL(parallel, "GOMP_parallel")(fn, data, n, flags);
    region_end(&r);
}

SCAF_EXPORT unsigned GOMP_parallel_reductions(scaf_fn_t fn, void *data, unsigned num_threads,
                                              unsigned flags)
{
    struct region_rec r;
    unsigned n = region_begin(&r, fn, data, num_threads, 0);
    unsigned ret = REAL(reductions, "GOMP_parallel_reductions")(fn, data, n, flags);

    region_end(&r);
    return ret;
}

SCAF_EXPORT void GOMP_parallel_sections(scaf_fn_t fn, void *data, unsigned num_threads,
                                        unsigned count, unsigned flags)
{
    struct region_rec r;
    unsigned n = region_begin(&r, fn, data, num_threads, 0);

    REAL(sections, "GOMP_parallel_sections")(fn, data, n, count, flags);
    region_end(&r);
}

#define LOOP_CHUNKED(suffix, member)                                                           \
    SCAF_EXPORT void GOMP_parallel_loop_##suffix(scaf_fn_t fn, void *data, unsigned num_threads, \
                                                 long start, long end, long incr, long chunk,  \
                                                 unsigned flags)                               \
    {                                                                                          \
        struct region_rec r;                                                                   \
        unsigned n = region_begin(&r, fn, data, num_threads, 0);                               \
        REAL(member, "GOMP_parallel_loop_" #suffix)(fn, data, n, start, end, incr, chunk, flags); \
        region_end(&r);                                                                        \
    }

#define LOOP_RUNTIME(suffix, member)                                                           \
    SCAF_EXPORT void GOMP_parallel_loop_##suffix(scaf_fn_t fn, void *data, unsigned num_threads, \
                                                 long start, long end, long incr,              \
                                                 unsigned flags)                               \
    {                                                                                          \
        struct region_rec r;                                                                   \
        unsigned n = region_begin(&r, fn, data, num_threads, 0);                               \
        REAL(member, "GOMP_parallel_loop_" #suffix)(fn, data, n, start, end, incr, flags);     \
        region_end(&r);                                                                        \
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
    struct region_rec r;
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
    n = region_begin(&s->r, fn, data, num_threads, 0);
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
    region_end(&s->r);
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
