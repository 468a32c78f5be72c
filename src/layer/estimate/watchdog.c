/* watchdog.c — flags a region that runs past SCAF_LONG_REGION_S so the daemon controls the client by CPU set meanwhile. */
#include "watchdog.h"

#include "../core/page.h"
#include "../core/say.h"
#include "publish.h"

int scaf_watchdog_claim(struct scaf_watchdog *w, uint64_t now)
{
    for (int i = 0; i < SCAF_WATCH_SLOTS; i++) {
        uint64_t z = 0;

        if (atomic_load_explicit(&w->t0[i], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&w->t0[i], &z, now, memory_order_relaxed,
                                                    memory_order_relaxed))
            return i;
    }
    return -1;
}

int scaf_watchdog_update(struct scaf_watchdog *w, struct scaf_page *pg, uint64_t now, uint64_t long_ns,
                         int wait, const struct scaf_filter *f, double assumed)
{
    uint64_t oldest = 0;
    int is_long;

    for (int i = 0; i < SCAF_WATCH_SLOTS; i++) {
        uint64_t t = atomic_load_explicit(&w->t0[i], memory_order_relaxed);

        if (t && (oldest == 0 || t < oldest))
            oldest = t;
    }
    is_long = oldest != 0 && now > oldest && now - oldest >= long_ns;
    if (is_long == scaf_watchdog_flagged(w))
        return is_long;
    if (wait ? pthread_mutex_lock(&w->mu) != 0 : pthread_mutex_trylock(&w->mu) != 0)
        return scaf_watchdog_flagged(w);
    if (is_long != scaf_watchdog_flagged(w)) {
        atomic_store_explicit(&w->flagged, is_long, memory_order_relaxed);
        scaf_page_flag(pg, SCAF_CLIENT_LONG_REGION, is_long);
        if (is_long)
            scaf_layer_log("a region has run %.1f s: long region, affinity control",
                           (double)(now - oldest) / 1e9);
        scaf_publish_report(pg, f, is_long, assumed);
    }
    pthread_mutex_unlock(&w->mu);
    return is_long;
}

void scaf_watchdog_attach(struct scaf_watchdog *w, struct scaf_page *pg, const struct scaf_filter *f,
                          double assumed)
{
    if (pthread_mutex_lock(&w->mu) != 0)
        return;
    if (scaf_watchdog_flagged(w))
        scaf_page_flag(pg, SCAF_CLIENT_LONG_REGION, 1);
    scaf_publish_report(pg, f, scaf_watchdog_flagged(w), assumed);
    pthread_mutex_unlock(&w->mu);
}
