/* abi.h — the Thread Composability Manager's C interface as oneTBB calls it (src/tbb/tcm.h there), declared here from its documented layout. */
#ifndef SCAF_LAYER_TCM_ABI_H
#define SCAF_LAYER_TCM_ABI_H

#include <assert.h>
#include <stdint.h>

/*
 * Only the layout matters: oneTBB compiles its own copy of these types, and
 * every field below is at the offset and of the width that copy has on
 * x86-64 and other LP64 targets (the static_asserts hold us to it). Names are
 * ours; the exported function names (tcmConnect, ...) are the interface's.
 */

typedef int32_t scaf_tcm_result; /* an enum in the interface: int-sized */
#define SCAF_TCM_SUCCESS 0x0
#define SCAF_TCM_ERROR_INVALID_ARGUMENT 0x78000004
#define SCAF_TCM_ERROR_UNKNOWN 0x7ffffffe

/* Permit states (one byte in a permit). */
enum {
    SCAF_TCM_STATE_VOID = 0,
    SCAF_TCM_STATE_INACTIVE = 1,
    SCAF_TCM_STATE_PENDING = 2,
    SCAF_TCM_STATE_IDLE = 3,
    SCAF_TCM_STATE_ACTIVE = 4,
};

struct scaf_tcm_permit_flags {
    uint32_t stale : 1;               /* the permit changed while it was read: read it again */
    uint32_t rigid_concurrency : 1;   /* the grant must be exactly what was asked */
    uint32_t exclusive : 1;           /* the CPUs may not be shared */
    uint32_t request_as_inactive : 1; /* create the permit inactive (oneTBB does for each new arena) */
    uint32_t reserved : 28;
};

struct scaf_tcm_callback_flags {
    uint32_t new_concurrency : 1;
    uint32_t new_state : 1;
    uint32_t reserved : 30;
};

/* What a permit grants: concurrencies[0..size) (one per constraint, or one), masks we never fill. */
struct scaf_tcm_permit {
    uint32_t *concurrencies;
    void **cpu_masks; /* hwloc bitmaps in the interface */
    uint32_t size;
    uint8_t state;
    struct scaf_tcm_permit_flags flags;
};

struct scaf_tcm_constraints {
    int32_t min_concurrency;
    int32_t max_concurrency;
    void *mask;
    int32_t numa_id;
    int32_t core_type_id;
    int32_t threads_per_core;
};

/* A request for worker threads (software threads beyond the caller's); -1 means "automatic". */
struct scaf_tcm_request {
    int32_t min_sw_threads;
    int32_t max_sw_threads;
    struct scaf_tcm_constraints *cpu_constraints;
    uint32_t constraints_size;
    int32_t priority;
    struct scaf_tcm_permit_flags flags;
    char reserved[4];
};

#define SCAF_TCM_AUTOMATIC (-1)

typedef void *scaf_tcm_handle; /* an opaque permit handle */
typedef uint64_t scaf_tcm_client_id;
typedef scaf_tcm_result (*scaf_tcm_callback)(scaf_tcm_handle permit, void *arg, struct scaf_tcm_callback_flags what);

static_assert(sizeof(struct scaf_tcm_permit_flags) == 4, "flags are one 32-bit word");
static_assert(sizeof(struct scaf_tcm_callback_flags) == 4, "callback flags are one 32-bit word");
static_assert(sizeof(struct scaf_tcm_permit) == 32, "permit layout");
static_assert(sizeof(struct scaf_tcm_constraints) == 32, "constraints layout");
static_assert(sizeof(struct scaf_tcm_request) == 32, "request layout (passed by value)");

/*
 * What the layer hands the provider library (libscaf_tcm.so, soname
 * libtcm.so.1): the interface's entry points, implemented by the layer's TCM
 * adapter on the layer's one core. The provider finds this table by name
 * with dlsym; `version` and `size` let it refuse a table it does not know.
 */
#define SCAF_TCM_PROVIDER_VERSION 1u
struct scaf_tcm_provider {
    uint32_t version;
    uint32_t size;
    scaf_tcm_result (*connect)(scaf_tcm_callback callback, scaf_tcm_client_id *client_id);
    scaf_tcm_result (*disconnect)(scaf_tcm_client_id client_id);
    scaf_tcm_result (*request_permit)(scaf_tcm_client_id client_id, const struct scaf_tcm_request *request,
                                      void *callback_arg, scaf_tcm_handle *handle, struct scaf_tcm_permit *permit);
    scaf_tcm_result (*get_permit_data)(scaf_tcm_handle handle, struct scaf_tcm_permit *permit);
    scaf_tcm_result (*release_permit)(scaf_tcm_handle handle);
    scaf_tcm_result (*idle_permit)(scaf_tcm_handle handle);
    scaf_tcm_result (*deactivate_permit)(scaf_tcm_handle handle);
    scaf_tcm_result (*activate_permit)(scaf_tcm_handle handle);
    scaf_tcm_result (*register_thread)(scaf_tcm_handle handle);
    scaf_tcm_result (*unregister_thread)(void);
};

#define SCAF_TCM_PROVIDER_SYMBOL "scaf_tcm_provider"

#endif
