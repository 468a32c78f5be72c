/* publish.c — the efficiency report the page carries when it is not a fresh filter value: long regions and new pages. */
#include "publish.h"

#include "../core/page.h"

void scaf_publish_report(struct scaf_page *pg, const struct scaf_filter *f, int long_flagged, double assumed)
{
    if (long_flagged) {
        if (f->kind == SCAF_ESTIMATE_COUNTERS && f->have)
            scaf_page_publish_estimate(pg, f->value, f->team, SCAF_ESTIMATE_COUNTERS);
        else
            scaf_page_publish_estimate(pg, assumed, f->team ? f->team : scaf_page_last_team(pg),
                                       SCAF_ESTIMATE_ASSUMED);
    } else if (f->have) {
        scaf_page_publish_estimate(pg, f->value, f->team, f->kind);
    } else if (scaf_page_estimate_kind(pg) == SCAF_ESTIMATE_ASSUMED) {
        scaf_page_publish_estimate(pg, 0.0, 0, SCAF_ESTIMATE_NONE);
    }
}
