/* memory.c — the daemon's memory of programs between runs: answers MEMORY requests (docs/memory.md). */
#include "memory.h"

void scaf_memory_answer(struct scafd *d, uid_t uid, const struct scaf_wire_memory *req,
                        struct scaf_wire_memory_reply *r)
{
    (void)d;
    (void)uid;
    /* No store yet: a daemon without memory says so, as scafd --no-memory will. */
    *r = (struct scaf_wire_memory_reply){.op = req->op, .status = SCAF_MEMORY_OFF};
}
