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
    union scaf_wire_memory_answer in;
    struct scaf_wire_refusal why;
    uint32_t len;

    scaf_wire_encode_memory(&req, SCAF_MEMORY_RECALL, key, count < 1 ? 1 : count, 0, NULL);
    if (scaf_sockio_send_all(fd, &req, sizeof req) != 0 || scaf_sockio_recv_all(fd, &in.h, sizeof in.h) != 0)
        return -1;
    if ((len = scaf_wire_check_reply(&in.h, SCAF_MSG_MEMORY, &why)) == 0 || len > sizeof in ||
        scaf_sockio_recv_all(fd, (char *)&in + sizeof in.h, len - sizeof in.h) != 0)
        return -1;
    return scaf_wire_decode_memory_reply(&in, len, reply, &why) == SCAF_WIRE_REPLY_OK ? 0 : -1;
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
