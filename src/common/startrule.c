/* startrule.c — whether a program starts with its share of the machine, pure: the start team from the page's memory, the user's word and what the program already did. */
#include "scaf/startrule.h"

#include <stdio.h>
#include <strings.h>

#include "scaf/proto.h"

/* The memory's word: fixed by evidence or by scaf check counts; a remembered user verdict does not (the user's
 * word applies at each run by itself). */
static int keep_of(const struct scaf_start_in *in)
{
    if (in->user_fixed)
        return SCAF_KEEP_USER;
    if (in->memory_runs == 0 || in->memory_verdict != SCAF_VERDICT_FIXED)
        return SCAF_KEEP_NONE;
    if (in->memory_source == SCAF_SOURCE_EVIDENCE)
        return SCAF_KEEP_REMEMBERED;
    if (in->memory_source == SCAF_SOURCE_CHECK)
        return SCAF_KEEP_CHECKED;
    return SCAF_KEEP_NONE;
}

/* The memory says scaf check found it malleable, and the user did not say fixed: steered, as a `malleable` rule. */
static int checked_malleable(const struct scaf_start_in *in)
{
    return !in->user_fixed && scaf_start_recalled_malleable(in->memory_runs, in->memory_verdict, in->memory_source);
}

struct scaf_start scaf_start_decide(const struct scaf_start_in *in)
{
    struct scaf_start out = {SCAF_START_APPLY, 0, SCAF_KEEP_NONE};
    int steered;

    if (in->memory_off) {
        out.why = SCAF_START_OFF;
        return out;
    }
    if (in->level != 0) {
        out.why = SCAF_START_NESTED;
        return out;
    }
    if (in->set) {
        out.why = SCAF_START_SET;
        return out;
    }
    if (in->scaf_run_team) {
        /* OMP_NUM_THREADS=T came from scaf run's recall: the count is scaf's, and the runtime read it. */
        if (in->nthreads != in->scaf_run_team) {
            out.why = SCAF_START_SCAF_RUN_STALE;
            return out;
        }
        if (!in->asked) {
            out.why = SCAF_START_ASK; /* for the reason's words: how many runs are remembered */
            return out;
        }
        out.why = SCAF_START_SCAF_RUN;
        out.team = in->scaf_run_team;
        /* Its count stays scaf run's; whether it keeps it: the user's word, scaf check's malleable, the memory. */
        steered = in->user_malleable || checked_malleable(in);
        out.keep = steered ? SCAF_KEEP_NONE : keep_of(in);
        /* scaf run recalled it fixed, even if this daemon (restarted since) no longer says so. */
        if (!steered && out.keep == SCAF_KEEP_NONE)
            out.keep = SCAF_KEEP_REMEMBERED;
        return out;
    }
    if (in->read) {
        out.why = SCAF_START_READ;
        return out;
    }
    if (in->user_malleable) {
        out.why = SCAF_START_MALLEABLE;
        return out;
    }
    if (in->user_count) {
        out.why = SCAF_START_USER_COUNT;
        return out;
    }
    if (!in->asked) {
        out.why = SCAF_START_ASK;
        return out;
    }
    /* Malleable by scaf check's word: it starts with the whole machine and is steered, as with a `malleable` rule. */
    if (checked_malleable(in)) {
        out.why = SCAF_START_CHECKED_MALLEABLE;
        return out;
    }
    out.keep = keep_of(in);
    if (out.keep == SCAF_KEEP_NONE) {
        out.why = SCAF_START_NOT_FIXED;
        return out;
    }
    if (in->start_team == 0) {
        out.why = SCAF_START_NO_TEAM;
        return out;
    }
    if (in->start_team >= in->nthreads) {
        out.why = SCAF_START_NOT_SMALLER;
        return out;
    }
    out.team = in->start_team;
    return out;
}

const char *scaf_start_why_text(int why)
{
    switch (why) {
    case SCAF_START_APPLY:
        return "started with its share";
    case SCAF_START_SCAF_RUN:
        return "scaf run started it with its share";
    case SCAF_START_ASK:
        return "the daemon's page decides";
    case SCAF_START_OFF:
        return "SCAF_MEMORY=0";
    case SCAF_START_NESTED:
        return "not at the outermost level";
    case SCAF_START_SET:
        return "the program set its own count first (omp_set_num_threads)";
    case SCAF_START_READ:
        return "the program read its count before the layer could act";
    case SCAF_START_SCAF_RUN_STALE:
        return "SCAF_START_TEAM is not the runtime's count: OMP_NUM_THREADS was changed after scaf run";
    case SCAF_START_MALLEABLE:
        return "the user said malleable";
    case SCAF_START_USER_COUNT:
        return "OMP_NUM_THREADS is the user's";
    case SCAF_START_NOT_FIXED:
        return "nothing says the program keeps its team";
    case SCAF_START_CHECKED_MALLEABLE:
        return "scaf check found it malleable (remembered): it is steered";
    case SCAF_START_NO_TEAM:
        return "the daemon offers no start team";
    case SCAF_START_NOT_SMALLER:
        return "the start team is not below the program's count";
    default:
        return "?";
    }
}

static const char *runs_word(uint32_t n)
{
    return n == 1 ? "run" : "runs";
}

void scaf_start_words(const struct scaf_start_in *in, const struct scaf_start *out, const char *user, char *buf,
                      size_t len)
{
    char why[160];
    int known = in->asked && in->memory_runs > 0;

    if (!len)
        return;
    if (user && *user)
        snprintf(why, sizeof why, "%s", user);
    else if (known && in->memory_verdict == SCAF_VERDICT_FIXED && in->memory_source == SCAF_SOURCE_EVIDENCE)
        snprintf(why, sizeof why, "remembered fixed from %u %s", in->memory_runs, runs_word(in->memory_runs));
    else if (known && in->memory_verdict == SCAF_VERDICT_FIXED && in->memory_source == SCAF_SOURCE_CHECK)
        snprintf(why, sizeof why, "remembered fixed by scaf check");
    else if (out->why == SCAF_START_CHECKED_MALLEABLE) {
        snprintf(buf, len, "remembered malleable by scaf check: steered from its first region");
        return;
    } else if (known) {
        snprintf(buf, len, "remembered %s from %u %s",
                 in->memory_verdict == SCAF_VERDICT_MALLEABLE ? "malleable"
                 : in->memory_verdict == SCAF_VERDICT_FIXED   ? "fixed by the user"
                                                               : "undecided",
                 in->memory_runs, runs_word(in->memory_runs));
        return;
    } else {
        snprintf(buf, len, "nothing is remembered of it");
        return;
    }
    if (out->why == SCAF_START_NO_TEAM)
        snprintf(buf, len, "%s, but the daemon offers no start team", why);
    else if (out->why == SCAF_START_NOT_SMALLER)
        snprintf(buf, len, "%s, but its share (%u) is not below its count (%u)", why, in->start_team, in->nthreads);
    else if (out->why == SCAF_START_APPLY)
        snprintf(buf, len, "%s", why);
    else
        snprintf(buf, len, "%s, but %s", why, scaf_start_why_text(out->why));
}

int scaf_start_word(const char *v)
{
    static const char *const yes[] = {"yes", "1", "true", "on", "malleable"};
    static const char *const no[] = {"no", "0", "false", "off", "fixed"};

    if (!v || !*v || strcasecmp(v, "auto") == 0)
        return -1;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (strcasecmp(v, yes[i]) == 0)
            return 1;
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (strcasecmp(v, no[i]) == 0)
            return 0;
    return -2;
}
