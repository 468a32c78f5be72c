/* client.c — start-up, lazy first connect and fork: the order in which the core's parts come to life. */
#include "client.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/bound.h"
#include "../core/identity.h"
#include "../core/page.h"
#include "../core/pool.h"
#include "../core/runtimes.h"
#include "../core/say.h"
#include "../core/settings.h"
#include "../malleable/malleable.h"
#include "../sandbox/sandbox.h"
#include "conn.h"
#include "helper.h"
#include "scaf/sockpath.h"

static void atfork_prepare(void)
{
    scaf_conn_lock();
}

static void atfork_parent(void)
{
    scaf_conn_unlock();
}

static _Atomic int pool_watch_started; /* start_pool_watch started the helper: this process loads pools late */

/*
 * A forked child is another process: it must not share its parent's client
 * slot (the daemon would count the parent alive while the child runs, and
 * the child's regions would be published as the parent's). It drops the
 * connection and connects anew at its own first region. An estimator
 * experiment child is the exception: it is part of the parent's measurement
 * and must not touch the daemon at all.
 */
static void atfork_child(void)
{
    scaf_conn_unlock();
    if (scaf_sandbox_in_child())
        return;
    scaf_helper_forget();
    scaf_conn_forget();
    /* A worker forked by an interpreter's pool (Python's multiprocessing) may never run a region: its BLAS,
     * loaded before the fork or imported by its first task, is found by a helper of its own, as its parent's
     * was. Only the thread is started here; the scan runs on it. */
    if (atomic_load(&pool_watch_started) && scaf_pool_watching() && scaf_helper_start() != 0)
        atomic_store(&pool_watch_started, 0);
}

/*
 * A program that ends through exit() (or by returning from main) says so on its page before its
 * socket closes. A client whose socket closes without it was killed, and a job scheduler kills a
 * job's programs one kill() at a time: the daemon then holds its turn a moment for the other
 * programs of the same session, so that they leave in one turn (scafd's loop.c). An experiment child
 * never touches the page it inherited.
 */
__attribute__((destructor)) static void farewell(void)
{
    struct scaf_page *pg;

    if (scaf_sandbox_in_child())
        return;
    pg = scaf_page_get();
    if (pg)
        scaf_page_flag(pg, SCAF_CLIENT_EXITING, 1);
}

/*
 * A process may never run a region and still own a thread pool (numpy's
 * OpenBLAS, loaded by an import long after start): when an adapter watches
 * for pools, the helper starts now and connects at the first pool it finds.
 * Only when a daemon's socket exists, so that a process with no daemon
 * around gains no thread at all.
 */
/*
 * Whether this program loads its thread pools long after start (an
 * interpreter importing numpy), so that a helper must watch from now on. Any
 * other program gets no thread before its first region: a thread of ours
 * alive at start breaks programs that change credentials per thread and then
 * call setresuid (setpriv, sudo, bwrap: glibc aborts when one thread's
 * setxid fails), and they never load a BLAS late.
 */
static int loads_pools_later(void)
{
    static const char *const interpreters[] = {"python", "pypy", "R", "Rscript", "julia", "octave"};
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *base;

    if (n <= 0)
        return 0;
    exe[n] = '\0';
    base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    for (size_t i = 0; i < sizeof interpreters / sizeof interpreters[0]; i++) {
        size_t len = strlen(interpreters[i]);

        /* python3.11, octave-cli: the name, then a version or a suffix */
        if (strncmp(base, interpreters[i], len) == 0 && (base[len] == '\0' || !isalpha((unsigned char)base[len])))
            return 1;
    }
    return 0;
}

static void start_pool_watch(void)
{
    char path[SCAF_SOCKPATH_MAX];
    struct stat st;

    if (!scaf_settings.blas)
        scaf_pool_set_scanner(NULL); /* SCAF_BLAS=0: pools are never looked for, so never touched */
    if ((!scaf_pool_watching() && !scaf_runtimes_bits()) || atomic_load(&scaf_conn_state) == SCAF_CONN_INERT)
        return;
    if (scaf_sockpath_default(path, sizeof path) != 0 || stat(path, &st) != 0 || !S_ISSOCK(st.st_mode))
        return;
    /* A pool linked in from the start is found now; a later one only in an interpreter (see loads_pools_later). */
    /* And a runtime scaf run found in the program (SCAF_RUNTIMES): its process is a client from the start. */
    if (scaf_pool_poll(NULL) == 0 && !loads_pools_later() && !scaf_runtimes_bits())
        return;
    if (scaf_helper_start() != 0)
        scaf_layer_log("no helper thread (%s): thread pools not watched", strerror(errno));
    else
        atomic_store(&pool_watch_started, 1);
}

static _Atomic int initialised;

void scaf_client_init(int max_threads, const char *unusable)
{
    scaf_settings_read();
    if (unusable) {
        /* Nothing can be steered; the wrappers still pass every call through by name. */
        scaf_layer_log("%s: inert", unusable);
        atomic_store(&scaf_conn_state, SCAF_CONN_INERT);
    }
    scaf_bound_init(max_threads);
    scaf_runtimes_init();
    scaf_identity_init();
    scaf_malleable_init();
    scaf_conn_init(scaf_settings.disable);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    start_pool_watch();
    atomic_store(&initialised, 1);
}

int scaf_client_ready(void)
{
    return atomic_load(&initialised);
}

struct scaf_page *scaf_client_connect(void)
{
    struct scaf_page *page = scaf_conn_first();

    /* Started after the connect, not inside it: the helper uses the connection, never the reverse.
     * Without a daemon it is the helper that joins one when it appears. */
    if ((page || scaf_conn_wants_join()) && scaf_helper_start() != 0)
        scaf_layer_log("no helper thread (%s): no reconnect and no CPU-set control", strerror(errno));
    return page;
}

void scaf_client_wake(void)
{
    struct scaf_page *p = scaf_page_get();
    uint32_t idle = p ? scaf_page_idle(p) : 0;

    if (idle)
        scaf_conn_wake(idle);
}
