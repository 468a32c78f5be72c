/* runtimes.c — the process's parallel runtimes other than OpenMP and BLAS: named by scaf run or found by the names of the loaded objects, the team their pools run, and the page's word on them. */
#include "runtimes.h"

#include <link.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bound.h"
#include "page.h"
#include "say.h"
#include "settings.h"
#include "scaf/startenv.h"

static _Atomic uint32_t found;
/* Runtimes whose pool runs on OpenMP regions, or on oneTBB, by the objects loaded (startenv.h's on_*). */
static _Atomic uint32_t on_openmp, on_tbb;
/* A oneTBB of the process opened a TCM permit (core/permit.c says so): it asks TCM for its workers. */
static _Atomic int tcm_asked;
/* Bumped by every change of what the page says of the runtimes, before it is published (scaf_runtimes_publish). */
static _Atomic uint32_t changes;
struct seen {
    uint32_t bits, on_openmp, on_tbb;
};
/* Each runtime's count as its variable said at start, 0 = not set (read once: the pool reads it when built). */
static unsigned user_count[SCAF_RT_COUNT];

/* The count a variable's value sets: "4"; for the JVM's options, the number after ActiveProcessorCount=. */
static unsigned count_in(const struct scaf_startenv_runtime *r, const char *v)
{
    const char *p = v;
    char *end;
    unsigned long n;

    if (r->count_in) {
        p = strstr(v, r->count_in);
        if (!p)
            return 0;
        p += strlen(r->count_in);
        if (*p == '=')
            p++;
    }
    n = strtoul(p, &end, 10);
    return end != p && n > 0 && n <= SCAF_MAX_CPUS ? (unsigned)n : 0;
}

void scaf_runtimes_init(void)
{
    const struct scaf_startenv_runtime *t = scaf_startenv_table();
    const char *names = scaf_settings.runtimes;
    uint32_t bits;

    for (int i = 0; i < SCAF_RT_COUNT; i++) {
        const char *v = t[i].var ? getenv(t[i].var) : NULL;

        user_count[i] = v ? count_in(&t[i], v) : 0;
    }
    bits = scaf_startenv_bits(names);
    atomic_store(&found, bits);
}

uint32_t scaf_runtimes_bits(void)
{
    return atomic_load_explicit(&found, memory_order_relaxed);
}

static int by_name(struct dl_phdr_info *info, size_t size, void *arg)
{
    const char *name = info->dlpi_name, *base;

    (void)size;
    if (!name || !*name)
        return 0;
    base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    ((struct seen *)arg)->bits |= scaf_startenv_objects(base);
    ((struct seen *)arg)->on_openmp |= scaf_startenv_carried(base, SCAF_CARRIER_OPENMP);
    ((struct seen *)arg)->on_tbb |= scaf_startenv_carried(base, SCAF_CARRIER_TBB);
    return 0;
}

uint32_t scaf_runtimes_scan(void)
{
    struct seen seen = {0, 0, 0};
    uint32_t before, added, carried;
    char names[160];

    dl_iterate_phdr(by_name, &seen);
    /*
     * A carrier is news too: numba found by its workqueue, a TCM permit opened by another oneTBB user, and
     * only then numba's tbbpool loaded, adds no runtime, yet from then on numba's pool follows the share.
     */
    carried = seen.on_openmp & ~atomic_fetch_or(&on_openmp, seen.on_openmp);
    carried |= seen.on_tbb & ~atomic_fetch_or(&on_tbb, seen.on_tbb);
    before = atomic_fetch_or(&found, seen.bits);
    added = seen.bits & ~before;
    if (added) {
        scaf_startenv_names(added, names, sizeof names);
        scaf_layer_log("parallel runtime found: %s", names);
    }
    if (added || carried) {
        atomic_fetch_add(&changes, 1);
        scaf_runtimes_publish(scaf_page_get());
    }
    return added;
}

uint32_t scaf_runtimes_follow(void)
{
    const struct scaf_startenv_runtime *t = scaf_startenv_table();
    uint32_t bits = atomic_load(&found), out = atomic_load(&on_openmp);

    /* A oneTBB that never opened a permit is one that does not ask TCM (Debian's 2021.8): it keeps its count. */
    if (atomic_load(&tcm_asked))
        out |= atomic_load(&on_tbb);
    for (int i = 0; i < SCAF_RT_COUNT; i++)
        if (t[i].follow == SCAF_FOLLOW_LAYER)
            out |= 1u << i;
    return out & bits;
}

void scaf_runtimes_tcm_asked(void)
{
    /* Once: the team the page plans around may lose a pool that runs on this oneTBB. */
    if (!atomic_exchange(&tcm_asked, 1)) {
        atomic_fetch_add(&changes, 1);
        scaf_runtimes_publish(scaf_page_get());
    }
}

unsigned scaf_runtimes_team(void)
{
    const struct scaf_startenv_runtime *t = scaf_startenv_table();
    uint32_t bits = scaf_runtimes_bits() & ~scaf_runtimes_follow();
    unsigned team = 0, cpus = (unsigned)CPU_COUNT(scaf_bound_affinity());
    unsigned share = scaf_settings.start_share ? scaf_settings.start_share : cpus;

    for (int i = 0; i < SCAF_RT_COUNT; i++) {
        unsigned n;

        if (!(bits & (1u << i)))
            continue;
        /* Only a spinning pool was given the share (startenv.h); one that sleeps counted the CPUs. */
        n = user_count[i] ? user_count[i] : t[i].spins ? share : cpus;
        if (n > team)
            team = n;
    }
    return team;
}

void scaf_runtimes_publish(struct scaf_page *page)
{
    uint32_t seen;

    if (!page)
        return;
    /*
     * The scan (the helper) and the first permit (a oneTBB thread) publish concurrently: one that read the
     * state before the other's change may write after it. Written again until no change came in between,
     * so the last write is of the last state. Every access is sequentially consistent, and a change sets
     * its flag before it bumps `changes`: a writer that read a flag's old value sees the bump after it.
     */
    do {
        seen = atomic_load(&changes);
        scaf_page_set_runtimes(page, scaf_runtimes_bits(), scaf_runtimes_follow(), scaf_runtimes_team());
    } while (atomic_load(&changes) != seen);
}
