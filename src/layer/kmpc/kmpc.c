/* kmpc.c — the LLVM/Intel OpenMP adapter: wraps the __kmpc_* entry points that start a parallel region in libomp or libiomp5. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../client/region.h"
#include "../core/resolve.h"
#include "../core/say.h"
#include "../gomp/gomp.h"
#include "../sandbox/sandbox.h"
#include "call.h"

/*
 * Clang and the Intel compilers open a region with
 *
 *     gtid = __kmpc_global_thread_num(loc);
 *     __kmpc_push_num_threads(loc, gtid, n);      only with a num_threads clause
 *     __kmpc_fork_call(loc, argc, microtask, shared1, ..., sharedN);
 *
 * The runtime keeps a pushed count in the calling thread's descriptor until
 * the next fork consumes it. So the layer steers a region by pushing the
 * core's count itself, just before the real fork, when the program pushed
 * none; the program's own push is remembered here (per thread, like the
 * runtime's) as the region's clause. Nothing else about the call changes.
 * docs/layer.md ("LLVM and Intel OpenMP") says why the forwarding is safe.
 */

typedef int32_t kmp_int32;

/* The runtime's ident_t (kmp.h): the program's are passed on, never read; the layer makes one of its own. */
struct ident {
    kmp_int32 reserved_1, flags, reserved_2, reserved_3;
    const char *psource;
};
static struct ident layer_loc = {0, 0x02 /* KMP_IDENT_KMPC */, 0, 0, ";scaf;layer;0;0;;"};

struct kmpc_real {
    void (*fork_call)(struct ident *, kmp_int32, void *, ...);
    void (*fork_call_if)(struct ident *, kmp_int32, void *, kmp_int32, void *);
    void (*fork_teams)(struct ident *, kmp_int32, void *, ...);
    void (*push_num_threads)(struct ident *, kmp_int32, kmp_int32);
    void (*push_num_threads_strict)(struct ident *, kmp_int32, kmp_int32, int, const char *);
    void (*push_num_threads_list)(struct ident *, kmp_int32, uint32_t, kmp_int32 *);
    void (*push_num_threads_list_strict)(struct ident *, kmp_int32, uint32_t, kmp_int32 *, int,
                                         const char *);
    void (*serialized_parallel)(struct ident *, kmp_int32);
    kmp_int32 (*global_thread_num)(struct ident *);
    void (*barrier)(struct ident *, kmp_int32);
};
static struct kmpc_real K;

/* ---- resolving the real entry points ---- */

static const char *const KMPC_LIBS[] = {"libomp", "libiomp5", NULL};

/*
 * This layer has no DT_NEEDED on any OpenMP runtime: the program's own
 * libomp or libiomp5 is the one RTLD_NEXT finds, so each call goes where it
 * would have gone without the layer. The search covers a runtime loaded
 * later with RTLD_LOCAL (a Python extension's).
 */
static void *resolve(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);

    if (!f)
        f = scaf_resolve_loaded(KMPC_LIBS, name);
    return f;
}

#define REAL(member, name)                                                                     \
    (__builtin_expect(K.member != NULL, 1) ? K.member                                          \
                                           : (__typeof__(K.member))scaf_resolve_late(&K.member, resolve, name, "LLVM or Intel OpenMP runtime"))

static pthread_once_t kmpc_once = PTHREAD_ONCE_INIT;

static void kmpc_resolve_all(void)
{
#define R(member, name) K.member = (__typeof__(K.member))resolve(name)
    R(fork_call, "__kmpc_fork_call");
    R(fork_call_if, "__kmpc_fork_call_if");
    R(fork_teams, "__kmpc_fork_teams");
    R(push_num_threads, "__kmpc_push_num_threads");
    R(push_num_threads_strict, "__kmpc_push_num_threads_strict");
    R(push_num_threads_list, "__kmpc_push_num_threads_list");
    R(push_num_threads_list_strict, "__kmpc_push_num_threads_list_strict");
    R(serialized_parallel, "__kmpc_serialized_parallel");
    R(global_thread_num, "__kmpc_global_thread_num");
    R(barrier, "__kmpc_barrier");
#undef R
}

/* ---- the estimator's experiment child ---- */

/* This thread's number in the child's re-initialised runtime. */
static kmp_int32 child_gtid = -1;

/*
 * First thing in an experiment child, before its sandbox. libomp's and
 * libiomp5's fork handler (__kmp_atfork_child) resets the runtime in every
 * child and starts it again, which registers the child in a /dev/shm file
 * (__KMP_REGISTERED_LIB_<pid>_<uid>) that only a normal exit removes; the
 * rest of the start-up (thread affinity, the parallel part) waits for the
 * first construct. Here a barrier outside any region, a no-op for one thread,
 * finishes that start-up while its system calls are allowed, and the
 * registration file goes: the child ends in _exit.
 */
static void kmpc_child_prepare(void)
{
    char path[80];

    if (!K.global_thread_num || !K.barrier)
        return;
    child_gtid = K.global_thread_num(&layer_loc);
    K.barrier(&layer_loc, child_gtid);
    snprintf(path, sizeof path, "/dev/shm/__KMP_REGISTERED_LIB_%d_%d", (int)getpid(), (int)getuid());
    unlink(path);
}

/* The core's start-up is the GNU ABI file's (gomp.c, in this library too): omp_get_level and the bound come from there. */
__attribute__((constructor)) static void scaf_kmpc_ctor(void)
{
    pthread_once(&kmpc_once, kmpc_resolve_all);
    scaf_sandbox_set_child_prepare(kmpc_child_prepare);
    scaf_gomp_init();
}

/* ---- the program's own num_threads clause ---- */

/*
 * What the program pushed for its next fork on this thread: the count, and
 * whether it is strict (the runtime then fails the region if it cannot give
 * exactly that many). Consumed by the next fork, cleared by a serialized
 * region (an if(false) after a clause), exactly as the runtime consumes its own.
 */
struct kmpc_clause {
    unsigned n;
    int strict;
};
static _Thread_local struct kmpc_clause clause_tls;

static inline struct kmpc_clause take_clause(void)
{
    struct kmpc_clause c = clause_tls;

    clause_tls.n = 0;
    clause_tls.strict = 0;
    return c;
}

SCAF_EXPORT void __kmpc_push_num_threads(struct ident *loc, kmp_int32 gtid, kmp_int32 n)
{
    clause_tls.n = n > 0 ? (unsigned)n : 0;
    clause_tls.strict = 0;
    REAL(push_num_threads, "__kmpc_push_num_threads")(loc, gtid, n);
}

SCAF_EXPORT void __kmpc_push_num_threads_strict(struct ident *loc, kmp_int32 gtid, kmp_int32 n, int severity,
                                                const char *message)
{
    clause_tls.n = n > 0 ? (unsigned)n : 0;
    clause_tls.strict = 1;
    REAL(push_num_threads_strict, "__kmpc_push_num_threads_strict")(loc, gtid, n, severity, message);
}

/* A list sets this region's count (its first entry) and nested ones' too: all of it is the program's. */
SCAF_EXPORT void __kmpc_push_num_threads_list(struct ident *loc, kmp_int32 gtid, uint32_t len, kmp_int32 *list)
{
    clause_tls.n = len && list && list[0] > 0 ? (unsigned)list[0] : 0;
    clause_tls.strict = 0;
    REAL(push_num_threads_list, "__kmpc_push_num_threads_list")(loc, gtid, len, list);
}

SCAF_EXPORT void __kmpc_push_num_threads_list_strict(struct ident *loc, kmp_int32 gtid, uint32_t len,
                                                     kmp_int32 *list, int severity, const char *message)
{
    clause_tls.n = len && list && list[0] > 0 ? (unsigned)list[0] : 0;
    clause_tls.strict = 1;
    REAL(push_num_threads_list_strict, "__kmpc_push_num_threads_list_strict")(loc, gtid, len, list, severity,
                                                                              message);
}

/* if(false): the runtime runs the region on this thread and drops the pushed count; so do we. */
SCAF_EXPORT void __kmpc_serialized_parallel(struct ident *loc, kmp_int32 gtid)
{
    take_clause();
    REAL(serialized_parallel, "__kmpc_serialized_parallel")(loc, gtid);
}

/* ---- team size at a region entry: the core decides ---- */

/*
 * Host teams (`#pragma omp teams` without a device): each team's initial
 * thread may open parallel regions that the runtime does not count as nested.
 * While any teams construct runs, every fork is left to the runtime, as
 * nested regions are.
 */
static _Atomic int teams_active;

/* The fork_call_if wrapper's real call may reach __kmpc_fork_call through the PLT: that inner call is ours already. */
static _Thread_local int in_fork_if;

/*
 * The core's scaf_region_begin; `run`: the serial runner of a forkable region
 * (SCAF_REGION_FORKABLE in flags), else NULL. The core's start-up is the GNU
 * ABI file's (scaf_gomp_init).
 */
static inline unsigned region_begin(struct scaf_region_rec *r, void (*run)(void *), void (*fn)(void *),
                                    void *data, unsigned num_threads, unsigned flags)
{
    r->run = run;
    r->serial = NULL;
    r->serial_data = NULL;
    return scaf_region_begin(r, fn, data, num_threads, flags, scaf_gomp_init);
}

static inline unsigned clause_flags(struct kmpc_clause c)
{
    return c.strict ? SCAF_REGION_STRICT : 0;
}

/*
 * Pushes the core's count when it differs from what the runtime will use
 * anyway. A strict clause is never touched: the core keeps a clause as it is,
 * and only an experiment child would ask for one thread, which the strict
 * check would turn into a runtime error.
 */
static inline void push_team(struct ident *loc, struct kmpc_clause c, unsigned n)
{
    if (n == 0 || n == c.n || c.strict)
        return;
    REAL(push_num_threads, "__kmpc_push_num_threads")
    (loc, REAL(global_thread_num, "__kmpc_global_thread_num")(loc), (kmp_int32)n);
}

#if defined(__x86_64__)

/* At most this many shared-variable pointers are copied on the wrapper's stack; more go to the heap. */
#define ARGS_ON_STACK 32

/* A region's microtask and arguments: what an experiment child runs serially. */
struct kmpc_region {
    void *microtask;
    long argc;
    void **argv; /* argc pointers, followed by six readable slots */
};

/*
 * In an experiment child: the microtask on this thread alone, as the runtime
 * itself runs a serialized region (microtask(&gtid, &bound_tid = 0, args...));
 * its work-sharing calls see the thread's serial team.
 */
static void kmpc_run_serial(void *data)
{
    struct kmpc_region *k = data;
    kmp_int32 gtid = child_gtid, zero = 0;
    void *stackbuf[ARGS_ON_STACK + 2 + 6];
    void **a = stackbuf;
    long n = 2 + k->argc;

    if (n + 6 > (long)(sizeof stackbuf / sizeof stackbuf[0]))
        a = calloc((size_t)n + 6, sizeof *a);
    if (!a)
        abort(); /* the child only: its failure is reported as a failed experiment */
    memset(a + n, 0, 6 * sizeof *a);
    a[0] = &gtid;
    a[1] = &zero;
    memcpy(a + 2, k->argv, (size_t)k->argc * sizeof *a);
    scaf_kmpc_call(k->microtask, n, a);
}

/*
 * A region's arguments as the real entry (fork_call or fork_teams, both
 * (loc, argc, microtask, ...)) takes them: the va_list is read exactly as the
 * runtime reads it, argc pointers, to be passed on as argc pointer arguments
 * by scaf_kmpc_call. Six spare zeroed slots let it load all six argument
 * registers whatever argc is.
 */
struct kmpc_args {
    void *stackbuf[ARGS_ON_STACK + 3 + 6];
    void **a;
    long n;
};

static void args_read(struct kmpc_args *x, struct ident *loc, kmp_int32 argc, void *microtask, va_list ap)
{
    x->a = x->stackbuf;
    x->n = 3 + (argc > 0 ? (long)argc : 0);
    if (x->n + 6 > (long)(sizeof x->stackbuf / sizeof x->stackbuf[0])) {
        x->a = malloc(((size_t)x->n + 6) * sizeof *x->a);
        if (!x->a) {
            static const char msg[] = "scaf: out of memory passing a parallel region's arguments on\n";
            if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0)
                abort();
            abort();
        }
    }
    memset(x->a, 0, 6 * sizeof *x->a);
    memset(x->a + x->n, 0, 6 * sizeof *x->a);
    x->a[0] = loc;
    x->a[1] = (void *)(intptr_t)argc;
    x->a[2] = microtask;
    for (long i = 3; i < x->n; i++)
        x->a[i] = va_arg(ap, void *);
}

static void args_free(struct kmpc_args *x)
{
    if (x->a != x->stackbuf)
        free(x->a);
}

/* A region the layer steers; a forked experiment may run it serially (kmpc_run_serial). */
static void fork_steered(struct ident *loc, kmp_int32 argc, void *microtask, va_list ap)
{
    struct kmpc_clause c = take_clause();
    struct scaf_region_rec r;
    struct kmpc_region k;
    struct kmpc_args x;
    unsigned team;

    args_read(&x, loc, argc, microtask, ap);
    k.microtask = microtask;
    k.argc = x.n - 3;
    k.argv = x.a + 3;
    team = region_begin(&r, kmpc_run_serial, (void (*)(void *))microtask, &k, c.n,
                        clause_flags(c) | (K.barrier != NULL ? SCAF_REGION_FORKABLE : 0));
    push_team(loc, c, team);
    scaf_kmpc_call((void *)REAL(fork_call, "__kmpc_fork_call"), x.n, x.a);
    scaf_region_end(&r);
    args_free(&x);
}

/* A region left to the runtime: passed on as it came. */
static void fork_plain(void *real, struct ident *loc, kmp_int32 argc, void *microtask, va_list ap)
{
    struct kmpc_args x;

    take_clause();
    args_read(&x, loc, argc, microtask, ap);
    scaf_kmpc_call(real, x.n, x.a);
    args_free(&x);
}

SCAF_EXPORT void __kmpc_fork_call(struct ident *loc, kmp_int32 argc, void *microtask, ...)
{
    va_list ap;

    va_start(ap, microtask);
    if (__builtin_expect(in_fork_if || atomic_load_explicit(&teams_active, memory_order_relaxed), 0)) {
        in_fork_if = 0;
        fork_plain((void *)REAL(fork_call, "__kmpc_fork_call"), loc, argc, microtask, ap);
    } else {
        fork_steered(loc, argc, microtask, ap);
    }
    va_end(ap);
}

SCAF_EXPORT void __kmpc_fork_teams(struct ident *loc, kmp_int32 argc, void *microtask, ...)
{
    va_list ap;

    va_start(ap, microtask);
    atomic_fetch_add(&teams_active, 1);
    fork_plain((void *)REAL(fork_teams, "__kmpc_fork_teams"), loc, argc, microtask, ap);
    atomic_fetch_sub(&teams_active, 1);
    va_end(ap);
}

#endif /* __x86_64__ */

/*
 * Newer compilers' form of `parallel if(cond)`: one argument pointer, not
 * variadic. A false condition runs serially in the runtime and is not ours.
 */
SCAF_EXPORT void __kmpc_fork_call_if(struct ident *loc, kmp_int32 argc, void *microtask, kmp_int32 cond,
                                     void *args)
{
    struct kmpc_clause c = take_clause();
    struct scaf_region_rec r;
    unsigned team;

    if (!cond || atomic_load_explicit(&teams_active, memory_order_relaxed)) {
        REAL(fork_call_if, "__kmpc_fork_call_if")(loc, argc, microtask, cond, args);
        return;
    }
    team = region_begin(&r, NULL, (void (*)(void *))microtask, args, c.n, clause_flags(c));
    push_team(loc, c, team);
    in_fork_if = 1;
    REAL(fork_call_if, "__kmpc_fork_call_if")(loc, argc, microtask, cond, args);
    in_fork_if = 0;
    scaf_region_end(&r);
}
