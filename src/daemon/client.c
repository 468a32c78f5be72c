/* client.c — connections and clients: the wire protocol, HELLO checks, shared pages, refusals, departures. */
#include "daemon.h"
#include "scaf/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

int scaf_client_table_init(struct scafd *d)
{
    d->nconns = d->opt.max_clients + SCAFD_EXTRA_CONNS;
    d->conns = calloc(d->nconns, sizeof *d->conns);
    d->rclients = calloc(d->nconns, sizeof *d->rclients);
    d->rallocs = calloc(d->nconns, sizeof *d->rallocs);
    d->order = calloc(d->nconns, sizeof *d->order);
    if (!d->conns || !d->rclients || !d->rallocs || !d->order) {
        scaf_client_table_free(d);
        errno = ENOMEM;
        return -1;
    }
    for (uint32_t i = 0; i < d->nconns; i++)
        d->conns[i].fd = -1;
    return 0;
}

void scaf_client_table_free(struct scafd *d)
{
    for (uint32_t i = 0; d->conns && i < d->nconns; i++) {
        struct scafd_conn *c = &d->conns[i];
        if (c->fd >= 0)
            close(c->fd);
        if (c->page)
            munmap(c->page, SCAF_PAGE_SIZE);
        free(c->out);
    }
    free(d->conns);
    free(d->rclients);
    free(d->rallocs);
    free(d->order);
    d->conns = NULL;
    d->rclients = NULL;
    d->rallocs = NULL;
    d->order = NULL;
    d->nconns = 0;
}

uint64_t scaf_client_tag(const struct scafd *d, const struct scafd_conn *c)
{
    return SCAFD_TAG_CONN | ((uint64_t)(c->gen & 0x7fffffffu) << 32) | (uint64_t)(c - d->conns);
}

struct scafd_conn *scaf_client_from_tag(struct scafd *d, uint64_t tag)
{
    uint32_t slot = (uint32_t)tag, gen = (uint32_t)(tag >> 32) & 0x7fffffffu;

    if (!(tag & SCAFD_TAG_CONN) || slot >= d->nconns)
        return NULL;
    if (d->conns[slot].state == SCAFD_CONN_FREE || (d->conns[slot].gen & 0x7fffffffu) != gen)
        return NULL;
    return &d->conns[slot];
}

/* "client 3 (pid 1234 ep)" or "connection (pid 1234)": who a log line is about. */
static void who(const struct scafd_conn *c, char *buf, size_t len)
{
    struct ucred cred;
    socklen_t cl = sizeof cred;

    if (c->state == SCAFD_CONN_CLIENT)
        snprintf(buf, len, "client %u (pid %d %s)", c->id, (int)c->pid, c->name);
    else if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 && cred.pid > 0)
        snprintf(buf, len, "connection (pid %d)", (int)cred.pid);
    else
        snprintf(buf, len, "connection");
}

static void set_events(struct scafd *d, struct scafd_conn *c, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.u64 = scaf_client_tag(d, c)};
    epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

void scaf_client_drop(struct scafd *d, struct scafd_conn *c, const char *why)
{
    bool was_client = c->state == SCAFD_CONN_CLIENT;

    if (c->state == SCAFD_CONN_FREE)
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
    free(c->out);
    c->out = NULL;
    c->outlen = c->outoff = 0;
    c->inlen = 0;
    if (was_client) {
        munmap(c->page, SCAF_PAGE_SIZE);
        c->page = NULL;
        d->nclients--;
    } else {
        d->nopen--;
    }
    c->state = SCAFD_CONN_FREE;
    c->gen++;
    c->applied = false;
    if (was_client) {
        /* The share goes back to the others in this same loop turn. */
        d->membership_changed = true;
        scaf_referee_run(d);
        scaf_loop_idle_update(d);
    }
}

/* Answers REFUSE (if the peer's buffer takes it), logs one line, and drops the connection. */
static void refuse(struct scafd *d, struct scafd_conn *c, uint32_t reason, const char *fmt, ...)
{
    struct scaf_msg_refuse m;
    char w[128];
    va_list ap;

    memset(&m, 0, sizeof m);
    m.h = (struct scaf_msg_header){SCAF_PROTO_MAGIC, SCAF_PROTO_VERSION, SCAF_MSG_REFUSE, sizeof m, 0};
    m.reason = reason;
    m.daemon_version = SCAF_PROTO_VERSION;
    va_start(ap, fmt);
    vsnprintf(m.text, sizeof m.text, fmt, ap);
    va_end(ap);
    who(c, w, sizeof w);
    scaf_say("refused %s: %s", w, m.text);
    /* Never wait for a peer that does not read: if it does not fit now, it is not sent. */
    (void)send(c->fd, &m, sizeof m, MSG_DONTWAIT | MSG_NOSIGNAL);
    scaf_client_drop(d, c, NULL);
}

/* Writes as much of the pending status reply as the socket takes; 0, or -1 if the peer was dropped. */
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
            scaf_client_drop(d, c, "went away before reading its status reply");
            return -1;
        }
        c->outoff += (size_t)n;
    }
    free(c->out);
    c->out = NULL;
    c->outlen = c->outoff = 0;
    set_events(d, c, EPOLLIN | EPOLLRDHUP);
    return 0;
}

static int status_reply(struct scafd *d, struct scafd_conn *c)
{
    struct scaf_buf b = {0};
    struct scaf_msg_header h;

    /* Reserve the header, then the JSON right after it: one buffer, one send. */
    scaf_buf_printf(&b, "%*s", (int)sizeof h, "");
    if (scaf_status_build(d, &b) < 0 || b.len > SCAF_STATUS_MAX) {
        scaf_buf_free(&b);
        refuse(d, c, SCAF_REFUSE_INTERNAL, "cannot build the status reply");
        return -1;
    }
    h = (struct scaf_msg_header){SCAF_PROTO_MAGIC, SCAF_PROTO_VERSION, SCAF_MSG_STATUS_REPLY, (uint32_t)b.len, 0};
    memcpy(b.p, &h, sizeof h);
    c->out = b.p;
    c->outlen = b.len;
    c->outoff = 0;
    c->out_since = scaf_clock_s(CLOCK_MONOTONIC);
    return flush_out(d, c);
}

/* The process name: /proc/PID/comm (the kernel's, not the client's word), else the HELLO's. */
static void client_name(struct scafd_conn *c, const char *hello_name)
{
    char buf[SCAF_NAME_MAX + 1] = "";

    if (scaf_procfs_read_pid(c->pid, "comm", buf, sizeof buf) < 0) {
        memcpy(buf, hello_name, SCAF_NAME_MAX);
        buf[SCAF_NAME_MAX - 1] = '\0';
    }
    buf[strcspn(buf, "\n")] = '\0';
    /* Control bytes would garble the scoreboard and stderr; JSON escaping handles the rest. */
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    snprintf(c->name, sizeof c->name, "%s", buf[0] ? buf : "?");
}

/* The shared page: a sealed memfd, so the client can neither shrink it (SIGBUS here) nor grow it. */
static int page_create(const struct scafd *d, struct scaf_page **out)
{
    struct scaf_page *pg;
    int fd = memfd_create("scaf-page", MFD_CLOEXEC | MFD_ALLOW_SEALING);

    if (fd < 0)
        return -1;
    if (ftruncate(fd, SCAF_PAGE_SIZE) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
        goto fail;
    pg = mmap(NULL, SCAF_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (pg == MAP_FAILED)
        goto fail;
    pg->magic = SCAF_PAGE_MAGIC;
    pg->version = SCAF_PROTO_VERSION;
    atomic_store(&pg->threads, 1);
    atomic_store(&pg->control, SCAF_CONTROL_THREADS);
    atomic_store(&pg->cpus, d->cap.n);
    *out = pg;
    return fd;
fail:
    close(fd);
    return -1;
}

static int send_welcome(struct scafd_conn *c, int memfd, uint32_t cpus)
{
    struct scaf_msg_welcome w = {
        .h = {SCAF_PROTO_MAGIC, SCAF_PROTO_VERSION, SCAF_MSG_WELCOME, sizeof w, 0},
        .client_id = c->id,
        .page_size = SCAF_PAGE_SIZE,
        .cpus = cpus,
    };
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {&w, sizeof w};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    ssize_t n;

    memset(u.buf, 0, sizeof u.buf);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &memfd, sizeof memfd);
    do
        n = sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof w ? 0 : -1;
}

static void hello(struct scafd *d, struct scafd_conn *c)
{
    struct scaf_msg_hello m;
    struct ucred cred;
    socklen_t cl = sizeof cred;
    int memfd;

    memcpy(&m, c->in, sizeof m);
    if (m.max_threads == 0 || m.max_threads > SCAF_MAX_CPUS) {
        refuse(d, c, SCAF_REFUSE_MALFORMED, "max_threads %u is outside 1..%u", m.max_threads, SCAF_MAX_CPUS);
        return;
    }
    if (m.flags & ~SCAF_HELLO_F_ALL) {
        refuse(d, c, SCAF_REFUSE_MALFORMED, "unknown HELLO flags 0x%x", m.flags & ~SCAF_HELLO_F_ALL);
        return;
    }
    for (int i = 0; i < 4; i++)
        if (m.reserved[i]) {
            refuse(d, c, SCAF_REFUSE_MALFORMED, "nonzero reserved field in HELLO");
            return;
        }
    if (d->nclients >= d->opt.max_clients) {
        refuse(d, c, SCAF_REFUSE_FULL, "client table full (%u clients, scafd --max-clients)", d->nclients);
        return;
    }
    /* The kernel's word for who is calling, never the client's. */
    if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.pid <= 0) {
        refuse(d, c, SCAF_REFUSE_INTERNAL, "cannot identify the peer (SO_PEERCRED)");
        return;
    }
    c->pid = cred.pid;
    c->uid = cred.uid;
    memfd = page_create(d, &c->page);
    if (memfd < 0) {
        refuse(d, c, SCAF_REFUSE_INTERNAL, "cannot create the shared page: %s", strerror(errno));
        return;
    }
    client_name(c, m.name);
    c->max_threads = m.max_threads;
    c->hello_nonmalleable = (m.flags & SCAF_HELLO_F_NONMALLEABLE) != 0;
    c->id = ++d->next_id;
    c->applied = false;
    c->nlwp = 0;
    c->state = SCAFD_CONN_CLIENT;
    d->nopen--;
    d->nclients++;
    scaf_lookout_client_start(c);
    scaf_loop_idle_update(d);
    if (d->opt.verbose)
        scaf_say("client %u (pid %d %s) arrived, max_threads %u%s", c->id, (int)c->pid, c->name, c->max_threads,
                 c->hello_nonmalleable ? ", not malleable" : "");

    /* Allocate before WELCOME, so the first thing the client reads is its share. */
    d->membership_changed = true;
    scaf_referee_run(d);
    if (send_welcome(c, memfd, d->cap.n) < 0) {
        close(memfd);
        scaf_client_drop(d, c, "could not be sent its WELCOME");
        return;
    }
    close(memfd);
}

/* Checks a complete header. Returns the message's full length, or 0 after refusing. */
static uint32_t check_header(struct scafd *d, struct scafd_conn *c)
{
    struct scaf_msg_header h;
    uint32_t want;

    memcpy(&h, c->in, sizeof h);
    if (h.magic != SCAF_PROTO_MAGIC) {
        refuse(d, c, SCAF_REFUSE_MALFORMED, "bad magic 0x%08x (not a scaf client?)", h.magic);
        return 0;
    }
    if (h.version != SCAF_PROTO_VERSION) {
        refuse(d, c, SCAF_REFUSE_VERSION, "scafd speaks protocol %u, client speaks %u", SCAF_PROTO_VERSION,
               h.version);
        return 0;
    }
    switch (h.type) {
    case SCAF_MSG_HELLO:
        want = sizeof(struct scaf_msg_hello);
        break;
    case SCAF_MSG_STATUS_REQ:
        want = sizeof(struct scaf_msg_header);
        break;
    default:
        refuse(d, c, SCAF_REFUSE_MALFORMED, "unexpected message type %u", h.type);
        return 0;
    }
    if (h.length != want) {
        refuse(d, c, SCAF_REFUSE_MALFORMED, "message type %u has length %u, expected %u", h.type, h.length, want);
        return 0;
    }
    if (h.reserved != 0) {
        refuse(d, c, SCAF_REFUSE_MALFORMED, "nonzero reserved header field");
        return 0;
    }
    if (h.type == SCAF_MSG_HELLO && c->state == SCAFD_CONN_CLIENT) {
        refuse(d, c, SCAF_REFUSE_DUPLICATE, "this connection already said HELLO (client %u)", c->id);
        return 0;
    }
    return want;
}

/* Reads until the socket is empty, acting on each message only once it is complete. */
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
                snprintf(why, sizeof why, "%s", c->state == SCAFD_CONN_CLIENT ? "left" : "closed");
            else if (n == 0)
                snprintf(why, sizeof why, "closed in the middle of a message (%zu bytes)", c->inlen);
            else
                snprintf(why, sizeof why, "failed: %s", strerror(errno));
            scaf_client_drop(d, c, why);
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
            if (h.type == SCAF_MSG_HELLO) {
                hello(d, c);
                if (c->state != SCAFD_CONN_CLIENT)
                    return;
            } else if (status_reply(d, c) < 0 || c->out) {
                return; /* dropped, or waiting for the reply to drain before reading more */
            }
        }
    }
}

void scaf_client_event(struct scafd *d, struct scafd_conn *c, uint32_t events)
{
    c->last_active = scaf_clock_s(CLOCK_MONOTONIC);
    if (c->out) {
        /* Input waits until the reply has drained; a peer that hung up fails the send and is dropped. */
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) || flush_out(d, c) < 0 || c->out)
            return;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
        on_readable(d, c);
}

void scaf_client_accept(struct scafd *d)
{
    /* Bounded, so a connection storm cannot starve the clients already here. */
    for (int round = 0; round < 64; round++) {
        struct epoll_event ev;
        struct scafd_conn *c = NULL;
        int fd = accept4(d->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                scaf_say("accept: %s", strerror(errno));
            return;
        }
        for (uint32_t i = 0; i < d->nconns; i++)
            if (d->conns[i].state == SCAFD_CONN_FREE) {
                c = &d->conns[i];
                break;
            }
        /* Connections that never say HELLO get a bounded pool beyond the client table. */
        if (!c || d->nopen >= SCAFD_EXTRA_CONNS + (d->opt.max_clients - d->nclients)) {
            scaf_say("too many connections (%u clients, %u pending); closing a new one", d->nclients, d->nopen);
            close(fd);
            continue;
        }
        memset(&c->in, 0, sizeof c->in);
        c->fd = fd;
        c->inlen = 0;
        c->state = SCAFD_CONN_OPEN;
        c->page = NULL;
        c->id = 0;
        c->pid = 0;
        c->name[0] = '\0';
        c->last_active = scaf_clock_s(CLOCK_MONOTONIC);
        c->gen++;
        ev = (struct epoll_event){.events = EPOLLIN | EPOLLRDHUP, .data.u64 = scaf_client_tag(d, c)};
        if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            scaf_say("epoll_ctl: %s", strerror(errno));
            close(fd);
            c->fd = -1;
            c->state = SCAFD_CONN_FREE;
            continue;
        }
        d->nopen++;
    }
}

void scaf_client_reap_stalled(struct scafd *d, double now)
{
    for (uint32_t i = 0; i < d->nconns; i++) {
        struct scafd_conn *c = &d->conns[i];
        char w[128];

        if (c->state == SCAFD_CONN_FREE)
            continue;
        if (c->out && now - c->out_since > SCAFD_OUTPUT_STALL_S) {
            who(c, w, sizeof w);
            scaf_say("dropping %s: it left its status reply unread for %.0f s", w, SCAFD_OUTPUT_STALL_S);
            scaf_client_drop(d, c, NULL);
        } else if (c->state == SCAFD_CONN_OPEN && now - c->last_active > SCAFD_OPEN_IDLE_S) {
            /* A connection that never says HELLO must not hold a slot a client could use. */
            who(c, w, sizeof w);
            scaf_say("dropping %s: silent for %.0f s without HELLO", w, SCAFD_OPEN_IDLE_S);
            scaf_client_drop(d, c, NULL);
        }
    }
}
