/* status.h — the daemon's state as JSON: the STATUS_REPLY body and each --log line (not an installed interface). */
#ifndef SCAFD_STATUS_H
#define SCAFD_STATUS_H

#include "jsonbuf.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct scaf_foreign;

struct scaf_client;

/* The daemon-wide fields of the status object. */
struct scaf_status_daemon {
    const char *policy;
    const char *job; /* --job, or NULL */
    uint32_t cpus;
    uint32_t available;
    double foreign;
    double rate_hz;
    uint32_t chunk;
    double time; /* wall clock, seconds */
    uint32_t affinity;      /* CPUs in the daemon's affinity mask */
    int cgroup_version;     /* 1, 2, or 0: no cgroup cpu controller found */
    uint32_t quota;         /* the cgroup CPU quota in contexts; 0 = none */
    const char *quota_file; /* where it was read */
    bool cpus_override;     /* --cpus set cpus */
    uint64_t refused;       /* connections refused since start */
    const struct scaf_foreign *procs; /* the busiest non-clients, or NULL */
    /* A shared daemon answering a user who is neither root nor its own: only `viewer`'s clients are
     * listed, with every field; the others appear only in the counts other_clients and other_threads.
     * Zero (the default) lists everyone, as the --log file and a per-user daemon do. */
    bool private_view;
    uid_t viewer;
};

/* Appends the status object for these clients (in this order, each with its last report and allocation).
 * Returns 0 or -1 (ENOMEM). */
int scaf_status_build(const struct scaf_status_daemon *daemon, struct scaf_client *const *clients, uint32_t nclients,
                      struct scaf_buf *b);

#endif
