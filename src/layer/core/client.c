/* client.c — start-up, lazy first connect and fork: the order in which the core's parts come to life. */
#include "client.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "../estimate/estimate.h"
#include "bound.h"
#include "conn.h"
#include "helper.h"
#include "malleable.h"
#include "say.h"
#include "settings.h"

static void atfork_prepare(void)
{
    scaf_conn_lock();
}

static void atfork_parent(void)
{
    scaf_conn_unlock();
}

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
    if (scaf_estimate_in_child())
        return;
    scaf_helper_forget();
    scaf_conn_forget();
}

void scaf_client_init(int max_threads, const char *unusable)
{
    scaf_settings_read();
    if (unusable) {
        /* Nothing can be steered; the wrappers still pass every call through by name. */
        scaf_layer_log("%s: inert", unusable);
        atomic_store(&scaf_conn_state, SCAF_CONN_INERT);
    }
    scaf_bound_init(max_threads);
    scaf_malleable_init();
    scaf_conn_init(scaf_settings.disable);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
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
