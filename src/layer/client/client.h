/* client.h — the layer's life as a client of scafd: start-up, the lazy first connect, fork. */
#ifndef SCAF_LAYER_CLIENT_H
#define SCAF_LAYER_CLIENT_H

struct scaf_page;

/*
 * Once, from the adapter's constructor: settings, the bound (`max_threads`:
 * the runtime's initial nthreads-var, < 1 when unknown), the user's word on
 * malleability, the connection state and the fork handlers. `unusable`:
 * NULL, or why the runtime cannot be steered (the layer then stays inert).
 */
void scaf_client_init(int max_threads, const char *unusable);

/* Nonzero once scaf_client_init ran (an adapter that is not the OpenMP one must not connect before). */
int scaf_client_ready(void);

/*
 * The first connect (thread-safe; only the first caller connects), then the
 * helper thread. Returns the page, or NULL when the layer is (now) inert.
 */
struct scaf_page *scaf_client_connect(void);

/*
 * The program works again outside a region (oneTBB asked for workers, a thread entered its arena):
 * when the page says the client is idle, one WAKE, as the region path sends (conn.h, scaf_conn_wake).
 */
void scaf_client_wake(void);

#endif
