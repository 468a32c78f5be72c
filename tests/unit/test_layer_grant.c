/* test_layer_grant.c — the split of a client's share between its thread-count permits (core/grant.c), row by row. */
#include "../../src/layer/core/grant.h"

#include <stdio.h>

#include "check.h"

enum { OFF = SCAF_GRANT_INACTIVE, IDLE = SCAF_GRANT_IDLE, ON = SCAF_GRANT_ACTIVE };

#define NMAX 4

static const struct {
    const char *what;
    unsigned share, busy, n;
    struct scaf_grant_want w[NMAX];
    unsigned grant[NMAX];
    unsigned active;
} rows[] = {
    /* One arena: the share less the thread that calls it, within what it asks. */
    {"alone on 2", 2, 0, 1, {{ON, 0, 1}}, {1}, 1},
    {"share 1: no worker", 1, 0, 1, {{ON, 0, 1}}, {0}, 0},
    {"share 0 read as 1", 0, 0, 1, {{ON, 0, 3}}, {0}, 0},
    {"share above the ask", 8, 0, 1, {{ON, 0, 3}}, {3}, 3},
    {"share below the ask", 3, 0, 1, {{ON, 0, 7}}, {2}, 2},
    /* An inactive permit gets nothing and takes nothing. */
    {"inactive", 4, 0, 2, {{OFF, 0, 3}, {ON, 0, 3}}, {0, 3}, 3},
    {"inactive keeps no min", 4, 0, 1, {{OFF, 1, 3}}, {0}, 0},
    /* The min (a task that must run on a worker) stands even beyond the share. */
    {"min beyond the share", 1, 0, 1, {{ON, 1, 3}}, {1}, 1},
    {"min within the share", 3, 0, 1, {{ON, 1, 3}}, {2}, 2},
    {"min above max: max", 4, 0, 1, {{ON, 5, 2}}, {2}, 2},
    /* Two arenas split what is left one worker at a time. */
    {"two arenas, even", 5, 0, 2, {{ON, 0, 7}, {ON, 0, 7}}, {2, 2}, 4},
    {"two arenas, odd", 4, 0, 2, {{ON, 0, 7}, {ON, 0, 7}}, {2, 1}, 3},
    {"two arenas, one small", 6, 0, 2, {{ON, 0, 1}, {ON, 0, 7}}, {1, 4}, 5},
    {"two arenas, mins first", 2, 0, 2, {{ON, 1, 3}, {ON, 1, 3}}, {1, 1}, 2},
    /* An idle permit keeps its part, but its workers are not counted as in use. */
    {"idle keeps its grant", 4, 0, 2, {{IDLE, 0, 3}, {ON, 0, 3}}, {2, 1}, 1},
    /* Threads of another runtime in the process (an OpenMP team) come off the budget. */
    {"busy OpenMP team", 4, 2, 1, {{ON, 0, 3}}, {1}, 1},
    {"busy beyond the share", 2, 3, 1, {{ON, 0, 3}}, {0}, 0},
    {"busy, min still stands", 2, 3, 1, {{ON, 1, 3}}, {1}, 1},
    {"no permits", 4, 0, 0, {{0, 0, 0}}, {0}, 0},
};

int main(void)
{
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        unsigned g[NMAX] = {99, 99, 99, 99};
        unsigned active = scaf_grant_split(rows[r].share, rows[r].busy, rows[r].w, rows[r].n, g);

        CHECK(active == rows[r].active, "%s: active %u, want %u", rows[r].what, active, rows[r].active);
        for (unsigned i = 0; i < rows[r].n; i++)
            CHECK(g[i] == rows[r].grant[i], "%s: grant[%u] %u, want %u", rows[r].what, i, g[i], rows[r].grant[i]);
        for (unsigned i = rows[r].n; i < NMAX; i++)
            CHECK(g[i] == 99, "%s: grant[%u] written beyond n", rows[r].what, i);
    }
    return check_exit("test_layer_grant");
}
