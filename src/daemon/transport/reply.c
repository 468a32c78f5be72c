/* reply.c — scafd's sends of REFUSE and WELCOME: encoded by the codec (scaf/wire.h), never waiting for a peer. */
#include "reply.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

void scaf_reply_refuse(int fd, const struct scaf_wire_refusal *why)
{
    struct scaf_msg_refuse m;

    scaf_wire_encode_refuse(&m, why);
    (void)send(fd, &m, sizeof m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int scaf_reply_welcome(int fd, uint32_t client_id, uint32_t cpus, int memfd)
{
    struct scaf_msg_welcome w;
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {&w, sizeof w};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *cm;
    ssize_t n;

    scaf_wire_encode_welcome(&w, client_id, cpus);
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
