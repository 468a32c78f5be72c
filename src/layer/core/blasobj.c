/* blasobj.c — which loaded objects belong to a BLAS library, read from their dynamic symbol tables in place, with a lock-free cache. */
#include "blasobj.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>


/* ---- what a symbol says (pure) ---- */

int scaf_blasobj_symbol_kind(const char *name, int defined)
{
    if (!name || !*name)
        return SCAF_BLASOBJ_NONE;
    /* OpenBLAS's internal count: its own interface objects refer to it, and nothing else has a reason to. The
     * scipy-openblas wheels rename every symbol with a scipy_ prefix (and a 64_ suffix). */
    if (strncmp(name, "scipy_", 6) == 0)
        name += 6;
    if (strcmp(name, "blas_cpu_number") == 0 || strncmp(name, "goto_set_num_threads", 20) == 0)
        return SCAF_BLASOBJ_OPENBLAS;
    if (!defined)
        return SCAF_BLASOBJ_NONE;
    if (strncmp(name, "openblas_get_parallel", 21) == 0)
        return SCAF_BLASOBJ_OPENBLAS;
    if (strcmp(name, "bli_thread_set_num_threads") == 0 || strcmp(name, "bli_init") == 0)
        return SCAF_BLASOBJ_BLIS;
    /* Every MKL object defines mkl_* entry points (the threading layers libmkl_gnu_thread and
     * libmkl_intel_thread among them, whose regions these are); MKL_* are its upper-case aliases. */
    if (strncmp(name, "mkl_", 4) == 0 || strncmp(name, "MKL_", 4) == 0)
        return SCAF_BLASOBJ_MKL;
    return SCAF_BLASOBJ_NONE;
}

const char *scaf_blasobj_kind_name(int kind)
{
    switch (kind) {
    case SCAF_BLASOBJ_OPENBLAS:
        return "OpenBLAS";
    case SCAF_BLASOBJ_BLIS:
        return "BLIS";
    case SCAF_BLASOBJ_MKL:
        return "MKL";
    default:
        return "";
    }
}

/* ---- reading one object's dynamic symbols, from inside dl_iterate_phdr (no loader call) ---- */

/* glibc relocates the dynamic section's addresses in place; the vDSO's (and some loaders') are left as offsets. */
static uintptr_t dyn_addr(uintptr_t v, uintptr_t bias)
{
    return v < bias ? v + bias : v;
}

/* The number of dynamic symbols: DT_HASH says it; DT_GNU_HASH only through its last chain. */
static size_t gnu_hash_count(const uint32_t *h)
{
    uint32_t nbuckets = h[0], symoffset = h[1], bloom_words = h[2], last = 0;
    const uint32_t *buckets = (const uint32_t *)((const char *)(h + 4) + (size_t)bloom_words * sizeof(ElfW(Addr)));
    const uint32_t *chain = buckets + nbuckets;

    for (uint32_t i = 0; i < nbuckets; i++)
        if (buckets[i] > last)
            last = buckets[i];
    if (last < symoffset)
        return symoffset;
    while (!(chain[last - symoffset] & 1u))
        last++;
    return (size_t)last + 1;
}

struct scan {
    int kind;
    const int *cpu_number;
};

static void scan_symbols(const struct dl_phdr_info *info, struct scan *out)
{
    const ElfW(Dyn) *dyn = NULL;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *hash = NULL, *gnu_hash = NULL;
    size_t strsz = 0, nsyms = 0;
    uintptr_t bias = info->dlpi_addr;

    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(bias + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB:
            symtab = (const ElfW(Sym) *)dyn_addr(dyn->d_un.d_ptr, bias);
            break;
        case DT_STRTAB:
            strtab = (const char *)dyn_addr(dyn->d_un.d_ptr, bias);
            break;
        case DT_STRSZ:
            strsz = dyn->d_un.d_val;
            break;
        case DT_HASH:
            hash = (const uint32_t *)dyn_addr(dyn->d_un.d_ptr, bias);
            break;
        case DT_GNU_HASH:
            gnu_hash = (const uint32_t *)dyn_addr(dyn->d_un.d_ptr, bias);
            break;
        default:
            break;
        }
    }
    if (!symtab || !strtab || !strsz)
        return;
    nsyms = hash ? hash[1] : gnu_hash ? gnu_hash_count(gnu_hash) : 0;
    for (size_t i = 1; i < nsyms; i++) {
        const ElfW(Sym) *s = &symtab[i];
        int defined = s->st_shndx != SHN_UNDEF, kind;
        const char *name;

        if (s->st_name >= strsz)
            continue;
        name = strtab + s->st_name;
        kind = scaf_blasobj_symbol_kind(name, defined);
        if (kind == SCAF_BLASOBJ_NONE)
            continue;
        if (out->kind == SCAF_BLASOBJ_NONE)
            out->kind = kind;
        if (defined && ELF64_ST_TYPE(s->st_info) == STT_OBJECT && strcmp(name, "blas_cpu_number") == 0)
            out->cpu_number = (const int *)(bias + s->st_value);
        if (out->cpu_number)
            return; /* nothing more to learn */
    }
}

/* ---- the cache: objects by their executable ranges ---- */

#define LIB_CACHE 64

struct lib_entry {
    _Atomic uintptr_t lo, hi; /* an executable PT_LOAD range of the object; lo == hi: forgotten */
    int kind;
    const int *cpu_number;
};

static struct {
    pthread_mutex_t lock; /* writers only */
    struct lib_entry e[LIB_CACHE];
    _Atomic unsigned n;
} C = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct search {
    uintptr_t addr;
    int hit;
    uintptr_t lo[8], hi[8];
    unsigned nranges;
    struct scan scan;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct search *s = arg;
    int in = 0;

    (void)size;
    s->nranges = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type != PT_LOAD || ph->p_memsz == 0)
            continue;
        if (s->addr >= lo && s->addr < lo + ph->p_memsz)
            in = 1;
        if ((ph->p_flags & PF_X) && s->nranges < 8) {
            s->lo[s->nranges] = lo;
            s->hi[s->nranges] = lo + ph->p_memsz;
            s->nranges++;
        }
    }
    if (!in)
        return 0;
    s->hit = 1;
    scan_symbols(info, &s->scan);
    return 1;
}

static int cached(uintptr_t a, const int **cpu_number)
{
    unsigned n = atomic_load_explicit(&C.n, memory_order_acquire);

    for (unsigned i = 0; i < n; i++) {
        const struct lib_entry *e = &C.e[i];

        if (a >= atomic_load_explicit(&e->lo, memory_order_relaxed) &&
            a < atomic_load_explicit(&e->hi, memory_order_relaxed)) {
            if (cpu_number)
                *cpu_number = e->cpu_number;
            return e->kind;
        }
    }
    return -1;
}

int scaf_blasobj_of(const void *addr, const int **cpu_number)
{
    uintptr_t a = (uintptr_t)addr;
    struct search s = {.addr = a};
    int kind = cached(a, cpu_number);

    if (kind >= 0)
        return kind;
    if (cpu_number)
        *cpu_number = NULL;
    dl_iterate_phdr(find_object, &s);
    if (!s.hit)
        return SCAF_BLASOBJ_NONE;
    pthread_mutex_lock(&C.lock);
    /* Another thread may have cached it meanwhile; a duplicate entry is harmless, a full cache just means
     * asking the loader again. Entries are written whole before the count that publishes them. */
    for (unsigned i = 0; i < s.nranges && atomic_load(&C.n) < LIB_CACHE; i++) {
        unsigned n = atomic_load(&C.n);

        C.e[n].kind = s.scan.kind;
        C.e[n].cpu_number = s.scan.cpu_number;
        atomic_store_explicit(&C.e[n].lo, s.lo[i], memory_order_relaxed);
        atomic_store_explicit(&C.e[n].hi, s.hi[i], memory_order_relaxed);
        atomic_store_explicit(&C.n, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&C.lock);
    if (cpu_number)
        *cpu_number = s.scan.cpu_number;
    return s.scan.kind;
}

void scaf_blasobj_forget_range(uintptr_t lo, uintptr_t hi)
{
    unsigned n;

    pthread_mutex_lock(&C.lock);
    n = atomic_load(&C.n);
    for (unsigned i = 0; i < n; i++) {
        struct lib_entry *e = &C.e[i];

        if (atomic_load(&e->lo) < hi && lo < atomic_load(&e->hi)) {
            atomic_store(&e->hi, 0);
            atomic_store(&e->lo, 0);
        }
    }
    pthread_mutex_unlock(&C.lock);
}
