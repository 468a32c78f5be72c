/* track.c — the pages a sandboxed child writes: write-protected, recorded at their first write by the fault handler, and digested. */
#include "track.h"

#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scaf/procfs.h"

#define MAX_RANGES 4096
#define MAX_PAGES (1u << 22)    /* 16 GiB written: beyond, tracking gives up */
#define ALTSTACK (64u * 1024u)
#define MAX_SKIP 64
#define MAX_SELF 8

struct range {
    uintptr_t lo, hi;
};

/* The tracking state, in a mapping of its own that is never write-protected. */
struct track {
    struct range prot[MAX_RANGES]; /* write-protected ranges, sorted */
    uint32_t nprot;
    struct range skip[MAX_SKIP];   /* bytes left out of the digest, sorted */
    uint32_t nskip;
    volatile uint32_t armed;
    uint32_t overflow;
    uint64_t npages;
    uintptr_t *pages;              /* MAX_PAGES entries, MAP_NORESERVE */
};

static struct track *TR;
static uintptr_t page_size;

/*
 * System calls the fault handler makes, inline: a call through the PLT could
 * need the dynamic linker, whose data is write-protected while a runner tracks.
 */
static long raw_syscall3(long nr, long a, long b, long c)
{
    long ret;
#if defined(__x86_64__)
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    ret = x0;
#else
    ret = syscall(nr, a, b, c);
#endif
    return ret;
}

static long raw_mprotect(uintptr_t addr, size_t len, int prot)
{
    return raw_syscall3(SYS_mprotect, (long)addr, (long)len, prot);
}

static _Noreturn void raw_exit(int status)
{
    for (;;)
        raw_syscall3(SYS_exit_group, status, 0, 0);
}

/* The first write to a protected page: remember the page, open it, let the store run again. */
static void on_write(int sig, siginfo_t *si, void *uc)
{
    uintptr_t a = (uintptr_t)si->si_addr, page = a & ~(page_size - 1);
    uint32_t lo = 0, hi = TR->nprot;

    (void)sig;
    (void)uc;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (TR->prot[mid].hi <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= TR->nprot || a < TR->prot[lo].lo)
        raw_exit(SCAF_TRACK_EXIT_FAULT); /* a real fault of the region: it crashed */
    if (TR->armed) {
        if (TR->npages < MAX_PAGES)
            TR->pages[TR->npages++] = page;
        else
            TR->overflow = 1;
    }
    if (raw_mprotect(page, page_size, PROT_READ | PROT_WRITE) != 0)
        raw_exit(SCAF_TRACK_EXIT_OWN);
}

static void add_skip(struct track *t, uintptr_t lo, uintptr_t hi)
{
    if (hi > lo && t->nskip < MAX_SKIP)
        t->skip[t->nskip++] = (struct range){lo, hi};
}

/* The writable segments of the object that holds the layer itself: the layer's data, never protected. */
struct self_find {
    uintptr_t addr;
    struct range seg[MAX_SELF];
    int n;
};

static int self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct self_find *f = arg;
    int holds_self = 0;

    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type == PT_LOAD && f->addr >= lo && f->addr < lo + ph->p_memsz)
            holds_self = 1;
    }
    if (holds_self)
        for (int i = 0; i < info->dlpi_phnum && f->n < MAX_SELF; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W))
                f->seg[f->n++] = (struct range){info->dlpi_addr + ph->p_vaddr,
                                                info->dlpi_addr + ph->p_vaddr + ph->p_memsz};
        }
    return 0;
}

static int push_prot(struct track *t, uintptr_t lo, uintptr_t hi)
{
    if (lo >= hi)
        return 0;
    if (t->nprot >= MAX_RANGES)
        return -1;
    t->prot[t->nprot++] = (struct range){lo, hi};
    return 0;
}

/* Appends [lo, hi) minus the holes (sorted, disjoint) to t->prot, in order. */
static int add_prot(struct track *t, uintptr_t lo, uintptr_t hi, const struct range *holes, int nholes)
{
    for (int i = 0; i < nholes && lo < hi; i++) {
        if (holes[i].hi <= lo || holes[i].lo >= hi)
            continue;
        if (holes[i].lo > lo && push_prot(t, lo, holes[i].lo) != 0)
            return -1;
        lo = holes[i].hi;
    }
    return push_prot(t, lo, hi);
}

struct collect {
    struct track *t;
    const struct range *holes;
    int nholes;
    uintptr_t sp, keep;
};

/*
 * Every private writable mapping, less the holes (the kernel lists them in order, so t->prot is
 * sorted too). The stack holding `sp` only from `keep` up: below are the layer's and this
 * child's own frames.
 */
static int collect_one(const struct scaf_map *m, void *arg)
{
    struct collect *c = arg;
    uintptr_t lo = m->lo;

    if (m->perms[0] != 'r' || m->perms[1] != 'w' || m->perms[3] != 'p')
        return 0;
    if (c->sp >= m->lo && c->sp < m->hi) {
        if (c->keep < m->lo || c->keep >= m->hi)
            return 0;
        lo = c->keep & ~(page_size - 1);
    }
    return add_prot(c->t, lo, m->hi, c->holes, c->nholes) != 0;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static int in_skip(const struct track *t, uintptr_t a)
{
    for (uint32_t i = 0; i < t->nskip; i++)
        if (a >= t->skip[i].lo && a < t->skip[i].hi)
            return 1;
    return 0;
}

/* Heapsort: no allocation, nothing written outside the (unprotected) page list. */
static void sift(uintptr_t *v, size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        uintptr_t tmp;
        if (c >= n)
            return;
        if (c + 1 < n && v[c + 1] > v[c])
            c++;
        if (v[root] >= v[c])
            return;
        tmp = v[root];
        v[root] = v[c];
        v[c] = tmp;
        root = c;
    }
}

static void sort_pages(uintptr_t *v, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(v, i, n);
    for (size_t i = n; i-- > 1;) {
        uintptr_t tmp = v[0];
        v[0] = v[i];
        v[i] = tmp;
        sift(v, 0, i);
    }
}

/* The pages written, in address order, each with its words, less the skipped bytes. */
static uint64_t digest(struct track *t)
{
    uint64_t h = 0x243f6a8885a308d3ull;

    sort_pages(t->pages, t->npages);
    for (uint64_t i = 0; i < t->npages; i++) {
        const uint64_t *w = (const uint64_t *)t->pages[i];
        h = mix(h, t->pages[i]);
        for (uintptr_t k = 0; k < page_size / 8; k++)
            if (!in_skip(t, (uintptr_t)(w + k)))
                h = mix(h, w[k]);
    }
    return h;
}

int scaf_track_open(void)
{
    void *mem;

    page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    mem = mmap(NULL, sizeof(struct track) + ALTSTACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return -1;
    TR = mem;
    TR->pages = mmap(NULL, (size_t)MAX_PAGES * sizeof(uintptr_t), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return TR->pages == MAP_FAILED ? -1 : 0;
}

void scaf_track_skip(uintptr_t lo, uintptr_t hi)
{
    add_skip(TR, lo, hi);
}

int scaf_track_plan(uintptr_t sp, uintptr_t keep)
{
    size_t track_len = sizeof(struct track) + ALTSTACK;
    struct self_find self = {.addr = (uintptr_t)(void *)&TR};
    struct range holes[4 + MAX_SELF];
    int nholes = 0;
    struct sigaction sa;
    stack_t ss;

    if (keep <= sp)
        return -1;
    add_skip(TR, keep & ~(page_size - 1), keep);
    dl_iterate_phdr(self_cb, &self);
    /* The thread's descriptor: the kernel writes its rseq area there at every return to user space,
     * and a write it cannot make kills the process. Its pages stay open (the thread-local blocks
     * just below it are out of the digest anyway). */
    holes[nholes++] = (struct range){((uintptr_t)pthread_self() & ~(page_size - 1)) - page_size,
                                     ((uintptr_t)pthread_self() + 2 * page_size) & ~(page_size - 1)};
    /* The tracking memory and signal stack, and the page list. */
    holes[nholes++] = (struct range){(uintptr_t)TR, (uintptr_t)TR + ((track_len + page_size - 1) & ~(page_size - 1))};
    holes[nholes++] = (struct range){(uintptr_t)TR->pages, (uintptr_t)TR->pages + (size_t)MAX_PAGES * sizeof(uintptr_t)};
    /* Whole pages: the layer's segments share their edge pages with nothing that is the region's. */
    for (int i = 0; i < self.n; i++)
        holes[nholes++] = (struct range){self.seg[i].lo & ~(page_size - 1),
                                         (self.seg[i].hi + page_size - 1) & ~(page_size - 1)};
    for (int i = 1; i < nholes; i++)
        for (int k = i; k > 0 && holes[k - 1].lo > holes[k].lo; k--) {
            struct range tmp = holes[k];
            holes[k] = holes[k - 1];
            holes[k - 1] = tmp;
        }
    {
        struct collect c = {TR, holes, nholes, sp, keep};
        if (scaf_procfs_each_map(collect_one, &c) != 0)
            return -1;
    }

    ss.ss_sp = (char *)TR + sizeof(struct track);
    ss.ss_size = ALTSTACK;
    ss.ss_flags = 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_write;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGSEGV, &sa, NULL) != 0)
        return -1;
    return 0;
}

void scaf_track_arm(void)
{
    TR->armed = 1;
    for (uint32_t i = 0; i < TR->nprot; i++)
        if (raw_mprotect(TR->prot[i].lo, TR->prot[i].hi - TR->prot[i].lo, PROT_READ) != 0)
            raw_exit(SCAF_TRACK_EXIT_OWN);
}

int scaf_track_finish(uint64_t *pages, uint64_t *digest_out)
{
    TR->armed = 0;
    if (TR->overflow)
        return -1;
    *pages = TR->npages;
    *digest_out = digest(TR);
    return 0;
}

_Noreturn void scaf_track_exit(int status)
{
    raw_exit(status);
}
