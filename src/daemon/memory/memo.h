/* memo.h — one program as the memory keeps it, and the pure rules that change it: a run learned, scaf check's verdict, the sites a page may carry (not an installed interface). */
#ifndef SCAFD_MEMORY_MEMO_H
#define SCAFD_MEMORY_MEMO_H

#include "scaf/proto.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

/* Points of a program's speedup curve remembered (the daemon keeps SCAF_POINTS_MAX per client). */
#define SCAF_MEMO_POINTS 4
/* Sites remembered per program: as many as a page carries each way, so known[] is never cut twice. */
#define SCAF_MEMO_SITES SCAF_MEMORY_SITES
/* A reason text as the page carries it, NUL included. */
#define SCAF_MEMO_REASON SCAF_REASON_MAX
/* The run time a remembered peers mean stands for at most (ms): older runs fade behind the last hour's. */
#define SCAF_MEMO_PEER_WEIGHT_MAX_MS 3600000u

/* One point of the curve: the efficiency measured at a team size. */
struct scaf_memo_point {
    uint32_t team;           /* 2..SCAF_MAX_CPUS */
    uint32_t efficiency_ppm; /* 1..1000000 */
};
static_assert(sizeof(struct scaf_memo_point) == 8, "file layout");

/*
 * One program as the memory file keeps it (docs/memory.md, "The file"). Fixed
 * size, native byte order, no pointers: records are written and read as they
 * are. The layout is part of the file format: changing it bumps
 * SCAF_MEMFILE_VERSION (memory/file.h).
 */
struct scaf_memo_record {
    uint64_t key;          /* the program (include/scaf/progkey.h); never 0 */
    int64_t last_seen_ns;  /* CLOCK_REALTIME of its latest arrival, departure or record: eviction order */
    uint32_t runs;         /* departures learned (saturates) */
    uint32_t verdict;      /* enum scaf_verdict: UNDECIDED while no evidence or check said more */
    uint32_t source;       /* enum scaf_verdict_source of it: DEFAULT, EVIDENCE or CHECK, never USER or RULES */
    uint32_t nsites;       /* entries of sites[], at most SCAF_MEMO_SITES */
    uint32_t npoints;      /* entries of points[], at most SCAF_MEMO_POINTS */
    uint32_t peers_milli;  /* other busy programs while it ran, time-weighted mean, x 1000 */
    uint32_t peer_weight_ms; /* the run time that mean stands for, at most SCAF_MEMO_PEER_WEIGHT_MAX_MS */
    uint32_t run_ms;       /* its runs' length, arrival to departure, the last runs weighing most; 0 = not known
                            * (file version 1 kept 0 here) */
    struct scaf_memo_point points[SCAF_MEMO_POINTS];
    char name[SCAF_MEMORY_NAME];  /* for people: exe and script basenames, or scaf check's name; NUL-terminated */
    char reason[SCAF_MEMO_REASON]; /* why the verdict, as the layer said it; NUL-terminated */
    struct scaf_site_memo sites[SCAF_MEMO_SITES];
};
static_assert(sizeof(struct scaf_memo_record) == 1352, "file layout: a change bumps SCAF_MEMFILE_VERSION");
static_assert(offsetof(struct scaf_memo_record, points) == 48, "file layout");
static_assert(offsetof(struct scaf_memo_record, sites) == 328, "file layout");

/* One run of a program as its departure shows it: the page's client half, validated, and the daemon's tally. */
struct scaf_memo_run {
    int64_t now_ns;   /* CLOCK_REALTIME */
    uint32_t verdict; /* enum scaf_verdict at departure, validated */
    uint32_t source;  /* enum scaf_verdict_source, validated */
    const char *reason;
    const char *name; /* NULL or "": keep the remembered one */
    const struct scaf_site_memo *sites; /* validated (scaf_memo_sites_clean) */
    uint32_t nsites;
    const struct scaf_memo_point *points; /* the daemon's own points of its curve */
    uint32_t npoints;
    double peers;   /* other busy programs, time-weighted mean over the run */
    double seconds; /* how long it ran: arrival to departure */
};

/* A fresh record of `key`: nothing learned yet (verdict UNDECIDED, source DEFAULT, runs 0). */
void scaf_memo_record_init(struct scaf_memo_record *rec, uint64_t key, int64_t now_ns);

/*
 * Learns one run into *rec (docs/memory.md, "What is remembered"): runs and
 * last seen always. A run that ended undecided changes nothing else. Any other
 * run brings its sites (merged: this run's first, its bits replacing what was
 * remembered of the same site, then the remembered sites it did not show, up
 * to SCAF_MEMO_SITES), its curve points (when it has any, they replace the
 * remembered ones), its peers (blended by run time) and its run time (the mean
 * of this run's and the remembered one). Its verdict counts
 * only when the evidence gave it (source EVIDENCE): a user's, a rules file's
 * or scaf check's test run's word is not evidence, nor is a run steered on
 * scaf check's remembered malleable (source CHECK). scaf check's verdict,
 * fixed or malleable, is never replaced by a run's evidence (only by another
 * REMEMBER, or a FORGET). Otherwise evidence of a fixed team always counts;
 * evidence of a malleable run replaces a remembered fixed one only when the
 * run showed clean (without SCAF_MEMO_FIXES) every remembered site that fixed
 * it, or no remembered site did, since a run that never reached the site that
 * fixed the program says nothing about it.
 */
void scaf_memo_learn(struct scaf_memo_record *rec, const struct scaf_memo_run *run);

/* scaf check's verdict (FIXED or MALLEABLE) with its source SCAF_SOURCE_CHECK and its name; counts as a run when
 * nothing else is remembered, so that it is recalled. */
void scaf_memo_remember(struct scaf_memo_record *rec, uint32_t verdict, const char *name, int64_t now_ns);

/*
 * The sites of an untrusted page: n entries of in[] (n already at most
 * SCAF_MEMO_SITES) into out[], each kept with its bits masked to
 * SCAF_MEMO_ALL; entries with object 0 or no bit left are dropped, and so is a
 * second entry for the same site (object, offset). Returns how many were kept.
 */
uint32_t scaf_memo_sites_clean(struct scaf_site_memo *out, const struct scaf_site_memo *in, uint32_t n);

/* The remembered peers, rounded to a whole number of clients (the start team's `peers`). */
uint32_t scaf_memo_peers(const struct scaf_memo_record *rec);

/*
 * Whether a record read from a file can be believed as it is: key nonzero,
 * verdict and source known, counts within their arrays, points in range,
 * texts terminated, site bits known. Returns NULL, or what is wrong.
 */
const char *scaf_memo_record_check(const struct scaf_memo_record *rec);

/* The record to evict from a full table of n >= 1: the least recently seen (ties: the fewest runs, then the
 * lowest index). */
size_t scaf_memo_evict_choice(const struct scaf_memo_record *recs, size_t n);

#endif
