/* provider.c — libscaf_tcm.so (soname libtcm.so.1): the Thread Composability Manager that oneTBB loads, forwarding each call to the TCM adapter of the scaf layer in the process. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "../abi.h"

/*
 * oneTBB loads "libtcm.so.1" by name and resolves all eleven entry points
 * before it uses any. The dynamic loader answers a dlopen by soname with an
 * object already loaded under that soname, so this library, preloaded by
 * `scaf run`, is what oneTBB gets even when Intel's own libtcm.so.1 sits
 * beside libtbb.so.12 (pip's tbb wheel depends on tcmlib).
 *
 * It holds no state: the permits live in the layer's core, beside the OpenMP
 * adapters, so a process with oneTBB and OpenMP is one client of scafd. The
 * layer exports one table (scaf_tcm_provider); without it (no layer
 * preloaded, or another version of it) tcmConnect fails as a TCM that is not
 * enabled does, and oneTBB runs exactly as without a TCM.
 */

#define EXPORT __attribute__((visibility("default")))

static const struct scaf_tcm_provider *table;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void find(void)
{
    const struct scaf_tcm_provider *t = dlsym(RTLD_DEFAULT, SCAF_TCM_PROVIDER_SYMBOL);

    if (t && t->version == SCAF_TCM_PROVIDER_VERSION && t->size >= sizeof *t)
        table = t;
}

static const struct scaf_tcm_provider *provider(void)
{
    pthread_once(&once, find);
    return table;
}

EXPORT scaf_tcm_result tcmConnect(scaf_tcm_callback callback, scaf_tcm_client_id *client_id)
{
    const struct scaf_tcm_provider *p = provider();

    return p ? p->connect(callback, client_id) : SCAF_TCM_ERROR_UNKNOWN;
}

EXPORT scaf_tcm_result tcmDisconnect(scaf_tcm_client_id client_id)
{
    const struct scaf_tcm_provider *p = provider();

    return p ? p->disconnect(client_id) : SCAF_TCM_ERROR_INVALID_ARGUMENT;
}

/* The request travels by value, as the interface declares it (32 bytes: in memory, per the x86-64 ABI). */
EXPORT scaf_tcm_result tcmRequestPermit(scaf_tcm_client_id client_id, struct scaf_tcm_request request,
                                        void *callback_arg, scaf_tcm_handle *permit_handle,
                                        struct scaf_tcm_permit *permit)
{
    const struct scaf_tcm_provider *p = provider();

    return p ? p->request_permit(client_id, &request, callback_arg, permit_handle, permit)
             : SCAF_TCM_ERROR_INVALID_ARGUMENT;
}

EXPORT scaf_tcm_result tcmGetPermitData(scaf_tcm_handle permit_handle, struct scaf_tcm_permit *permit)
{
    const struct scaf_tcm_provider *p = provider();

    return p ? p->get_permit_data(permit_handle, permit) : SCAF_TCM_ERROR_INVALID_ARGUMENT;
}

EXPORT scaf_tcm_result tcmReleasePermit(scaf_tcm_handle permit_handle)
{
    const struct scaf_tcm_provider *p = provider();

    return p ? p->release_permit(permit_handle) : SCAF_TCM_ERROR_INVALID_ARGUMENT;
}

EXPORT scaf_tcm_result tcmIdlePermit(scaf_tcm_handle permit_handle)
{
    const struct scaf_tcm_provider *p = provider();

    return p ? p->idle_permit(permit_handle) : SCAF_TCM_ERROR_INVALID_ARGUMENT;
}

EXPORT scaf_tcm_result tcmDeactivatePermit(scaf_tcm_handle permit_handle)
{
    const struct scaf_tcm_provider *p = provider();

    return p ? p->deactivate_permit(permit_handle) : SCAF_TCM_ERROR_INVALID_ARGUMENT;
}

EXPORT scaf_tcm_result tcmActivatePermit(scaf_tcm_handle permit_handle)
{
    const struct scaf_tcm_provider *p = provider();

    return p ? p->activate_permit(permit_handle) : SCAF_TCM_ERROR_INVALID_ARGUMENT;
}

EXPORT scaf_tcm_result tcmRegisterThread(scaf_tcm_handle permit_handle)
{
    const struct scaf_tcm_provider *p = provider();

    return p ? p->register_thread(permit_handle) : SCAF_TCM_ERROR_INVALID_ARGUMENT;
}

EXPORT scaf_tcm_result tcmUnregisterThread(void)
{
    const struct scaf_tcm_provider *p = provider();

    return p ? p->unregister_thread() : SCAF_TCM_ERROR_INVALID_ARGUMENT;
}

/* oneTBB prints this with TBB_VERSION=1. */
EXPORT scaf_tcm_result tcmGetVersionInfo(char *buffer, uint32_t buffer_size)
{
    if (!buffer || buffer_size == 0)
        return SCAF_TCM_ERROR_INVALID_ARGUMENT;
    snprintf(buffer, buffer_size, "TCM: scaf's provider (libscaf_tcm.so), %s\n",
             provider() ? "permits from the scaf layer's share" : "no scaf layer in this process: not connecting");
    return SCAF_TCM_SUCCESS;
}
