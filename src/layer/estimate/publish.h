/* publish.h — what the page's efficiency report should say, from the filter and the long-region state. */
#ifndef SCAF_LAYER_PUBLISH_H
#define SCAF_LAYER_PUBLISH_H

#include "filter.h"

/*
 * Republishes the report after the long-region state changed, or on a new
 * page after a reconnect: a flagged long region states `assumed` (or keeps a
 * counters estimate), otherwise the filter's value; a long region that ended
 * before anything was measured goes back to "no estimate", not a stale
 * assumption. Writes through page.c.
 */
void scaf_publish_report(struct scaf_page *pg, const struct scaf_filter *f, int long_flagged, double assumed);

#endif
