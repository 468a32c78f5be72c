/* tcm.c — the TCM adapter: oneTBB's Thread Composability Manager interface answered from the layer's core (a permit's concurrency is the client's share); libscaf_tcm.so forwards to it. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "../client/client.h"
#include "../core/grant.h"
#include "../core/permit.h"
#include "../core/say.h"
#include "abi.h"

/*
 * How oneTBB uses the interface (src/tbb/tcm_adaptor.cpp, 2021.11 and later),
 * which decides what each call must do here:
 *
 * - tcmConnect once, when its first arena is made; anything but SUCCESS and
 *   oneTBB keeps its own thread market for the whole process, exactly as
 *   without a TCM. So without a daemon (or with the layer inert) connect
 *   fails, and scaf changes nothing.
 * - One permit per arena, requested inactive with 0 workers when the arena is
 *   made, then requested again through the same handle (its workers wanted:
 *   max_sw_threads, and 1 as min_sw_threads when a task must run on a
 *   worker) each time the arena's demand changes, and deactivated when the
 *   demand drops to 0. After each request it reads the permit back
 *   (tcmGetPermitData) and takes the sum of its concurrencies as the
 *   arena's workers, or 0 when the permit is inactive.
 * - The renegotiation callback makes it read the permit back; the helper
 *   thread calls it when the share changed (core/permit.c).
 * - tcmRegisterThread / tcmUnregisterThread around each thread's work in an
 *   arena: counted, not steered.
 * - A permit's concurrency counts workers, beyond the thread that runs the
 *   parallel algorithm: a share of T contexts grants T - 1 (core/grant.c).
 */

#define CLIENT_MAX 8

struct client {
    int used;
    scaf_tcm_client_id id;
    scaf_tcm_callback callback;
    int callers_enter; /* oneTBB 2022.0 or later: its callers register too (core/permit.h) */
};

/*
 * oneTBB registers every thread that enters an arena's dispatch loop, the
 * caller of the algorithm included, from 2022.0 on (interface version 12140);
 * 2021.11 to 2021.13 register only workers. The version is asked of the
 * libtbb in the global scope; a oneTBB loaded privately (RTLD_LOCAL) is not
 * found and gets the older rule.
 */
static int tbb_callers_enter(void)
{
    void *f = dlsym(RTLD_DEFAULT, "TBB_runtime_interface_version");
    int (*version)(void);

    if (!f)
        return 0;
    memcpy(&version, &f, sizeof version);
    return version() >= 12140;
}

static pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
static struct client clients[CLIENT_MAX];
static scaf_tcm_client_id next_id = 1;

static struct client *client_of(scaf_tcm_client_id id)
{
    for (unsigned i = 0; i < CLIENT_MAX; i++)
        if (clients[i].used && clients[i].id == id)
            return &clients[i];
    return NULL;
}

/* A handle is the core's permit key (never 0), carried as a pointer. */
static uint64_t key_of(scaf_tcm_handle h)
{
    return (uint64_t)(uintptr_t)h;
}

static uint8_t state_out(unsigned grant_state)
{
    return grant_state == SCAF_GRANT_ACTIVE ? SCAF_TCM_STATE_ACTIVE
           : grant_state == SCAF_GRANT_IDLE ? SCAF_TCM_STATE_IDLE
                                            : SCAF_TCM_STATE_INACTIVE;
}

/* The renegotiation: the runtime's callback, from the helper thread, with the permit's handle and its own argument. */
static void notify(uint64_t key, void *owner, void *arg)
{
    struct client *c = owner;
    struct scaf_tcm_callback_flags what = {.new_concurrency = 1, .new_state = 1};
    scaf_tcm_callback cb;

    pthread_mutex_lock(&clients_lock);
    cb = c->used ? c->callback : NULL;
    pthread_mutex_unlock(&clients_lock);
    if (cb)
        (void)cb((scaf_tcm_handle)(uintptr_t)key, arg, what);
}

static scaf_tcm_result tcm_connect(scaf_tcm_callback callback, scaf_tcm_client_id *client_id)
{
    scaf_tcm_result rc = SCAF_TCM_ERROR_UNKNOWN;

    if (!client_id)
        return SCAF_TCM_ERROR_INVALID_ARGUMENT;
    /* Before the OpenMP adapter's constructor (a library constructor that starts oneTBB): no core yet. */
    if (!scaf_client_ready()) {
        scaf_layer_log("TCM connect before the layer started: oneTBB keeps its own workers");
        return SCAF_TCM_ERROR_UNKNOWN;
    }
    if (!scaf_client_connect()) {
        scaf_layer_log("TCM connect: no daemon (or the layer is inert): oneTBB keeps its own workers");
        return SCAF_TCM_ERROR_UNKNOWN;
    }
    pthread_mutex_lock(&clients_lock);
    for (unsigned i = 0; i < CLIENT_MAX; i++) {
        if (clients[i].used)
            continue;
        clients[i] = (struct client){.used = 1, .id = next_id++, .callback = callback,
                                     .callers_enter = tbb_callers_enter()};
        *client_id = clients[i].id;
        rc = SCAF_TCM_SUCCESS;
        break;
    }
    pthread_mutex_unlock(&clients_lock);
    scaf_layer_log("TCM client %s", rc == SCAF_TCM_SUCCESS ? "connected: oneTBB's workers follow the share"
                                                            : "refused: too many TCM clients in this process");
    return rc;
}

static scaf_tcm_result tcm_disconnect(scaf_tcm_client_id client_id)
{
    struct client *c;

    pthread_mutex_lock(&clients_lock);
    c = client_of(client_id);
    pthread_mutex_unlock(&clients_lock);
    if (!c)
        return SCAF_TCM_ERROR_INVALID_ARGUMENT;
    /* Outside clients_lock: closing waits for a callback in flight, which takes clients_lock. */
    scaf_permit_close_owner(c);
    pthread_mutex_lock(&clients_lock);
    c->used = 0;
    c->callback = NULL;
    pthread_mutex_unlock(&clients_lock);
    return SCAF_TCM_SUCCESS;
}

/* Fills a permit the caller gave us room for: the grant in the first concurrency, 0 in the others. */
static scaf_tcm_result fill(uint64_t key, struct scaf_tcm_permit *permit)
{
    unsigned grant, state;

    if (!permit->concurrencies || permit->size < 1)
        return SCAF_TCM_ERROR_INVALID_ARGUMENT;
    if (scaf_permit_read(key, &grant, &state) != 0)
        return SCAF_TCM_ERROR_INVALID_ARGUMENT;
    permit->concurrencies[0] = grant;
    for (uint32_t i = 1; i < permit->size; i++)
        permit->concurrencies[i] = 0;
    permit->state = state_out(state);
    /* Read under the core's lock: never torn, so never stale. */
    permit->flags = (struct scaf_tcm_permit_flags){0};
    return SCAF_TCM_SUCCESS;
}

/* The request's bounds as numbers of workers: "automatic" is 0 for the min, the bound of the layer for the max. */
static int bounds(const struct scaf_tcm_request *r, unsigned *min, unsigned *max)
{
    if (r->min_sw_threads < SCAF_TCM_AUTOMATIC || r->max_sw_threads < SCAF_TCM_AUTOMATIC)
        return -1;
    if (r->constraints_size > 0 && !r->cpu_constraints)
        return -1;
    *min = r->min_sw_threads == SCAF_TCM_AUTOMATIC ? 0 : (unsigned)r->min_sw_threads;
    *max = r->max_sw_threads == SCAF_TCM_AUTOMATIC ? SCAF_PERMIT_MAX_WORKERS : (unsigned)r->max_sw_threads;
    if (*min > *max)
        return -1;
    return 0;
}

static scaf_tcm_result tcm_request_permit(scaf_tcm_client_id client_id, const struct scaf_tcm_request *request,
                                          void *callback_arg, scaf_tcm_handle *handle, struct scaf_tcm_permit *permit)
{
    struct client *c;
    unsigned min, max, state;
    uint64_t key;

    if (!request || !handle || bounds(request, &min, &max) != 0)
        return SCAF_TCM_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&clients_lock);
    c = client_of(client_id);
    pthread_mutex_unlock(&clients_lock);
    if (!c)
        return SCAF_TCM_ERROR_INVALID_ARGUMENT;
    /* CPU constraints (core types, NUMA nodes) are not placed: the grant is a number of threads. */
    state = request->flags.request_as_inactive ? SCAF_GRANT_INACTIVE : SCAF_GRANT_ACTIVE;
    if (*handle) {
        /* A request through a handle it holds: the same permit, asked again. */
        key = key_of(*handle);
        if (scaf_permit_update(key, min, max, state) != 0)
            return SCAF_TCM_ERROR_INVALID_ARGUMENT;
    } else {
        if (scaf_permit_open(min, max, state, c->callers_enter, notify, c, callback_arg, &key) != 0) {
            scaf_layer_log("TCM permit refused: %s", strerror(errno));
            return SCAF_TCM_ERROR_UNKNOWN;
        }
        *handle = (scaf_tcm_handle)(uintptr_t)key;
    }
    /* Workers wanted while the page says idle: the share comes back as for a region. */
    if (state == SCAF_GRANT_ACTIVE)
        scaf_client_wake();
    return permit ? fill(key, permit) : SCAF_TCM_SUCCESS;
}

static scaf_tcm_result tcm_get_permit_data(scaf_tcm_handle handle, struct scaf_tcm_permit *permit)
{
    if (!handle || !permit)
        return SCAF_TCM_ERROR_INVALID_ARGUMENT;
    return fill(key_of(handle), permit);
}

static scaf_tcm_result tcm_release_permit(scaf_tcm_handle handle)
{
    return handle && scaf_permit_close(key_of(handle)) == 0 ? SCAF_TCM_SUCCESS : SCAF_TCM_ERROR_INVALID_ARGUMENT;
}

static scaf_tcm_result set_state(scaf_tcm_handle handle, unsigned state)
{
    return handle && scaf_permit_set_state(key_of(handle), state) == 0 ? SCAF_TCM_SUCCESS
                                                                        : SCAF_TCM_ERROR_INVALID_ARGUMENT;
}

static scaf_tcm_result tcm_idle_permit(scaf_tcm_handle handle)
{
    return set_state(handle, SCAF_GRANT_IDLE);
}

static scaf_tcm_result tcm_deactivate_permit(scaf_tcm_handle handle)
{
    return set_state(handle, SCAF_GRANT_INACTIVE);
}

static scaf_tcm_result tcm_activate_permit(scaf_tcm_handle handle)
{
    scaf_client_wake();
    return set_state(handle, SCAF_GRANT_ACTIVE);
}

static scaf_tcm_result tcm_register_thread(scaf_tcm_handle handle)
{
    scaf_client_wake();
    return handle && scaf_permit_thread_enter(key_of(handle)) == 0 ? SCAF_TCM_SUCCESS
                                                                   : SCAF_TCM_ERROR_INVALID_ARGUMENT;
}

static scaf_tcm_result tcm_unregister_thread(void)
{
    return scaf_permit_thread_leave() == 0 ? SCAF_TCM_SUCCESS : SCAF_TCM_ERROR_UNKNOWN;
}

/* The one name the layer exports besides the wrapped runtime entry points: libscaf_tcm.so looks it up. */
SCAF_EXPORT const struct scaf_tcm_provider scaf_tcm_provider = {
    .version = SCAF_TCM_PROVIDER_VERSION,
    .size = sizeof(struct scaf_tcm_provider),
    .connect = tcm_connect,
    .disconnect = tcm_disconnect,
    .request_permit = tcm_request_permit,
    .get_permit_data = tcm_get_permit_data,
    .release_permit = tcm_release_permit,
    .idle_permit = tcm_idle_permit,
    .deactivate_permit = tcm_deactivate_permit,
    .activate_permit = tcm_activate_permit,
    .register_thread = tcm_register_thread,
    .unregister_thread = tcm_unregister_thread,
};
