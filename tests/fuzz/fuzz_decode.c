/* fuzz_decode.c — libFuzzer target for what scafd decodes from clients: socket messages (wire.c) and pages (page.c). */
#include "../../src/daemon/collect/page.h"
#include "../../src/daemon/transport/wire.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * The first input byte picks the decoder, so one corpus covers both:
 *   even: the rest is a byte stream from one peer, assembled into messages the
 *         way conn.c does (a header, then exactly the length it announced);
 *   odd:  the rest is a page image the client scribbled on, decoded twice (the
 *         second read starts from the first's report, as the daemon's does).
 * Every property below is one the rest of the daemon relies on: a violation traps.
 */

static void check(int ok)
{
    if (!ok)
        __builtin_trap();
}

static int printable_nul_terminated(const char *s, size_t cap)
{
    const char *end = memchr(s, 0, cap);
    if (!end)
        return 0;
    for (const char *p = s; p < end; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

static void fuzz_stream(const uint8_t *data, size_t size)
{
    uint32_t client_id = 0;
    size_t off = 0;

    while (size - off >= sizeof(struct scaf_msg_header)) {
        struct scaf_wire_refusal why;
        struct scaf_msg_header h;
        uint32_t want;

        memset(&why, 0xa5, sizeof why);
        memcpy(&h, data + off, sizeof h);
        want = scaf_wire_check_header(&h, client_id, &why);
        if (want == 0) {
            check(why.reason >= SCAF_REFUSE_VERSION && why.reason <= SCAF_REFUSE_DUPLICATE);
            check(memchr(why.text, 0, sizeof why.text) != NULL);
            return;
        }
        /* Accepted lengths must fit conn.c's input buffer, whatever the header said. */
        check(want >= sizeof h && want <= sizeof(struct scaf_msg_hello) && want == h.length);
        if (size - off < want)
            return; /* a truncated message: conn.c keeps waiting for the rest */
        if (h.type == SCAF_MSG_HELLO) {
            struct scaf_msg_hello m;
            memcpy(&m, data + off, sizeof m);
            if (scaf_wire_check_hello(&m, &why) < 0) {
                check(why.reason == SCAF_REFUSE_MALFORMED);
                check(memchr(why.text, 0, sizeof why.text) != NULL);
                return;
            }
            check(m.max_threads >= 1 && m.max_threads <= SCAF_MAX_CPUS);
            check((m.flags & ~SCAF_HELLO_F_ALL) == 0);
            client_id = 1;
        } else {
            check(h.type == SCAF_MSG_STATUS_REQ);
        }
        off += want;
    }
}

static void check_report(const struct scaf_page_report *r, uint32_t max_threads, int hello_fixed)
{
    check(r->eff_team <= SCAF_MAX_CPUS);
    check(r->estimate <= SCAF_ESTIMATE_COUNTERS);
    if (r->estimate == SCAF_ESTIMATE_NONE)
        check(r->efficiency == -1.0);
    else
        check(r->efficiency >= 0.0 && r->efficiency <= 1.0);
    check(r->fixed_team >= 1 && r->fixed_team <= SCAF_MAX_CPUS);
    (void)max_threads;
    check(r->verdict <= SCAF_VERDICT_FIXED);
    if (hello_fixed || (r->flags & SCAF_CLIENT_NONMALLEABLE))
        check(r->verdict == SCAF_VERDICT_FIXED);
    check(r->long_region == ((r->flags & SCAF_CLIENT_LONG_REGION) != 0));
    check(r->source <= SCAF_SOURCE_CHECK);
    check(printable_nul_terminated(r->reason, sizeof r->reason));
    /* The names printed in status and logs exist for every value the report can hold. */
    check(scaf_verdict_name(r->verdict) && scaf_verdict_source_name(r->source) && scaf_estimate_name(r->estimate));
}

static void fuzz_page(const uint8_t *data, size_t size)
{
    static _Alignas(4096) unsigned char mem[SCAF_PAGE_SIZE];
    struct scaf_page *pg = (struct scaf_page *)mem;
    struct scaf_page_report r;
    uint32_t max_threads = 1;
    int hello_fixed = 0;
    uint64_t cpuset[SCAF_CPUSET_WORDS] = {1};

    /* Two bytes of HELLO context (already validated by then: max_threads in range), then the page. */
    if (size >= 2) {
        max_threads = 1 + (((uint32_t)data[0] << 8 | data[1]) % SCAF_MAX_CPUS);
        hello_fixed = data[0] >> 7;
        data += 2;
        size -= 2;
    }
    memset(mem, 0, sizeof mem);
    memcpy(mem, data, size < sizeof mem ? size : sizeof mem);
    scaf_page_report_init(&r, max_threads);
    (void)scaf_page_read(pg, max_threads, hello_fixed, &r);
    check_report(&r, max_threads, hello_fixed);
    /* The daemon writes its half over whatever the client left there, then reads again. */
    scaf_page_write(pg, max_threads, SCAF_CONTROL_THREADS, cpuset, 2, 64);
    check((atomic_load(&pg->seq) & 1) == 0);
    scaf_page_write_gang(pg, SCAF_GANG_WAIT);
    (void)scaf_page_read(pg, max_threads, hello_fixed, &r);
    check_report(&r, max_threads, hello_fixed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        fuzz_page(data + 1, size - 1);
    else
        fuzz_stream(data + 1, size - 1);
    return 0;
}
