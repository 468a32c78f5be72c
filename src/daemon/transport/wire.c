/* wire.c — the messages on scafd's socket: header and HELLO checks in the documented order, REFUSE, WELCOME, STATUS_REPLY. */
#include "wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

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

uint32_t scaf_wire_check_header(const struct scaf_msg_header *h, uint32_t client_id, struct scaf_wire_refusal *why)
{
    uint32_t want;

    if (h->magic != SCAF_PROTO_MAGIC) {
        refusal(why, SCAF_REFUSE_MALFORMED, "bad magic 0x%08x (not a scaf client?)", h->magic);
        return 0;
    }
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
    return want;
}

int scaf_wire_check_hello(const struct scaf_msg_hello *m, struct scaf_wire_refusal *why)
{
    if (m->max_threads == 0 || m->max_threads > SCAF_MAX_CPUS) {
        refusal(why, SCAF_REFUSE_MALFORMED, "max_threads %u is outside 1..%u", m->max_threads, SCAF_MAX_CPUS);
        return -1;
    }
    if (m->flags & ~SCAF_HELLO_F_ALL) {
        refusal(why, SCAF_REFUSE_MALFORMED, "unknown HELLO flags 0x%x", m->flags & ~SCAF_HELLO_F_ALL);
        return -1;
    }
    for (size_t i = 0; i < sizeof m->reserved / sizeof m->reserved[0]; i++)
        if (m->reserved[i]) {
            refusal(why, SCAF_REFUSE_MALFORMED, "nonzero reserved field in HELLO");
            return -1;
        }
    return 0;
}

void scaf_wire_send_refuse(int fd, const struct scaf_wire_refusal *why)
{
    struct scaf_msg_refuse m;

    memset(&m, 0, sizeof m);
    m.h = (struct scaf_msg_header){SCAF_PROTO_MAGIC, SCAF_PROTO_VERSION, SCAF_MSG_REFUSE, sizeof m, 0};
    m.reason = why->reason;
    m.daemon_version = SCAF_PROTO_VERSION;
    snprintf(m.text, sizeof m.text, "%s", why->text);
    (void)send(fd, &m, sizeof m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int scaf_wire_send_welcome(int fd, uint32_t client_id, uint32_t cpus, int memfd)
{
    struct scaf_msg_welcome w = {
        .h = {SCAF_PROTO_MAGIC, SCAF_PROTO_VERSION, SCAF_MSG_WELCOME, sizeof w, 0},
        .client_id = client_id,
        .page_size = SCAF_PAGE_SIZE,
        .cpus = cpus,
    };
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {&w, sizeof w};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *cm;
    ssize_t n;

    memset(u.buf, 0, sizeof u.buf);
    cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &memfd, sizeof memfd);
    do
        n = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof w ? 0 : -1;
}

struct scaf_msg_header scaf_wire_status_header(uint32_t length)
{
    return (struct scaf_msg_header){SCAF_PROTO_MAGIC, SCAF_PROTO_VERSION, SCAF_MSG_STATUS_REPLY, length, 0};
}
