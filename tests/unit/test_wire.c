/* test_wire.c — the codec both ways: what scafd refuses and why, in the documented order; what the layer, scaf-run and Python's proto accept from a daemon and why not; scafd's replies over a real socketpair; proto.h's constants by name. */
#include "../../src/daemon/apply/pagewrite.h"
#include "../../src/daemon/transport/reply.h"
#include "scaf/wire.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static struct scaf_msg_header hdr(uint32_t magic, uint16_t version, uint16_t type, uint32_t length, uint32_t reserved)
{
    return (struct scaf_msg_header){magic, version, type, length, reserved};
}

static void headers(void)
{
    const uint32_t M = SCAF_PROTO_MAGIC, V = SCAF_PROTO_VERSION, HL = sizeof(struct scaf_msg_hello),
                   ML = sizeof(struct scaf_msg_memory);
    const struct {
        const char *name;
        struct scaf_msg_header h;
        uint32_t client_id;
        uint32_t want_len, want_reason;
        const char *want_text;
    } cases[] = {
        {"valid HELLO", hdr(M, V, SCAF_MSG_HELLO, HL, 0), 0, HL, 0, ""},
        {"valid STATUS_REQ", hdr(M, V, SCAF_MSG_STATUS_REQ, 16, 0), 0, 16, 0, ""},
        {"a client may ask for status", hdr(M, V, SCAF_MSG_STATUS_REQ, 16, 0), 3, 16, 0, ""},
        {"bad magic first, whatever else", hdr(0x12345678, 0, 99, 0, 1), 0, 0, SCAF_REFUSE_MALFORMED, "bad magic"},
        {"version before type", hdr(M, 0, 99, 0, 0), 0, 0, SCAF_REFUSE_VERSION, "client speaks 0"},
        {"unknown type", hdr(M, V, SCAF_MSG_WELCOME, 32, 0), 0, 0, SCAF_REFUSE_MALFORMED, "unexpected message type 2"},
        {"HELLO too long", hdr(M, V, SCAF_MSG_HELLO, HL + 1, 0), 0, 0, SCAF_REFUSE_MALFORMED, "expected 56"},
        {"status with a body", hdr(M, V, SCAF_MSG_STATUS_REQ, 17, 0), 0, 0, SCAF_REFUSE_MALFORMED, "length 17"},
        {"length past STATUS_MAX", hdr(M, V, SCAF_MSG_STATUS_REQ, 0xffffffffu, 0), 0, 0, SCAF_REFUSE_MALFORMED,
         "length"},
        {"reserved header field", hdr(M, V, SCAF_MSG_STATUS_REQ, 16, 7), 0, 0, SCAF_REFUSE_MALFORMED, "reserved"},
        {"second HELLO", hdr(M, V, SCAF_MSG_HELLO, HL, 0), 5, 0, SCAF_REFUSE_DUPLICATE,
         "already said HELLO (client 5)"},
        {"valid MEMORY", hdr(M, V, SCAF_MSG_MEMORY, ML, 0), 0, ML, 0, ""},
        {"MEMORY too short", hdr(M, V, SCAF_MSG_MEMORY, ML - 8, 0), 0, 0, SCAF_REFUSE_MALFORMED, "expected 88"},
        {"MEMORY on a client's connection", hdr(M, V, SCAF_MSG_MEMORY, ML, 0), 4, 0, SCAF_REFUSE_MALFORMED,
         "client's connection (client 4)"},
        {"a reply is not a request", hdr(M, V, SCAF_MSG_MEMORY_REPLY, 48, 0), 0, 0, SCAF_REFUSE_MALFORMED,
         "unexpected message type 7"},
        {"WAKE from a client", hdr(M, V, SCAF_MSG_WAKE, 16, 0), 2, 16, 0, ""},
        {"WAKE before HELLO", hdr(M, V, SCAF_MSG_WAKE, 16, 0), 0, 0, SCAF_REFUSE_MALFORMED, "only a client wakes"},
        {"WAKE with a body", hdr(M, V, SCAF_MSG_WAKE, 20, 0), 2, 0, SCAF_REFUSE_MALFORMED, "length 20"},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_wire_refusal why = {0};
        uint32_t len = scaf_wire_check_header(&cases[t].h, cases[t].client_id, &why);
        CHECK(len == cases[t].want_len, "%s: length %u, want %u", cases[t].name, len, cases[t].want_len);
        if (cases[t].want_len == 0)
            CHECK(why.reason == cases[t].want_reason && strstr(why.text, cases[t].want_text),
                  "%s: reason %u '%s'", cases[t].name, why.reason, why.text);
    }
}

static void hellos(void)
{
    const struct {
        const char *name;
        uint32_t max_threads, flags, reserved;
        int want_rc;
        const char *want_text;
    } cases[] = {
        {"valid", 8, 0, 0, 0, ""},
        {"fixed team flag", 1024, SCAF_HELLO_F_NONMALLEABLE, 0, 0, ""},
        {"max_threads 0", 0, 0, 0, -1, "max_threads 0 is outside 1..1024"},
        {"max_threads 1025", 1025, 0, 0, -1, "outside"},
        {"unknown flag", 4, 0x6, 0, -1, "unknown HELLO flags 0x6"},
        {"reserved field", 4, 0, 9, -1, "nonzero reserved field in HELLO"},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_msg_hello m;
        struct scaf_wire_hello got;
        struct scaf_wire_refusal why = {0};
        int rc;

        memset(&m, 0, sizeof m);
        m.max_threads = cases[t].max_threads;
        m.flags = cases[t].flags;
        m.reserved[1] = cases[t].reserved;
        memset(m.name, 'x', sizeof m.name); /* unterminated: the decoder terminates it */
        rc = scaf_wire_decode_hello(&m, &got, &why);
        CHECK(rc == cases[t].want_rc, "%s: rc %d", cases[t].name, rc);
        if (rc < 0)
            CHECK(why.reason == SCAF_REFUSE_MALFORMED && strstr(why.text, cases[t].want_text), "%s: %u '%s'",
                  cases[t].name, why.reason, why.text);
        else
            CHECK(got.max_threads == cases[t].max_threads && got.flags == cases[t].flags &&
                      strlen(got.name) == SCAF_NAME_MAX - 1,
                  "%s: decoded %u %u '%s'", cases[t].name, got.max_threads, got.flags, got.name);
    }
}

/* MEMORY: each op takes its own fields and nothing else; what scaf sends, the daemon reads back. */
static void memories(void)
{
    const struct {
        const char *name;
        uint32_t op, max_threads, verdict, reserved;
        uint64_t key;
        const char *prog; /* NULL: all zeros; "~": 48 bytes without a NUL */
        int want_rc;
        const char *want_text;
    } cases[] = {
        {"recall", SCAF_MEMORY_RECALL, 8, 0, 0, 42, NULL, 0, ""},
        /* Key 0 names no program: the share alone. */
        {"recall without a key", SCAF_MEMORY_RECALL, 8, 0, 0, 0, NULL, 0, ""},
        {"recall, max_threads 0", SCAF_MEMORY_RECALL, 0, 0, 0, 42, NULL, -1, "max_threads 1..1024"},
        {"recall, max_threads 1025", SCAF_MEMORY_RECALL, 1025, 0, 0, 42, NULL, -1, "max_threads 1..1024"},
        {"recall with a verdict", SCAF_MEMORY_RECALL, 8, SCAF_VERDICT_FIXED, 0, 42, NULL, -1, "nothing else"},
        {"recall with a name", SCAF_MEMORY_RECALL, 8, 0, 0, 42, "ep", -1, "nothing else"},
        {"forget one", SCAF_MEMORY_FORGET, 0, 0, 0, 42, NULL, 0, ""},
        {"forget all", SCAF_MEMORY_FORGET, 0, 0, 0, 0, NULL, 0, ""},
        {"forget with max_threads", SCAF_MEMORY_FORGET, 4, 0, 0, 42, NULL, -1, "nothing else"},
        {"remember fixed", SCAF_MEMORY_REMEMBER, 0, SCAF_VERDICT_FIXED, 0, 42, "xgb train.py", 0, ""},
        {"remember malleable", SCAF_MEMORY_REMEMBER, 0, SCAF_VERDICT_MALLEABLE, 0, 42, "ep", 0, ""},
        {"remember undecided", SCAF_MEMORY_REMEMBER, 0, SCAF_VERDICT_UNDECIDED, 0, 42, "ep", -1, "a verdict"},
        {"remember verdict 7", SCAF_MEMORY_REMEMBER, 0, 7, 0, 42, "ep", -1, "a verdict"},
        {"remember without a key", SCAF_MEMORY_REMEMBER, 0, SCAF_VERDICT_FIXED, 0, 0, "ep", -1, "needs a key"},
        {"remember, unterminated name", SCAF_MEMORY_REMEMBER, 0, SCAF_VERDICT_FIXED, 0, 42, "~", -1, "NUL"},
        {"reserved field", SCAF_MEMORY_FORGET, 0, 0, 1, 0, NULL, -1, "nonzero reserved field in MEMORY"},
        {"op 0", 0, 0, 0, 0, 0, NULL, -1, "unknown MEMORY op 0"},
        {"op 4", 4, 0, 0, 0, 0, NULL, -1, "unknown MEMORY op 4"},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_msg_memory m;
        struct scaf_wire_memory got;
        struct scaf_wire_refusal why = {0};
        int rc;

        memset(&m, 0, sizeof m);
        m.op = cases[t].op;
        m.max_threads = cases[t].max_threads;
        m.verdict = cases[t].verdict;
        m.reserved = cases[t].reserved;
        m.key = cases[t].key;
        if (cases[t].prog && strcmp(cases[t].prog, "~") == 0)
            memset(m.name, 'x', sizeof m.name);
        else if (cases[t].prog)
            memcpy(m.name, cases[t].prog, strlen(cases[t].prog));
        rc = scaf_wire_decode_memory(&m, &got, &why);
        CHECK(rc == cases[t].want_rc, "memory %s: rc %d (%s)", cases[t].name, rc, why.text);
        if (rc < 0)
            CHECK(why.reason == SCAF_REFUSE_MALFORMED && strstr(why.text, cases[t].want_text), "memory %s: %u '%s'",
                  cases[t].name, why.reason, why.text);
        else
            CHECK(got.op == cases[t].op && got.key == cases[t].key && got.max_threads == cases[t].max_threads &&
                      got.verdict == cases[t].verdict && strcmp(got.name, cases[t].prog ? cases[t].prog : "") == 0,
                  "memory %s: decoded %u %#llx %u %u '%s'", cases[t].name, got.op, (unsigned long long)got.key,
                  got.max_threads, got.verdict, got.name);
    }
    /* Round trip: what the encoder writes passes, its padding zeroed. */
    struct scaf_msg_memory m;
    struct scaf_wire_memory got;
    struct scaf_wire_refusal why = {0};

    memset(&m, 0xa5, sizeof m);
    scaf_wire_encode_memory(&m, SCAF_MEMORY_REMEMBER, 7, 0, SCAF_VERDICT_FIXED,
                            "a name longer than forty-seven bytes, cut short there");
    CHECK(scaf_wire_check_header(&m.h, 0, &why) == sizeof m, "memory encoded: header refused: %s", why.text);
    CHECK(scaf_wire_decode_memory(&m, &got, &why) == 0 && strlen(got.name) == SCAF_MEMORY_NAME - 1 &&
              m.reserved == 0 && m.h.reserved == 0,
          "memory encoded: body refused or not padded: %s", why.text);
    struct scaf_msg_memory_reply r;
    const struct scaf_wire_memory_reply want = {SCAF_MEMORY_RECALL, SCAF_MEMORY_OK, 3, SCAF_VERDICT_FIXED,
                                                SCAF_SOURCE_EVIDENCE, 2, 0};
    memset(&r, 0xa5, sizeof r);
    scaf_wire_encode_memory_reply(&r, &want);
    CHECK(r.h.magic == SCAF_PROTO_MAGIC && r.h.type == SCAF_MSG_MEMORY_REPLY && r.h.length == sizeof r &&
              r.runs == 3 && r.start_team == 2 && r.reserved == 0,
          "memory reply encoded");
}

/* What the layer sends, read back by what the daemon checks: the two halves of the codec agree. */
static void hello_round_trip(void)
{
    const struct {
        const char *name;
        uint32_t max_threads, flags;
        const char *prog;
        uint32_t want_threads;
        const char *want_name;
    } cases[] = {
        {"plain", 8, 0, "ep", 8, "ep"},
        {"fixed", 3, SCAF_HELLO_F_NONMALLEABLE, "cg", 3, "cg"},
        {"bound above the wire's range", 5000, 0, "x", SCAF_MAX_CPUS, "x"},
        {"long name truncated", 2, 0, "a_program_name_longer_than_comm", 2, "a_program_name_"},
        {"no name", 1, 0, NULL, 1, ""},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_msg_hello m;
        struct scaf_wire_hello got;
        struct scaf_wire_refusal why = {0};

        memset(&m, 0xa5, sizeof m);
        scaf_wire_encode_hello(&m, cases[t].max_threads, cases[t].flags, cases[t].prog, 0x1234567890abcdefull + t);
        CHECK(scaf_wire_check_header(&m.h, 0, &why) == sizeof m, "%s: header refused: %s", cases[t].name, why.text);
        CHECK(scaf_wire_decode_hello(&m, &got, &why) == 0, "%s: body refused: %s", cases[t].name, why.text);
        CHECK(got.max_threads == cases[t].want_threads && got.flags == cases[t].flags &&
                  strcmp(got.name, cases[t].want_name) == 0 && got.key == 0x1234567890abcdefull + t,
              "%s: %u %u '%s' %#llx", cases[t].name, got.max_threads, got.flags, got.name,
              (unsigned long long)got.key);
        /* Nothing of the encoder's stack or the program's memory travels in the padding. */
        CHECK(m.name[SCAF_NAME_MAX - 1] == 0 && m.reserved[0] == 0 && m.reserved[1] == 0 && m.h.reserved == 0,
              "%s: padding zeroed", cases[t].name);
    }
    struct scaf_msg_header s = scaf_wire_encode_status_req();
    struct scaf_wire_refusal why = {0};
    CHECK(scaf_wire_check_header(&s, 0, &why) == sizeof s, "STATUS_REQ accepted: %s", why.text);
}

/* A REFUSE or WELCOME as some daemon might send it; the fields the table varies. */
struct answer_bytes {
    union {
        struct scaf_msg_header h;
        struct scaf_msg_welcome w;
        struct scaf_msg_refuse r;
    } u;
};

static void answers(void)
{
    const uint32_t M = SCAF_PROTO_MAGIC, V = SCAF_PROTO_VERSION, WL = sizeof(struct scaf_msg_welcome),
                   RL = sizeof(struct scaf_msg_refuse);
    const struct {
        const char *name;
        struct scaf_msg_header h;
        uint32_t page_size; /* WELCOME */
        uint32_t reserved;  /* WELCOME */
        size_t len;         /* bytes handed to the decoder */
        uint32_t want_len;  /* scaf_wire_check_answer */
        int want_rc;        /* scaf_wire_decode_answer */
        const char *want_text;
    } cases[] = {
        {"WELCOME", hdr(M, V, SCAF_MSG_WELCOME, WL, 0), SCAF_PAGE_SIZE, 0, WL, WL, 0, ""},
        {"REFUSE", hdr(M, V, SCAF_MSG_REFUSE, RL, 0), 0, 0, RL, RL, 0, ""},
        /* Mixed versions: a daemon of protocol 4 (or 6) refuses us in its own version, and we read why. */
        {"REFUSE of protocol 4", hdr(M, 4, SCAF_MSG_REFUSE, RL, 0), 0, 0, RL, RL, 0, ""},
        {"REFUSE of protocol 6, reserved set", hdr(M, 6, SCAF_MSG_REFUSE, RL, 9), 0, 0, RL, RL, 0, ""},
        {"bad magic", hdr(0x12345678, V, SCAF_MSG_WELCOME, WL, 0), SCAF_PAGE_SIZE, 0, WL, 0, -1, "bad magic"},
        {"WELCOME of protocol 4", hdr(M, 4, SCAF_MSG_WELCOME, WL, 0), SCAF_PAGE_SIZE, 0, WL, 0, -1, "version 4"},
        {"WELCOME of protocol 6", hdr(M, V + 1, SCAF_MSG_WELCOME, WL, 0), SCAF_PAGE_SIZE, 0, WL, 0, -1, "unexpected"},
        {"WELCOME too long", hdr(M, V, SCAF_MSG_WELCOME, WL + 4, 0), SCAF_PAGE_SIZE, 0, WL, 0, -1, "length 36"},
        {"WELCOME reserved header", hdr(M, V, SCAF_MSG_WELCOME, WL, 1), SCAF_PAGE_SIZE, 0, WL, 0, -1, "unexpected"},
        {"REFUSE of the wrong length", hdr(M, V, SCAF_MSG_REFUSE, RL - 1, 0), 0, 0, RL, 0, -1, "type 3, length 143"},
        {"a daemon's STATUS_REPLY", hdr(M, V, SCAF_MSG_STATUS_REPLY, 16, 0), 0, 0, 16, 0, -1, "type 5"},
        {"a client's HELLO echoed", hdr(M, V, SCAF_MSG_HELLO, 56, 0), 0, 0, 56, 0, -1, "type 1"},
        {"WELCOME of another page size", hdr(M, V, SCAF_MSG_WELCOME, WL, 0), 8192, 0, WL, WL, -1, "8192 bytes"},
        {"WELCOME cut short", hdr(M, V, SCAF_MSG_WELCOME, WL, 0), SCAF_PAGE_SIZE, 0, WL - 1, WL, -1, "31 bytes"},
        {"no header", hdr(M, V, SCAF_MSG_WELCOME, WL, 0), SCAF_PAGE_SIZE, 0, 15, WL, -1, "no header"},
        {"WELCOME with reserved set", hdr(M, V, SCAF_MSG_WELCOME, WL, 0), SCAF_PAGE_SIZE, 3, WL, WL, -1, "reserved"},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct answer_bytes a;
        struct scaf_wire_answer got;
        struct scaf_wire_refusal why = {0};
        uint32_t len;
        int rc;

        memset(&a, 0, sizeof a);
        a.u.h = cases[t].h;
        if (cases[t].h.type == SCAF_MSG_WELCOME) {
            a.u.w.client_id = 9;
            a.u.w.cpus = 12;
            a.u.w.page_size = cases[t].page_size;
            a.u.w.reserved = cases[t].reserved;
        } else if (cases[t].h.type == SCAF_MSG_REFUSE) {
            a.u.r.reason = SCAF_REFUSE_VERSION;
            a.u.r.daemon_version = cases[t].h.version;
            memset(a.u.r.text, 'r', sizeof a.u.r.text); /* unterminated: the decoder terminates it */
        }
        len = scaf_wire_check_answer(&cases[t].h, &why);
        CHECK(len == cases[t].want_len, "%s: length %u, want %u", cases[t].name, len, cases[t].want_len);
        if (len == 0)
            CHECK(why.reason == SCAF_REFUSE_MALFORMED && strstr(why.text, cases[t].want_text), "%s: check '%s'",
                  cases[t].name, why.text);
        memset(&why, 0, sizeof why);
        rc = scaf_wire_decode_answer(&a, cases[t].len, &got, &why);
        CHECK(rc == cases[t].want_rc, "%s: rc %d", cases[t].name, rc);
        if (rc < 0)
            CHECK(why.reason == SCAF_REFUSE_MALFORMED && strstr(why.text, cases[t].want_text), "%s: decode '%s'",
                  cases[t].name, why.text);
        else if (got.type == SCAF_MSG_WELCOME)
            CHECK(got.client_id == 9 && got.cpus == 12, "%s: WELCOME fields %u %u", cases[t].name, got.client_id,
                  got.cpus);
        else
            CHECK(got.type == SCAF_MSG_REFUSE && got.reason == SCAF_REFUSE_VERSION &&
                      got.daemon_version == cases[t].h.version && strlen(got.text) == SCAF_REFUSE_TEXT - 1,
                  "%s: REFUSE fields %u %u", cases[t].name, got.reason, got.daemon_version);
    }
}

/* What scafd encodes, read back by what the layer decodes. */
static void answer_round_trip(void)
{
    struct scaf_wire_refusal why = {.reason = SCAF_REFUSE_FULL}, err = {0};
    struct scaf_msg_welcome w;
    struct scaf_msg_refuse r;
    struct scaf_wire_answer got;

    snprintf(why.text, sizeof why.text, "client table full");
    memset(&r, 0xa5, sizeof r);
    scaf_wire_encode_refuse(&r, &why);
    CHECK(scaf_wire_check_answer(&r.h, &err) == sizeof r, "REFUSE header: %s", err.text);
    CHECK(scaf_wire_decode_answer(&r, sizeof r, &got, &err) == 0 && got.type == SCAF_MSG_REFUSE &&
              got.reason == SCAF_REFUSE_FULL && got.daemon_version == SCAF_PROTO_VERSION &&
              strcmp(got.text, "client table full") == 0,
          "REFUSE round trip: '%s'", err.text);
    CHECK(r.text[SCAF_REFUSE_TEXT - 1] == 0 && r.h.reserved == 0, "REFUSE padding zeroed");
    /* A daemon's text reaches the program's stderr with no control byte left in it. */
    memcpy(r.text, "\x1b[2Jgone\r\nnow\x7f", sizeof "\x1b[2Jgone\r\nnow\x7f");
    CHECK(scaf_wire_decode_answer(&r, sizeof r, &got, &err) == 0 && strcmp(got.text, "?[2Jgone??now?") == 0,
          "REFUSE text made printable: '%s'", got.text);

    memset(&w, 0xa5, sizeof w);
    scaf_wire_encode_welcome(&w, 7, 64);
    CHECK(scaf_wire_check_answer(&w.h, &err) == sizeof w, "WELCOME header: %s", err.text);
    CHECK(scaf_wire_decode_answer(&w, sizeof w, &got, &err) == 0 && got.type == SCAF_MSG_WELCOME &&
              got.client_id == 7 && got.cpus == 64,
          "WELCOME round trip: '%s'", err.text);
    CHECK(w.reserved == 0, "WELCOME reserved zeroed");

    /* The daemon never accepts what it sends itself. */
    CHECK(scaf_wire_check_header(&w.h, 0, &err) == 0 && err.reason == SCAF_REFUSE_MALFORMED, "WELCOME to scafd");
    CHECK(scaf_wire_check_header(&r.h, 0, &err) == 0 && err.reason == SCAF_REFUSE_MALFORMED, "REFUSE to scafd");
}

static void pages(void)
{
    static _Alignas(4096) unsigned char mem[SCAF_PAGE_SIZE];
    struct scaf_page *pg = (struct scaf_page *)mem;
    const struct {
        const char *name;
        uint32_t magic, version;
        int want_rc;
        uint32_t want_reason;
        const char *want_text;
    } cases[] = {
        {"valid", SCAF_PAGE_MAGIC, SCAF_PROTO_VERSION, 0, 0, ""},
        {"bad magic", 0x12345678, SCAF_PROTO_VERSION, -1, SCAF_REFUSE_MALFORMED, "page magic 0x12345678"},
        {"page of protocol 4", SCAF_PAGE_MAGIC, 4, -1, SCAF_REFUSE_VERSION, "page of protocol 4"},
        {"page of the next protocol", SCAF_PAGE_MAGIC, SCAF_PROTO_VERSION + 1, -1, SCAF_REFUSE_VERSION, "protocol 7"},
        {"page of protocol 5", SCAF_PAGE_MAGIC, 5, -1, SCAF_REFUSE_VERSION, "page of protocol 5"},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        struct scaf_wire_refusal why = {0};
        int rc;

        memset(mem, 0, sizeof mem);
        pg->magic = cases[t].magic;
        pg->version = cases[t].version;
        rc = scaf_wire_check_page(pg, &why);
        CHECK(rc == cases[t].want_rc, "%s: rc %d", cases[t].name, rc);
        if (rc < 0)
            CHECK(why.reason == cases[t].want_reason && strstr(why.text, cases[t].want_text), "%s: %u '%s'",
                  cases[t].name, why.reason, why.text);
    }
}

static void messages(void)
{
    int sv[2];
    struct scaf_page *pg = NULL;
    struct scaf_msg_refuse r;
    struct scaf_msg_welcome w;
    struct scaf_wire_refusal why = {.reason = SCAF_REFUSE_FULL};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {&w, sizeof w};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *cm;
    struct stat st;
    int memfd, got = -1;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
        fail("socketpair", "cannot make one");
        return;
    }
    snprintf(why.text, sizeof why.text, "client table full");
    scaf_reply_refuse(sv[0], &why);
    CHECK(recv(sv[1], &r, sizeof r, MSG_WAITALL) == (ssize_t)sizeof r, "REFUSE arrives whole");
    CHECK(r.h.magic == SCAF_PROTO_MAGIC && r.h.type == SCAF_MSG_REFUSE && r.h.length == sizeof r &&
              r.reason == SCAF_REFUSE_FULL && r.daemon_version == SCAF_PROTO_VERSION &&
              strcmp(r.text, "client table full") == 0,
          "REFUSE fields");

    memfd = scaf_pagewrite_create(4, &pg);
    CHECK(memfd >= 0 && pg && pg->magic == SCAF_PAGE_MAGIC && atomic_load(&pg->threads) == 1, "page made");
    CHECK(scaf_reply_welcome(sv[0], 7, 4, memfd) == 0, "WELCOME sent");
    CHECK(recvmsg(sv[1], &msg, MSG_WAITALL) == (ssize_t)sizeof w, "WELCOME arrives whole");
    cm = CMSG_FIRSTHDR(&msg);
    if (cm && cm->cmsg_type == SCM_RIGHTS)
        memcpy(&got, CMSG_DATA(cm), sizeof got);
    CHECK(w.h.type == SCAF_MSG_WELCOME && w.client_id == 7 && w.page_size == SCAF_PAGE_SIZE && w.cpus == 4,
          "WELCOME fields");
    /* The descriptor that arrives is the sealed page: the client cannot resize it. */
    CHECK(got >= 0 && fstat(got, &st) == 0 && st.st_size == SCAF_PAGE_SIZE && ftruncate(got, 0) < 0,
          "the page's memfd came along, sealed");
    if (got >= 0)
        close(got);

    close(sv[1]);
    /* A peer that is gone: WELCOME reports failure instead of raising SIGPIPE. */
    CHECK(scaf_reply_welcome(sv[0], 8, 4, memfd) < 0, "WELCOME to a closed peer fails");
    close(sv[0]);
    close(memfd);
    scaf_pagewrite_unmap(pg);

    struct scaf_msg_header h = scaf_wire_encode_status_reply(100);
    CHECK(h.magic == SCAF_PROTO_MAGIC && h.version == SCAF_PROTO_VERSION && h.type == SCAF_MSG_STATUS_REPLY &&
              h.length == 100 && h.reserved == 0,
          "STATUS_REPLY header");
}

/* The asker's side: what scaf-run and Python's proto take as the answer to STATUS_REQ and to MEMORY. */
static void replies(void)
{
    const uint32_t M = SCAF_PROTO_MAGIC, V = SCAF_PROTO_VERSION, RL = sizeof(struct scaf_msg_memory_reply),
                   FL = sizeof(struct scaf_msg_refuse);
    const struct {
        const char *name;
        uint32_t asked;
        struct scaf_msg_header h;
        uint32_t reserved;      /* MEMORY_REPLY's own */
        size_t len;             /* bytes handed to the decoder */
        uint32_t want_len;      /* scaf_wire_check_reply */
        enum scaf_wire_reply want; /* scaf_wire_decode_memory_reply, for MEMORY */
        const char *want_text;
    } cases[] = {
        {"STATUS_REPLY", SCAF_MSG_STATUS_REQ, hdr(M, V, SCAF_MSG_STATUS_REPLY, 100, 0), 0, 0, 100, 0, ""},
        {"empty STATUS_REPLY", SCAF_MSG_STATUS_REQ, hdr(M, V, SCAF_MSG_STATUS_REPLY, 16, 0), 0, 0, 16, 0, ""},
        /* Its JSON says its version: the status reader judges it. */
        {"STATUS_REPLY of protocol 5", SCAF_MSG_STATUS_REQ, hdr(M, 5, SCAF_MSG_STATUS_REPLY, 100, 0), 0, 0, 100, 0,
         ""},
        {"STATUS_REPLY shorter than a header", SCAF_MSG_STATUS_REQ, hdr(M, V, SCAF_MSG_STATUS_REPLY, 15, 0), 0, 0, 0,
         0, "length 15"},
        {"STATUS_REPLY past STATUS_MAX", SCAF_MSG_STATUS_REQ,
         hdr(M, V, SCAF_MSG_STATUS_REPLY, SCAF_STATUS_MAX + 1, 0), 0, 0, 0, 0, "not a STATUS_REPLY"},
        {"status answered by REFUSE", SCAF_MSG_STATUS_REQ, hdr(M, V, SCAF_MSG_REFUSE, FL, 0), 0, 0, 0, 0, "type 3"},
        {"status, bad magic", SCAF_MSG_STATUS_REQ, hdr(0x12345678, V, SCAF_MSG_STATUS_REPLY, 100, 0), 0, 0, 0, 0,
         "bad magic 0x12345678"},
        {"MEMORY_REPLY", SCAF_MSG_MEMORY, hdr(M, V, SCAF_MSG_MEMORY_REPLY, RL, 0), 0, RL, RL, SCAF_WIRE_REPLY_OK, ""},
        {"REFUSE", SCAF_MSG_MEMORY, hdr(M, V, SCAF_MSG_REFUSE, FL, 0), 0, FL, FL, SCAF_WIRE_REPLY_REFUSED, ""},
        /* An older daemon does not know MEMORY and says so in a REFUSE of its own version. */
        {"REFUSE of protocol 5", SCAF_MSG_MEMORY, hdr(M, 5, SCAF_MSG_REFUSE, FL, 0), 0, FL, FL,
         SCAF_WIRE_REPLY_REFUSED, ""},
        {"MEMORY_REPLY of protocol 5", SCAF_MSG_MEMORY, hdr(M, 5, SCAF_MSG_MEMORY_REPLY, RL, 0), 0, RL, 0,
         SCAF_WIRE_REPLY_MALFORMED, "version 5"},
        {"MEMORY_REPLY too long", SCAF_MSG_MEMORY, hdr(M, V, SCAF_MSG_MEMORY_REPLY, RL + 4, 0), 0, RL, 0,
         SCAF_WIRE_REPLY_MALFORMED, "length 52"},
        {"MEMORY_REPLY, reserved header", SCAF_MSG_MEMORY, hdr(M, V, SCAF_MSG_MEMORY_REPLY, RL, 1), 0, RL, 0,
         SCAF_WIRE_REPLY_MALFORMED, "not a MEMORY_REPLY"},
        {"MEMORY_REPLY, reserved field", SCAF_MSG_MEMORY, hdr(M, V, SCAF_MSG_MEMORY_REPLY, RL, 0), 5, RL, RL,
         SCAF_WIRE_REPLY_MALFORMED, "reserved field is 5"},
        {"MEMORY_REPLY cut short", SCAF_MSG_MEMORY, hdr(M, V, SCAF_MSG_MEMORY_REPLY, RL, 0), 0, RL - 1, RL,
         SCAF_WIRE_REPLY_MALFORMED, "47 bytes"},
        {"no header", SCAF_MSG_MEMORY, hdr(M, V, SCAF_MSG_MEMORY_REPLY, RL, 0), 0, 15, RL, SCAF_WIRE_REPLY_MALFORMED,
         "no header"},
        {"memory answered by STATUS_REPLY", SCAF_MSG_MEMORY, hdr(M, V, SCAF_MSG_STATUS_REPLY, RL, 0), 0, RL, 0,
         SCAF_WIRE_REPLY_MALFORMED, "type 5"},
        {"memory, bad magic", SCAF_MSG_MEMORY, hdr(0, V, SCAF_MSG_MEMORY_REPLY, RL, 0), 0, RL, 0,
         SCAF_WIRE_REPLY_MALFORMED, "bad magic"},
        {"an answer to HELLO asked for", SCAF_MSG_HELLO, hdr(M, V, SCAF_MSG_WELCOME, 32, 0), 0, 0, 0, 0,
         "request of type 1"},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        union scaf_wire_memory_answer a;
        struct scaf_wire_memory_reply got;
        struct scaf_wire_refusal why = {0};
        enum scaf_wire_reply kind;
        uint32_t len;

        memset(&a, 0, sizeof a);
        a.h = cases[t].h;
        if (cases[t].h.type == SCAF_MSG_MEMORY_REPLY)
            a.reply = (struct scaf_msg_memory_reply){cases[t].h, SCAF_MEMORY_RECALL, SCAF_MEMORY_OK, 3,
                                                     SCAF_VERDICT_FIXED, SCAF_SOURCE_CHECK, 2, 0, cases[t].reserved};
        else if (cases[t].h.type == SCAF_MSG_REFUSE) {
            a.refuse.reason = SCAF_REFUSE_VERSION;
            a.refuse.daemon_version = cases[t].h.version;
            snprintf(a.refuse.text, sizeof a.refuse.text, "scafd speaks protocol %u\x1b[2J", cases[t].h.version);
        }
        len = scaf_wire_check_reply(&a, cases[t].asked, &why);
        CHECK(len == cases[t].want_len, "reply %s: length %u, want %u", cases[t].name, len, cases[t].want_len);
        if (len == 0)
            CHECK(why.reason == SCAF_REFUSE_MALFORMED && strstr(why.text, cases[t].want_text), "reply %s: check '%s'",
                  cases[t].name, why.text);
        if (cases[t].asked != SCAF_MSG_MEMORY)
            continue;
        memset(&why, 0, sizeof why);
        memset(&got, 0xa5, sizeof got);
        kind = scaf_wire_decode_memory_reply(&a, cases[t].len, &got, &why);
        CHECK(kind == cases[t].want, "reply %s: kind %d, want %d (%s)", cases[t].name, kind, cases[t].want,
              why.text);
        if (kind == SCAF_WIRE_REPLY_OK)
            CHECK(got.op == SCAF_MEMORY_RECALL && got.status == SCAF_MEMORY_OK && got.runs == 3 &&
                      got.verdict == SCAF_VERDICT_FIXED && got.source == SCAF_SOURCE_CHECK && got.start_team == 2 &&
                      got.forgotten == 0,
                  "reply %s: fields", cases[t].name);
        else if (kind == SCAF_WIRE_REPLY_REFUSED)
            CHECK(why.reason == SCAF_REFUSE_VERSION && strncmp(why.text, "scafd speaks protocol", 21) == 0 &&
                      strchr(why.text, '\x1b') == NULL,
                  "reply %s: the daemon's words, printable: '%s'", cases[t].name, why.text);
        else
            CHECK(why.reason == SCAF_REFUSE_MALFORMED && strstr(why.text, cases[t].want_text) &&
                      got.runs == 0 && got.start_team == 0,
                  "reply %s: decode '%s'", cases[t].name, why.text);
    }

    /* What scafd encodes, read back by what the asker decodes, from an odd address. */
    struct scaf_msg_memory_reply r;
    const struct scaf_wire_memory_reply want = {SCAF_MEMORY_FORGET, SCAF_MEMORY_OK, 0, 0, 0, 0, 12};
    struct scaf_wire_memory_reply got;
    struct scaf_wire_refusal why = {0};
    char odd[sizeof r + 1];

    scaf_wire_encode_memory_reply(&r, &want);
    memcpy(odd + 1, &r, sizeof r);
    CHECK(scaf_wire_check_reply(odd + 1, SCAF_MSG_MEMORY, &why) == sizeof r, "encoded reply: %s", why.text);
    CHECK(scaf_wire_decode_memory_reply(odd + 1, sizeof r, &got, &why) == SCAF_WIRE_REPLY_OK &&
              memcmp(&got, &want, sizeof got) == 0,
          "reply round trip: %s", why.text);
    struct scaf_msg_header h = scaf_wire_encode_status_req(), put;
    scaf_wire_put_status_req(odd + 1);
    memcpy(&put, odd + 1, sizeof put);
    CHECK(memcmp(&put, &h, sizeof h) == 0, "scaf_wire_put_status_req writes scaf_wire_encode_status_req");
}

/* proto.h's values by their C names, as Python's proto reads them. */
static void constants(void)
{
    const struct {
        const char *name;
        uint64_t want;
    } cases[] = {
        {"SCAF_PROTO_MAGIC", SCAF_PROTO_MAGIC},
        {"SCAF_PROTO_VERSION", SCAF_PROTO_VERSION},
        {"SCAF_MSG_MEMORY_REPLY", SCAF_MSG_MEMORY_REPLY},
        {"SCAF_MEMORY_FAILED", SCAF_MEMORY_FAILED},
        {"SCAF_SOURCE_CHECK", SCAF_SOURCE_CHECK},
        {"SCAF_WIRE_REPLY_REFUSED", SCAF_WIRE_REPLY_REFUSED},
        {"sizeof(struct scaf_msg_memory)", sizeof(struct scaf_msg_memory)},
        {"sizeof(struct scaf_wire_refusal)", sizeof(struct scaf_wire_refusal)},
    };
    uint64_t v;

    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        v = 0;
        CHECK(scaf_wire_constant(cases[t].name, &v) == 0 && v == cases[t].want, "constant %s: %llu", cases[t].name,
              (unsigned long long)v);
    }
    errno = 0;
    v = 77;
    CHECK(scaf_wire_constant("SCAF_NO_SUCH_THING", &v) == -1 && errno == ENOENT && v == 77, "unknown constant");
    CHECK(scaf_wire_constant("sizeof (struct scaf_msg_memory)", &v) == -1, "names are spelled exactly");
}

int main(void)
{
    headers();
    hellos();
    hello_round_trip();
    memories();
    answers();
    answer_round_trip();
    pages();
    messages();
    replies();
    constants();
    return check_exit("test_wire");
}
