/* fuzz_decode.c — libFuzzer target for both directions: what scafd decodes from clients (messages, pages) and what the layer, scaf-run and Python's proto decode from a daemon (its answers to HELLO, STATUS_REQ and MEMORY, the page's header). */
#include "../../src/daemon/apply/pagewrite.h"
#include "../../src/daemon/collect/pageread.h"
#include "scaf/wire.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * The first input byte picks the decoder, so one corpus covers all three:
 *   bit 0 set:   the rest is a page image the client scribbled on, decoded by
 *                scafd twice (the second read starts from the first's report,
 *                as the daemon's does);
 *   bit 1 set:   the rest is what a daemon answers a HELLO, read the way the
 *                layer's exchange (src/layer/client/conn.c) does: a header, then
 *                exactly the length it announced; the bytes after a WELCOME's
 *                32 stand for the page it would map;
 *   bit 2 set:   the rest is what a daemon answers a STATUS_REQ (bit 3 set) or
 *                a MEMORY, read the way scaf-run (src/run/ask.c) and Python's
 *                proto do: a header, then exactly the length it announced;
 *   none:     the rest is a byte stream from one client, assembled into
 *                messages the way scafd's conn.c does (a header, then exactly
 *                the length it announced).
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

/* What the layer's encoder makes of a decoded HELLO, scafd decodes to the same HELLO. */
static void hello_round_trip(const struct scaf_wire_hello *m)
{
    struct scaf_msg_hello again;
    struct scaf_wire_refusal why;
    struct scaf_wire_hello back;

    scaf_wire_encode_hello(&again, m->max_threads, m->flags, m->name, m->key);
    check(scaf_wire_check_header(&again.h, 0, &why) == sizeof again);
    check(scaf_wire_decode_hello(&again, &back, &why) == 0);
    check(back.max_threads == m->max_threads && back.flags == m->flags && back.key == m->key &&
          strcmp(back.name, m->name) == 0);
}

/* What scaf's encoder makes of a decoded MEMORY request, scafd decodes to the same request. */
static void memory_round_trip(const struct scaf_wire_memory *m)
{
    struct scaf_msg_memory again;
    struct scaf_wire_refusal why;
    struct scaf_wire_memory back;

    scaf_wire_encode_memory(&again, m->op, m->key, m->max_threads, m->verdict, m->name);
    check(scaf_wire_check_header(&again.h, 0, &why) == sizeof again);
    check(scaf_wire_decode_memory(&again, &back, &why) == 0);
    check(back.op == m->op && back.key == m->key && back.max_threads == m->max_threads &&
          back.verdict == m->verdict && strcmp(back.name, m->name) == 0);
}

/* What scafd's encoders make of a decoded answer, the layer decodes to the same answer. */
static void answer_round_trip(const struct scaf_wire_answer *ans)
{
    union {
        struct scaf_msg_welcome welcome;
        struct scaf_msg_refuse refuse;
    } again;
    struct scaf_wire_refusal why;
    struct scaf_wire_answer back;
    size_t len;

    if (ans->type == SCAF_MSG_WELCOME) {
        scaf_wire_encode_welcome(&again.welcome, ans->client_id, ans->cpus);
        len = sizeof again.welcome;
    } else {
        struct scaf_wire_refusal r = {.reason = ans->reason};
        memcpy(r.text, ans->text, sizeof r.text);
        scaf_wire_encode_refuse(&again.refuse, &r);
        len = sizeof again.refuse;
    }
    check(scaf_wire_check_answer(&again.welcome.h, &why) == len);
    check(scaf_wire_decode_answer(&again, len, &back, &why) == 0);
    check(back.type == ans->type && back.client_id == ans->client_id && back.cpus == ans->cpus &&
          back.reason == ans->reason && strcmp(back.text, ans->text) == 0);
    /* scafd never takes what it sends for a client's message. */
    check(scaf_wire_check_header(&again.welcome.h, 0, &why) == 0);
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
        check(want >= sizeof h && want <= SCAF_WIRE_REQUEST_MAX && want == h.length);
        if (size - off < want)
            return; /* a truncated message: conn.c keeps waiting for the rest */
        if (h.type == SCAF_MSG_HELLO) {
            struct scaf_wire_hello m;
            if (scaf_wire_decode_hello(data + off, &m, &why) < 0) {
                check(why.reason == SCAF_REFUSE_MALFORMED);
                check(memchr(why.text, 0, sizeof why.text) != NULL);
                return;
            }
            check(m.max_threads >= 1 && m.max_threads <= SCAF_MAX_CPUS);
            check((m.flags & ~SCAF_HELLO_F_ALL) == 0);
            check(memchr(m.name, 0, sizeof m.name) != NULL);
            hello_round_trip(&m);
            client_id = 1;
        } else if (h.type == SCAF_MSG_MEMORY) {
            struct scaf_wire_memory m;
            if (scaf_wire_decode_memory(data + off, &m, &why) < 0) {
                check(why.reason == SCAF_REFUSE_MALFORMED);
                check(memchr(why.text, 0, sizeof why.text) != NULL);
                return;
            }
            check(m.op >= SCAF_MEMORY_RECALL && m.op <= SCAF_MEMORY_REMEMBER);
            check(memchr(m.name, 0, sizeof m.name) != NULL);
            memory_round_trip(&m);
            check(client_id == 0);
        } else if (h.type == SCAF_MSG_WAKE) {
            struct scaf_msg_header wake = scaf_wire_encode_wake();
            check(client_id != 0 && memcmp(&wake, &h, sizeof h) == 0);
        } else {
            struct scaf_msg_header req = scaf_wire_encode_status_req();
            check(h.type == SCAF_MSG_STATUS_REQ && memcmp(&req, &h, sizeof h) == 0);
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
    check(r->started_with <= max_threads);
    check(r->verdict <= SCAF_VERDICT_FIXED);
    if (hello_fixed || (r->flags & SCAF_CLIENT_NONMALLEABLE))
        check(r->verdict == SCAF_VERDICT_FIXED);
    check(r->long_region == ((r->flags & SCAF_CLIENT_LONG_REGION) != 0));
    check(r->source <= SCAF_SOURCE_CHECK);
    check(printable_nul_terminated(r->reason, sizeof r->reason));
    /* The names printed in status and logs exist for every value the report can hold. */
    check(scaf_pageread_verdict_name(r->verdict) && scaf_pageread_source_name(r->source) && scaf_pageread_estimate_name(r->estimate));
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
    scaf_pageread_init(&r, max_threads);
    (void)scaf_pageread_report(pg, max_threads, hello_fixed, &r);
    check_report(&r, max_threads, hello_fixed);
    {
        /* What a departing client learned: never more entries than the page holds, whatever it says. */
        struct scaf_site_memo learned[SCAF_MEMORY_SITES];
        check(scaf_pageread_learned(pg, learned) <= SCAF_MEMORY_SITES);
    }
    /* The daemon writes its half over whatever the client left there, then reads again. */
    scaf_pagewrite_alloc(pg, max_threads, SCAF_CONTROL_THREADS, cpuset, 2, 64);
    check((atomic_load(&pg->seq) & 1) == 0);
    scaf_pagewrite_gang(pg, SCAF_GANG_WAIT);
    (void)scaf_pageread_report(pg, max_threads, hello_fixed, &r);
    check_report(&r, max_threads, hello_fixed);
}

/* What runs inside user programs: the layer decodes a daemon's answer to HELLO and checks the page it maps. */
static void fuzz_answer(const uint8_t *data, size_t size)
{
    static _Alignas(4096) unsigned char mem[SCAF_PAGE_SIZE];
    union {
        struct scaf_msg_header h;
        struct scaf_msg_welcome welcome;
        struct scaf_msg_refuse refuse;
    } in;
    struct scaf_wire_refusal why;
    struct scaf_wire_answer ans;
    uint32_t len;

    /* The page the layer would map after a WELCOME: the bytes that follow one (its fd may carry anything). */
    size_t skip = size < sizeof in.welcome ? size : sizeof in.welcome;
    memset(mem, 0, sizeof mem);
    memcpy(mem, data + skip, size - skip < sizeof mem ? size - skip : sizeof mem);
    memset(&why, 0xa5, sizeof why);
    if (scaf_wire_check_page((const struct scaf_page *)mem, &why) == 0) {
        const struct scaf_page *pg = (const struct scaf_page *)mem;
        check(pg->magic == SCAF_PAGE_MAGIC && pg->version == SCAF_PROTO_VERSION);
    } else {
        check(why.reason == SCAF_REFUSE_MALFORMED || why.reason == SCAF_REFUSE_VERSION);
        check(memchr(why.text, 0, sizeof why.text) != NULL);
    }

    if (size < sizeof in.h)
        return; /* the layer's read times out or sees EOF: no decoding */
    memset(&why, 0xa5, sizeof why);
    memcpy(&in.h, data, sizeof in.h);
    len = scaf_wire_check_answer(&in.h, &why);
    if (len == 0) {
        check(why.reason == SCAF_REFUSE_MALFORMED && memchr(why.text, 0, sizeof why.text) != NULL);
        return;
    }
    /* Accepted lengths must fit the layer's buffer, whatever the header said. */
    check(len > sizeof in.h && len <= sizeof in && len == in.h.length);
    if (size < len)
        return; /* truncated: the layer's read fails */
    memcpy(&in, data, len);
    memset(&ans, 0xa5, sizeof ans);
    memset(&why, 0xa5, sizeof why);
    if (scaf_wire_decode_answer(&in, len, &ans, &why) != 0) {
        check(why.reason == SCAF_REFUSE_MALFORMED && memchr(why.text, 0, sizeof why.text) != NULL);
        check(in.h.type == SCAF_MSG_WELCOME && (in.welcome.page_size != SCAF_PAGE_SIZE || in.welcome.reserved != 0));
        return;
    }
    check(ans.type == in.h.type);
    if (ans.type == SCAF_MSG_WELCOME) {
        check(in.h.version == SCAF_PROTO_VERSION && in.h.reserved == 0 && in.welcome.reserved == 0 &&
              len == sizeof in.welcome);
        check(ans.client_id == in.welcome.client_id && ans.cpus == in.welcome.cpus);
    } else {
        check(ans.type == SCAF_MSG_REFUSE && len == sizeof in.refuse);
        check(ans.reason == in.refuse.reason && ans.daemon_version == in.refuse.daemon_version);
        /* The layer prints the text: it is terminated within its buffer. */
        check(memchr(ans.text, 0, sizeof ans.text) != NULL);
        for (const char *c = ans.text; *c; c++)
            check((unsigned char)*c >= 0x20 && *c != 0x7f);
    }
    answer_round_trip(&ans);
    /* Decoding never reads past what it was given: a shorter buffer is refused, not over-read. */
    check(scaf_wire_decode_answer(&in, len - 1, &ans, &why) == -1);
}

/* What scaf-run and Python's proto run: the asker decodes a daemon's answer to STATUS_REQ or MEMORY. */
static void fuzz_reply(const uint8_t *data, size_t size, uint32_t asked)
{
    union scaf_wire_memory_answer in;
    struct scaf_wire_refusal why;
    struct scaf_wire_memory_reply got;
    enum scaf_wire_reply kind;
    uint32_t len;

    if (size < sizeof in.h)
        return; /* the asker's read fails */
    memset(&why, 0xa5, sizeof why);
    len = scaf_wire_check_reply(data, asked, &why);
    if (len == 0) {
        check(why.reason == SCAF_REFUSE_MALFORMED && memchr(why.text, 0, sizeof why.text) != NULL);
        return;
    }
    memcpy(&in.h, data, sizeof in.h);
    check(len == in.h.length && len >= sizeof in.h);
    if (asked == SCAF_MSG_STATUS_REQ) {
        check(in.h.type == SCAF_MSG_STATUS_REPLY && len <= SCAF_STATUS_MAX);
        return;
    }
    /* Accepted lengths must fit the asker's buffer (ask.c's is this union), whatever the header said. */
    check(len <= sizeof in);
    if (size < len)
        return;
    memcpy(&in, data, len);
    memset(&why, 0xa5, sizeof why);
    memset(&got, 0xa5, sizeof got);
    kind = scaf_wire_decode_memory_reply(data, len, &got, &why);
    if (kind == SCAF_WIRE_REPLY_OK) {
        check(in.h.type == SCAF_MSG_MEMORY_REPLY && in.h.version == SCAF_PROTO_VERSION && in.reply.reserved == 0);
        check(got.op == in.reply.op && got.status == in.reply.status && got.runs == in.reply.runs &&
              got.start_team == in.reply.start_team && got.forgotten == in.reply.forgotten);
    } else if (kind == SCAF_WIRE_REPLY_REFUSED) {
        check(in.h.type == SCAF_MSG_REFUSE && why.reason == in.refuse.reason);
        check(printable_nul_terminated(why.text, sizeof why.text));
    } else {
        check(kind == SCAF_WIRE_REPLY_MALFORMED && why.reason == SCAF_REFUSE_MALFORMED &&
              memchr(why.text, 0, sizeof why.text) != NULL);
        check(in.h.type == SCAF_MSG_MEMORY_REPLY && in.reply.reserved != 0);
    }
    /* Decoding never reads past what it was given. */
    check(scaf_wire_decode_memory_reply(data, len - 1, &got, &why) == SCAF_WIRE_REPLY_MALFORMED);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        fuzz_page(data + 1, size - 1);
    else if (data[0] & 2)
        fuzz_answer(data + 1, size - 1);
    else if (data[0] & 4)
        fuzz_reply(data + 1, size - 1, data[0] & 8 ? SCAF_MSG_STATUS_REQ : SCAF_MSG_MEMORY);
    else
        fuzz_stream(data + 1, size - 1);
    return 0;
}
