/* pageread.h — the client half of a client's shared page, decoded and checked field by field (not an installed interface). */
#ifndef SCAFD_COLLECT_PAGEREAD_H
#define SCAFD_COLLECT_PAGEREAD_H

#include "scaf/proto.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The client-written half of a page, decoded once and checked field by field
 * (the page is untrusted). Everyone in the daemon reads this, never the page.
 */
struct scaf_page_report {
    uint32_t flags;       /* SCAF_CLIENT_* as written (unknown bits kept, ignored) */
    bool long_region;     /* SCAF_CLIENT_LONG_REGION */
    uint32_t fixed_team;  /* 1..SCAF_MAX_CPUS: the team a fixed client reported, else its max_threads */
    uint32_t last_team;   /* team of the latest outermost region, 0..SCAF_MAX_CPUS */
    uint32_t rigid_team;  /* team of the latest region the daemon did not choose, 0..SCAF_MAX_CPUS */
    uint32_t rigid_regions; /* how many such regions ran (wraps): a change means some ran since */
    uint32_t wanted;      /* the most threads it can use now, 0..SCAF_MAX_CPUS; 0 = not said (no limit) */
    /* The efficiency report: one consistent triple (the client_seq seqlock), or the last one that was. */
    uint32_t eff_team;    /* p' in 0..SCAF_MAX_CPUS; 0 = none (also when out of range) */
    double efficiency;    /* E in [0, 1]; -1 when estimate is NONE */
    uint32_t estimate;    /* enum scaf_estimate; NONE for values the protocol does not know */
    pid_t experiment_pid; /* as written: the lookout believes it only for the client's own child */
    uint64_t regions;
    uint64_t experiments;
    uint32_t verdict;     /* enum scaf_verdict, validated; FIXED also for the HELLO flag or the page flag */
    uint32_t source;      /* enum scaf_verdict_source, validated */
    uint32_t started_with; /* protocol 6: the team the layer started the program with, 0..max_threads; 0 = as usual */
    uint32_t runtimes;     /* its other parallel runtimes (1 << enum scaf_startenv_id), unknown bits dropped */
    uint32_t runtime_team; /* the team those that read their count once run, 0..max_threads; 0 = none */
    uint32_t runtimes_follow; /* of `runtimes`, those whose pool follows the share now through the layer */
    char reason[SCAF_REASON_MAX]; /* printable, NUL-terminated; empty while the client rewrites it */
};

enum scaf_page_read_result {
    SCAF_PAGE_WHOLE = 0, /* every field is from this read */
    SCAF_PAGE_TORN = 1,  /* the efficiency report was being rewritten each time: the last whole one is kept */
};

/* The report of a client that has written nothing yet. */
void scaf_pageread_init(struct scaf_page_report *r, uint32_t max_threads);

/*
 * Decodes the client half of `pg` into *r. `max_threads` and `hello_fixed` are
 * what the client said at HELLO. *r must hold the previous report (or a fresh
 * one from scaf_pageread_init): when the efficiency report stays torn after
 * a few tries, its fields are left as they were.
 */
enum scaf_page_read_result scaf_pageread_report(const struct scaf_page *pg, uint32_t max_threads, bool hello_fixed,
                                          struct scaf_page_report *r);

/*
 * The sites a departing client learned (protocol 6): learned_sites read with
 * acquire (the layer counts an entry only once it is whole), at most
 * SCAF_MEMORY_SITES of it believed, and that many entries of learned[]
 * copied into out[] as they are (the memory checks each one:
 * memory/memo.c). Returns how many were copied.
 */
uint32_t scaf_pageread_learned(const struct scaf_page *pg, struct scaf_site_memo out[SCAF_MEMORY_SITES]);

const char *scaf_pageread_verdict_name(uint32_t verdict);
const char *scaf_pageread_source_name(uint32_t source);
const char *scaf_pageread_estimate_name(uint32_t estimate);

#endif
