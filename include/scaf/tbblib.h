/* tbblib.h — what a oneTBB library says of itself, read from its file: its version, and whether it asks a Thread Composability Manager for its workers. */
#ifndef SCAF_TBBLIB_H
#define SCAF_TBBLIB_H

/*
 * The daemon asks it of a foreign process's mapped libtbb (why that oneTBB
 * cannot be steered), and the scaf command of a program's libtbb before it
 * starts it (whether to preload the TCM provider; through libscaf_launch.so).
 */

/* The first oneTBB release that asks a TCM for its workers (its src/tbb/tcm_adaptor.cpp, November 2023). */
#define SCAF_TBBLIB_TCM_FIRST "2021.11"

/* What a oneTBB library says of itself. */
struct scaf_tbblib {
    int tcm;          /* 1: it asks a TCM for its workers (it names tcmConnect); 0: it does not */
    char version[16]; /* "2021.8", from its "oneTBB: VERSION" line; "" when it has none */
};

/*
 * Reads the library at PATH (never loads or runs it) for the two strings
 * above. Returns 0, or -1 with errno when it cannot be read (a path under a
 * home the daemon's sandbox hides, a removed file); OUT is zeroed either way.
 */
int scaf_tbblib_read(const char *path, struct scaf_tbblib *out);

/* SCAF_TBBLIB_TCM_FIRST, for a caller that cannot read a macro (ctypes). */
const char *scaf_tbblib_tcm_first(void);

#endif
