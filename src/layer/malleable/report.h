/* report.h — the SCAF_REPORT line scaf check reads: one JSON object per process, written at its exit. */
#ifndef SCAF_LAYER_REPORT_H
#define SCAF_LAYER_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "scaf/proto.h"

/* What a process's line says. */
struct scaf_report {
    int pid;
    const char *exe;    /* the program's path; quotes, backslashes and control bytes become '?' */
    uint64_t key;       /* its key for the daemon's memory (core/identity.c), 0: cannot be named */
    const char *program; /* how the memory names it (NULL: ""); escaped as exe */
    uint32_t verdict;   /* enum scaf_verdict */
    uint32_t source;    /* enum scaf_verdict_source */
    const char *reason; /* JSON-escaped here; control bytes become spaces */
    uint64_t regions;   /* outermost regions that ran */
    uint64_t team_bits[SCAF_CPUSET_WORDS]; /* bit t-1: some region ran with a team of t */
};

/*
 * The line, '\n' included, into buf: its length, or -1 when it does not fit
 * (the teams list is cut short first, as many as fit in `len` - 16).
 */
int scaf_report_format(const struct scaf_report *r, char *buf, size_t len);

/* Formats the line (exe from /proc/self/exe) and appends it to `path` in one write, so that lines of
 * several processes never interleave. A failure is logged (SCAF_VERBOSE) and otherwise ignored. */
void scaf_report_write(const char *path, struct scaf_report *r);

#endif
