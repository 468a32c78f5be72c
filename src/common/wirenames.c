/* wirenames.c — proto.h's constants and message sizes by their C spelling, for a caller that cannot include proto.h (Python's scaf.lib.proto through libscaf_launch.so). */
#include "scaf/wire.h"

#include <errno.h>
#include <string.h>

/* The name is the expression itself, so that a name and its value cannot drift apart. */
#define ROW(expr) {#expr, (uint64_t)(expr)}

static const struct {
    const char *name;
    uint64_t value;
} rows[] = {
    ROW(SCAF_PROTO_MAGIC),
    ROW(SCAF_PROTO_VERSION),
    ROW(SCAF_STATUS_MAX),
    ROW(SCAF_REFUSE_TEXT),
    ROW(SCAF_MEMORY_NAME),
    ROW(SCAF_MAX_CPUS),
    ROW(SCAF_MSG_HELLO),
    ROW(SCAF_MSG_WELCOME),
    ROW(SCAF_MSG_REFUSE),
    ROW(SCAF_MSG_STATUS_REQ),
    ROW(SCAF_MSG_STATUS_REPLY),
    ROW(SCAF_MSG_MEMORY),
    ROW(SCAF_MSG_MEMORY_REPLY),
    ROW(SCAF_MSG_WAKE),
    ROW(SCAF_REFUSE_VERSION),
    ROW(SCAF_REFUSE_MALFORMED),
    ROW(SCAF_REFUSE_FULL),
    ROW(SCAF_REFUSE_INTERNAL),
    ROW(SCAF_REFUSE_DUPLICATE),
    ROW(SCAF_MEMORY_RECALL),
    ROW(SCAF_MEMORY_FORGET),
    ROW(SCAF_MEMORY_REMEMBER),
    ROW(SCAF_MEMORY_OK),
    ROW(SCAF_MEMORY_OFF),
    ROW(SCAF_MEMORY_UNKNOWN),
    ROW(SCAF_MEMORY_FAILED),
    ROW(SCAF_VERDICT_UNDECIDED),
    ROW(SCAF_VERDICT_MALLEABLE),
    ROW(SCAF_VERDICT_FIXED),
    ROW(SCAF_SOURCE_DEFAULT),
    ROW(SCAF_SOURCE_EVIDENCE),
    ROW(SCAF_SOURCE_USER),
    ROW(SCAF_SOURCE_RULES),
    ROW(SCAF_SOURCE_CHECK),
    ROW(SCAF_ESTIMATE_NONE),
    ROW(SCAF_ESTIMATE_ASSUMED),
    ROW(SCAF_ESTIMATE_MEASURED),
    ROW(SCAF_CONTROL_THREADS),
    ROW(SCAF_CONTROL_CPUSET),
    ROW(SCAF_CPUSET_WORDS),
    ROW(SCAF_REASON_MAX),
    ROW(SCAF_WIRE_REPLY_OK),
    ROW(SCAF_WIRE_REPLY_REFUSED),
    ROW(SCAF_WIRE_REPLY_MALFORMED),
    ROW(sizeof(struct scaf_msg_header)),
    ROW(sizeof(struct scaf_msg_memory)),
    ROW(sizeof(struct scaf_msg_memory_reply)),
    ROW(sizeof(struct scaf_msg_refuse)),
    ROW(sizeof(struct scaf_wire_memory_reply)),
    ROW(sizeof(struct scaf_wire_refusal)),
};

int scaf_wire_constant(const char *name, uint64_t *value)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (strcmp(rows[i].name, name) == 0) {
            *value = rows[i].value;
            return 0;
        }
    errno = ENOENT;
    return -1;
}
