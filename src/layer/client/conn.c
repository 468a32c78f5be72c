/* conn.c — the layer's connection to scafd: the handshake (connect, trust, exchange through the codec, map), reconnect, fork. */
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
#include <sys/un.h>
#include <unistd.h>

#include "../core/bound.h"
#include "../core/identity.h"
#include "../core/page.h"
#include "../core/pool.h"
#include "../core/runtimes.h"
#include "../core/say.h"
#include "../core/settings.h"
#include "../estimate/estimate.h"
#include "../malleable/malleable.h"
#include "scaf/peer.h"
#include "scaf/procfs.h"
#include "scaf/sockio.h"
#include "scaf/sockpath.h"
#include "scaf/wire.h"

_Atomic int scaf_conn_state = SCAF_CONN_UNTRIED;

/* Guards conn_fd and state transitions; fork waits for it so a child never inherits a half-made connection. */
static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static int conn_fd = -1;
/* The first connect failed in a way a later daemon may mend: the helper keeps trying (scaf_conn_join). */
static _Atomic int join_wanted;
/* The idle period a WAKE went out for (the page's `idle` word), so that one goes per period; 0 on a new page. */
static _Atomic uint32_t woken_for;
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

/* Step 1, connect: a socket to the daemon's path, every read and write on it bounded by the timeout. */
static enum scaf_conn_result dial(struct sockaddr_un *addr, int quiet, int *fd_out)
{
    int fd;

    if (scaf_sockpath_default(addr->sun_path, sizeof addr->sun_path) != 0)
        return SCAF_CONN_ABSENT;
    fd = scaf_sockio_dial(addr->sun_path, HANDSHAKE_TIMEOUT_MS);
    if (fd < 0) {
        /* No socket at all is the program's own trouble (out of descriptors), not a missing daemon. */
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            return SCAF_CONN_BROKEN;
        if (!quiet)
            scaf_layer_log("no daemon on %s: %s", addr->sun_path, strerror(errno));
        return SCAF_CONN_ABSENT;
    }
    *fd_out = fd;
    return SCAF_CONN_OK;
}

/* Step 2, trust, before we send anything: another user's daemon on our path must not learn or steer this program. */
static enum scaf_conn_result trust(int fd, const char *path)
{
    uid_t peer;
    int trusted = scaf_peer_trusted(fd, path, scaf_settings.daemon_user, &peer);

    if (trusted == 1)
        return SCAF_CONN_OK;
    if (trusted == 0 && refused_uid != (long)peer) {
        char why[128];

        scaf_peer_refusal(peer, why, sizeof why);
        scaf_say_always("refusing the daemon on %s: it %s; running unsteered", path, why);
    } else if (trusted < 0)
        scaf_layer_log("cannot read the daemon's credentials on %s: %s", path, strerror(errno));
    if (trusted == 0)
        refused_uid = (long)peer;
    return SCAF_CONN_UNTRUSTED;
}

/*
 * Step 3, exchange: HELLO out, the answer in, decoded by the codec. On
 * SCAF_CONN_OK *ans is a WELCOME and *memfd the page's descriptor; a REFUSE
 * gives SCAF_CONN_REFUSED or, for another protocol, SCAF_CONN_REFUSED_VERSION.
 * *memfd is left for the caller to close whatever the result.
 */
static enum scaf_conn_result exchange(int fd, const char *path, unsigned bound, int *memfd,
                                      struct scaf_wire_answer *ans)
{
    struct scaf_msg_hello hello;
    struct scaf_wire_refusal why;
    union {
        struct scaf_msg_header h;
        struct scaf_msg_welcome welcome;
        struct scaf_msg_refuse refuse;
    } in;
    char name[SCAF_NAME_MAX];
    uint32_t len;

    program_name(name);
    scaf_wire_encode_hello(&hello, bound, atomic_load(&scaf_mall_fixed) ? SCAF_HELLO_F_NONMALLEABLE : 0, name,
                           scaf_identity_key(NULL));
    if (scaf_sockio_send_all(fd, &hello, sizeof hello) != 0) {
        scaf_layer_log("HELLO not sent: %s", strerror(errno));
        return SCAF_CONN_BROKEN;
    }
    if (recv_all(fd, &in.h, sizeof in.h, memfd) != 0) {
        scaf_layer_log("no valid answer to HELLO from %s", path);
        return SCAF_CONN_BROKEN;
    }
    len = scaf_wire_check_answer(&in.h, &why);
    if (len == 0) {
        scaf_layer_log("no valid answer to HELLO from %s: %s", path, why.text);
        return SCAF_CONN_BROKEN;
    }
    if (recv_all(fd, (char *)&in + sizeof in.h, len - sizeof in.h, memfd) != 0) {
        scaf_layer_log("truncated answer to HELLO");
        return SCAF_CONN_BROKEN;
    }
    if (scaf_wire_decode_answer(&in, len, ans, &why) != 0) {
        scaf_layer_log("unusable answer to HELLO: %s", why.text);
        return SCAF_CONN_BROKEN;
    }
    if (ans->type == SCAF_MSG_REFUSE) {
        scaf_layer_log("daemon refused (reason %u, daemon protocol %u): %s", ans->reason, ans->daemon_version,
                       ans->text);
        return ans->reason == SCAF_REFUSE_VERSION ? SCAF_CONN_REFUSED_VERSION : SCAF_CONN_REFUSED;
    }
    if (*memfd < 0) {
        scaf_layer_log("WELCOME without the page's descriptor");
        return SCAF_CONN_BROKEN;
    }
    return SCAF_CONN_OK;
}

/* Step 4, map: the page behind the WELCOME's memfd, checked before anyone reads it. */
static enum scaf_conn_result map(int memfd, struct scaf_page **page_out)
{
    struct scaf_wire_refusal why;
    struct stat st;
    struct scaf_page *page;

    /* Touching a mapping beyond the end of the file would SIGBUS the program. */
    if (fstat(memfd, &st) != 0 || st.st_size < (off_t)SCAF_PAGE_SIZE) {
        scaf_layer_log("cannot map the daemon's page: its file is shorter than %u bytes", SCAF_PAGE_SIZE);
        return SCAF_CONN_BROKEN;
    }
    page = mmap(NULL, SCAF_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (page == MAP_FAILED) {
        scaf_layer_log("cannot map the daemon's page: %s", strerror(errno));
        return SCAF_CONN_BROKEN;
    }
    if (scaf_wire_check_page(page, &why) != 0) {
        scaf_layer_log("cannot map the daemon's page: %s", why.text);
        munmap(page, SCAF_PAGE_SIZE);
        return SCAF_CONN_BROKEN;
    }
    *page_out = page;
    return SCAF_CONN_OK;
}

/*
 * One complete handshake: connect -> trust -> exchange -> map. On
 * SCAF_CONN_OK, *fd_out is the connection (kept open: its EOF is how the
 * daemon learns that we are gone) and *page_out the mapped page. Every other
 * result leaves nothing open.
 */
static enum scaf_conn_result handshake(int *fd_out, struct scaf_page **page_out, int quiet)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    struct scaf_wire_answer ans;
    struct scaf_page *page = NULL;
    enum scaf_conn_result res;
    int fd = -1, memfd = -1;
    unsigned bound = scaf_bound_threads();

    /* A thread pool larger than the OpenMP bound (OPENBLAS_NUM_THREADS) may be given up to its own size;
     * regions stay capped by their own bound in team.c. */
    if (scaf_pool_max_bound() > bound)
        bound = scaf_pool_max_bound();

    res = dial(&addr, quiet, &fd);
    if (res != SCAF_CONN_OK)
        goto cleanup;
    res = trust(fd, addr.sun_path);
    if (res != SCAF_CONN_OK)
        goto cleanup;
    res = exchange(fd, addr.sun_path, bound, &memfd, &ans);
    if (res != SCAF_CONN_OK)
        goto cleanup;
    res = map(memfd, &page);
    if (res != SCAF_CONN_OK)
        goto cleanup;
    {
        const char *prog;
        uint64_t key = scaf_identity_key(&prog);

        scaf_layer_log("connected to %s as client %u (daemon N=%u, bound %u, key %016llx %s)", addr.sun_path,
                       ans.client_id, ans.cpus, bound, (unsigned long long)key, key ? prog : "(none)");
    }
    *fd_out = fd;
    *page_out = page;
    fd = -1;
cleanup:
    if (memfd >= 0)
        close(memfd);
    if (fd >= 0)
        close(fd);
    return res;
}

/* Makes `page` the one the wrappers read. Caller holds conn_lock. */
static void publish(struct scaf_page *page)
{
    atomic_store(&woken_for, 0);
    scaf_page_set(page);
    /* The memory's word first (scaf check's malleable), so that the verdict published is the one it makes. */
    scaf_malleable_recall(page);
    /* After the pointer: a verdict change racing with us then writes to this page itself. */
    scaf_malleable_publish(page);
    scaf_runtimes_publish(page);
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

int scaf_conn_wake(uint32_t idle)
{
    struct scaf_msg_header h = scaf_wire_encode_wake();
    uint32_t before = atomic_load_explicit(&woken_for, memory_order_relaxed);
    int saved = errno, rc = 0;
    ssize_t n = -1;

    /* One thread per period: the others run their regions on at once. */
    if (before == idle || !atomic_compare_exchange_strong(&woken_for, &before, idle))
        return 0;
    /* Never wait for the helper (a reconnect holds the lock for a handshake): the next region tries. */
    if (pthread_mutex_trylock(&conn_lock) != 0)
        goto retry;
    if (conn_fd >= 0)
        n = send(conn_fd, &h, sizeof h, MSG_DONTWAIT | MSG_NOSIGNAL);
    /* A header cut short would leave the stream misaligned: finish it (16 bytes into a socket the layer
     * writes nothing else to: never seen). */
    if (n > 0 && (size_t)n < sizeof h)
        n = scaf_sockio_send_all(conn_fd, (const char *)&h + n, sizeof h - (size_t)n) == 0 ? (ssize_t)sizeof h : -1;
    pthread_mutex_unlock(&conn_lock);
    if (n == (ssize_t)sizeof h)
        goto out;
retry:
    atomic_compare_exchange_strong(&woken_for, &idle, before);
    rc = -1;
out:
    errno = saved;
    return rc;
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
    atomic_store(&woken_for, 0);
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
