/* test_layer_verdict.c — the malleability verdict row by row: region modes, what an ended region proves, a count made known. */
#include "../../src/layer/core/verdict.h"

#include <stdio.h>

#include "../../src/layer/core/team.h"
#include "check.h"
#include "scaf/proto.h"

enum { KEEP = SCAF_TEAM_KEEP, WATCH = SCAF_TEAM_WATCH, STEER = SCAF_TEAM_STEER, CHECKED = SCAF_TEAM_CHECK };
enum { UND = SCAF_VERDICT_UNDECIDED, MALL = SCAF_VERDICT_MALLEABLE, FIX = SCAF_VERDICT_FIXED };
enum { NONE = SCAF_CLAUSE_NONE, DFLT = SCAF_CLAUSE_DEFAULT, OTHER = SCAF_CLAUSE_OTHER };
enum { SEEN = SCAF_SITE_SEEN, TLS = SCAF_SITE_TLS, WAIT = SCAF_SITE_TLS_WAIT, CLEAR = SCAF_SITE_TLS_CLEAR };

#define EV(...) ((struct scaf_evidence){__VA_ARGS__})

static const struct {
    const char *what;
    struct scaf_mode_in in;
    int mode;
} modes[] = {
    /* A clause other than the program's default stands, and so does a fixed team. */
    {"clause 4 of cap 2", {.ev = EV(.verdict = MALL), .clause = OTHER, .site_known = 1, .site = SEEN}, KEEP},
    {"if(false) or strict", {.ev = EV(.verdict = MALL, .forced = 1), .clause = OTHER}, KEEP},
    {"fixed", {.ev = EV(.verdict = FIX), .fixed = 1, .site_known = 1, .site = SEEN}, KEEP},
    {"fixed, default clause", {.ev = EV(.verdict = FIX), .fixed = 1, .clause = DFLT}, KEEP},
    /* num_threads(omp_get_max_threads()), Cython's prange: steered like no clause. */
    {"default clause, seen site", {.ev = EV(.verdict = MALL), .clause = DFLT, .site_known = 1, .site = SEEN}, STEER},
    {"default clause, first look after a query",
     {.ev = EV(.verdict = UND, .queried = 1), .clause = DFLT, .site_known = 1, .site = 0}, WATCH},
    {"default clause, no count known", {.ev = EV(.verdict = MALL), .clause = DFLT, .site_known = 1}, STEER},
    /* scaf check's seeded teams, the user's word. */
    {"scaf check", {.ev = EV(.verdict = MALL, .forced = 1, .check = 1), .site_known = 1}, CHECKED},
    {"scaf check, default clause", {.ev = EV(.verdict = MALL, .forced = 1, .check = 1), .clause = DFLT}, CHECKED},
    {"--malleable", {.ev = EV(.verdict = MALL, .forced = 1, .queried = 1), .site_known = 1, .tls = 1}, STEER},
    /* Sites. */
    {"seen site", {.ev = EV(.verdict = UND, .queried = 1), .site_known = 1, .site = SEEN}, STEER},
    {"seen site in TLS code, cleared", {.ev = EV(.verdict = MALL), .site_known = 1, .site = SEEN | TLS | CLEAR, .tls = 1},
     STEER},
    {"site held for its TLS check", {.ev = EV(.verdict = UND), .site_known = 1, .site = SEEN | TLS | WAIT, .tls = 1},
     WATCH},
    {"unseen site, count known", {.ev = EV(.verdict = UND, .queried = 1), .site_known = 1}, WATCH},
    {"unseen site, TLS code", {.ev = EV(.verdict = MALL), .site_known = 1, .tls = 1}, WATCH},
    {"unseen site, nothing known", {.ev = EV(.verdict = MALL), .site_known = 1}, STEER},
    {"unseen site after a set", {.ev = EV(.verdict = UND, .queried = 1, .set = 1), .site_known = 1}, WATCH},
    {"table full, count known", {.ev = EV(.verdict = UND, .queried = 1), .site_known = 0}, WATCH},
    {"table full, nothing known", {.ev = EV(.verdict = MALL), .site_known = 0}, STEER},
};

struct want {
    uint32_t verdict;
    int why;
    uint32_t site;
    int escaped, tid_only, lower_cap, due;
};

static const struct {
    const char *what;
    struct scaf_judge_in in;
    struct want want;
} judged[] = {
    /* Not judged: explicit counts, fixed teams, scaf check. */
    {"KEEP", {.ev = EV(.verdict = MALL, .queried = 1), .mode = KEEP, .tid = 1}, {.verdict = MALL, .why = SCAF_WHY_NONE, .site = 0}},
    {"CHECK", {.ev = EV(.verdict = MALL, .forced = 1, .check = 1), .mode = CHECKED, .nth = 1},
     {.verdict = MALL, .why = SCAF_WHY_NONE, .site = 0}},
    /* The user's word: only the team read is remembered. */
    {"forced, team read alone", {.ev = EV(.verdict = MALL, .forced = 1), .mode = STEER, .nth = 1},
     {.verdict = MALL, .why = SCAF_WHY_NONE, .site = 0, .lower_cap = 1}},
    {"forced, split-like", {.ev = EV(.verdict = FIX, .forced = 1, .queried = 1), .mode = STEER, .tid = 1},
     {.verdict = FIX, .why = SCAF_WHY_NONE, .site = 0}},
    /* The common case. */
    {"seen site, nothing called", {.ev = EV(.verdict = MALL), .mode = STEER, .site = SEEN}, {.verdict = MALL, .why = SCAF_WHY_NONE, .site = SEEN}},
    {"seen site, worksharing (tid and nth)", {.ev = EV(.verdict = MALL, .queried = 1), .mode = STEER, .site = SEEN,
                                              .tid = 1, .nth = 1},
     {.verdict = MALL, .why = SCAF_WHY_NONE, .site = SEEN}},
    /* banner: a query, then regions that read their own team size or none. */
    {"banner: first look, nothing called", {.ev = EV(.verdict = UND, .queried = 1), .mode = WATCH},
     {.verdict = MALL, .why = SCAF_WHY_CLEAN, .site = SEEN}},
    {"banner: first look, tid and nth", {.ev = EV(.verdict = UND, .queried = 1), .mode = WATCH, .tid = 1, .nth = 1},
     {.verdict = MALL, .why = SCAF_WHY_CLEAN, .site = SEEN}},
    /* split and partials: thread numbers against a count read outside. */
    {"split: tid without nth after a query", {.ev = EV(.verdict = UND, .queried = 1), .mode = WATCH, .tid = 1},
     {.verdict = FIX, .why = SCAF_WHY_TID_ONLY, .site = SEEN}},
    {"split on a seen site", {.ev = EV(.verdict = MALL, .queried = 1), .mode = STEER, .site = SEEN, .tid = 1},
     {.verdict = FIX, .why = SCAF_WHY_TID_ONLY, .site = SEEN}},
    {"tid without nth, no count known yet", {.ev = EV(.verdict = MALL), .mode = STEER, .tid = 1},
     {.verdict = MALL, .why = SCAF_WHY_NONE, .site = SEEN, .tid_only = 1}},
    /* A count read inside a region and kept: a query. */
    {"single: n = omp_get_num_threads()", {.ev = EV(.verdict = MALL), .mode = STEER, .site = SEEN, .nth = 1},
     {.verdict = UND, .why = SCAF_WHY_ESCAPED, .site = SEEN, .escaped = 1, .lower_cap = 1}},
    {"the same on a first instance", {.ev = EV(.verdict = MALL), .mode = STEER, .nth = 1},
     {.verdict = MALL, .why = SCAF_WHY_CLEAN, .site = SEEN, .escaped = 1, .lower_cap = 1}},
    {"escaped after a tid-only region", {.ev = EV(.verdict = MALL, .tid_only = 1), .mode = STEER, .site = SEEN, .nth = 1},
     {.verdict = FIX, .why = SCAF_WHY_ESCAPED_TID, .site = SEEN, .escaped = 1, .lower_cap = 1}},
    {"escaped again", {.ev = EV(.verdict = MALL, .queried = 1), .mode = STEER, .site = SEEN, .nth = 1},
     {.verdict = MALL, .why = SCAF_WHY_NONE, .site = SEEN, .escaped = 1, .lower_cap = 1}},
    /* fixed: a program that set its count and numbers its threads. */
    {"fixed: set, then tid and nth", {.ev = EV(.verdict = UND, .queried = 1, .set = 1), .mode = WATCH, .tid = 1, .nth = 1},
     {.verdict = FIX, .why = SCAF_WHY_SET_TID, .site = SEEN}},
    {"set, worksharing without thread numbers", {.ev = EV(.verdict = UND, .queried = 1, .set = 1), .mode = WATCH},
     {.verdict = MALL, .why = SCAF_WHY_CLEAN, .site = SEEN}},
    {"set, a seen site numbers threads later", {.ev = EV(.verdict = MALL, .queried = 1, .set = 1), .mode = STEER,
                                                .site = SEEN, .tid = 1, .nth = 1},
     {.verdict = FIX, .why = SCAF_WHY_SET_TID, .site = SEEN}},
    /* Thread-local data: held until checked, then cleared or fixed. */
    {"TLS code, first instance", {.ev = EV(.verdict = MALL), .mode = WATCH, .tls = 1, .tid = 1, .nth = 1},
     {.verdict = UND, .why = SCAF_WHY_TLS_WAIT, .site = SEEN | TLS | WAIT, .due = 1}},
    {"TLS code, first instance, no thread numbers", {.ev = EV(.verdict = MALL), .mode = WATCH, .tls = 1},
     {.verdict = UND, .why = SCAF_WHY_TLS_WAIT, .site = SEEN | TLS | WAIT, .due = 1}},
    {"TLS, held, check running", {.ev = EV(.verdict = UND), .mode = WATCH, .site = SEEN | TLS | WAIT, .tls = 1,
                                  .tls_check = SCAF_TLS_RUNNING},
     {.verdict = UND, .why = SCAF_WHY_NONE, .site = SEEN | TLS | WAIT}},
    {"TLS, held, check not started", {.ev = EV(.verdict = UND), .mode = WATCH, .site = SEEN | TLS | WAIT, .tls = 1},
     {.verdict = UND, .why = SCAF_WHY_NONE, .site = SEEN | TLS | WAIT}},
    {"TLS scratch (tpscratch)", {.ev = EV(.verdict = UND), .mode = WATCH, .site = SEEN | TLS | WAIT, .tls = 1,
                                 .tls_check = SCAF_TLS_SCRATCH},
     {.verdict = MALL, .why = SCAF_WHY_CLEAN, .site = SEEN | TLS | CLEAR}},
    {"TLS scratch, but a count known and tid only", {.ev = EV(.verdict = UND, .queried = 1), .mode = WATCH,
                                                     .site = SEEN | TLS | WAIT, .tls = 1, .tid = 1,
                                                     .tls_check = SCAF_TLS_SCRATCH},
     {.verdict = FIX, .why = SCAF_WHY_TID_ONLY, .site = SEEN | TLS | CLEAR}},
    {"TLS carried (tpcarry, NPB IS)", {.ev = EV(.verdict = UND), .mode = WATCH, .site = SEEN | TLS | WAIT, .tls = 1,
                                       .tls_check = SCAF_TLS_CARRIED},
     {.verdict = FIX, .why = SCAF_WHY_TLS_CARRIED, .site = SEEN | TLS | WAIT}},
    {"TLS unchecked", {.ev = EV(.verdict = UND), .mode = WATCH, .site = SEEN | TLS | WAIT, .tls = 1,
                       .tls_check = SCAF_TLS_UNCHECKED},
     {.verdict = FIX, .why = SCAF_WHY_TLS_UNCHECKED, .site = SEEN | TLS | WAIT}},
    {"TLS cleared site, seen again", {.ev = EV(.verdict = MALL), .mode = STEER, .site = SEEN | TLS | CLEAR, .tls = 1,
                                      .tid = 1, .nth = 1},
     {.verdict = MALL, .why = SCAF_WHY_NONE, .site = SEEN | TLS | CLEAR}},
    {"TLS site fixed already", {.ev = EV(.verdict = FIX), .mode = WATCH, .site = SEEN | TLS | WAIT, .tls = 1,
                                .tls_check = SCAF_TLS_SCRATCH},
     {.verdict = FIX, .why = SCAF_WHY_NONE, .site = SEEN | TLS | CLEAR}},
};

static const struct {
    const char *what;
    struct scaf_evidence ev;
    int set;
    uint32_t verdict;
    int why;
} counts[] = {
    {"first query", EV(.verdict = MALL), 0, UND, SCAF_WHY_NONE},
    {"query after a tid-only region", EV(.verdict = MALL, .tid_only = 1, .tid_any = 1), 0, FIX, SCAF_WHY_TID_ONLY},
    {"query after worksharing", EV(.verdict = MALL, .tid_any = 1), 0, UND, SCAF_WHY_NONE},
    {"second query", EV(.verdict = MALL, .queried = 1), 0, MALL, SCAF_WHY_NONE},
    {"first set", EV(.verdict = MALL), 1, UND, SCAF_WHY_NONE},
    {"set after thread numbers", EV(.verdict = MALL, .tid_any = 1), 1, FIX, SCAF_WHY_SET_TID},
    {"set after a query, judged clean", EV(.verdict = MALL, .queried = 1), 1, MALL, SCAF_WHY_NONE},
    {"set, fixed already", EV(.verdict = FIX, .queried = 1, .tid_any = 1), 1, FIX, SCAF_WHY_NONE},
    {"set, the user's word", EV(.verdict = MALL, .forced = 1, .tid_any = 1), 1, MALL, SCAF_WHY_NONE},
};

int main(void)
{
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        int m = scaf_verdict_mode(&modes[i].in);
        CHECK(m == modes[i].mode, "mode %s: got %d, want %d", modes[i].what, m, modes[i].mode);
    }
    for (size_t i = 0; i < sizeof judged / sizeof judged[0]; i++) {
        struct scaf_judgement j;
        const struct want *w = &judged[i].want;

        scaf_verdict_judge(&judged[i].in, &j);
        CHECK(j.verdict == w->verdict && j.why == w->why && j.site == w->site, "judge %s: got verdict %u why %d site %#x, "
              "want %u %d %#x", judged[i].what, j.verdict, j.why, j.site, w->verdict, w->why, w->site);
        CHECK(j.escaped == w->escaped && j.tid_only == w->tid_only && j.lower_cap == w->lower_cap &&
                  j.tls_check_due == w->due,
              "judge %s: got escaped %d tid_only %d lower_cap %d due %d", judged[i].what, j.escaped, j.tid_only,
              j.lower_cap, j.tls_check_due);
    }
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        int why;
        uint32_t v = scaf_verdict_count_known(&counts[i].ev, counts[i].set != 0, &why);
        CHECK(v == counts[i].verdict && why == counts[i].why, "count %s: got %u why %d, want %u %d", counts[i].what, v,
              why, counts[i].verdict, counts[i].why);
    }
    return check_exit("test_layer_verdict");
}
