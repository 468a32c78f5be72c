/* grant.h — how many worker threads each thread-count permit gets out of the client's share: one pure function. */
#ifndef SCAF_LAYER_GRANT_H
#define SCAF_LAYER_GRANT_H

/* A permit's state as the core sees it (the TCM adapter maps the interface's five onto these). */
enum scaf_grant_state {
    SCAF_GRANT_INACTIVE = 0, /* no work: grants nothing */
    SCAF_GRANT_IDLE = 1,     /* keeps its grant, but its threads are not in use */
    SCAF_GRANT_ACTIVE = 2,
};

/* What one permit asks: at least `min` and at most `max` worker threads (beyond the thread that asks). */
struct scaf_grant_want {
    unsigned state; /* enum scaf_grant_state */
    unsigned min, max;
};

/*
 * Splits `share` (the page's threads: contexts for the whole process, >= 1;
 * 0 is read as 1) between `n` permits, writing grant[i] for each. One context
 * is the process's own thread, which runs the caller of the parallel
 * algorithm; `busy` more are in use by the process's other runtimes right now
 * (an OpenMP team's threads beyond that one). The rest, if any, go one at a
 * time to each active or idle permit in turn, up to its max: two arenas of
 * one process get equal parts, and no permit starves another. A permit's min
 * is granted even beyond the share (oneTBB asks for one worker only when a
 * task must run on a worker, such as an enqueued task in an arena without
 * the caller's thread: refusing it would hang the program). An inactive
 * permit gets 0. Returns the sum of the grants of active permits (workers
 * that may be in use now).
 */
unsigned scaf_grant_split(unsigned share, unsigned busy, const struct scaf_grant_want *w, unsigned n,
                          unsigned *grant);

#endif
