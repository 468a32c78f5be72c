/* ask.c — finds, trusts and asks the daemon for a replayed `scaf run`; anything unusual is left to the Python `scaf run`, which explains it. */
#include "ask.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "scaf/peer.h"
#include "scaf/rundir.h"
#include "scaf/sockio.h"

/* As long as the Python `scaf run` waits for the daemon's answer (startteam.decide). */
#define ANSWER_MS 2000

/* RECALL on FD; 0 with *reply filled, or -1 (a refusal, another protocol, silence). */
static int recall(int fd, uint64_t key, unsigned count, struct scaf_wire_memory_reply *reply)
{
    struct scaf_msg_memory req;
    struct scaf_msg_memory_reply r;

    scaf_wire_encode_memory(&req, SCAF_MEMORY_RECALL, key, count < 1 ? 1 : count, 0, NULL);
    if (scaf_sockio_send_all(fd, &req, sizeof req) != 0 || scaf_sockio_recv_all(fd, &r.h, sizeof r.h) != 0)
        return -1;
    if (r.h.magic != SCAF_PROTO_MAGIC || r.h.version != SCAF_PROTO_VERSION || r.h.type != SCAF_MSG_MEMORY_REPLY ||
        r.h.length != sizeof r)
        return -1;
    if (scaf_sockio_recv_all(fd, (char *)&r + sizeof r.h, sizeof r - sizeof r.h) != 0)
        return -1;
    *reply = (struct scaf_wire_memory_reply){r.op, r.status, r.runs, r.verdict, r.source, r.start_team, r.forgotten};
    return 0;
}

int scaf_run_ask(const char *daemon, const char *sock, int ask, uint64_t key, unsigned count,
                 struct scaf_run_answer *out)
{
    int must = strcmp(daemon, "none") != 0, fd = -1, rc = must ? -1 : 0;
    struct stat st;
    uid_t peer;

    memset(out, 0, sizeof *out);
    if (strcmp(daemon, "own") == 0) {
        char dir[sizeof(((struct sockaddr_un *)0)->sun_path)], why[128];
        int dfd;

        if (strlen(sock) >= sizeof dir)
            goto out;
        scaf_rundir_split(sock, dir, sizeof dir);
        /* The check scaf run makes before it trusts anything there; it only creates a missing last folder. */
        if ((dfd = scaf_rundir_open(dir, SCAF_RUNDIR_PRIVATE, why, sizeof why)) < 0)
            goto out;
        close(dfd);
    }
    if (must && (stat(sock, &st) != 0 || !S_ISSOCK(st.st_mode)))
        goto out;
    if ((fd = scaf_sockio_dial(sock, ANSWER_MS)) < 0)
        goto out;
    if (scaf_peer_trusted_env(fd, sock, &peer) != 1)
        goto out;
    rc = 0;
    if (ask)
        out->recalled = recall(fd, key, count > SCAF_MAX_CPUS ? SCAF_MAX_CPUS : count, &out->reply) == 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}
