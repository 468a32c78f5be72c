/* team.c — the team an outermost region runs with, decided in one place. */
#include "team.h"

struct scaf_team scaf_team_decide(const struct scaf_team_in *in)
{
    struct scaf_team out = {in->num_threads, 0};
    unsigned t;

    if (in->in_child) {
        /* The runtime's pool was not copied by fork: a team of two would wait forever. */
        out.request = 1;
        return out;
    }
    if (!in->live)
        return out;
    if (in->nested)
        return out;
    switch (in->mode) {
    case SCAF_TEAM_KEEP:
        /* An explicit clause, or a fixed team: the runtime's count stands. Passing 0 keeps its own
         * semantics (nthreads-var, OMP_DYNAMIC); a count only when the team is smaller than that, or
         * when the start pinned it: another thread of the program still has the runtime's initial count. */
        out.team = in->num_threads ? in->num_threads : in->fixed_team;
        out.request = in->num_threads                                   ? in->num_threads
                      : in->pinned || in->fixed_team < in->bound ? in->fixed_team
                                                                        : 0;
        return out;
    case SCAF_TEAM_WATCH:
        /* First look at a suspect site: the team the program has seen (or the team of the latest region
         * in code with thread-local data). */
        out.team = in->watch_team;
        out.request = in->watch_team < in->bound ? in->watch_team : in->num_threads;
        return out;
    case SCAF_TEAM_CHECK:
        out.team = out.request = in->check_team;
        return out;
    case SCAF_TEAM_LIBRARY:
        /* Its work items may wait for each other, one item a thread: never fewer threads than it asked for. */
        if (in->num_threads) {
            out.team = in->num_threads;
            return out;
        }
        if (in->lib_team && in->lib_team < in->bound) {
            out.team = out.request = in->lib_team;
            return out;
        }
        out.team = in->bound;
        out.request = 0;
        return out;
    default:
        break;
    }
    t = in->page_threads;
    if (t > in->bound)
        t = in->bound;
    if (t == 0)
        t = 1;
    if (in->est == SCAF_TEAM_EST_INPLACE)
        t = 1;
    else if (in->est == SCAF_TEAM_EST_EXPERIMENT && t > 1)
        t -= 1;
    out.team = out.request = t;
    return out;
}
