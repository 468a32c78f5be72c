/* cpucount.c — the count of CPUs that C++ runtimes size their pools by (std::thread::hardware_concurrency), answered with the program's share when scaf run started it with one. */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "../core/say.h"
#include "../core/settings.h"

/*
 * Why (docs/runtimes.md, "DuckDB"): DuckDB has no variable for its threads;
 * it takes std::thread::hardware_concurrency() (libstdc++: the CPUs online,
 * not the affinity mask) when a database opens, and keeps it. scaf run gives
 * every runtime the program's share at its start (include/scaf/startenv.h);
 * for the C++ pools that size themselves this way the layer answers that
 * share, as a machine of that many CPUs would. Only while SCAF_START_SHARE
 * says so (the program started beside others): otherwise the real answer.
 */
typedef unsigned (*hc_fn)(void);

static hc_fn real;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
    void *f = dlsym(RTLD_NEXT, "_ZNSt6thread20hardware_concurrencyEv");

    memcpy(&real, &f, sizeof f);
}

/* std::thread::hardware_concurrency(), by its mangled name: the layer is C. */
SCAF_EXPORT unsigned _ZNSt6thread20hardware_concurrencyEv(void)
{
    unsigned n, share = scaf_settings.start_share;

    pthread_once(&once, resolve);
    n = real ? real() : (unsigned)get_nprocs();
    if (share && share < n)
        return share;
    return n;
}
