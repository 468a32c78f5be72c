/* unload.c — the program's dlclose: when an object is unmapped, what the layer knew of its code (its region sites, whether it has thread-local storage) goes with it, so that code loaded later at the same addresses is judged afresh. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../core/blasobj.h"
#include "../core/say.h"
#include "../core/site.h"
#include "../malleable/tlsobj.h"

/* Executable segments of one object: a handful in any object seen. */
#define SEGMENTS 8

struct object {
    uintptr_t base;
    const char *name;
    int found;
    unsigned n;
    uintptr_t lo[SEGMENTS], hi[SEGMENTS];
};

static int (*real_dlclose)(void *);
static pthread_once_t resolved = PTHREAD_ONCE_INIT;

static void resolve(void)
{
    void *f = dlsym(RTLD_NEXT, "dlclose");

    memcpy(&real_dlclose, &f, sizeof f);
}

/* The object loaded at o->base under o->name, and its executable segments; stops the walk when found. */
static int find(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct object *o = arg;

    (void)size;
    if (info->dlpi_addr != o->base || strcmp(info->dlpi_name ? info->dlpi_name : "", o->name) != 0)
        return 0;
    o->found = 1;
    o->n = 0;
    for (int i = 0; i < info->dlpi_phnum && o->n < SEGMENTS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && ph->p_memsz > 0) {
            o->lo[o->n] = info->dlpi_addr + ph->p_vaddr;
            o->hi[o->n] = o->lo[o->n] + ph->p_memsz;
            o->n++;
        }
    }
    return 1;
}

/*
 * Interposed for the whole process (the layer is preloaded). An object still referenced elsewhere stays
 * mapped, and nothing is forgotten: only an unload that took it out of the loader's list does. The walks run
 * outside the real call, never inside a loader lock it holds.
 */
SCAF_EXPORT int dlclose(void *handle)
{
    struct link_map *lm = NULL;
    /* A copy: the loader frees l_name with the object. */
    char name[PATH_MAX];
    struct object o = {.name = name};
    int rc, saved = errno;

    pthread_once(&resolved, resolve);
    if (!real_dlclose)
        return -1; /* no dlclose behind us: nothing was closed */
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name &&
        strlen(lm->l_name) < sizeof name) {
        o.base = lm->l_addr;
        memcpy(name, lm->l_name, strlen(lm->l_name) + 1);
        dl_iterate_phdr(find, &o);
    }
    errno = saved;
    rc = real_dlclose(handle);
    if (rc == 0 && o.found && o.n > 0) {
        struct object after = {.base = o.base, .name = name};
        unsigned forgotten = 0;

        saved = errno;
        dl_iterate_phdr(find, &after);
        if (!after.found) {
            for (unsigned i = 0; i < o.n; i++) {
                forgotten += scaf_site_forget_range(o.lo[i], o.hi[i]);
                scaf_tlsobj_forget_range(o.lo[i], o.hi[i]);
                scaf_blasobj_forget_range(o.lo[i], o.hi[i]);
            }
            if (forgotten)
                scaf_layer_log("%s unloaded: %u region sites of its code forgotten", name, forgotten);
        }
        errno = saved;
    }
    return rc;
}
