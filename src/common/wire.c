/* wire.c — the one codec of the socket messages, both directions: encoders for what each side sends, checked decoders for what each side reads. */
#include "scaf/wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void refusal(struct scaf_wire_refusal *why, uint32_t reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void refusal(struct scaf_wire_refusal *why, uint32_t reason, const char *fmt, ...)
{
    va_list ap;

    why->reason = reason;
    va_start(ap, fmt);
    vsnprintf(why->text, sizeof why->text, fmt, ap);
    va_end(ap);
}

static struct scaf_msg_header header(uint16_t type, uint32_t length)
{
    return (struct scaf_msg_header){SCAF_PROTO_MAGIC, SCAF_PROTO_VERSION, type, length, 0};
}

/* ---- client -> daemon ---- */

void scaf_wire_encode_hello(struct scaf_msg_hello *m, uint32_t max_threads, uint32_t flags, const char *name,
                            uint64_t key)
{
    memset(m, 0, sizeof *m);
    m->h = header(SCAF_MSG_HELLO, sizeof *m);
    m->max_threads = max_threads > SCAF_MAX_CPUS ? SCAF_MAX_CPUS : max_threads;
    m->flags = flags;
    m->key = key;
    /* NUL-padded to the end: no byte of the program's memory travels beyond the name. */
    if (name)
        memcpy(m->name, name, strnlen(name, sizeof m->name - 1));
}

struct scaf_msg_header scaf_wire_encode_status_req(void)
{
    return header(SCAF_MSG_STATUS_REQ, sizeof(struct scaf_msg_header));
}

void scaf_wire_put_status_req(void *buf)
{
    struct scaf_msg_header h = scaf_wire_encode_status_req();

    memcpy(buf, &h, sizeof h);
}

struct scaf_msg_header scaf_wire_encode_wake(void)
{
    return header(SCAF_MSG_WAKE, sizeof(struct scaf_msg_header));
}

uint32_t scaf_wire_check_header(const struct scaf_msg_header *h, uint32_t client_id, struct scaf_wire_refusal *why)
{
    uint32_t want;

    if (h->magic != SCAF_PROTO_MAGIC) {
        refusal(why, SCAF_REFUSE_MALFORMED, "bad magic 0x%08x (not a scaf client?)", h->magic);
        return 0;
    }
    /* Before anything else that may differ between versions: a client of another protocol learns why. */
    if (h->version != SCAF_PROTO_VERSION) {
        refusal(why, SCAF_REFUSE_VERSION, "scafd speaks protocol %u, client speaks %u", SCAF_PROTO_VERSION,
                h->version);
        return 0;
    }
    switch (h->type) {
    case SCAF_MSG_HELLO:
        want = sizeof(struct scaf_msg_hello);
        break;
    case SCAF_MSG_STATUS_REQ:
        want = sizeof(struct scaf_msg_header);
        break;
    case SCAF_MSG_MEMORY:
        want = sizeof(struct scaf_msg_memory);
        break;
    case SCAF_MSG_WAKE:
        want = sizeof(struct scaf_msg_header);
        break;
    default:
        refusal(why, SCAF_REFUSE_MALFORMED, "unexpected message type %u", h->type);
        return 0;
    }
    /* Exact sizes only, so a peer can never make scafd wait for a body larger than its buffer. */
    if (h->length != want) {
        refusal(why, SCAF_REFUSE_MALFORMED, "message type %u has length %u, expected %u", h->type, h->length, want);
        return 0;
    }
    if (h->reserved != 0) {
        refusal(why, SCAF_REFUSE_MALFORMED, "nonzero reserved header field");
        return 0;
    }
    if (h->type == SCAF_MSG_HELLO && client_id != 0) {
        refusal(why, SCAF_REFUSE_DUPLICATE, "this connection already said HELLO (client %u)", client_id);
        return 0;
    }
    if (h->type == SCAF_MSG_WAKE && client_id == 0) {
        refusal(why, SCAF_REFUSE_MALFORMED, "WAKE before HELLO: only a client wakes");
        return 0;
    }
    /* A client gets its memory on its page: MEMORY is for a connection of its own. */
    if (h->type == SCAF_MSG_MEMORY && client_id != 0) {
        refusal(why, SCAF_REFUSE_MALFORMED, "MEMORY on a client's connection (client %u)", client_id);
        return 0;
    }
    return want;
}

int scaf_wire_decode_hello(const void *msg, struct scaf_wire_hello *out, struct scaf_wire_refusal *why)
{
    struct scaf_msg_hello m;

    /* A copy: the caller's buffer need not be aligned for the struct. */
    memcpy(&m, msg, sizeof m);
    if (m.max_threads == 0 || m.max_threads > SCAF_MAX_CPUS) {
        refusal(why, SCAF_REFUSE_MALFORMED, "max_threads %u is outside 1..%u", m.max_threads, SCAF_MAX_CPUS);
        return -1;
    }
    if (m.flags & ~SCAF_HELLO_F_ALL) {
        refusal(why, SCAF_REFUSE_MALFORMED, "unknown HELLO flags 0x%x", m.flags & ~SCAF_HELLO_F_ALL);
        return -1;
    }
    for (size_t i = 0; i < sizeof m.reserved / sizeof m.reserved[0]; i++)
        if (m.reserved[i]) {
            refusal(why, SCAF_REFUSE_MALFORMED, "nonzero reserved field in HELLO");
            return -1;
        }
    out->max_threads = m.max_threads;
    out->flags = m.flags;
    out->key = m.key;
    memcpy(out->name, m.name, sizeof out->name);
    out->name[sizeof out->name - 1] = '\0';
    return 0;
}

void scaf_wire_encode_memory(struct scaf_msg_memory *m, uint32_t op, uint64_t key, uint32_t max_threads,
                             uint32_t verdict, const char *name)
{
    memset(m, 0, sizeof *m);
    m->h = header(SCAF_MSG_MEMORY, sizeof *m);
    m->op = op;
    m->key = key;
    m->max_threads = max_threads > SCAF_MAX_CPUS ? SCAF_MAX_CPUS : max_threads;
    m->verdict = verdict;
    if (name)
        memcpy(m->name, name, strnlen(name, sizeof m->name - 1));
}

/* Every byte of `p` is 0. */
static int all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

int scaf_wire_decode_memory(const void *msg, struct scaf_wire_memory *out, struct scaf_wire_refusal *why)
{
    struct scaf_msg_memory m;

    memcpy(&m, msg, sizeof m);
    if (m.reserved != 0) {
        refusal(why, SCAF_REFUSE_MALFORMED, "nonzero reserved field in MEMORY");
        return -1;
    }
    switch (m.op) {
    case SCAF_MEMORY_RECALL:
        /* Key 0 names no program: the answer is the share alone (scaf run --no-memory, a program that cannot be
         * named), which every runtime of a program about to start gets. */
        if (m.max_threads == 0 || m.max_threads > SCAF_MAX_CPUS || m.verdict != 0 || !all_zero(m.name, sizeof m.name)) {
            refusal(why, SCAF_REFUSE_MALFORMED, "MEMORY recall needs max_threads 1..%u and nothing else",
                    SCAF_MAX_CPUS);
            return -1;
        }
        break;
    case SCAF_MEMORY_FORGET:
        if (m.max_threads != 0 || m.verdict != 0 || !all_zero(m.name, sizeof m.name)) {
            refusal(why, SCAF_REFUSE_MALFORMED, "MEMORY forget takes a key (or 0 for all) and nothing else");
            return -1;
        }
        break;
    case SCAF_MEMORY_REMEMBER:
        if (m.key == 0 || m.max_threads != 0 ||
            (m.verdict != SCAF_VERDICT_FIXED && m.verdict != SCAF_VERDICT_MALLEABLE) ||
            !memchr(m.name, '\0', sizeof m.name)) {
            refusal(why, SCAF_REFUSE_MALFORMED, "MEMORY remember needs a key, a verdict (fixed or malleable) and "
                    "a NUL-terminated name");
            return -1;
        }
        break;
    default:
        refusal(why, SCAF_REFUSE_MALFORMED, "unknown MEMORY op %u", m.op);
        return -1;
    }
    out->op = m.op;
    out->key = m.key;
    out->max_threads = m.max_threads;
    out->verdict = m.verdict;
    memcpy(out->name, m.name, sizeof out->name);
    out->name[sizeof out->name - 1] = '\0';
    return 0;
}

/* ---- daemon -> client ---- */

void scaf_wire_encode_refuse(struct scaf_msg_refuse *m, const struct scaf_wire_refusal *why)
{
    memset(m, 0, sizeof *m);
    m->h = header(SCAF_MSG_REFUSE, sizeof *m);
    m->reason = why->reason;
    m->daemon_version = SCAF_PROTO_VERSION;
    snprintf(m->text, sizeof m->text, "%s", why->text);
}

void scaf_wire_encode_memory_reply(struct scaf_msg_memory_reply *m, const struct scaf_wire_memory_reply *r)
{
    memset(m, 0, sizeof *m);
    m->h = header(SCAF_MSG_MEMORY_REPLY, sizeof *m);
    m->op = r->op;
    m->status = r->status;
    m->runs = r->runs;
    m->verdict = r->verdict;
    m->source = r->source;
    m->start_team = r->start_team;
    m->forgotten = r->forgotten;
}

void scaf_wire_encode_welcome(struct scaf_msg_welcome *m, uint32_t client_id, uint32_t cpus)
{
    memset(m, 0, sizeof *m);
    m->h = header(SCAF_MSG_WELCOME, sizeof *m);
    m->client_id = client_id;
    m->page_size = SCAF_PAGE_SIZE;
    m->cpus = cpus;
}

struct scaf_msg_header scaf_wire_encode_status_reply(uint32_t length)
{
    return header(SCAF_MSG_STATUS_REPLY, length);
}

/* The REFUSE layout is the same in every protocol version so far: one of another version is read. */
static int is_refuse(const struct scaf_msg_header *h)
{
    return h->type == SCAF_MSG_REFUSE && h->length == sizeof(struct scaf_msg_refuse);
}

/* A complete REFUSE's reason, version and text, terminated and made printable. */
static void read_refuse(const void *msg, uint32_t *reason, uint32_t *daemon_version, char text[SCAF_REFUSE_TEXT])
{
    struct scaf_msg_refuse r;

    memcpy(&r, msg, sizeof r);
    *reason = r.reason;
    *daemon_version = r.daemon_version;
    memcpy(text, r.text, SCAF_REFUSE_TEXT);
    text[SCAF_REFUSE_TEXT - 1] = '\0';
    /* The layer and scaf print it on a terminal: no escape sequence of the daemon's reaches one. */
    for (char *c = text; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

uint32_t scaf_wire_check_answer(const struct scaf_msg_header *h, struct scaf_wire_refusal *why)
{
    if (h->magic != SCAF_PROTO_MAGIC) {
        refusal(why, SCAF_REFUSE_MALFORMED, "bad magic 0x%08x (not a scaf daemon?)", h->magic);
        return 0;
    }
    if (is_refuse(h))
        return h->length;
    if (h->version != SCAF_PROTO_VERSION || h->type != SCAF_MSG_WELCOME ||
        h->length != sizeof(struct scaf_msg_welcome) || h->reserved != 0) {
        refusal(why, SCAF_REFUSE_MALFORMED, "unexpected answer to HELLO (version %u, type %u, length %u)",
                h->version, h->type, h->length);
        return 0;
    }
    return h->length;
}

int scaf_wire_decode_answer(const void *msg, size_t len, struct scaf_wire_answer *out, struct scaf_wire_refusal *why)
{
    struct scaf_msg_header h;

    memset(out, 0, sizeof *out);
    if (len < sizeof h) {
        refusal(why, SCAF_REFUSE_MALFORMED, "answer of %zu bytes has no header", len);
        return -1;
    }
    memcpy(&h, msg, sizeof h);
    if (scaf_wire_check_answer(&h, why) == 0)
        return -1;
    if (len != h.length) {
        refusal(why, SCAF_REFUSE_MALFORMED, "answer type %u of %zu bytes, expected %u", h.type, len, h.length);
        return -1;
    }
    out->type = h.type;
    if (h.type == SCAF_MSG_REFUSE) {
        read_refuse(msg, &out->reason, &out->daemon_version, out->text);
        return 0;
    }
    struct scaf_msg_welcome w;

    memcpy(&w, msg, sizeof w);
    if (w.page_size != SCAF_PAGE_SIZE) {
        refusal(why, SCAF_REFUSE_MALFORMED, "WELCOME announces a page of %u bytes, expected %u", w.page_size,
                SCAF_PAGE_SIZE);
        return -1;
    }
    if (w.reserved != 0) {
        refusal(why, SCAF_REFUSE_MALFORMED, "WELCOME reserved field is %u, must be 0", w.reserved);
        return -1;
    }
    out->client_id = w.client_id;
    out->cpus = w.cpus;
    return 0;
}

int scaf_wire_check_page(const struct scaf_page *page, struct scaf_wire_refusal *why)
{
    if (page->magic != SCAF_PAGE_MAGIC) {
        refusal(why, SCAF_REFUSE_MALFORMED, "page magic 0x%08x", page->magic);
        return -1;
    }
    if (page->version != SCAF_PROTO_VERSION) {
        refusal(why, SCAF_REFUSE_VERSION, "page of protocol %u, layer speaks %u", page->version, SCAF_PROTO_VERSION);
        return -1;
    }
    return 0;
}

/* ---- the daemon's answers to STATUS_REQ and MEMORY ---- */

uint32_t scaf_wire_check_reply(const void *header, uint32_t asked, struct scaf_wire_refusal *why)
{
    struct scaf_msg_header h;

    memcpy(&h, header, sizeof h);
    if (h.magic != SCAF_PROTO_MAGIC) {
        refusal(why, SCAF_REFUSE_MALFORMED, "bad magic 0x%08x (not a scaf daemon?)", h.magic);
        return 0;
    }
    switch (asked) {
    case SCAF_MSG_STATUS_REQ:
        if (h.type == SCAF_MSG_STATUS_REPLY && h.length >= sizeof h && h.length <= SCAF_STATUS_MAX)
            return h.length;
        refusal(why, SCAF_REFUSE_MALFORMED, "type %u, version %u, length %u: not a STATUS_REPLY of %zu to %u bytes",
                h.type, h.version, h.length, sizeof h, SCAF_STATUS_MAX);
        return 0;
    case SCAF_MSG_MEMORY:
        if (is_refuse(&h))
            return h.length;
        if (h.type == SCAF_MSG_MEMORY_REPLY && h.version == SCAF_PROTO_VERSION &&
            h.length == sizeof(struct scaf_msg_memory_reply) && h.reserved == 0)
            return h.length;
        refusal(why, SCAF_REFUSE_MALFORMED,
                "type %u, version %u, length %u: not a MEMORY_REPLY of protocol %u, nor a REFUSE", h.type,
                h.version, h.length, SCAF_PROTO_VERSION);
        return 0;
    default:
        refusal(why, SCAF_REFUSE_MALFORMED, "no answer is read to a request of type %u", asked);
        return 0;
    }
}

enum scaf_wire_reply scaf_wire_decode_memory_reply(const void *msg, size_t len, struct scaf_wire_memory_reply *out,
                                                   struct scaf_wire_refusal *why)
{
    struct scaf_msg_memory_reply m;

    memset(out, 0, sizeof *out);
    if (len < sizeof m.h) {
        refusal(why, SCAF_REFUSE_MALFORMED, "answer of %zu bytes has no header", len);
        return SCAF_WIRE_REPLY_MALFORMED;
    }
    memcpy(&m.h, msg, sizeof m.h);
    if (scaf_wire_check_reply(&m.h, SCAF_MSG_MEMORY, why) == 0)
        return SCAF_WIRE_REPLY_MALFORMED;
    if (len != m.h.length) {
        refusal(why, SCAF_REFUSE_MALFORMED, "answer type %u of %zu bytes, expected %u", m.h.type, len, m.h.length);
        return SCAF_WIRE_REPLY_MALFORMED;
    }
    if (m.h.type == SCAF_MSG_REFUSE) {
        uint32_t daemon_version;

        read_refuse(msg, &why->reason, &daemon_version, why->text);
        return SCAF_WIRE_REPLY_REFUSED;
    }
    memcpy(&m, msg, sizeof m);
    if (m.reserved != 0) {
        refusal(why, SCAF_REFUSE_MALFORMED, "MEMORY_REPLY reserved field is %u, must be 0", m.reserved);
        return SCAF_WIRE_REPLY_MALFORMED;
    }
    *out = (struct scaf_wire_memory_reply){m.op, m.status, m.runs, m.verdict, m.source, m.start_team, m.forgotten};
    return SCAF_WIRE_REPLY_OK;
}
