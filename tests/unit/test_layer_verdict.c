/* test_layer_verdict.c — the malleability verdict row by row: region modes, what an ended region proves, a count made known. */
#include "../../src/layer/core/verdict.h"

#include <stdio.h>

#include "../../src/layer/core/team.h"
#include "check.h"
#include "scaf/proto.h"

enum { KEEP = SCAF_TEAM_KEEP, WATCH = SCAF_TEAM_WATCH, STEER = SCAF_TEAM_STEER, CHECKED = SCAF_TEAM_CHECK };
enum { UND = SCAF_VERDICT_UNDECIDED, MALL = SCAF_VERDICT_MALLEABLE, FIX = SCAF_VERDICT_FIXED };
enum { NONE = SCAF_CLAUSE_NONE, DFLT = SCAF_CLAUSE_DEFAULT, OTHER = SCAF_CLAUSE_OTHER };
enum { SEEN = SCAF_SITE_SEEN, TLS = SCAF_SITE_TLS, WAIT = SCAF_SITE_TLS_WAIT, CLEAR = SCAF_SITE_TLS_CLEAR,
       KNOWN = SCAF_SITE_KNOWN };
enum { M_CLEAN = SCAF_MEMO_CLEAN, M_TLS = SCAF_MEMO_TLS, M_CLEAR = SCAF_MEMO_TLS_CLEAR, M_FIXES = SCAF_MEMO_FIXES };

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
    /* tpcarry: two sites in code with thread-local data; the first one's check ends before the second's.
     * The program is settled only when no site is held: one that ends meanwhile is undecided. */
    {"TLS scratch, another site still held", {.ev = EV(.verdict = UND), .mode = WATCH, .site = SEEN | TLS | WAIT,
                                              .tls = 1, .tls_check = SCAF_TLS_SCRATCH, .held_elsewhere = 1},
     {.verdict = UND, .why = SCAF_WHY_TLS_HELD, .site = SEEN | TLS | CLEAR}},
    {"TLS scratch, the last site held", {.ev = EV(.verdict = UND), .mode = WATCH, .site = SEEN | TLS | WAIT,
                                         .tls = 1, .tls_check = SCAF_TLS_SCRATCH, .held_elsewhere = 0},
     {.verdict = MALL, .why = SCAF_WHY_CLEAN, .site = SEEN | TLS | CLEAR}},
    {"first look clean while a TLS site is held", {.ev = EV(.verdict = UND, .queried = 1), .mode = WATCH,
                                                   .held_elsewhere = 2},
     {.verdict = UND, .why = SCAF_WHY_TLS_HELD, .site = SEEN}},
    {"TLS carried while another site is held", {.ev = EV(.verdict = UND), .mode = WATCH, .site = SEEN | TLS | WAIT,
                                                .tls = 1, .tls_check = SCAF_TLS_CARRIED, .held_elsewhere = 1},
     {.verdict = FIX, .why = SCAF_WHY_TLS_CARRIED, .site = SEEN | TLS | WAIT}},
    {"second TLS site's first instance", {.ev = EV(.verdict = UND), .mode = WATCH, .tls = 1, .held_elsewhere = 1},
     {.verdict = UND, .why = SCAF_WHY_TLS_WAIT, .site = SEEN | TLS | WAIT, .due = 1}},
    /* A site started from the memory: steered, its first instance judged as a first one, then plain SEEN. */
    {"known clean, first instance clean", {.ev = EV(.verdict = UND, .queried = 1), .mode = STEER, .site = SEEN | KNOWN},
     {.verdict = MALL, .why = SCAF_WHY_CLEAN, .site = SEEN}},
    {"known clean, numbers threads after a query",
     {.ev = EV(.verdict = UND, .queried = 1), .mode = STEER, .site = SEEN | KNOWN, .tid = 1},
     {.verdict = FIX, .why = SCAF_WHY_TID_ONLY, .site = SEEN}},
    {"known TLS-cleared, first instance", {.ev = EV(.verdict = UND, .queried = 1), .mode = STEER,
                                           .site = SEEN | TLS | CLEAR | KNOWN, .tls = 1},
     {.verdict = MALL, .why = SCAF_WHY_CLEAN, .site = SEEN | TLS | CLEAR}},
    {"known clean, no query yet", {.ev = EV(.verdict = MALL), .mode = STEER, .site = SEEN | KNOWN},
     {.verdict = MALL, .why = SCAF_WHY_NONE, .site = SEEN}},
};

/* The state a remembered site starts with. */
static const struct {
    const char *what;
    uint32_t memo;
    int tls;
    uint32_t site;
} memo_sites[] = {
    {"clean", M_CLEAN, 0, SEEN | KNOWN},
    {"clean, TLS checked", M_CLEAN | M_TLS | M_CLEAR, 1, SEEN | TLS | CLEAR | KNOWN},
    {"TLS checked, not clean", M_TLS | M_CLEAR, 1, 0},
    {"TLS, not checked", M_CLEAN | M_TLS, 1, 0},
    {"fixed the program", M_CLEAN | M_FIXES, 0, 0},
    {"fixes only", M_FIXES, 0, 0},
    {"nothing", 0, 0, 0},
    {"object has TLS now, not then", M_CLEAN, 1, 0},
    {"object had TLS then, not now", M_CLEAN | M_TLS | M_CLEAR, 0, 0},
};

/* What an ended instance teaches the memory: the judgement is made first (scaf_verdict_judge), then asked. */
static const struct {
    const char *what;
    struct scaf_judge_in in;
    int says;
    uint32_t memo;
} learned[] = {
    {"first instance, no calls", {.ev = EV(.verdict = MALL), .mode = STEER}, 1, M_CLEAN},
    {"first look, reads its team and numbers threads", {.ev = EV(.verdict = UND, .queried = 1), .mode = WATCH,
                                                        .tid = 1, .nth = 1}, 1, M_CLEAN},
    {"first instance, team size read alone (escapes)", {.ev = EV(.verdict = MALL), .mode = STEER, .nth = 1}, 1,
     M_CLEAN},
    {"first instance numbers threads, no query yet", {.ev = EV(.verdict = MALL), .mode = STEER, .tid = 1}, 1, 0},
    {"first look fixes the program", {.ev = EV(.verdict = UND, .queried = 1), .mode = WATCH, .tid = 1}, 1, M_FIXES},
    {"set and thread numbers fix it", {.ev = EV(.verdict = UND, .queried = 1, .set = 1), .mode = WATCH, .tid = 1,
                                       .nth = 1}, 1, M_FIXES},
    {"seen site, nothing new", {.ev = EV(.verdict = MALL), .mode = STEER, .site = SEEN}, 0, 0},
    {"seen site, worksharing", {.ev = EV(.verdict = MALL), .mode = STEER, .site = SEEN, .tid = 1, .nth = 1}, 0, 0},
    {"seen site numbers threads: no longer clean", {.ev = EV(.verdict = MALL), .mode = STEER, .site = SEEN, .tid = 1},
     1, 0},
    {"TLS site held: nothing yet", {.ev = EV(.verdict = UND), .mode = WATCH, .tls = 1}, 0, 0},
    {"TLS site cleared by its check", {.ev = EV(.verdict = UND), .mode = WATCH, .site = SEEN | TLS | WAIT, .tls = 1,
                                       .tls_check = SCAF_TLS_SCRATCH}, 1, M_CLEAN | M_TLS | M_CLEAR},
    {"TLS site carried", {.ev = EV(.verdict = UND), .mode = WATCH, .site = SEEN | TLS | WAIT, .tls = 1,
                          .tls_check = SCAF_TLS_CARRIED}, 1, M_FIXES | M_TLS},
    {"known site, first instance clean", {.ev = EV(.verdict = UND, .queried = 1), .mode = STEER, .site = SEEN | KNOWN},
     1, M_CLEAN},
    {"known site contradicted", {.ev = EV(.verdict = UND, .queried = 1), .mode = STEER, .site = SEEN | KNOWN, .tid = 1},
     1, M_FIXES},
    {"fixed program: KEEP teaches nothing", {.ev = EV(.verdict = FIX), .mode = KEEP, .tid = 1}, 0, 0},
    {"forced: the user's word teaches nothing", {.ev = EV(.verdict = MALL, .forced = 1), .mode = STEER}, 0, 0},
    {"check mode teaches nothing", {.ev = EV(.verdict = MALL, .forced = 1, .check = 1), .mode = CHECKED}, 0, 0},
    {"already fixed, fixes nothing new", {.ev = EV(.verdict = FIX, .queried = 1), .mode = STEER, .tid = 1}, 1, 0},
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

/* Whether an ended instance is judged at all (scaf_verdict_may_change): the rows name the cases. */
static const struct {
    const char *what;
    uint32_t site;
    int tid, nth, tid_any, set;
    int change;
} may_change[] = {
    {"first instance", 0, 0, 0, 0, 0, 1},
    {"first instance, worksharing", 0, 1, 1, 1, 0, 1},
    {"seen site, nothing called", SEEN, 0, 0, 0, 0, 0},
    {"seen site, worksharing, threads numbered before", SEEN, 1, 1, 1, 0, 0},
    {"seen site, worksharing, the program's first thread numbers", SEEN, 1, 1, 0, 0, 1},
    {"seen site, worksharing, the program set its count", SEEN, 1, 1, 1, 1, 1},
    {"seen site, thread numbers alone", SEEN, 1, 0, 1, 0, 1},
    {"seen site, team size alone (escapes)", SEEN, 0, 1, 1, 0, 1},
    {"TLS cleared, worksharing", SEEN | TLS | CLEAR, 1, 1, 1, 0, 0},
    {"held for its TLS check", SEEN | TLS | WAIT, 0, 0, 1, 0, 1},
    {"remembered, first instance", SEEN | KNOWN, 1, 1, 1, 0, 1},
};

/* A judgement that changes nothing: what malleable.c may skip. */
static bool no_op(const struct scaf_judge_in *in)
{
    struct scaf_judgement j;
    uint32_t memo;

    scaf_verdict_judge(in, &j);
    return j.verdict == in->ev.verdict && j.why == SCAF_WHY_NONE && j.site == in->site && !j.escaped &&
           !j.tid_only && !j.lower_cap && !j.tls_check_due && (!j.tid_any || in->ev.tid_any) &&
           !scaf_verdict_memo_learn(in, &j, &memo);
}

/* Every input judge and memo_learn read, whenever scaf_verdict_may_change says "nothing": they must agree. */
static void may_change_against_judge(void)
{
    static const int modes_all[] = {KEEP, WATCH, STEER, CHECKED}, verdicts[] = {UND, MALL, FIX};
    unsigned skipped = 0;

    for (uint32_t site = 0; site < 32; site++)
        for (unsigned bits = 0; bits < (1u << 10); bits++)
            for (int v = 0; v < 3; v++)
                for (int m = 0; m < 4; m++)
                    for (int tc = SCAF_TLS_NONE; tc <= SCAF_TLS_RUNNING; tc++) {
                        struct scaf_judge_in in = {
                            .ev = EV(.verdict = (uint32_t)verdicts[v], .forced = bits & 1, .check = bits >> 1 & 1,
                                     .queried = bits >> 2 & 1, .set = bits >> 3 & 1, .tid_only = bits >> 4 & 1,
                                     .tid_any = bits >> 5 & 1),
                            .mode = modes_all[m], .site = site, .tls = bits >> 6 & 1, .tid = bits >> 7 & 1,
                            .nth = bits >> 8 & 1, .tls_check = tc, .held_elsewhere = bits >> 9 & 1};

                        if (scaf_verdict_may_change(site, in.tid, in.nth, in.ev.tid_any, in.ev.set))
                            continue;
                        skipped++;
                        CHECK(no_op(&in), "may_change: skipped a judgement that changes something: site %#x bits %#x "
                              "verdict %d mode %d tls_check %d", site, bits, verdicts[v], modes_all[m], tc);
                    }
    CHECK(skipped > 0, "may_change: nothing was ever skipped");
}

int main(void)
{
    for (size_t i = 0; i < sizeof may_change / sizeof may_change[0]; i++) {
        bool got = scaf_verdict_may_change(may_change[i].site, may_change[i].tid != 0, may_change[i].nth != 0,
                                           may_change[i].tid_any != 0, may_change[i].set != 0);
        CHECK(got == (may_change[i].change != 0), "may_change %s: got %d, want %d", may_change[i].what, got,
              may_change[i].change);
    }
    may_change_against_judge();
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
    for (size_t i = 0; i < sizeof memo_sites / sizeof memo_sites[0]; i++) {
        uint32_t site = scaf_verdict_memo_site(memo_sites[i].memo, memo_sites[i].tls != 0);
        CHECK(site == memo_sites[i].site, "memo site %s: got %#x, want %#x", memo_sites[i].what, site,
              memo_sites[i].site);
        /* What starts settled is steered at once by the mode rule, even after a query. */
        if (site) {
            struct scaf_mode_in mi = {.ev = EV(.verdict = UND, .queried = 1), .site_known = 1, .site = site,
                                      .tls = memo_sites[i].tls != 0};
            CHECK(scaf_verdict_mode(&mi) == STEER, "memo site %s: not steered", memo_sites[i].what);
        }
    }
    for (size_t i = 0; i < sizeof learned / sizeof learned[0]; i++) {
        struct scaf_judgement j;
        uint32_t memo = 0xdead;
        bool says;

        scaf_verdict_judge(&learned[i].in, &j);
        says = scaf_verdict_memo_learn(&learned[i].in, &j, &memo);
        CHECK(says == (learned[i].says != 0) && (!says || memo == learned[i].memo), "learn %s: got %d %#x, want %d %#x",
              learned[i].what, says, says ? memo : 0, learned[i].says, learned[i].memo);
    }
    return check_exit("test_layer_verdict");
}
