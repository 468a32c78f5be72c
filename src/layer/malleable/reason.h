/* reason.h — the reason texts of the malleability verdict: the rule verdict.c applied, with the names of the code it saw. */
#ifndef SCAF_LAYER_REASON_H
#define SCAF_LAYER_REASON_H

#include <stddef.h>

/* What the program has shown so far that a reason names (malleable.c keeps it). */
struct scaf_reason_facts {
    void *query_caller; /* the first omp_get_max_threads()/omp_set_num_threads() outside a region, or the region */
    int query_in_region; /* the count was omp_get_num_threads() read in region query_caller */
    int set_count;      /* the count the program last set, 0 = never */
    void *set_caller;
    void *tid_only_fn;  /* first region seen with a thread number but no team size */
    void *tid_fn;       /* first region seen with a thread number */
    unsigned tls_held;  /* sites held for their thread-local check now */
};

/* "func (object)" for a code address, as dladdr sees it; stripped code gives "object+0xoff", no object "%p". */
void scaf_reason_describe(void *addr, char *out, size_t len);

/* The reason text for a judgement (enum scaf_why) about region `fn` that read a team of `team`. */
void scaf_reason_for(int why, void *fn, unsigned team, const struct scaf_reason_facts *f, char *out, size_t len);

/* The reason when the program first reads (`set` 0) or sets (`team`) its count from `caller`: watched, undecided. */
void scaf_reason_count_known(void *caller, int set, int team, char *out, size_t len);

/*
 * The reason of a program started with its share (client/start.c): `team` of
 * `contexts`, and why it keeps it (enum scaf_start_keep: remembered fixed from
 * `runs` runs, by scaf check, or the user's word `user`), e.g. "started with 1
 * of 2 contexts: remembered fixed from 3 runs; cannot grow".
 */
void scaf_reason_started(unsigned team, unsigned contexts, int keep, unsigned runs, const char *user, char *out,
                         size_t len);

#endif
