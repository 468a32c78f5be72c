/* test_daemon_wire.c — what scafd refuses and why, in the documented order, and its messages over a real socketpair. */
#include "../../src/daemon/collect/page.h"
#include "../../src/daemon/transport/wire.h"

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
    const uint32_t M = SCAF_PROTO_MAGIC, V = SCAF_PROTO_VERSION, HL = sizeof(struct scaf_msg_hello);
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
        struct scaf_wire_refusal why = {0};
        int rc;

        memset(&m, 0, sizeof m);
        m.max_threads = cases[t].max_threads;
        m.flags = cases[t].flags;
        m.reserved[3] = cases[t].reserved;
        rc = scaf_wire_check_hello(&m, &why);
        CHECK(rc == cases[t].want_rc, "%s: rc %d", cases[t].name, rc);
        if (rc < 0)
            CHECK(why.reason == SCAF_REFUSE_MALFORMED && strstr(why.text, cases[t].want_text), "%s: %u '%s'",
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
    scaf_wire_send_refuse(sv[0], &why);
    CHECK(recv(sv[1], &r, sizeof r, MSG_WAITALL) == (ssize_t)sizeof r, "REFUSE arrives whole");
    CHECK(r.h.magic == SCAF_PROTO_MAGIC && r.h.type == SCAF_MSG_REFUSE && r.h.length == sizeof r &&
              r.reason == SCAF_REFUSE_FULL && r.daemon_version == SCAF_PROTO_VERSION &&
              strcmp(r.text, "client table full") == 0,
          "REFUSE fields");

    memfd = scaf_page_create(4, &pg);
    CHECK(memfd >= 0 && pg && pg->magic == SCAF_PAGE_MAGIC && atomic_load(&pg->threads) == 1, "page made");
    CHECK(scaf_wire_send_welcome(sv[0], 7, 4, memfd) == 0, "WELCOME sent");
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
    CHECK(scaf_wire_send_welcome(sv[0], 8, 4, memfd) < 0, "WELCOME to a closed peer fails");
    close(sv[0]);
    close(memfd);
    scaf_page_unmap(pg);

    struct scaf_msg_header h = scaf_wire_status_header(100);
    CHECK(h.magic == SCAF_PROTO_MAGIC && h.version == SCAF_PROTO_VERSION && h.type == SCAF_MSG_STATUS_REPLY &&
              h.length == 100 && h.reserved == 0,
          "STATUS_REPLY header");
}

int main(void)
{
    headers();
    hellos();
    messages();
    return check_exit("test_daemon_wire");
}
