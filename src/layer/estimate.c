/* estimate.c — placeholder until the estimator lands: times nothing, changes nothing. */
#include "estimate.h"

unsigned scaf_estimate_begin(struct scaf_region *r, void (*fn)(void *), void *data,
                             unsigned threads, int forkable)
{
    (void)forkable;
    r->fn = fn;
    r->data = data;
    r->site = 0;
    r->t0_ns = 0;
    r->threads = threads;
    r->mode = SCAF_REGION_PLAIN;
    r->exp_fd = -1;
    r->exp_pid = 0;
    return threads;
}

void scaf_estimate_end(struct scaf_region *r)
{
    (void)r;
}

void scaf_estimate_attach(struct scaf_page *page)
{
    (void)page;
}

int scaf_estimate_in_child(void)
{
    return 0;
}
