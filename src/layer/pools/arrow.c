/* arrow.c — the Arrow adapter: Arrow's CPU thread pool, found among the loaded objects and steered between tasks through arrow::SetCpuThreadPoolCapacity, as the core steers BLAS pools. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "../core/pool.h"
#include "../core/say.h"
#include "scaf/startenv.h"

/*
 * Why this entry point (docs/runtimes.md, "Arrow"): pyarrow's compute and
 * readers run on one process-wide CPU pool whose capacity Arrow reads from
 * OMP_NUM_THREADS (else the CPUs) when it first builds it, and which
 * pyarrow.set_cpu_count() changes at any time: ThreadPool::SetCapacity takes
 * the pool's mutex, starts workers up to the new capacity and lets those above
 * it end when they finish their task. So the helper may call it between
 * tasks, and the pool follows the share. As for a BLAS pool, its capacity
 * when found is its bound (a user's OMP_NUM_THREADS, which Arrow reads, stays
 * its largest), and a program that sets it itself keeps its setting.
 *
 * Both are C++ (arrow/util/thread_pool.h): int GetCpuThreadPoolCapacity() and
 * Status SetCpuThreadPoolCapacity(int). Status has a destructor, so the
 * x86-64 ABI returns it through a hidden first argument: the caller's buffer,
 * which holds one pointer, NULL for OK. An error status (only for a
 * capacity below 1, which is never asked) would leak its few bytes.
 */
#define SET_CAPACITY "_ZN5arrow24SetCpuThreadPoolCapacityEi"
#define GET_CAPACITY "_ZN5arrow24GetCpuThreadPoolCapacityEv"

typedef void *(*set_fn)(void *status, int n);

static void set_capacity(const struct scaf_pool *p, unsigned n)
{
    void *status[4] = {NULL};
    set_fn f;

    memcpy(&f, &p->set_fn, sizeof f);
    f(status, (int)n);
    if (status[0])
        scaf_layer_log("arrow pool: SetCpuThreadPoolCapacity(%u) failed", n);
}

/* The loaded objects that are Arrow's, by name (helper thread): copied out of the loader's list first. */
struct found {
    unsigned n;
    char names[4][512];
};

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct found *f = arg;
    const char *name = info->dlpi_name, *base;

    (void)size;
    if (!name || !*name || f->n >= sizeof f->names / sizeof f->names[0] || strlen(name) >= sizeof f->names[0])
        return 0;
    base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    if (scaf_startenv_objects(base) & (1u << SCAF_RT_ARROW))
        memcpy(f->names[f->n++], name, strlen(name) + 1);
    return 0;
}

static void scan(void)
{
    static struct found f;

    f.n = 0;
    dl_iterate_phdr(collect, &f);
    for (unsigned i = 0; i < f.n; i++) {
        struct scaf_pool p = {.lib = "arrow", .set = set_capacity, .get = scaf_pool_get_int};
        void *h = dlopen(f.names[i], RTLD_LAZY | RTLD_NOLOAD);

        if (!h)
            continue;
        p.set_fn = dlsym(h, SET_CAPACITY);
        p.get_fn = dlsym(h, GET_CAPACITY);
        snprintf(p.path, sizeof p.path, "%s", f.names[i]);
        if (p.set_fn && p.get_fn && (p.bound = scaf_pool_get_int(&p)) >= 1 && scaf_pool_add(&p) == 1) {
            /* The pool is a static that exit() destroys: the first call built it, so the stop comes first. */
            scaf_pool_stop_at_exit();
            continue; /* kept open: the pool table calls into it */
        }
        dlclose(h);
    }
}

/* Before the adapters' constructors that run scaf_client_init (default priority), which starts the helper. */
__attribute__((constructor(101))) static void scaf_arrow_ctor(void)
{
    scaf_pool_set_scanner(scan);
}
