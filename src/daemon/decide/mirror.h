/* mirror.h — the sizes of the decide stage's structs, for the ctypes mirror the simulator keeps of them (not an installed interface). */
#ifndef SCAFD_DECIDE_MIRROR_H
#define SCAFD_DECIDE_MIRROR_H

#include <stddef.h>

/* The structs a ctypes mirror must match (python/scaf/lib/decide.py checks each size at load). */
enum scaf_decide_struct {
    SCAF_DECIDE_STRUCT_PAGE_REPORT = 0,
    SCAF_DECIDE_STRUCT_REFEREE_CLIENT,
    SCAF_DECIDE_STRUCT_REFEREE_ALLOC,
    SCAF_DECIDE_STRUCT_REFEREE_SCRATCH,
    SCAF_DECIDE_STRUCT_PREPARE_IN,
    SCAF_DECIDE_STRUCT_PREPARE_TURN,
    SCAF_DECIDE_STRUCT_CLIENT,
    SCAF_DECIDE_STRUCT_IN,
    SCAF_DECIDE_STRUCT_RIGID,
    SCAF_DECIDE_STRUCT_IDLE,
    SCAF_DECIDE_STRUCT_IDLE_RULE,
    SCAF_DECIDE_STRUCT_MEMO_POINT,
    SCAF_DECIDE_STRUCT_COUNT
};

/* sizeof the struct `which` names (enum scaf_decide_struct); 0 for any other value. */
size_t scaf_decide_struct_size(int which);

#endif
