/* mirror.c — the sizes of the decide stage's structs, so that a ctypes mirror out of step with them is refused at load. */
#include "mirror.h"
#include "idle.h"
#include "rigid.h"
#include "turn.h"

size_t scaf_decide_struct_size(int which)
{
    switch (which) {
    case SCAF_DECIDE_STRUCT_PAGE_REPORT:
        return sizeof(struct scaf_page_report);
    case SCAF_DECIDE_STRUCT_REFEREE_CLIENT:
        return sizeof(struct scaf_referee_client);
    case SCAF_DECIDE_STRUCT_REFEREE_ALLOC:
        return sizeof(struct scaf_referee_alloc);
    case SCAF_DECIDE_STRUCT_REFEREE_SCRATCH:
        return sizeof(struct scaf_referee_scratch);
    case SCAF_DECIDE_STRUCT_PREPARE_IN:
        return sizeof(struct scaf_prepare_in);
    case SCAF_DECIDE_STRUCT_PREPARE_TURN:
        return sizeof(struct scaf_prepare_turn);
    case SCAF_DECIDE_STRUCT_CLIENT:
        return sizeof(struct scaf_decide_client);
    case SCAF_DECIDE_STRUCT_IN:
        return sizeof(struct scaf_decide_in);
    case SCAF_DECIDE_STRUCT_RIGID:
        return sizeof(struct scaf_rigid);
    case SCAF_DECIDE_STRUCT_IDLE:
        return sizeof(struct scaf_idle);
    case SCAF_DECIDE_STRUCT_IDLE_RULE:
        return sizeof(struct scaf_idle_rule);
    case SCAF_DECIDE_STRUCT_MEMO_POINT:
        return sizeof(struct scaf_memo_point);
    default:
        return 0;
    }
}
