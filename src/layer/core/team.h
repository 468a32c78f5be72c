/* team.h — the team an outermost region runs with, decided in one place from explicit inputs. */
#ifndef SCAF_LAYER_TEAM_H
#define SCAF_LAYER_TEAM_H

/* How an outermost region that left its count to the runtime gets its team (the malleability verdict's word). */
enum scaf_team_mode {
    SCAF_TEAM_KEEP = 0,  /* fixed program or a clause other than the default: its own count, the daemon steers CPUs */
    SCAF_TEAM_WATCH = 1, /* first instance of a site under suspicion: the runtime's count, evidence recorded */
    SCAF_TEAM_STEER = 2, /* the page's threads, within the bound */
    SCAF_TEAM_CHECK = 3, /* scaf check: a seeded pseudo-random team within the bound */
    SCAF_TEAM_LIBRARY = 4, /* a BLAS library's region (core/blasobj.h): the team the library asks for, never
                              fewer; the library follows the share through the count it reads between calls */
};

/* What the efficiency estimator asks of a steered region; it never picks the number itself. */
enum scaf_team_est {
    SCAF_TEAM_EST_PLAIN = 0,      /* just time it: the steered team */
    SCAF_TEAM_EST_INPLACE = 1,    /* an in-place serial baseline: one thread */
    SCAF_TEAM_EST_EXPERIMENT = 2, /* a forked child runs it serially: one thread fewer, never below one */
};

/* Everything the decision depends on; the caller reads the page and the verdict, team.c reads nothing. */
struct scaf_team_in {
    int live;              /* connected: a page is mapped (else the runtime's count passes through) */
    int in_child;          /* inside a serial-experiment child: one thread, always */
    int nested;            /* omp_get_level() != 0: untouched */
    unsigned num_threads;  /* the program's num_threads clause, 0 = none (an if(false) gives 1) */
    int mode;              /* enum scaf_team_mode */
    unsigned page_threads; /* the page's `threads` (the daemon's allocation) */
    unsigned bound;        /* the team's upper bound: nthreads-var as the program left it, until it sets one */
    unsigned fixed_team;   /* the team a fixed program runs at (>= 1) */
    unsigned watch_team;   /* the team of a first look: the bound, or less if a region read a smaller team
                              (or the team of the latest region in code with thread-local data) */
    unsigned check_team;   /* SCAF_TEAM_CHECK: the seeded team */
    unsigned lib_team;     /* SCAF_TEAM_LIBRARY: the team the library asked for on this thread, 0 = not known */
    int pinned;            /* the layer started the program with its fixed team (common/startrule.c): passed as a count
                              always, since only the thread that first touched OpenMP had its nthreads-var set */
    int est;               /* enum scaf_team_est (only for SCAF_TEAM_STEER) */
};

struct scaf_team {
    unsigned request; /* the num_threads to pass the runtime (0: the runtime's own count) */
    unsigned team;    /* the team the region runs with, for the page and the evidence; 0 when not ours
                         to record (not connected, nested, experiment child) */
};

/*
 * In the spirit of libgomp's gomp_resolve_num_threads: a pure function of
 * `in`, so every adapter (GNU, LLVM) and the unit test get the same answer.
 * In order: experiment child -> 1; not live -> pass through; nested -> pass
 * through; KEEP -> the clause, else the fixed team (passed as a count only
 * when it is smaller than the bound, the runtime's own count, or when pinned
 * at the start); WATCH -> the
 * first-look team likewise; CHECK -> the seeded team; LIBRARY -> the clause, else
 * the library's own team (passed as a count when smaller than the bound, the
 * runtime's own count otherwise and when unknown); STEER -> min(page, bound),
 * at least 1, then 1 for an in-place baseline or one fewer (at least 1) for an
 * experiment.
 */
struct scaf_team scaf_team_decide(const struct scaf_team_in *in);

#endif
