/* verdict.h — the malleability verdict as pure functions of the evidence: how a region's team is chosen, and what its calls prove. */
#ifndef SCAF_LAYER_VERDICT_H
#define SCAF_LAYER_VERDICT_H

#include <stdbool.h>
#include <stdint.h>

/*
 * docs/layer.md, "Malleability", is the prose of these rules. malleable.c
 * gathers the evidence (interposed calls, the site table, /proc-free object
 * lookups) and writes the verdict to the page; every decision is made here,
 * from explicit inputs, so that the unit test can drive it row by row.
 */

/* A region's num_threads clause as the verdict sees it. */
enum scaf_clause {
    SCAF_CLAUSE_NONE = 0,    /* no clause: the runtime's nthreads-var */
    SCAF_CLAUSE_DEFAULT = 1, /* num_threads(n) with n the program's own default (nthreads-var now):
                              * Cython's prange, num_threads(omp_get_max_threads()); steered like NONE */
    SCAF_CLAUSE_OTHER = 2,   /* any other count (num_threads(4) on 2 CPUs, an if(false)'s 1, a strict
                              * clause): it stands */
};

/* The state of one region site (its outlined function), kept in the site table. 0 = never ended. */
enum scaf_site_bits {
    SCAF_SITE_SEEN = 1u << 0,       /* an instance ended: later ones may be steered */
    SCAF_SITE_TLS = 1u << 1,        /* its code's object has thread-local storage */
    SCAF_SITE_TLS_WAIT = 1u << 2,   /* its code keeps thread-local data: held until its TLS check ends */
    SCAF_SITE_TLS_CLEAR = 1u << 3,  /* its TLS check showed per-region scratch: steered */
    SCAF_SITE_KNOWN = 1u << 4,      /* started from the daemon's memory (known[]) with SEEN (and TLS, TLS_CLEAR):
                                     * steered from its first instance, which is still judged as a first one */
};

/* What the program has shown so far, program-wide. */
struct scaf_evidence {
    uint32_t verdict; /* enum scaf_verdict now */
    bool forced;      /* the user, a rule or scaf check decided: evidence is not judged */
    bool check;       /* scaf check's seeded teams (SCAF_CHECK_SEED) */
    bool queried;     /* a count was read outside regions (or escaped from one): first looks */
    bool set;         /* omp_set_num_threads() outside regions: the program chose its count */
    bool tid_only;    /* some region numbered its threads without reading its team size */
    bool tid_any;     /* some region numbered its threads */
};

/* Everything the mode of one outermost region depends on. */
struct scaf_mode_in {
    struct scaf_evidence ev;
    int clause;         /* enum scaf_clause */
    bool fixed;         /* the team is fixed for good */
    bool site_known;    /* the site has a slot in the table (a crowded table watches every instance) */
    uint32_t site;      /* its enum scaf_site_bits */
    bool tls;           /* the object holding the site's code has thread-local storage */
};

/*
 * enum scaf_team_mode for one region. In order: a clause other than the
 * default, or a fixed team -> KEEP; scaf check -> CHECK; a forced verdict ->
 * STEER; a site held for its TLS check -> WATCH; a site seen (or cleared) ->
 * STEER; a site not seen yet is watched once when the program knows a count or
 * its code keeps thread-local data, and steered at once otherwise.
 */
int scaf_verdict_mode(const struct scaf_mode_in *in);

/* The outcome of a TLS check (the serial pair of tlscheck.c), as the verdict reads it. */
enum scaf_tls_result {
    SCAF_TLS_NONE = 0,      /* no check has ended for this site */
    SCAF_TLS_SCRATCH = 1,   /* the region's effects do not depend on the thread-local data it found */
    SCAF_TLS_CARRIED = 2,   /* they do: state carried from earlier regions */
    SCAF_TLS_UNCHECKED = 3, /* the check could not run or decide (no serial form, blocked call, bound) */
    SCAF_TLS_RUNNING = 4,   /* a check of this site is running (the verdict reads it as NONE) */
};

/* What one region instance showed when it ended, and the state it met. */
struct scaf_judge_in {
    struct scaf_evidence ev;
    int mode;      /* the instance's enum scaf_team_mode */
    uint32_t site; /* the site's state before this instance ended (0: its first) */
    bool tls;      /* the site's object has thread-local storage */
    bool tid, nth; /* its outermost threads called omp_get_thread_num() / omp_get_num_threads() */
    int tls_check; /* enum scaf_tls_result for this site (SCAF_TLS_NONE while none ended) */
    unsigned held_elsewhere; /* other sites held for their TLS check now: the program is not settled */
};

/* Which rule spoke: malleable.c turns it into the reason text (names of functions and objects). */
enum scaf_why {
    SCAF_WHY_NONE = 0,
    SCAF_WHY_ESCAPED,         /* read its team size without thread numbers: the count may escape (undecided) */
    SCAF_WHY_ESCAPED_TID,     /* the same, after a region numbered threads without its team size: fixed */
    SCAF_WHY_TID_ONLY,        /* numbers threads without omp_get_num_threads(), the program knows a count: fixed */
    SCAF_WHY_SET_TID,         /* numbers threads in a program that chose its count: fixed */
    SCAF_WHY_TLS_CARRIED,     /* depends on thread-local data an earlier region left: fixed */
    SCAF_WHY_TLS_UNCHECKED,   /* runs in code with thread-local data that could not be checked: fixed */
    SCAF_WHY_TLS_WAIT,        /* runs in code with thread-local data: held at its team while checked (undecided) */
    SCAF_WHY_TLS_HELD,        /* a site was cleared or seen clean, but others are still held (undecided) */
    SCAF_WHY_CLEAN,           /* every region seen reads its own team size or none: malleable */
    SCAF_WHY_CHECKED,         /* not a judgement: the memory recalls scaf check's malleable (malleable.c's recall) */
};

struct scaf_judgement {
    uint32_t verdict;   /* the verdict after this instance (enum scaf_verdict) */
    int why;            /* enum scaf_why: the rule that changed it, NONE when unchanged */
    uint32_t site;      /* the site's new state */
    bool escaped;       /* the region read its team size alone: it counts as a query from now on */
    bool tid_only;      /* it numbered threads without its team size (remembered program-wide) */
    bool tid_any;       /* it numbered its threads (remembered program-wide) */
    bool lower_cap;     /* its team bounds first looks and fixed teams from now on (it read that team) */
    bool tls_check_due; /* a TLS check of this site should be started at its next instance */
};

/*
 * The verdict after one instance ends. Pure; `out->verdict` is `in->ev.verdict`
 * unless a rule changes it, and a fixed verdict never changes.
 */
void scaf_verdict_judge(const struct scaf_judge_in *in, struct scaf_judgement *out);

/*
 * Whether judging an ended instance could change anything (scaf_verdict_judge
 * and scaf_verdict_memo_learn): false when it surely cannot, so that the
 * caller skips both. `site`: the site's state before the instance ended;
 * `tid`, `nth`: what its outermost threads called; `tid_any`, `set`: the
 * program's evidence of the same names. Nothing may change at a settled site
 * (seen, neither held for its TLS check nor started from the memory) whose
 * threads called neither, or called both in a program that numbered threads
 * before and never set its count: a worksharing loop's every instance
 * (Cython's prange reads its thread number and team size), which would
 * otherwise be judged in full at every region. Pure; tested against the two
 * functions it stands in for, over every input (test_layer_verdict.c).
 */
bool scaf_verdict_may_change(uint32_t site, bool tid, bool nth, bool tid_any, bool set);

/*
 * The state a site remembered in the page's known[] starts with, from its
 * memo bits (enum scaf_memo_bits) and whether its object has thread-local
 * storage now: SEEN|KNOWN for a clean site, SEEN|TLS|TLS_CLEAR|KNOWN for one
 * whose thread-local data was checked; 0 (judged afresh) for anything else: a
 * site that fixed the program, one not seen clean, one whose object changed.
 */
uint32_t scaf_verdict_memo_site(uint32_t memo, bool tls);

/*
 * What one ended instance teaches the memory about its site (docs/memory.md):
 * returns true with *memo when there is something to say, at the instance
 * that settles the site (its first, or the one its TLS check cleared) or that
 * contradicts a clean one: CLEAN when it did not number its threads without
 * reading its team size; TLS and TLS_CLEAR as its state says; FIXES when it
 * fixed the program. A forced verdict (the user's, a rule's, scaf check's)
 * teaches nothing.
 */
bool scaf_verdict_memo_learn(const struct scaf_judge_in *in, const struct scaf_judgement *out, uint32_t *memo);

/*
 * The verdict when the program reads (`set` false) or sets (`set` true) its
 * count outside regions; `why` as above (SET_TID, TID_ONLY, or NONE while it
 * only turns undecided).
 */
uint32_t scaf_verdict_count_known(const struct scaf_evidence *ev, bool set, int *why);

#endif
