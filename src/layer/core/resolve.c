/* resolve.c — an entry point from the loaded objects of one runtime, for when RTLD_NEXT does not reach it. */
#include "resolve.h"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A runtime loaded RTLD_LOCAL by a Python extension is one of a handful of candidates at most. */
#define MAX_CANDIDATES 8

struct candidates {
    const char *const *prefixes;
    char path[MAX_CANDIDATES][PATH_MAX];
    int n;
};

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct candidates *c = arg;
    const char *base;

    (void)size;
    if (!info->dlpi_name || !info->dlpi_name[0] || c->n == MAX_CANDIDATES)
        return 0;
    base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    for (const char *const *p = c->prefixes; *p; p++) {
        if (strncmp(base, *p, strlen(*p)) == 0 && strlen(info->dlpi_name) < PATH_MAX) {
            strcpy(c->path[c->n++], info->dlpi_name);
            break;
        }
    }
    return 0;
}

void *scaf_resolve_loaded(const char *const *prefixes, const char *name)
{
    /* PATH_MAX * 8 is too much for a program's small thread stacks; a lookup is rare (once per entry point). */
    static struct candidates c;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    void *found = NULL;

    pthread_mutex_lock(&lock);
    c.prefixes = prefixes;
    c.n = 0;
    dl_iterate_phdr(collect, &c);
    for (int i = 0; i < c.n && !found; i++) {
        void *h = dlopen(c.path[i], RTLD_LAZY | RTLD_NOLOAD);

        if (!h)
            continue;
        found = dlsym(h, name);
        dlclose(h);
    }
    pthread_mutex_unlock(&lock);
    return found;
}

void *scaf_resolve_late(void *slot, void *(*resolve)(const char *name), const char *name, const char *runtime)
{
    void *f = resolve(name);

    if (!f) {
        char msg[200];
        int n = snprintf(msg, sizeof msg, "scaf: no %s in this process provides %s\n", runtime, name);

        if (n > 0 && write(STDERR_FILENO, msg, (size_t)n) < 0)
            abort();
        abort();
    }
    memcpy(slot, &f, sizeof f);
    return f;
}
