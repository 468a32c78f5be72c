/* test_layer_tlsobj.c — malleable/tlsobj.c against objects really loaded: which has thread-local storage, the build-ID hash and offset a region's code is remembered under, and an address no object holds. */
#include "../../src/layer/malleable/tlsobj.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Makes this executable an object with a PT_TLS segment. */
_Thread_local int test_tlsobj_tls;

static void here(void *arg)
{
    test_tlsobj_tls += arg != NULL;
}

typedef void (*region_fn)(void *);

struct lib {
    const char *path;
    int tls;       /* built with thread-local storage */
    int build_id;  /* linked with a build ID */
    void *handle;
    region_fn a, b;
    uintptr_t base;
};

static region_fn sym(void *h, const char *name)
{
    union {
        void *p;
        region_fn f;
    } u = {.p = dlsym(h, name)};
    return u.f;
}

static int load(struct lib *l)
{
    Dl_info info;

    l->handle = dlopen(l->path, RTLD_NOW | RTLD_LOCAL);
    if (!l->handle) {
        fail("dlopen", dlerror());
        return -1;
    }
    l->a = sym(l->handle, "tlsobj_lib_a");
    l->b = sym(l->handle, "tlsobj_lib_b");
    if (!l->a || !l->b || !dladdr((void *)l->a, &info)) {
        fail(l->path, "the fixture's functions are missing");
        return -1;
    }
    l->base = (uintptr_t)info.dli_fbase;
    return 0;
}

/* What the memory would remember of one function of L: the object's hash, and the function's offset in it. */
static void check_identity(const struct lib *l, region_fn fn, uint64_t *object)
{
    uint32_t offset = 7;
    int tls = scaf_tlsobj_identify(fn, object, &offset);

    CHECK(tls == l->tls, "%s: identify says thread-local storage %d, want %d", l->path, tls, l->tls);
    CHECK(scaf_tlsobj_has_tls(fn) == l->tls, "%s: has_tls says %d, want %d", l->path, scaf_tlsobj_has_tls(fn),
          l->tls);
    /* An object without a build ID has no name that holds in the next run: hash 0, never remembered. */
    CHECK((*object != 0) == l->build_id, "%s: object hash %#llx, build ID %d", l->path, (unsigned long long)*object,
          l->build_id);
    CHECK(offset == (uintptr_t)(void *)fn - l->base, "%s: offset %#x, want %#lx", l->path, offset,
          (unsigned long)((uintptr_t)(void *)fn - l->base));
}

int main(void)
{
    struct lib libs[] = {
        {.path = TLSOBJ_PLAIN, .tls = 0, .build_id = 1},
        {.path = TLSOBJ_TLS, .tls = 1, .build_id = 1},
        {.path = TLSOBJ_NOID, .tls = 0, .build_id = 0},
    };
    uint64_t object[3][2] = {{0}};
    uint64_t own;
    uint32_t offset;
    void *heap;

    here(NULL);
    CHECK(scaf_tlsobj_has_tls(here) == 1, "this executable has thread-local storage: has_tls says 0");
    CHECK(scaf_tlsobj_identify(here, &own, &offset) == 1, "this executable: identify does not say TLS");

    for (int i = 0; i < 3; i++)
        if (load(&libs[i]) < 0)
            return check_exit("test_layer_tlsobj");
    /* Twice over, in turns: the second pass answers from the cache, which must keep the objects apart. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 3; i++) {
            uint64_t a, b;

            check_identity(&libs[i], libs[i].a, &a);
            check_identity(&libs[i], libs[i].b, &b);
            CHECK(a == b, "%s: two functions of one object under two hashes", libs[i].path);
            if (pass == 0) {
                object[i][0] = a;
                object[i][1] = b;
            } else {
                CHECK(a == object[i][0] && b == object[i][1], "%s: a cached answer differs from the first",
                      libs[i].path);
            }
        }
    /* Two objects with build IDs of their own: two names. */
    CHECK(object[0][0] != object[1][0], "two objects under one hash %#llx", (unsigned long long)object[0][0]);

    /* An address in no loaded object (heap memory): -1, and nothing to remember. */
    heap = malloc(64);
    {
        union {
            void *p;
            region_fn f;
        } u = {.p = heap};
        uint64_t obj = 1;
        uint32_t off = 1;

        CHECK(scaf_tlsobj_identify(u.f, &obj, &off) == -1 && obj == 0 && off == 0,
              "a heap address: identify should say -1 with both outputs 0");
        CHECK(scaf_tlsobj_has_tls(u.f) == 0, "a heap address has no thread-local storage");
    }
    free(heap);
    for (int i = 0; i < 3; i++)
        dlclose(libs[i].handle);
    return check_exit("test_layer_tlsobj");
}
