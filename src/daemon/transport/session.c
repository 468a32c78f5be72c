/* session.c — connections: reading messages, refusals, the replies that wait for the step; a HELLO or a departure goes to clients.c. */
#include "session.h"
#include "reply.h"
#include "../clientrec.h"
#include "../clients.h"
#include "../say.h"
#include "../scafd.h"
#include "../recall/recall.h"
#include "../report/jsonbuf.h"
#include "../report/refusals.h"
#include "../report/status.h"
#include "scaf/clock.h"
#include "scaf/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Connections that have not said HELLO yet (status askers, slow handshakes) beyond the client table. */
#define CONN_EXTRA 64u
/* A peer that leaves a status reply unread this long is dropped. */
#define CONN_OUTPUT_STALL_S 5.0
/* A connection that has said nothing (no HELLO, no status request) this long is dropped. */
#define CONN_OPEN_IDLE_S 30.0
/* --shared: a connection must finish a message this soon after it opened or after its last one
 * (trickling bytes does not extend it), and one user may hold this many such connections. */
#define CONN_SHARED_HANDSHAKE_S 3.0
#define CONN_PENDING_PER_USER 16u
/* Descriptors kept free below RLIMIT_NOFILE for what serving needs (/proc reads, pages, the log). */
#define CONN_FD_HEADROOM 16u
/* Epoll tags of connections: this bit, the generation, the slot. The loop's own tags are small numbers. */
#define CONN_TAG (1ull << 63)

enum conn_state {
    CONN_FREE = 0,
    CONN_OPEN,      /* connected, no HELLO yet: may ask for status */
    CONN_WELCOMING, /* HELLO accepted, page made: its WELCOME goes out after this batch's referee turn */
    CONN_CLIENT,    /* welcomed: owns a page and a share */
};

struct scafd_conn {
    enum conn_state state;
    int fd;
    uint32_t gen; /* bumped on reuse, so stale epoll events for an old fd are ignored */

    /* input: one message at a time; nothing is acted on until it is complete */
    unsigned char in[SCAF_WIRE_REQUEST_MAX];
    size_t inlen;
    bool status_wanted; /* a STATUS_REQ waits for the end of the batch; input waits with it */
    bool close_after;   /* a MEMORY_REPLY is the connection's last message: closed once it is sent */

    /* pending status reply (a peer that reads slowly) */
    char *out;
    size_t outlen, outoff;
    double out_since;
    double last_active; /* last event on this connection (monotonic seconds) */
    double since;       /* accepted, or its last complete message: the --shared handshake deadline counts from it */
    uid_t uid;          /* SO_PEERCRED at accept */

    int memfd; /* CONN_WELCOMING: the page's memfd, sent with the WELCOME and then closed; else -1 */
    struct scaf_client client; /* CONN_WELCOMING and CONN_CLIENT: the storage clients.c fills and empties */
};

static bool registered(const struct scafd_conn *c)
{
    return c->state == CONN_WELCOMING || c->state == CONN_CLIENT;
}

int scaf_session_table_init(struct scafd *d)
{
    d->nconns = d->opt.max_clients + CONN_EXTRA;
    d->conns = calloc(d->nconns, sizeof *d->conns);
    if (!d->conns) {
        scaf_session_table_free(d);
        errno = ENOMEM;
        return -1;
    }
    for (uint32_t i = 0; i < d->nconns; i++) {
        d->conns[i].fd = -1;
        d->conns[i].memfd = -1;
    }
    return 0;
}

void scaf_session_table_free(struct scafd *d)
{
    for (uint32_t i = 0; d->conns && i < d->nconns; i++) {
        struct scafd_conn *c = &d->conns[i];
        if (c->fd >= 0)
            close(c->fd);
        if (c->memfd >= 0)
            close(c->memfd);
        free(c->out);
    }
    free(d->conns);
    d->conns = NULL;
    d->nconns = 0;
}

static uint64_t tag_of(const struct scafd *d, const struct scafd_conn *c)
{
    return CONN_TAG | ((uint64_t)(c->gen & 0x7fffffffu) << 32) | (uint64_t)(c - d->conns);
}

/* The connection a tag names, or NULL when that connection is gone (its slot may hold a new one). */
static struct scafd_conn *from_tag(struct scafd *d, uint64_t tag)
{
    uint32_t slot = (uint32_t)tag, gen = (uint32_t)(tag >> 32) & 0x7fffffffu;

    if (!(tag & CONN_TAG) || slot >= d->nconns)
        return NULL;
    if (d->conns[slot].state == CONN_FREE || (d->conns[slot].gen & 0x7fffffffu) != gen)
        return NULL;
    return &d->conns[slot];
}

/* "client 3 (pid 1234 ep)" or "connection (pid 1234)": who a log line is about. */
static void who(const struct scafd_conn *c, char *buf, size_t len)
{
    struct ucred cred;
    socklen_t cl = sizeof cred;

    if (registered(c))
        snprintf(buf, len, "client %u (pid %d %s)", c->client.id, (int)c->client.pid, c->client.name);
    else if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 && cred.pid > 0)
        snprintf(buf, len, "connection (pid %d)", (int)cred.pid);
    else
        snprintf(buf, len, "connection");
}

static void set_events(struct scafd *d, struct scafd_conn *c, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.u64 = tag_of(d, c)};
    epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Closes a connection. A client's departure only marks the membership changed: the end-of-batch
 * step gives its share back, in this same loop turn. */
static void drop(struct scafd *d, struct scafd_conn *c, const char *why)
{
    bool was_client = registered(c);

    if (c->state == CONN_FREE)
        return;
    /* Status askers come and go constantly: their closes are only worth a line at -vv. */
    if (why && d->opt.verbose > (was_client ? 0 : 1)) {
        char w[128];
        who(c, w, sizeof w);
        scaf_say("%s %s", w, why);
    }
    epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    if (c->memfd >= 0)
        close(c->memfd);
    c->memfd = -1;
    free(c->out);
    c->out = NULL;
    c->outlen = c->outoff = 0;
    c->inlen = 0;
    c->status_wanted = false;
    c->close_after = false;
    if (was_client)
        scaf_clients_leave(d, &c->client);
    else
        d->nopen--;
    c->state = CONN_FREE;
    c->gen++;
}

static enum scaf_refusal_kind kind_of(uint32_t reason)
{
    switch (reason) {
    case SCAF_REFUSE_VERSION:
        return SCAF_REFUSAL_VERSION;
    case SCAF_REFUSE_MALFORMED:
        return SCAF_REFUSAL_MALFORMED;
    case SCAF_REFUSE_DUPLICATE:
        return SCAF_REFUSAL_DUPLICATE;
    case SCAF_REFUSE_FULL:
        return SCAF_REFUSAL_FULL;
    default:
        return SCAF_REFUSAL_INTERNAL;
    }
}

/* Answers REFUSE (if the peer's buffer takes it), logs it (rate-limited), and drops the connection. */
static void refuse_as(struct scafd *d, struct scafd_conn *c, enum scaf_refusal_kind kind,
                      const struct scaf_wire_refusal *why)
{
    char w[128];

    who(c, w, sizeof w);
    scaf_refusals_note(&d->refusals, scaf_clock_s(CLOCK_MONOTONIC), kind, "refused %s: %s", w, why->text);
    d->refused++;
    scaf_reply_refuse(c->fd, why);
    drop(d, c, NULL);
}

static void refuse(struct scafd *d, struct scafd_conn *c, const struct scaf_wire_refusal *why)
{
    refuse_as(d, c, kind_of(why->reason), why);
}

static void refuse_text(struct scafd *d, struct scafd_conn *c, uint32_t reason, const char *text)
{
    struct scaf_wire_refusal why = {.reason = reason};

    snprintf(why.text, sizeof why.text, "%s", text);
    refuse(d, c, &why);
}

/* Connections of this uid that have not said HELLO. */
static uint32_t count_pending(const struct scafd *d, uid_t uid)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < d->nconns; i++) {
        const struct scafd_conn *c = &d->conns[i];
        if (c->state == CONN_OPEN && c->uid == uid)
            n++;
    }
    return n;
}

/* Writes as much of the pending reply as the socket takes; 0, or -1 if the peer was dropped (it went away, or
 * a MEMORY_REPLY, its last message, is out). */
static int flush_out(struct scafd *d, struct scafd_conn *c)
{
    while (c->outoff < c->outlen) {
        ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            /* Stop reading until it drains; the stall timer drops it if it never does. */
            set_events(d, c, EPOLLOUT);
            return 0;
        }
        if (n < 0) {
            drop(d, c, "went away before reading its status reply");
            return -1;
        }
        c->outoff += (size_t)n;
    }
    free(c->out);
    c->out = NULL;
    c->outlen = c->outoff = 0;
    if (c->close_after) {
        drop(d, c, "answered");
        return -1;
    }
    set_events(d, c, EPOLLIN | EPOLLRDHUP);
    return 0;
}

static void status_reply(struct scafd *d, struct scafd_conn *c)
{
    struct scaf_status_daemon sd = scafd_status_daemon(d);
    struct scaf_buf b = {0};
    struct scaf_msg_header h;

    /* On a shared daemon a user sees their own clients in full and the others' only as counts;
     * root and the daemon's own user see everyone. */
    if (d->opt.shared && c->uid != 0 && c->uid != geteuid()) {
        sd.private_view = true;
        sd.viewer = c->uid;
    }
    /* Reserve the header, then the JSON right after it: one buffer, one send. */
    scaf_buf_printf(&b, "%*s", (int)sizeof h, "");
    if (scaf_status_build(&sd, d->clients, d->nclients, &b) < 0 || b.len > SCAF_STATUS_MAX) {
        scaf_buf_free(&b);
        refuse_text(d, c, SCAF_REFUSE_INTERNAL, "cannot build the status reply");
        return;
    }
    h = scaf_wire_encode_status_reply((uint32_t)b.len);
    memcpy(b.p, &h, sizeof h);
    c->out = b.p;
    c->outlen = b.len;
    c->outoff = 0;
    c->out_since = scaf_clock_s(CLOCK_MONOTONIC);
    (void)flush_out(d, c);
}

/* A complete HELLO: decoded here, made a client by clients.c; the WELCOME waits for the step. */
static void hello(struct scafd *d, struct scafd_conn *c)
{
    struct scaf_clients_refusal no;
    struct scaf_wire_refusal why;
    struct scaf_wire_hello m;
    int memfd;

    if (scaf_wire_decode_hello(c->in, &m, &why) < 0) {
        refuse(d, c, &why);
        return;
    }
    memfd = scaf_clients_arrive(d, &c->client, c->fd, c->uid, &m, &no);
    if (memfd < 0) {
        refuse_as(d, c, no.kind, &no.why);
        return;
    }
    c->memfd = memfd;
    c->state = CONN_WELCOMING;
    d->nopen--;
    d->welcomes_due = true;
}

/* A complete MEMORY request: decoded here, answered by the recall step (recall/recall.c) for this peer's uid. */
static void memory(struct scafd *d, struct scafd_conn *c)
{
    struct scaf_wire_memory_reply r = {0};
    struct scaf_msg_memory_reply *out;
    struct scaf_wire_refusal why;
    struct scaf_wire_memory m;

    if (scaf_wire_decode_memory(c->in, &m, &why) < 0) {
        refuse(d, c, &why);
        return;
    }
    scaf_recall_answer(&d->recall, d->clients, d->nclients, scafd_available(d), c->uid, &m, &r);
    out = malloc(sizeof *out);
    if (!out) {
        refuse_text(d, c, SCAF_REFUSE_INTERNAL, "out of memory for the reply");
        return;
    }
    scaf_wire_encode_memory_reply(out, &r);
    c->out = (char *)out;
    c->outlen = sizeof *out;
    c->outoff = 0;
    c->close_after = true; /* the answer is one MEMORY_REPLY; the daemon then closes (proto.h) */
    c->out_since = scaf_clock_s(CLOCK_MONOTONIC);
    (void)flush_out(d, c);
}

/* Checks a complete header. Returns the message's full length, or 0 after refusing. */
static uint32_t check_header(struct scafd *d, struct scafd_conn *c)
{
    struct scaf_wire_refusal why;
    struct scaf_msg_header h;
    uint32_t want;

    memcpy(&h, c->in, sizeof h);
    want = scaf_wire_check_header(&h, registered(c) ? c->client.id : 0, &why);
    if (want == 0)
        refuse(d, c, &why);
    return want;
}

/* Reads until the socket is empty or a message needs the step, acting on each only once it is complete. */
static void on_readable(struct scafd *d, struct scafd_conn *c)
{
    for (;;) {
        size_t want = sizeof(struct scaf_msg_header);
        ssize_t n;

        if (c->inlen >= sizeof(struct scaf_msg_header)) {
            struct scaf_msg_header h;
            memcpy(&h, c->in, sizeof h);
            want = h.length; /* already checked against the type's size */
        }
        n = recv(c->fd, c->in + c->inlen, want - c->inlen, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            char why[96];
            if (n == 0 && c->inlen == 0)
                snprintf(why, sizeof why, "%s", registered(c) ? "left" : "closed");
            else if (n == 0)
                snprintf(why, sizeof why, "closed in the middle of a message (%zu bytes)", c->inlen);
            else
                snprintf(why, sizeof why, "failed: %s", strerror(errno));
            drop(d, c, why);
            return;
        }
        c->inlen += (size_t)n;
        if (c->inlen == sizeof(struct scaf_msg_header) && want == sizeof(struct scaf_msg_header)) {
            if (check_header(d, c) == 0)
                return;
        }
        if (c->inlen >= sizeof(struct scaf_msg_header)) {
            struct scaf_msg_header h;
            memcpy(&h, c->in, sizeof h);
            if (c->inlen < h.length)
                continue;
            c->inlen = 0;
            c->since = scaf_clock_s(CLOCK_MONOTONIC);
            /* Either answer waits for the end of this batch; so does the rest of this peer's input. */
            if (h.type == SCAF_MSG_HELLO) {
                hello(d, c);
            } else if (h.type == SCAF_MSG_MEMORY) {
                memory(d, c);
            } else if (h.type == SCAF_MSG_WAKE) {
                /* Its page said idle and it runs a region: it gets its share back in this batch's step,
                 * as an arrival would. A WAKE from a client that is not idle asks for nothing, so a
                 * client cannot make the referee run more often than it idles. */
                if (c->client.idle.idle) {
                    c->client.woke = true;
                    d->referee_due = true;
                }
                continue;
            } else {
                c->status_wanted = true;
                d->status_due = true;
            }
            return;
        }
    }
}

void scaf_session_event(struct scafd *d, uint64_t tag, uint32_t events)
{
    /* NULL: the connection was closed earlier in this batch (its slot may be reused). */
    struct scafd_conn *c = from_tag(d, tag);

    if (!c)
        return;
    c->last_active = scaf_clock_s(CLOCK_MONOTONIC);
    /* A reply is due at the end of this batch: the input (level-triggered) is read after it. */
    if (c->state == CONN_WELCOMING || c->status_wanted)
        return;
    if (c->out) {
        /* Input waits until the reply has drained; a peer that hung up fails the send and is dropped. */
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) || flush_out(d, c) < 0 || c->out)
            return;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
        on_readable(d, c);
}

void scaf_session_send_welcomes(struct scafd *d)
{
    if (!d->welcomes_due)
        return;
    d->welcomes_due = false;
    for (uint32_t i = 0; i < d->nconns; i++) {
        struct scafd_conn *c = &d->conns[i];
        int rc;

        if (c->state != CONN_WELCOMING)
            continue;
        rc = scaf_reply_welcome(c->fd, c->client.id, d->capacity.cpus, c->memfd);
        /* The client maps the page from its own copy of the descriptor; ours is not needed any more. */
        close(c->memfd);
        c->memfd = -1;
        if (rc < 0) {
            drop(d, c, "could not be sent its WELCOME");
            continue;
        }
        c->state = CONN_CLIENT;
    }
}

void scaf_session_send_status(struct scafd *d)
{
    if (!d->status_due)
        return;
    d->status_due = false;
    for (uint32_t i = 0; i < d->nconns; i++) {
        struct scafd_conn *c = &d->conns[i];

        if (c->state == CONN_FREE || !c->status_wanted)
            continue;
        c->status_wanted = false;
        status_reply(d, c);
    }
}

/*
 * Out of descriptors (EMFILE, ENFILE): the pending connection would keep the
 * listener readable and the loop spinning. The spare descriptor is given up
 * for a moment to accept it and close it at once, so its peer learns at once;
 * the caller then takes the listener out of epoll until a connection ends.
 */
static void shed_one(struct scafd *d, int err)
{
    int fd;

    if (d->spare_fd >= 0) {
        close(d->spare_fd);
        d->spare_fd = -1;
    }
    fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0)
        close(fd);
    d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    scaf_refusals_note(&d->refusals, scaf_clock_s(CLOCK_MONOTONIC), SCAF_REFUSAL_DESCRIPTORS,
                       "accept: %s; new connections wait until one ends", strerror(err));
}

/* The peer of a just-accepted fd is turned away before it has a slot: REFUSE if its buffer takes it, close. */
static void turn_away(struct scafd *d, int fd, enum scaf_refusal_kind kind, const char *text)
{
    struct scaf_wire_refusal why = {.reason = SCAF_REFUSE_FULL};

    snprintf(why.text, sizeof why.text, "%s", text);
    scaf_refusals_note(&d->refusals, scaf_clock_s(CLOCK_MONOTONIC), kind, "refused a connection: %s", text);
    scaf_reply_refuse(fd, &why);
    close(fd);
}

enum scaf_session_accept_result scaf_session_accept(struct scafd *d)
{
    /* Bounded, so a connection storm cannot starve the clients already here. */
    for (int round = 0; round < 64; round++) {
        struct epoll_event ev;
        struct scafd_conn *c = NULL;
        struct ucred cred = {.pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1};
        socklen_t cl = sizeof cred;
        char text[SCAF_REFUSE_TEXT];
        int fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE) {
                shed_one(d, errno);
                return SCAF_CONN_ACCEPT_NO_FDS;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                scaf_refusals_note(&d->refusals, scaf_clock_s(CLOCK_MONOTONIC), SCAF_REFUSAL_INTERNAL, "accept: %s",
                                   strerror(errno));
            return SCAF_CONN_ACCEPT_OK;
        }
        /* Descriptors are handed out lowest first: this one's number says how few are left. */
        if (d->fd_limit && (unsigned long)fd + CONN_FD_HEADROOM >= d->fd_limit) {
            turn_away(d, fd, SCAF_REFUSAL_DESCRIPTORS, "scafd is out of file descriptors (ulimit -n)");
            return SCAF_CONN_ACCEPT_NO_FDS;
        }
        for (uint32_t i = 0; i < d->nconns; i++)
            if (d->conns[i].state == CONN_FREE) {
                c = &d->conns[i];
                break;
            }
        /* Connections that never say HELLO get a bounded pool beyond the client table. */
        if (!c || d->nopen >= CONN_EXTRA + (d->opt.max_clients - d->nclients)) {
            snprintf(text, sizeof text, "too many connections (%u clients, %u without HELLO)", d->nclients, d->nopen);
            turn_away(d, fd, SCAF_REFUSAL_CONNECTIONS, text);
            continue;
        }
        (void)getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl);
        /* ... and on a shared daemon no user holds more than a part of that pool. */
        if (d->opt.shared && count_pending(d, cred.uid) >= CONN_PENDING_PER_USER) {
            snprintf(text, sizeof text, "uid %u already has %u connections without HELLO", (unsigned)cred.uid,
                     CONN_PENDING_PER_USER);
            turn_away(d, fd, SCAF_REFUSAL_USER_PENDING, text);
            continue;
        }
        memset(&c->in, 0, sizeof c->in);
        memset(&c->client, 0, sizeof c->client);
        c->fd = fd;
        c->uid = cred.uid;
        c->inlen = 0;
        c->status_wanted = false;
        c->close_after = false;
        c->memfd = -1;
        c->state = CONN_OPEN;
        c->last_active = c->since = scaf_clock_s(CLOCK_MONOTONIC);
        c->gen++;
        ev = (struct epoll_event){.events = EPOLLIN | EPOLLRDHUP, .data.u64 = tag_of(d, c)};
        if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            scaf_refusals_note(&d->refusals, c->since, SCAF_REFUSAL_INTERNAL, "epoll_ctl: %s", strerror(errno));
            close(fd);
            c->fd = -1;
            c->state = CONN_FREE;
            continue;
        }
        d->nopen++;
    }
    return SCAF_CONN_ACCEPT_OK;
}

uint32_t scaf_session_count(const struct scafd *d)
{
    return d->nopen + d->nclients;
}

void scaf_session_reap_stalled(struct scafd *d, double now)
{
    for (uint32_t i = 0; i < d->nconns; i++) {
        struct scafd_conn *c = &d->conns[i];
        char w[128];

        if (c->state == CONN_FREE)
            continue;
        if (c->out && now - c->out_since > CONN_OUTPUT_STALL_S) {
            who(c, w, sizeof w);
            scaf_refusals_note(&d->refusals, now, SCAF_REFUSAL_STALLED,
                               "dropping %s: it left its status reply unread for %.0f s", w, CONN_OUTPUT_STALL_S);
            drop(d, c, NULL);
        } else if (c->state == CONN_OPEN && !c->out && !c->status_wanted && d->opt.shared &&
                   now - c->since > CONN_SHARED_HANDSHAKE_S) {
            /* Shared: anyone can connect, so an unfinished handshake may hold a slot only briefly. */
            who(c, w, sizeof w);
            scaf_refusals_note(&d->refusals, now, SCAF_REFUSAL_SILENT, "dropping %s: no complete message in %.0f s",
                               w, CONN_SHARED_HANDSHAKE_S);
            drop(d, c, NULL);
        } else if (c->state == CONN_OPEN && now - c->last_active > CONN_OPEN_IDLE_S) {
            /* A connection that never says HELLO must not hold a slot a client could use. */
            who(c, w, sizeof w);
            scaf_refusals_note(&d->refusals, now, SCAF_REFUSAL_SILENT, "dropping %s: silent for %.0f s without HELLO",
                               w, CONN_OPEN_IDLE_S);
            drop(d, c, NULL);
        }
    }
    scaf_refusals_tick(&d->refusals, now);
}
