/* page.c — decodes the client-written verdict half of a page once, with every field checked. */
#include "daemon.h"

#include <string.h>

void scaf_page_verdict_read(const struct scaf_page *pg, bool hello_fixed, struct scaf_page_verdict *out)
{
    uint32_t v = atomic_load_explicit(&pg->verdict, memory_order_acquire);
    uint32_t src = atomic_load_explicit(&pg->verdict_source, memory_order_relaxed);
    uint32_t flags = atomic_load_explicit(&pg->client_flags, memory_order_relaxed);

    memset(out, 0, sizeof *out);
    if (v > SCAF_VERDICT_FIXED)
        v = SCAF_VERDICT_UNDECIDED;
    if (src > SCAF_SOURCE_CHECK)
        src = SCAF_SOURCE_DEFAULT;
    /* The older signals still count: a client that said so at HELLO or set the flag is fixed. */
    if (hello_fixed || (flags & SCAF_CLIENT_NONMALLEABLE))
        v = SCAF_VERDICT_FIXED;
    out->verdict = v;
    out->source = src;

    /* Seqlock read: a client rewriting its reason while we copy gets an empty reason this time. */
    for (int tries = 0; tries < 3; tries++) {
        uint32_t s0 = atomic_load_explicit(&pg->reason_seq, memory_order_acquire);
        if (s0 & 1)
            continue;
        memcpy(out->reason, pg->reason, sizeof out->reason);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&pg->reason_seq, memory_order_relaxed) == s0) {
            out->reason[sizeof out->reason - 1] = 0;
            /* Client text: keep it printable so logs and JSON stay one line. */
            for (char *p = out->reason; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                    *p = ' ';
            return;
        }
    }
    out->reason[0] = 0;
}

const char *scaf_verdict_name(uint32_t v)
{
    return v == SCAF_VERDICT_FIXED ? "fixed" : v == SCAF_VERDICT_MALLEABLE ? "malleable" : "undecided";
}

const char *scaf_verdict_source_name(uint32_t s)
{
    static const char *const names[] = {"default", "evidence", "user", "rules", "check"};
    return s < sizeof names / sizeof names[0] ? names[s] : "default";
}
