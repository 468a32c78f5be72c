/* test_layer_team.c — the team an outermost region runs with, row by row, from core/team.c's explicit inputs. */
#include "../../src/layer/core/team.h"

#include <stdio.h>

#include "check.h"

enum { KEEP = SCAF_TEAM_KEEP, WATCH = SCAF_TEAM_WATCH, STEER = SCAF_TEAM_STEER, CHECKED = SCAF_TEAM_CHECK,
       LIBRARY = SCAF_TEAM_LIBRARY };
enum { PLAIN = SCAF_TEAM_EST_PLAIN, INPLACE = SCAF_TEAM_EST_INPLACE, EXPERIMENT = SCAF_TEAM_EST_EXPERIMENT };

static const struct {
    const char *what;
    struct scaf_team_in in;
    unsigned request, team;
} rows[] = {
    /* Not connected: the program's own argument passes through, nothing is recorded. */
    {"inert, no clause", {.live = 0, .mode = STEER, .page_threads = 2, .bound = 4}, 0, 0},
    {"inert, clause 3", {.live = 0, .num_threads = 3, .mode = STEER, .page_threads = 2, .bound = 4}, 3, 0},
    /* An experiment child runs every region on one thread, connected or not. */
    {"experiment child", {.live = 1, .in_child = 1, .mode = STEER, .page_threads = 4, .bound = 4}, 1, 0},
    {"experiment child, inert", {.live = 0, .in_child = 1, .num_threads = 4}, 1, 0},
    /* Nested regions are untouched. */
    {"nested, no clause", {.live = 1, .nested = 1, .mode = STEER, .page_threads = 1, .bound = 4}, 0, 0},
    {"nested, clause 4", {.live = 1, .nested = 1, .num_threads = 4, .page_threads = 1, .bound = 4}, 4, 0},
    /* An explicit clause stands (the verdict says KEEP for it), an if(false) gives 1. */
    {"clause 3", {.live = 1, .num_threads = 3, .mode = KEEP, .page_threads = 1, .bound = 4, .fixed_team = 4}, 3, 3},
    {"if(false)", {.live = 1, .num_threads = 1, .mode = KEEP, .page_threads = 4, .bound = 4, .fixed_team = 4}, 1, 1},
    {"clause, estimator ignored",
     {.live = 1, .num_threads = 3, .mode = KEEP, .page_threads = 4, .bound = 4, .fixed_team = 4, .est = INPLACE}, 3, 3},
    /* A fixed team: the runtime's own count (0), or the smaller team the program saw. */
    {"fixed", {.live = 1, .mode = KEEP, .page_threads = 1, .bound = 4, .fixed_team = 4, .watch_team = 4}, 0, 4},
    {"fixed, smaller team seen",
     {.live = 1, .mode = KEEP, .page_threads = 1, .bound = 4, .fixed_team = 2, .watch_team = 2}, 2, 2},
    {"fixed, estimator ignored",
     {.live = 1, .mode = KEEP, .page_threads = 4, .bound = 4, .fixed_team = 4, .est = EXPERIMENT}, 0, 4},
    /* Started with its share (common/startrule.c): the count is passed, so that a region opened by another thread
     * of the program, whose nthreads-var the start did not set, runs that team too. */
    {"started, pinned", {.live = 1, .mode = KEEP, .page_threads = 1, .bound = 2, .fixed_team = 2, .pinned = 1}, 2, 2},
    {"started, pinned, clause stands",
     {.live = 1, .num_threads = 3, .mode = KEEP, .page_threads = 1, .bound = 2, .fixed_team = 2, .pinned = 1}, 3, 3},
    /* First look at a suspect site: what the program has seen, whatever the page says. */
    {"first look", {.live = 1, .mode = WATCH, .page_threads = 1, .bound = 4, .fixed_team = 4, .watch_team = 4}, 0, 4},
    {"first look, smaller team seen",
     {.live = 1, .mode = WATCH, .page_threads = 4, .bound = 4, .fixed_team = 2, .watch_team = 2}, 2, 2},
    /* scaf check: the seeded team, whatever the page says. */
    {"check seeded", {.live = 1, .mode = CHECKED, .page_threads = 1, .bound = 4, .check_team = 3}, 3, 3},
    /* Steered: the page within the bound, at least one thread. */
    {"steered", {.live = 1, .mode = STEER, .page_threads = 2, .bound = 4}, 2, 2},
    {"steered, clamped to bound", {.live = 1, .mode = STEER, .page_threads = 8, .bound = 4}, 4, 4},
    {"steered, bound from omp_set_num_threads", {.live = 1, .mode = STEER, .page_threads = 8, .bound = 3}, 3, 3},
    {"steered, page says 0", {.live = 1, .mode = STEER, .page_threads = 0, .bound = 4}, 1, 1},
    /* The estimator requests a mode; the number is decided here. */
    {"in-place baseline", {.live = 1, .mode = STEER, .page_threads = 4, .bound = 4, .est = INPLACE}, 1, 1},
    {"in-place baseline, page 0", {.live = 1, .mode = STEER, .page_threads = 0, .bound = 4, .est = INPLACE}, 1, 1},
    {"experiment", {.live = 1, .mode = STEER, .page_threads = 4, .bound = 4, .est = EXPERIMENT}, 3, 3},
    {"experiment within bound", {.live = 1, .mode = STEER, .page_threads = 8, .bound = 2, .est = EXPERIMENT}, 1, 1},
    {"experiment, one thread", {.live = 1, .mode = STEER, .page_threads = 1, .bound = 4, .est = EXPERIMENT}, 1, 1},
    {"experiment, page 0", {.live = 1, .mode = STEER, .page_threads = 0, .bound = 4, .est = EXPERIMENT}, 1, 1},
    /* A BLAS library's region: the team it asked for, never fewer, whatever the page or the estimator says
     * (its items may wait for each other, one a thread: OpenBLAS's level-3 drivers). */
    {"library, clause stands", {.live = 1, .mode = LIBRARY, .num_threads = 2, .page_threads = 1, .bound = 2}, 2, 2},
    {"library, asked for the share", {.live = 1, .mode = LIBRARY, .page_threads = 1, .bound = 4, .lib_team = 2}, 2, 2},
    {"library, asked for its bound", {.live = 1, .mode = LIBRARY, .page_threads = 1, .bound = 4, .lib_team = 4}, 0, 4},
    {"library, asked for more than the bound",
     {.live = 1, .mode = LIBRARY, .page_threads = 1, .bound = 2, .lib_team = 4}, 0, 2},
    {"library, not known what it asked", {.live = 1, .mode = LIBRARY, .page_threads = 1, .bound = 4}, 0, 4},
    {"library, estimator ignored",
     {.live = 1, .mode = LIBRARY, .page_threads = 4, .bound = 4, .lib_team = 2, .est = INPLACE}, 2, 2},
    {"library, nested untouched", {.live = 1, .nested = 1, .mode = LIBRARY, .bound = 4, .lib_team = 1}, 0, 0},
    /*
     * No gang input: a gang turn holds a region before it is decided and
     * never changes its team, so a fixed program in a gang gets its fixed team.
     */
    {"gang not involved: fixed team", {.live = 1, .mode = KEEP, .page_threads = 1, .bound = 2, .fixed_team = 2}, 0, 2},
};

int main(void)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct scaf_team t = scaf_team_decide(&rows[i].in);

        CHECK(t.request == rows[i].request && t.team == rows[i].team, "%s: got request %u team %u, want %u %u",
              rows[i].what, t.request, t.team, rows[i].request, rows[i].team);
    }
    return check_exit("test_layer_team");
}
