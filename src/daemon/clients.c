/* clients.c — a client's arrival and departure: admission checks, its page and lookout baseline, its place in the table, kill detection. */
#include "clients.h"
#include "clientrec.h"
#include "say.h"
#include "scafd.h"
#include "apply/pagewrite.h"
#include "collect/lineage.h"
#include "collect/lookout.h"
#include "collect/pageread.h"
#include "recall/recall.h"
#include "scaf/clock.h"
#include "scaf/procfs.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/*
 * A client's program (struct scaf_policy_client's group): the id of the
 * outermost client of the same user among its ancestors, else its own. A
 * pool's workers started by a parent under scaf then share one equal share
 * with it, as a static split gives that program one; two programs that a
 * shell or a test harness started stay two, the shell being no client.
 */
static uint32_t program_of(const struct scafd *d, const struct scaf_client *c)
{
    uint32_t deepest = 0, group = c->id;

    for (uint32_t j = 0; j < d->nclients; j++) {
        const struct scaf_client *a = d->clients[j];
        uint32_t depth = a == c || a->uid != c->uid ? 0 : scaf_lineage_depth(&c->lineage, &a->lineage);

        if (depth > deepest) {
            deepest = depth;
            group = a->id;
        }
    }
    return group;
}

/* Whenever the table changes: a worker that said HELLO before its parent joins it when the parent comes, and
 * one whose parent left is a program of its own again (or its grandparent's). */
static void regroup(struct scafd *d)
{
    for (uint32_t i = 0; i < d->nclients; i++)
        d->clients[i]->group = program_of(d, d->clients[i]);
}

int scaf_clients_init(struct scafd *d)
{
    d->clients = calloc(d->opt.max_clients, sizeof *d->clients);
    d->nclients = 0;
    if (!d->clients) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void scaf_clients_free(struct scafd *d)
{
    for (uint32_t i = 0; d->clients && i < d->nclients; i++) {
        scaf_pagewrite_unmap(d->clients[i]->page);
        d->clients[i]->page = NULL;
    }
    free(d->clients);
    d->clients = NULL;
    d->nclients = 0;
}

static int refuse(struct scaf_clients_refusal *no, enum scaf_refusal_kind kind, uint32_t reason, const char *text)
{
    no->kind = kind;
    no->why = (struct scaf_wire_refusal){.reason = reason};
    snprintf(no->why.text, sizeof no->why.text, "%s", text);
    return -1;
}

/* Registered clients of this uid. */
static uint32_t count_uid(const struct scafd *d, uid_t uid)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < d->nclients; i++)
        if (d->clients[i]->uid == uid)
            n++;
    return n;
}

/* The process name: /proc/PID/comm (the kernel's, not the client's word), else the HELLO's. */
static void client_name(struct scaf_client *cl, const char *hello_name)
{
    char buf[SCAF_NAME_MAX + 1] = "";

    if (scaf_procfs_read_pid(cl->pid, "comm", buf, sizeof buf) < 0) {
        memcpy(buf, hello_name, SCAF_NAME_MAX);
        buf[SCAF_NAME_MAX - 1] = '\0';
    }
    buf[strcspn(buf, "\n")] = '\0';
    /* Control bytes would garble the scoreboard and stderr; JSON escaping handles the rest. */
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    snprintf(cl->name, sizeof cl->name, "%s", buf[0] ? buf : "?");
}

int scaf_clients_arrive(struct scafd *d, struct scaf_client *cl, int fd, uid_t uid, const struct scaf_wire_hello *m,
                        struct scaf_clients_refusal *no)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    char text[SCAF_REFUSE_TEXT];
    int memfd;

    if (d->nclients >= d->opt.max_clients) {
        snprintf(text, sizeof text, "client table full (%u clients, scafd --max-clients)", d->nclients);
        return refuse(no, SCAF_REFUSAL_FULL, SCAF_REFUSE_FULL, text);
    }
    /* No user may hold more than their part of the table, so another user's program still finds room. */
    if (d->opt.shared && count_uid(d, uid) >= d->opt.user_clients) {
        snprintf(text, sizeof text, "uid %u already has %u clients, the most one user may have (scafd --user-clients)",
                 (unsigned)uid, d->opt.user_clients);
        return refuse(no, SCAF_REFUSAL_USER_CLIENTS, SCAF_REFUSE_FULL, text);
    }
    /* The kernel's word for who is calling, never the client's. */
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid < 0)
        return refuse(no, SCAF_REFUSAL_INTERNAL, SCAF_REFUSE_INTERNAL, "cannot identify the peer (SO_PEERCRED)");
    /* The kernel says 0 for a process outside this daemon's PID namespace: without its pid the
     * lookout would count its CPU time as foreign load, so it is refused rather than served blind. */
    if (cred.pid == 0)
        return refuse(no, SCAF_REFUSAL_INTERNAL, SCAF_REFUSE_INTERNAL,
                      "client is in a PID namespace this daemon cannot see: run scafd in the host's PID namespace or in yours");
    memset(cl, 0, sizeof *cl);
    cl->pid = cred.pid;
    cl->uid = cred.uid;
    memfd = scaf_pagewrite_create(d->capacity.cpus, &cl->page);
    if (memfd < 0) {
        snprintf(text, sizeof text, "cannot create the shared page: %s", strerror(errno));
        cl->page = NULL;
        return refuse(no, SCAF_REFUSAL_INTERNAL, SCAF_REFUSE_INTERNAL, text);
    }
    client_name(cl, m->name);
    /* 0 is a real answer: the session's leader is outside this PID namespace, as for everything
     * started by `docker exec` or a CI runner. Such clients cannot be told apart by session, so they
     * count as one: a kill among them holds the others' turn (KIN_GRACE_MS) rather than split a job. */
    cl->sid = scaf_procfs_session(cl->pid);
    scaf_lineage_read(&cl->lineage, cl->pid);
    cl->max_threads = m->max_threads;
    cl->hello_fixed = (m->flags & SCAF_HELLO_F_NONMALLEABLE) != 0;
    cl->id = ++d->next_id;
    scaf_pageread_init(&cl->report, cl->max_threads);
    scaf_lookout_client_start(&cl->lookout, cl->pid);
    cl->group = program_of(d, cl); /* its start team splits its program's share with its kin */
    /* Before it is in the table (its start team counts the others) and before its WELCOME. */
    scaf_recall_arrive(&d->recall, d->clients, d->nclients, scafd_available(d), cl, m->key);
    d->clients[d->nclients++] = cl;
    regroup(d);
    d->members_changed = true;
    if (d->opt.verbose)
        scaf_say("client %u (pid %d %s) arrived, max_threads %u%s", cl->id, (int)cl->pid, cl->name, cl->max_threads,
                 cl->hello_fixed ? ", not malleable" : "");
    return memfd;
}

/*
 * Whether a departing client was killed: it did not end through exit() (the layer's farewell flag is
 * not on its page) and its process is gone or on its way out, so the socket did not close because
 * the program closed it. A client that merely closed its socket runs on.
 */
static bool was_killed(const struct scaf_client *cl)
{
    int exiting;

    if (atomic_load_explicit(&cl->page->client_flags, memory_order_relaxed) & SCAF_CLIENT_EXITING)
        return false;
    exiting = scaf_procfs_exiting(cl->pid);
    return exiting == 1 || (exiting == 0 && kill(cl->pid, 0) < 0 && errno == ESRCH);
}

void scaf_clients_leave(struct scafd *d, struct scaf_client *cl)
{
    uint32_t k = 0;

    /* While it is still in the table and its page mapped, killed or not. */
    scaf_recall_leave(&d->recall, d->clients, d->nclients, cl);
    while (k < d->nclients && d->clients[k] != cl)
        k++;
    if (k < d->nclients) {
        memmove(&d->clients[k], &d->clients[k + 1], (d->nclients - k - 1) * sizeof d->clients[0]);
        d->nclients--;
    }
    regroup(d);
    scaf_lookout_client_leave(&d->lookout, &cl->lookout, cl->pid);
    if (cl->sid >= 0 && was_killed(cl)) {
        d->killed_sid = cl->sid;
        d->killed_at = scaf_clock_s(CLOCK_MONOTONIC);
    }
    scaf_pagewrite_unmap(cl->page);
    cl->page = NULL;
    cl->applied = false;
    d->members_changed = true;
    d->departures++;
}
