/* conn.c — connect to scafd, HELLO/WELCOME with the page memfd over SCM_RIGHTS, map it, reconnect, fork. */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "../estimate/estimate.h"
#include "bound.h"
#include "malleable.h"
#include "page.h"
#include "pool.h"
#include "say.h"
#include "scaf/peer.h"
#include "scaf/procfs.h"
#include "scaf/sockpath.h"
#include "settings.h"

_Atomic int scaf_conn_state = SCAF_CONN_UNTRIED;

/* Guards conn_fd and state transitions; fork waits for it so a child never inherits a half-made connection. */
static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static int conn_fd = -1;
/* The first connect failed in a way a later daemon may mend: the helper keeps trying (scaf_conn_join). */
static _Atomic int join_wanted;
/* The untrusted daemon's uid we last refused, so the refusal is said once, not at every retry. */
static long refused_uid = -1;

/* A hung daemon must not hang the program: every handshake read and write gives up after this. */
#define HANDSHAKE_TIMEOUT_MS 1000

static void program_name(char name[SCAF_NAME_MAX])
{
    /* /proc/self/comm is the thread-group leader's name, whichever thread asks. */
    ssize_t n;

    memset(name, 0, SCAF_NAME_MAX);
    n = scaf_procfs_read_pid(0, "comm", name, SCAF_NAME_MAX);
    if (n <= 0) {
        snprintf(name, SCAF_NAME_MAX, "%s", program_invocation_short_name);
        return;
    }
    char *nl = strchr(name, '\n');
    if (nl)
        *nl = 0;
    memset(name + strlen(name), 0, SCAF_NAME_MAX - strlen(name));
}

static int send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/*
 * Reads exactly len bytes; keeps the first descriptor that arrives with them
 * in *fd_out (closing any extra ones so a confused peer cannot leak fds into
 * the program). Returns 0, or -1 on EOF, timeout or error.
 */
static int recv_all(int fd, void *buf, size_t len, int *fd_out)
{
    char *p = buf;

    while (len > 0) {
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(4 * sizeof(int))];
        } ctl;
        struct iovec iov = {.iov_base = p, .iov_len = len};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                             .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
        ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);

        if (n < 0 && errno == EINTR)
            continue;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); n >= 0 && c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            size_t nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < nfds; i++) {
                int got;
                memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
                if (*fd_out < 0)
                    *fd_out = got;
                else
                    close(got);
            }
        }
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static struct scaf_page *map_page(int memfd)
{
    struct stat st;
    struct scaf_page *page;

    /* Touching a mapping beyond the end of the file would SIGBUS the program. */
    if (fstat(memfd, &st) != 0 || st.st_size < (off_t)SCAF_PAGE_SIZE)
        return NULL;
    page = mmap(NULL, SCAF_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (page == MAP_FAILED)
        return NULL;
    if (page->magic != SCAF_PAGE_MAGIC || page->version != SCAF_PROTO_VERSION) {
        munmap(page, SCAF_PAGE_SIZE);
        return NULL;
    }
    return page;
}

/*
 * One complete handshake. On SCAF_CONN_OK, *fd_out is the connection (kept
 * open: its EOF is how the daemon learns that we are gone) and *page_out the
 * mapped page. Every other result leaves nothing open.
 */
static enum scaf_conn_result handshake(int *fd_out, struct scaf_page **page_out, int quiet)
{
    enum scaf_conn_result res = SCAF_CONN_BROKEN;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    struct timeval tv = {.tv_sec = HANDSHAKE_TIMEOUT_MS / 1000,
                         .tv_usec = (HANDSHAKE_TIMEOUT_MS % 1000) * 1000};
    struct scaf_msg_hello hello;
    struct scaf_msg_header h;
    struct scaf_page *page = NULL;
    int fd = -1, memfd = -1;
    unsigned bound = scaf_bound_threads();
    uid_t peer;
    int trusted;

    /* A thread pool larger than the OpenMP bound (OPENBLAS_NUM_THREADS) may be given up to its own size;
     * regions stay capped by their own bound in team.c. */
    if (scaf_pool_max_bound() > bound)
        bound = scaf_pool_max_bound();

    if (scaf_sockpath_default(addr.sun_path, sizeof addr.sun_path) != 0) {
        res = SCAF_CONN_ABSENT;
        goto out;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto out;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    while (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        if (errno == EINTR)
            continue;
        if (!quiet)
            scaf_layer_log("no daemon on %s: %s", addr.sun_path, strerror(errno));
        res = SCAF_CONN_ABSENT;
        goto out;
    }
    /* Before we send anything: another user's daemon on our path must not learn or steer this program. */
    trusted = scaf_peer_trusted(fd, addr.sun_path, scaf_settings.daemon_user, &peer);
    if (trusted != 1) {
        if (trusted == 0 && refused_uid != (long)peer)
            scaf_say_always("refusing the daemon on %s: it runs as uid %u, not as you (uid %u), root or "
                            "SCAF_DAEMON_USER; running unsteered",
                            addr.sun_path, (unsigned)peer, (unsigned)getuid());
        else if (trusted < 0)
            scaf_layer_log("cannot read the daemon's credentials on %s: %s", addr.sun_path, strerror(errno));
        if (trusted == 0)
            refused_uid = (long)peer;
        res = SCAF_CONN_UNTRUSTED;
        goto out;
    }

    memset(&hello, 0, sizeof hello);
    hello.h.magic = SCAF_PROTO_MAGIC;
    hello.h.version = SCAF_PROTO_VERSION;
    hello.h.type = SCAF_MSG_HELLO;
    hello.h.length = sizeof hello;
    hello.max_threads = bound > SCAF_MAX_CPUS ? SCAF_MAX_CPUS : bound;
    hello.flags = atomic_load(&scaf_mall_fixed) ? SCAF_HELLO_F_NONMALLEABLE : 0;
    program_name(hello.name);
    if (send_all(fd, &hello, sizeof hello) != 0) {
        scaf_layer_log("HELLO not sent: %s", strerror(errno));
        goto out;
    }

    if (recv_all(fd, &h, sizeof h, &memfd) != 0 || h.magic != SCAF_PROTO_MAGIC) {
        scaf_layer_log("no valid answer to HELLO from %s", addr.sun_path);
        goto out;
    }
    if (h.type == SCAF_MSG_REFUSE && h.length == sizeof(struct scaf_msg_refuse)) {
        struct scaf_msg_refuse r;

        r.h = h;
        if (recv_all(fd, (char *)&r + sizeof h, sizeof r - sizeof h, &memfd) != 0)
            goto out;
        r.text[SCAF_REFUSE_TEXT - 1] = 0;
        scaf_layer_log("daemon refused (reason %u, daemon protocol %u): %s", r.reason,
                       r.daemon_version, r.text);
        res = r.reason == SCAF_REFUSE_VERSION ? SCAF_CONN_REFUSED_VERSION : SCAF_CONN_REFUSED;
        goto out;
    }
    if (h.version != SCAF_PROTO_VERSION || h.type != SCAF_MSG_WELCOME ||
        h.length != sizeof(struct scaf_msg_welcome) || h.reserved != 0) {
        scaf_layer_log("unexpected answer to HELLO (version %u, type %u, length %u)", h.version,
                       h.type, h.length);
        goto out;
    }
    struct scaf_msg_welcome w;
    w.h = h;
    if (recv_all(fd, (char *)&w + sizeof h, sizeof w - sizeof h, &memfd) != 0) {
        scaf_layer_log("truncated WELCOME");
        goto out;
    }
    if (memfd < 0 || w.page_size != SCAF_PAGE_SIZE) {
        scaf_layer_log("WELCOME without a usable page (fd %d, page_size %u)", memfd, w.page_size);
        goto out;
    }
    page = map_page(memfd);
    if (!page) {
        scaf_layer_log("cannot map the daemon's page (bad size, magic or version)");
        goto out;
    }
    scaf_layer_log("connected to %s as client %u (daemon N=%u, bound %u)", addr.sun_path,
                   w.client_id, w.cpus, bound);
    *fd_out = fd;
    *page_out = page;
    fd = -1;
    res = SCAF_CONN_OK;
out:
    if (memfd >= 0)
        close(memfd);
    if (fd >= 0)
        close(fd);
    return res;
}

/* Makes `page` the one the wrappers read. Caller holds conn_lock. */
static void publish(struct scaf_page *page)
{
    scaf_page_set(page);
    /* After the pointer: a verdict change racing with us then writes to this page itself. */
    scaf_malleable_publish(page);
    scaf_estimate_attach(page);
}

struct scaf_page *scaf_conn_first(void)
{
    struct scaf_page *page = NULL;
    int fd = -1;

    scaf_malleable_prepare(); /* rules files, before the HELLO that carries the verdict */
    pthread_mutex_lock(&conn_lock);
    if (atomic_load(&scaf_conn_state) != SCAF_CONN_UNTRIED) {
        page = scaf_page_get();
        goto out;
    }
    enum scaf_conn_result res = handshake(&fd, &page, 0);
    if (res != SCAF_CONN_OK) {
        /* Inert: the program behaves exactly as with plain libgomp. A daemon that comes later (a restart,
         * an upgrade) is joined by the helper thread; only another protocol is final. */
        atomic_store(&scaf_conn_state, SCAF_CONN_INERT);
        atomic_store(&join_wanted, res != SCAF_CONN_REFUSED_VERSION);
        page = NULL;
        goto out;
    }
    conn_fd = fd;
    publish(page);
    atomic_store(&scaf_conn_state, SCAF_CONN_LIVE);
out:
    pthread_mutex_unlock(&conn_lock);
    return page;
}

int scaf_conn_lost(void)
{
    char c;
    ssize_t n;

    pthread_mutex_lock(&conn_lock);
    if (conn_fd < 0) {
        pthread_mutex_unlock(&conn_lock);
        return 1;
    }
    n = recv(conn_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    pthread_mutex_unlock(&conn_lock);
    if (n == 0)
        return 1;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return 1;
    return 0;
}

void scaf_conn_drop(void)
{
    pthread_mutex_lock(&conn_lock);
    if (conn_fd >= 0)
        close(conn_fd);
    conn_fd = -1;
    pthread_mutex_unlock(&conn_lock);
    scaf_layer_log("daemon connection lost; keeping the last allocation while reconnecting");
}

enum scaf_conn_result scaf_conn_reconnect(void)
{
    struct scaf_page *page = NULL;
    int fd = -1;
    enum scaf_conn_result res;

    pthread_mutex_lock(&conn_lock);
    res = handshake(&fd, &page, 1);
    if (res == SCAF_CONN_OK) {
        if (conn_fd >= 0)
            close(conn_fd);
        conn_fd = fd;
        publish(page);
    }
    pthread_mutex_unlock(&conn_lock);
    return res;
}

int scaf_conn_wants_join(void)
{
    return atomic_load(&join_wanted);
}

enum scaf_conn_result scaf_conn_join(void)
{
    struct scaf_page *page = NULL;
    enum scaf_conn_result res;
    int fd = -1;

    pthread_mutex_lock(&conn_lock);
    res = handshake(&fd, &page, 1);
    if (res == SCAF_CONN_OK) {
        conn_fd = fd;
        publish(page);
        atomic_store(&join_wanted, 0);
        /* After the page: a region that sees LIVE also sees the page (it reads the page first anyway). */
        atomic_store(&scaf_conn_state, SCAF_CONN_LIVE);
    } else if (res == SCAF_CONN_REFUSED_VERSION) {
        atomic_store(&join_wanted, 0);
    }
    pthread_mutex_unlock(&conn_lock);
    return res;
}

void scaf_conn_lock(void)
{
    pthread_mutex_lock(&conn_lock);
}

void scaf_conn_unlock(void)
{
    pthread_mutex_unlock(&conn_lock);
}

void scaf_conn_forget(void)
{
    if (conn_fd >= 0)
        close(conn_fd);
    conn_fd = -1;
    if (atomic_load(&scaf_conn_state) == SCAF_CONN_LIVE) {
        /* The parent's page stays mapped but unused: the estimator might still hold it briefly. */
        scaf_page_set(NULL);
        scaf_estimate_attach(NULL);
        atomic_store(&scaf_conn_state, SCAF_CONN_UNTRIED);
    } else if (atomic_load(&join_wanted)) {
        /* The parent's joining helper does not exist here: the child tries at its own first region. */
        atomic_store(&join_wanted, 0);
        atomic_store(&scaf_conn_state, SCAF_CONN_UNTRIED);
    }
}

void scaf_conn_init(int disabled)
{
    if (disabled) {
        atomic_store(&scaf_conn_state, SCAF_CONN_INERT);
        scaf_layer_log("SCAF_DISABLE=1: inert");
    }
}
