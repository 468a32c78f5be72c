/* pagewrite.c — the daemon half of the shared page: the page made and sealed, the allocation written, the client woken; the only writer. */
#include "pagewrite.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int scaf_pagewrite_create(uint32_t cpus, struct scaf_page **out)
{
    struct scaf_page *pg;
    int fd = memfd_create("scaf-page", MFD_CLOEXEC | MFD_ALLOW_SEALING);

    if (fd < 0)
        return -1;
    if (ftruncate(fd, SCAF_PAGE_SIZE) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
        goto fail;
    pg = mmap(NULL, SCAF_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (pg == MAP_FAILED)
        goto fail;
    pg->magic = SCAF_PAGE_MAGIC;
    pg->version = SCAF_PROTO_VERSION;
    atomic_store(&pg->threads, 1);
    atomic_store(&pg->control, SCAF_CONTROL_THREADS);
    atomic_store(&pg->cpus, cpus);
    *out = pg;
    return fd;
fail:
    close(fd);
    return -1;
}

void scaf_pagewrite_unmap(struct scaf_page *pg)
{
    if (pg)
        munmap(pg, SCAF_PAGE_SIZE);
}

void scaf_pagewrite_alloc(struct scaf_page *pg, uint32_t threads, uint32_t control, const uint64_t *cpuset,
                     uint32_t nclients, uint32_t cpus)
{
    uint32_t s = atomic_load_explicit(&pg->seq, memory_order_relaxed);

    s += s & 1; /* the client can scribble on seq; only its own reads suffer, but keep our parity sane */
    atomic_store_explicit(&pg->seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&pg->threads, threads, memory_order_relaxed);
    atomic_store_explicit(&pg->control, control, memory_order_relaxed);
    atomic_store_explicit(&pg->cpus, cpus, memory_order_relaxed);
    atomic_store_explicit(&pg->nclients, nclients, memory_order_relaxed);
    for (int w = 0; w < SCAF_CPUSET_WORDS; w++)
        atomic_store_explicit(&pg->cpuset[w], cpuset[w], memory_order_relaxed);
    atomic_store_explicit(&pg->seq, s + 2, memory_order_release);
    /* Shared futex (no FUTEX_PRIVATE_FLAG): the waiter is another process mapping the same memfd. */
    syscall(SYS_futex, &pg->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void scaf_pagewrite_gang(struct scaf_page *pg, uint32_t gang)
{
    /* One word, outside the seqlock: the layer reads it alone at a region entry and waits on it. */
    if (atomic_load_explicit(&pg->gang, memory_order_relaxed) == gang)
        return;
    atomic_store_explicit(&pg->gang, gang, memory_order_release);
    syscall(SYS_futex, &pg->gang, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void scaf_pagewrite_memory(struct scaf_page *pg, const struct scaf_page_recall *m)
{
    uint32_t n = m->nsites > SCAF_MEMORY_SITES ? SCAF_MEMORY_SITES : m->nsites;

    /* Written before the WELCOME leaves (a system call orders it): the client maps the page only after. */
    pg->start_team = m->start_team;
    pg->memory_runs = m->runs;
    pg->memory_verdict = m->runs ? m->verdict : SCAF_VERDICT_UNDECIDED;
    pg->memory_source = m->runs ? m->source : SCAF_SOURCE_DEFAULT;
    memset(pg->known, 0, sizeof pg->known);
    if (n && m->sites)
        memcpy(pg->known, m->sites, n * sizeof pg->known[0]);
    pg->known_sites = m->sites ? n : 0;
}

void scaf_pagewrite_idle(struct scaf_page *pg, uint32_t idle)
{
    /* One word, read alone by the layer at each outermost region (relaxed: a region that misses the
     * store by a moment is counted by the regions counter at the next turn anyway). */
    if (atomic_load_explicit(&pg->idle, memory_order_relaxed) != idle)
        atomic_store_explicit(&pg->idle, idle, memory_order_relaxed);
}
