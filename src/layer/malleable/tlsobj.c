/* tlsobj.c — finds the loaded object that holds a code address: whether it has thread-local storage, and its identity for the memory (build-ID hash, offset); with a small cache. */
#include "tlsobj.h"

#include <link.h>
#include <pthread.h>
#include <stdint.h>

#include "scaf/progkey.h"

#define OBJ_CACHE 32

struct tls_obj {
    uintptr_t lo, hi; /* an executable PT_LOAD range of the object */
    int tls;
    uintptr_t bias;   /* its load bias: an address less this is its offset in the file's terms */
    uint64_t object;  /* scaf_progkey_object: the hash of its build ID, 0 when it has none */
};

static struct {
    pthread_mutex_t lock;
    struct tls_obj objs[OBJ_CACHE];
    int nobjs;
} C = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct obj_search {
    uintptr_t addr;
    struct tls_obj found;
    int hit;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct obj_search *s = arg;
    int tls = 0, in = 0;

    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type == PT_TLS && ph->p_memsz > 0)
            tls = 1;
        if (ph->p_type == PT_LOAD && s->addr >= lo && s->addr < lo + ph->p_memsz) {
            in = 1;
            s->found.lo = lo;
            s->found.hi = lo + ph->p_memsz;
        }
    }
    if (!in)
        return 0;
    s->found.tls = tls;
    s->found.bias = info->dlpi_addr;
    s->found.object = scaf_progkey_object(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum);
    s->hit = 1;
    return 1;
}

/* The object holding `fn`, from the cache or the loader; 0 when no loaded object holds it. */
static int lookup(void (*fn)(void *), struct tls_obj *out)
{
    uintptr_t a = (uintptr_t)(void *)fn;
    struct obj_search s = {.addr = a};

    pthread_mutex_lock(&C.lock);
    for (int i = 0; i < C.nobjs; i++)
        if (a >= C.objs[i].lo && a < C.objs[i].hi) {
            *out = C.objs[i];
            pthread_mutex_unlock(&C.lock);
            return 1;
        }
    pthread_mutex_unlock(&C.lock);
    dl_iterate_phdr(find_object, &s);
    if (!s.hit)
        return 0;
    pthread_mutex_lock(&C.lock);
    if (C.nobjs < OBJ_CACHE)
        C.objs[C.nobjs++] = s.found;
    pthread_mutex_unlock(&C.lock);
    *out = s.found;
    return 1;
}

void scaf_tlsobj_forget_range(uintptr_t lo, uintptr_t hi)
{
    pthread_mutex_lock(&C.lock);
    for (int i = 0; i < C.nobjs;) {
        if (C.objs[i].lo < hi && lo < C.objs[i].hi)
            C.objs[i] = C.objs[--C.nobjs];
        else
            i++;
    }
    pthread_mutex_unlock(&C.lock);
}

int scaf_tlsobj_has_tls(void (*fn)(void *))
{
    struct tls_obj o;

    return lookup(fn, &o) ? o.tls : 0;
}

int scaf_tlsobj_identify(void (*fn)(void *), uint64_t *object, uint32_t *offset)
{
    struct tls_obj o;
    uintptr_t off;

    *object = 0;
    *offset = 0;
    if (!lookup(fn, &o))
        return -1;
    off = (uintptr_t)(void *)fn - o.bias;
    /* An object over 4 GiB of code has offsets the memory cannot carry: not remembered. */
    if (off <= UINT32_MAX) {
        *object = o.object;
        *offset = (uint32_t)off;
    }
    return o.tls;
}
