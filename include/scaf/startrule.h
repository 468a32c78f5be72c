/* startrule.h — whether a program starts with its share of the machine: the start team decided in one place from explicit inputs, for the layer, scaf-run and (through libscaf_launch.so) the scaf command. */
#ifndef SCAF_STARTRULE_H
#define SCAF_STARTRULE_H

#include <stddef.h>
#include <stdint.h>

#include "scaf/proto.h"

/*
 * docs/memory.md, "The start team", is the prose of this rule. At a program's
 * first touch of the OpenMP API (its first omp_get_max_threads() or
 * omp_set_num_threads() outside a region, or its first region) the count it
 * is about to read is still the one OMP_NUM_THREADS would set: choosing it
 * then can change no result that the user's own OMP_NUM_THREADS would not.
 * The layer's client/start.c gathers the inputs at that touch and applies the
 * answer; scaf run (Python, through libscaf_launch.so) and its replay in C
 * (scaf-run) ask the same function before exec, from the daemon's RECALL. The
 * decision is made here, pure, and tested row by row
 * (tests/unit/test_layer_start.c).
 */

/* Why the program keeps its team, for the reason text. */
enum scaf_start_keep {
    SCAF_KEEP_NONE = 0,       /* nothing says so */
    SCAF_KEEP_REMEMBERED = 1, /* the daemon remembers it fixed by evidence */
    SCAF_KEEP_CHECKED = 2,    /* ... fixed by scaf check */
    SCAF_KEEP_USER = 3,       /* SCAF_MALLEABLE=no (scaf run --fixed) or a `fixed` rule */
};

/* The outcome. */
enum scaf_start_why {
    SCAF_START_APPLY = 0,      /* the layer starts it with `team`: nthreads-var, OMP_NUM_THREADS, the bound */
    SCAF_START_SCAF_RUN,       /* scaf run started it with `team` (SCAF_START_TEAM): only reported */
    SCAF_START_ASK,            /* the answer depends on the daemon's page: connect, then decide again */
    SCAF_START_OFF,            /* SCAF_MEMORY=0 */
    SCAF_START_NESTED,         /* not at the outermost level: the first touch is not this */
    SCAF_START_SET,            /* the program set its own count first (omp_set_num_threads) */
    SCAF_START_READ,           /* the program read its count before the layer could act */
    SCAF_START_SCAF_RUN_STALE, /* SCAF_START_TEAM, but nthreads-var is not that team: someone changed it */
    SCAF_START_MALLEABLE,      /* the user said malleable (or scaf check's seeded teams): it starts as before */
    SCAF_START_USER_COUNT,     /* the user set OMP_NUM_THREADS: their count stands */
    SCAF_START_NOT_FIXED,      /* neither the memory nor the user says it keeps its team: it starts as before */
    SCAF_START_CHECKED_MALLEABLE, /* the memory says scaf check found it malleable: steered, it starts as before */
    SCAF_START_NO_TEAM,        /* the daemon offers no start team (none answers, or it said 0) */
    SCAF_START_NOT_SMALLER,    /* the start team is not below nthreads-var: nothing to do */
};

struct scaf_start_in {
    int memory_off;          /* SCAF_MEMORY=0 */
    unsigned scaf_run_team;  /* SCAF_START_TEAM, 0 = not set */
    int level;               /* omp_get_level() of the thread that touched the API */
    int set;                 /* the program sets (or has set) its own count */
    int read;                /* the program read its count before this touch */
    int user_malleable;      /* SCAF_MALLEABLE=yes, a `malleable` rule, or SCAF_CHECK_SEED (not the memory's
                              * word: that is memory_verdict/memory_source below) */
    int user_fixed;          /* SCAF_MALLEABLE=no or a `fixed` rule */
    int user_count;          /* OMP_NUM_THREADS set in the environment, not by scaf run */
    unsigned nthreads;       /* nthreads-var on that thread now (what omp_get_max_threads() would say) */
    int asked;               /* the daemon was asked: the page's fields below are filled (0 when none answers) */
    unsigned start_team;     /* the page's start_team */
    uint32_t memory_runs, memory_verdict, memory_source;
};

struct scaf_start {
    int why;       /* enum scaf_start_why */
    unsigned team; /* APPLY, SCAF_RUN: the start team */
    int keep;      /* APPLY, SCAF_RUN: enum scaf_start_keep */
};

/*
 * Whether the page's memory (its runs, verdict and source as scaf_page_read_memory gives them) says that scaf
 * check found the program malleable: the layer then treats it as a `malleable` rule would (docs/memory.md,
 * "scaf check's malleable"). The one predicate both the start and the verdict (malleable.c) ask.
 */
static inline int scaf_start_recalled_malleable(uint32_t runs, uint32_t verdict, uint32_t source)
{
    return runs != 0 && verdict == SCAF_VERDICT_MALLEABLE && source == SCAF_SOURCE_CHECK;
}

/*
 * In order: SCAF_MEMORY=0 -> OFF; a nested touch -> NESTED; the program set
 * its count -> SET; SCAF_START_TEAM equal to nthreads-var -> SCAF_RUN (other
 * -> STALE); a count read before -> READ; the user said malleable ->
 * MALLEABLE; OMP_NUM_THREADS -> USER_COUNT; not asked yet -> ASK; the memory
 * says scaf check found it malleable (and the user did not say fixed) ->
 * CHECKED_MALLEABLE; why it keeps its team (the user's word first, then the
 * memory: fixed by evidence or by scaf check) or NOT_FIXED; start team 0 -> NO_TEAM, not below nthreads-var
 * -> NOT_SMALLER; else APPLY.
 */
struct scaf_start scaf_start_decide(const struct scaf_start_in *in);

/*
 * SCAF_MALLEABLE's words, case-insensitive: 1 for yes, 1, true, on, malleable; 0 for no, 0, false, off, fixed;
 * -1 for auto or empty; -2 for anything else (not understood: auto, and said). The layer's settings and scaf run
 * (through libscaf_launch.so) read them with this one function. Pure.
 */
int scaf_start_word(const char *v);

/* A few words for the log on why nothing was started ("the program set its own count first"). */
const char *scaf_start_why_text(int why);

/*
 * What scaf run says of a decision made before exec (`in` as asked, `out`
 * from scaf_start_decide): "remembered fixed from 3 runs", "remembered
 * malleable by scaf check: steered from its first region", "nothing is
 * remembered of it", "... but the daemon offers no start team", "... but its
 * share (2) is not below its count (2)". `user`: the user's word that the
 * program keeps its team, in words ("fixed by --fixed"), NULL when there is
 * none. Into buf (len bytes, NUL-terminated, cut if need be).
 */
void scaf_start_words(const struct scaf_start_in *in, const struct scaf_start *out, const char *user, char *buf,
                      size_t len);

#endif
