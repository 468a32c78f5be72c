/* test_layer_start.c — whether a program starts with its share, row by row, from common/startrule.c's explicit inputs. */
#include "scaf/startrule.h"

#include <stdio.h>

#include "check.h"
#include "scaf/proto.h"

enum { FIXED = SCAF_VERDICT_FIXED, MALLEABLE = SCAF_VERDICT_MALLEABLE };
enum { EVIDENCE = SCAF_SOURCE_EVIDENCE, CHECK = SCAF_SOURCE_CHECK, USER = SCAF_SOURCE_USER };

/* A row is often the remembered base below with one field changed: designated initializers overriding it. */
#pragma GCC diagnostic ignored "-Woverride-init"

/* Remembered fixed by evidence from 3 runs, the daemon offers 1, the program would read 2. */
#define REMEMBERED .asked = 1, .nthreads = 2, .start_team = 1, .memory_runs = 3, .memory_verdict = FIXED, \
                   .memory_source = EVIDENCE

static const struct {
    const char *what;
    struct scaf_start_in in;
    int why;
    unsigned team;
    int keep;
} rows[] = {
    {"remembered fixed: start with 1", {REMEMBERED}, SCAF_START_APPLY, 1, SCAF_KEEP_REMEMBERED},
    {"fixed by scaf check", {REMEMBERED, .memory_source = CHECK}, SCAF_START_APPLY, 1, SCAF_KEEP_CHECKED},
    {"user fixed, nothing remembered", {.asked = 1, .nthreads = 4, .start_team = 2, .user_fixed = 1},
     SCAF_START_APPLY, 2, SCAF_KEEP_USER},
    {"user fixed beats the memory's word", {REMEMBERED, .memory_verdict = MALLEABLE, .user_fixed = 1},
     SCAF_START_APPLY, 1, SCAF_KEEP_USER},
    /* Before the page is read: ask first (the caller connects). */
    {"not asked yet", {.nthreads = 2}, SCAF_START_ASK, 0, 0},
    {"not asked, user fixed", {.nthreads = 2, .user_fixed = 1}, SCAF_START_ASK, 0, 0},
    /* What nothing can start. */
    {"SCAF_MEMORY=0", {REMEMBERED, .memory_off = 1}, SCAF_START_OFF, 0, 0},
    {"SCAF_MEMORY=0, scaf run's team", {.memory_off = 1, .scaf_run_team = 1, .nthreads = 1}, SCAF_START_OFF, 0, 0},
    {"nested touch", {REMEMBERED, .level = 1}, SCAF_START_NESTED, 0, 0},
    {"the program sets its count", {REMEMBERED, .set = 1}, SCAF_START_SET, 0, 0},
    {"the program set it, before scaf run's", {.set = 1, .scaf_run_team = 1, .nthreads = 1}, SCAF_START_SET, 0, 0},
    {"read before the layer could act", {REMEMBERED, .read = 1}, SCAF_START_READ, 0, 0},
    {"the user said malleable", {REMEMBERED, .user_malleable = 1}, SCAF_START_MALLEABLE, 0, 0},
    {"the user's OMP_NUM_THREADS", {REMEMBERED, .user_count = 1}, SCAF_START_USER_COUNT, 0, 0},
    {"user count, not asked", {.nthreads = 2, .user_count = 1}, SCAF_START_USER_COUNT, 0, 0},
    /* The page decides. */
    {"nothing remembered", {.asked = 1, .nthreads = 2, .start_team = 1}, SCAF_START_NOT_FIXED, 0, 0},
    {"remembered malleable", {REMEMBERED, .memory_verdict = MALLEABLE}, SCAF_START_NOT_FIXED, 0, 0},
    /* scaf check found it malleable: steered as with a `malleable` rule, so it starts with the whole machine. */
    {"malleable by scaf check", {REMEMBERED, .memory_verdict = MALLEABLE, .memory_source = CHECK},
     SCAF_START_CHECKED_MALLEABLE, 0, 0},
    {"the user's fixed beats scaf check's malleable",
     {REMEMBERED, .memory_verdict = MALLEABLE, .memory_source = CHECK, .user_fixed = 1}, SCAF_START_APPLY, 1,
     SCAF_KEEP_USER},
    {"scaf check's malleable, SCAF_MEMORY=0", {REMEMBERED, .memory_verdict = MALLEABLE, .memory_source = CHECK,
     .memory_off = 1}, SCAF_START_OFF, 0, 0},
    {"scaf check's malleable without runs (a liar's page)",
     {REMEMBERED, .memory_verdict = MALLEABLE, .memory_source = CHECK, .memory_runs = 0}, SCAF_START_NOT_FIXED, 0, 0},
    {"remembered undecided", {REMEMBERED, .memory_verdict = SCAF_VERDICT_UNDECIDED}, SCAF_START_NOT_FIXED, 0, 0},
    {"a user's verdict remembered is not evidence", {REMEMBERED, .memory_source = USER}, SCAF_START_NOT_FIXED, 0, 0},
    {"fixed but no runs (a liar's page)", {REMEMBERED, .memory_runs = 0}, SCAF_START_NOT_FIXED, 0, 0},
    {"no daemon answered", {.asked = 1, .nthreads = 2, .user_fixed = 1}, SCAF_START_NO_TEAM, 0, 0},
    {"start team 0", {REMEMBERED, .start_team = 0}, SCAF_START_NO_TEAM, 0, 0},
    {"start team = count", {REMEMBERED, .start_team = 2}, SCAF_START_NOT_SMALLER, 0, 0},
    {"start team above count", {REMEMBERED, .start_team = 8}, SCAF_START_NOT_SMALLER, 0, 0},
    {"one thread already", {REMEMBERED, .nthreads = 1}, SCAF_START_NOT_SMALLER, 0, 0},
    /* scaf run started it: OMP_NUM_THREADS=T and SCAF_START_TEAM=T. */
    {"scaf run, not asked", {.scaf_run_team = 1, .nthreads = 1}, SCAF_START_ASK, 0, 0},
    {"scaf run, remembered", {REMEMBERED, .scaf_run_team = 1, .nthreads = 1}, SCAF_START_SCAF_RUN, 1,
     SCAF_KEEP_REMEMBERED},
    {"scaf run, daemon forgot since", {.asked = 1, .scaf_run_team = 1, .nthreads = 1}, SCAF_START_SCAF_RUN, 1,
     SCAF_KEEP_REMEMBERED},
    {"scaf run --fixed", {.asked = 1, .scaf_run_team = 2, .nthreads = 2, .user_fixed = 1}, SCAF_START_SCAF_RUN, 2,
     SCAF_KEEP_USER},
    {"scaf run, read before (it read scaf's count)", {REMEMBERED, .scaf_run_team = 1, .nthreads = 1, .read = 1},
     SCAF_START_SCAF_RUN, 1, SCAF_KEEP_REMEMBERED},
    {"scaf run, then SCAF_MALLEABLE=yes", {.asked = 1, .scaf_run_team = 1, .nthreads = 1, .user_malleable = 1},
     SCAF_START_SCAF_RUN, 1, SCAF_KEEP_NONE},
    {"scaf run's team, then scaf check found it malleable",
     {REMEMBERED, .memory_verdict = MALLEABLE, .memory_source = CHECK, .scaf_run_team = 1, .nthreads = 1},
     SCAF_START_SCAF_RUN, 1, SCAF_KEEP_NONE},
    {"scaf run --fixed over scaf check's malleable", {REMEMBERED, .memory_verdict = MALLEABLE,
     .memory_source = CHECK, .scaf_run_team = 1, .nthreads = 1, .user_fixed = 1}, SCAF_START_SCAF_RUN, 1,
     SCAF_KEEP_USER},
    {"scaf run's team changed since", {.asked = 1, .scaf_run_team = 1, .nthreads = 2}, SCAF_START_SCAF_RUN_STALE, 0,
     0},
};

int main(void)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct scaf_start s = scaf_start_decide(&rows[i].in);

        CHECK(s.why == rows[i].why, "%s: why %d (%s), expected %d (%s)", rows[i].what, s.why,
              scaf_start_why_text(s.why), rows[i].why, scaf_start_why_text(rows[i].why));
        if (rows[i].why == SCAF_START_APPLY || rows[i].why == SCAF_START_SCAF_RUN)
            CHECK(s.team == rows[i].team && s.keep == rows[i].keep, "%s: team %u keep %d, expected %u %d",
                  rows[i].what, s.team, s.keep, rows[i].team, rows[i].keep);
        CHECK(scaf_start_why_text(s.why)[0] != '?', "%s: no text for why %d", rows[i].what, s.why);
    }
    return check_exit("test_layer_start");
}
