/* blas.c — the BLAS adapter: finds OpenBLAS and MKL thread pools among the loaded objects and hands them to the core's pool table. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "../core/pool.h"
#include "../core/say.h"

/*
 * Why each library is or is not steered, and at which moment, is in
 * docs/layer.md ("BLAS thread pools"); in short: OpenBLAS built with its own
 * pthread server only stores the count that each later call reads at its
 * start (never raised above the pool it started with, so no thread is ever
 * created from here); MKL documents mkl_set_num_threads as the process-wide
 * setting; BLIS 0.9+ keeps the count per application thread, which another
 * thread cannot change; an OpenMP-built OpenBLAS frees per-thread buffers in
 * its setter, and reads omp_get_max_threads() at every call instead, which
 * the OpenMP adapter answers with the share (core/blascount.h) while its
 * regions keep the team it asks for (core/blasobj.h).
 */

typedef void (*set_int_fn)(int);

static void set_int(const struct scaf_pool *p, unsigned n)
{
    set_int_fn f;

    memcpy(&f, &p->set_fn, sizeof f);
    f((int)n);
}

/* OpenBLAS's names, plain and as renamed by the scipy-openblas wheels that numpy and scipy bundle. */
static const char *const ob_prefix[] = {"", "scipy_"};
static const char *const ob_suffix[] = {"", "64_", "_64"};

enum { OB_SEQUENTIAL = 0, OB_PTHREAD = 1, OB_OPENMP = 2 };

static void *sym(void *h, const char *prefix, const char *name, const char *suffix)
{
    char full[96];

    snprintf(full, sizeof full, "%s%s%s", prefix, name, suffix);
    return dlsym(h, full);
}

/* The object that defines `fn` (dlsym on a handle also searches that object's dependencies). */
static void where(void *fn, char *out, size_t len)
{
    Dl_info info;

    if (dladdr(fn, &info) && info.dli_fname)
        snprintf(out, len, "%s", info.dli_fname);
    else
        snprintf(out, len, "?");
}

/*
 * Said once per library: every object that depends on an OpenMP-built OpenBLAS finds it again (R's packages
 * each do, through libR), and SCAF_VERBOSE printed the same line for each (helper thread only).
 */
static int said_openmp_before(const char *path)
{
    static char said[8][160];
    static unsigned nsaid;

    for (unsigned i = 0; i < nsaid; i++)
        if (strcmp(said[i], path) == 0)
            return 1;
    if (nsaid < sizeof said / sizeof said[0])
        snprintf(said[nsaid++], sizeof said[0], "%s", path);
    return 0;
}

static void try_openblas(void *h)
{
    for (size_t i = 0; i < sizeof ob_prefix / sizeof *ob_prefix; i++)
        for (size_t j = 0; j < sizeof ob_suffix / sizeof *ob_suffix; j++) {
            struct scaf_pool p = {.lib = "openblas", .set = set_int, .get = scaf_pool_get_int};
            int (*parallel)(void);
            void *par;

            p.set_fn = sym(h, ob_prefix[i], "openblas_set_num_threads", ob_suffix[j]);
            p.get_fn = sym(h, ob_prefix[i], "openblas_get_num_threads", ob_suffix[j]);
            par = sym(h, ob_prefix[i], "openblas_get_parallel", ob_suffix[j]);
            if (!p.set_fn || !p.get_fn || !par)
                continue;
            where(p.set_fn, p.path, sizeof p.path);
            memcpy(&parallel, &par, sizeof parallel);
            switch (parallel()) {
            case OB_PTHREAD:
                break;
            case OB_OPENMP:
                if (!said_openmp_before(p.path))
                    scaf_layer_log("openblas in %s is built with OpenMP: steered through the count it reads at "
                                   "each call, not its setter; its regions keep the team it asks for", p.path);
                continue;
            default:
                continue; /* sequential: no pool */
            }
            p.bound = scaf_pool_get_int(&p);
            if (p.bound < 1)
                continue;
            /* OpenBLAS shuts its server down in a destructor at exit; the setter would start it again. */
            if (scaf_pool_add(&p) == 1)
                scaf_pool_stop_at_exit();
        }
}

static void try_mkl(void *h)
{
    struct scaf_pool p = {.lib = "mkl", .set = set_int, .get = scaf_pool_get_int};

    p.set_fn = dlsym(h, "MKL_Set_Num_Threads");
    p.get_fn = dlsym(h, "MKL_Get_Max_Threads");
    if (!p.set_fn || !p.get_fn)
        return;
    where(p.set_fn, p.path, sizeof p.path);
    p.bound = scaf_pool_get_int(&p);
    if (p.bound >= 1 && scaf_pool_add(&p) == 1)
        scaf_pool_stop_at_exit();
}

static void try_blis(void *h)
{
    void *f = dlsym(h, "bli_thread_set_num_threads");
    char path[160];

    if (!f)
        return;
    where(f, path, sizeof path);
    scaf_layer_log("BLIS in %s keeps its thread count per application thread: not steered", path);
}

/*
 * Objects already looked at, by load address (helper thread only): a rescan
 * after each import only looks at what is new. A full table just means
 * looking again.
 */
#define SEEN_MAX 1024
static ElfW(Addr) seen[SEEN_MAX];
static unsigned nseen;

static int seen_before(ElfW(Addr) base, const char *name)
{
    for (unsigned i = 0; i < nseen; i++)
        if (seen[i] == base)
            return 1;
    /* The main program (base 0 when not PIE) and the vDSO are not worth a slot. */
    if (nseen < SEEN_MAX && name && *name)
        seen[nseen++] = base;
    return 0;
}

/* One object to look at, copied out of dl_iterate_phdr's list (helper thread only). */
#define BATCH 64
struct batch {
    unsigned n;
    int full;
    char names[BATCH][512]; /* "" is the main program */
};
static struct batch batch;

/*
 * Only copies names: no dlopen or dlsym in here. dl_iterate_phdr holds the
 * loader's write lock and dlopen takes the load lock, while a dlopen in the
 * program's thread (an import) holds the load lock and then takes the write
 * lock: the two orders would deadlock.
 */
static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    struct batch *b = arg;

    (void)size;
    if (seen_before(info->dlpi_addr, name))
        return 0;
    if (strlen(name) >= sizeof b->names[0])
        return 0; /* not a path dlopen could take back anyway */
    memcpy(b->names[b->n], name, strlen(name) + 1);
    if (++b->n == BATCH) {
        b->full = 1;
        return 1;
    }
    return 0;
}

static void look_at(const char *name)
{
    unsigned before = scaf_pool_count();
    /* The main program is the object with an empty name. RTLD_NOLOAD only takes a reference, it never maps. */
    void *h = dlopen(*name ? name : NULL, RTLD_LAZY | RTLD_NOLOAD);

    if (!h)
        return; /* unloaded meanwhile */
    try_openblas(h);
    try_mkl(h);
    try_blis(h);
    /*
     * A pool was found through this handle: the reference is kept on purpose,
     * so that the object holding the pool's entry points (this one or one of
     * its dependencies) is never unmapped under the pool table. Any other
     * object is released, and the program's own dlclose works as before.
     */
    if (scaf_pool_count() == before)
        dlclose(h);
}

static int read_subs(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_subs;
    return 1;
}

static void scan(void)
{
    static unsigned long long last_subs;
    unsigned long long subs = 0;

    /* Something was unloaded: a new object may sit at a freed address, so look at everything again. */
    dl_iterate_phdr(read_subs, &subs);
    if (subs != last_subs)
        nseen = 0;
    last_subs = subs;
    do {
        batch.n = 0;
        batch.full = 0;
        dl_iterate_phdr(collect, &batch);
        for (unsigned i = 0; i < batch.n; i++)
            look_at(batch.names[i]);
    } while (batch.full);
}

/* Before the adapters' constructors that run scaf_client_init (default priority), which starts the helper. */
__attribute__((constructor(101))) static void scaf_blas_ctor(void)
{
    scaf_pool_set_scanner(scan);
}
