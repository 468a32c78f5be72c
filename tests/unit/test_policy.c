/* test_policy.c — table, property and damping tests for the policies and the registry. */
#include "scaf/policy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define MAXK 48
#define UNKNOWN (-1.0)
/* p', E, prev, bound, prev_coef */
#define F(P, E, PREV, BOUND, COEF) {.p = (P), .e = (E), .prev = (PREV), .bound = (BOUND), .prev_coef = (COEF)}
/* The same, with the noise of E measured by the caller. */
#define FN(P, E, PREV, SD) {.p = (P), .e = (E), .prev = (PREV), .e_sd = (SD)}
/* The same, with a second point of the curve (E at another team size). */
#define FA(P, E, ALTP, ALTE) {.p = (P), .e = (E), .alt_p = (ALTP), .alt_e = (ALTE)}
/* Two points, a previous allocation and the noise of E measured by the caller. */
#define FAN(P, E, ALTP, ALTE, PREV, SD) {.p = (P), .e = (E), .alt_p = (ALTP), .alt_e = (ALTE), .prev = (PREV), .e_sd = (SD)}
/* Three points (the third measured, not fitted), a previous allocation and the noise of E. */
#define FAS(P, E, ALTP, ALTE, SIDEP, SIDEE, PREV, SD)                                                               \
    {.p = (P), .e = (E), .alt_p = (ALTP), .alt_e = (ALTE), .side_p = (SIDEP), .side_e = (SIDEE), .prev = (PREV),    \
     .e_sd = (SD)}
/* The same, probed this round. */
#define FP(P, E, PREV, BOUND, COEF) {.p = (P), .e = (E), .prev = (PREV), .bound = (BOUND), .prev_coef = (COEF), .probe = 1}

/* A client as the tables describe it: bound 0 = none, E < 0 = unknown. */
struct cl {
    uint32_t p;    /* p' (eff_team) */
    double e;      /* E at p' */
    uint32_t prev; /* previous allocation */
    uint32_t bound;
    double prev_coef;
    uint32_t probe;
    double e_sd;
    uint32_t alt_p;
    double alt_e;
    uint32_t side_p;
    double side_e;
    uint32_t group; /* its program (0: one of its own) */
};

static void to_clients(const struct cl *c, uint32_t k, struct scaf_policy_client *out)
{
    for (uint32_t i = 0; i < k; i++) {
        out[i] = (struct scaf_policy_client){
            .max_threads = c[i].bound ? c[i].bound : 1u << 20,
            .prev = c[i].prev,
            .eff_team = c[i].p,
            .efficiency = c[i].e,
            .prev_coef = c[i].prev_coef,
            .probe = c[i].probe,
            .e_sd = c[i].e_sd,
            .alt_team = c[i].alt_p,
            .alt_efficiency = c[i].alt_e,
            .side_team = c[i].side_p,
            .side_efficiency = c[i].side_e,
            .group = c[i].group,
        };
    }
}

struct tcase {
    const char *name;
    const char *policy;
    uint32_t available, chunk, k;
    struct cl c[6];
    uint32_t want[6];
};

/* Worked numbers are in docs/policy.md. */
static const struct tcase cases[] = {
    /* equipartition */
    {"equi 16/3", "equipartition", 16, 1, 3, {{0}}, {6, 5, 5}},
    {"equi chunked 10/3 c2", "equipartition", 10, 2, 3, {{0}}, {4, 4, 2}},
    {"equi k > N gives 1", "equipartition", 3, 1, 5, {{0}}, {1, 1, 1, 1, 1}},
    {"equi bound excess to others", "equipartition", 12, 1, 3, {{.bound = 2}, {0}, {0}}, {2, 5, 5}},
    {"equi all at their bound", "equipartition", 12, 1, 3, {{.bound = 2}, {.bound = 3}, {.bound = 1}}, {2, 3, 1}},
    {"equi N < k*chunk", "equipartition", 5, 2, 3, {{0}}, {2, 2, 1}},
    {"equi single", "equipartition", 7, 2, 1, {{0}}, {7}},
    /* Programs, not processes: the clients of one program (a pool's parent and workers) share one share. */
    {"equi a pool of 4 beside a program", "equipartition", 16, 1, 5,
     {{.group = 1}, {.group = 1}, {.group = 1}, {.group = 1}, {0}}, {2, 2, 2, 2, 8}},
    {"equi programs of 2 and 3 clients", "equipartition", 12, 1, 5,
     {{.group = 7}, {.group = 7}, {.group = 9}, {.group = 9}, {.group = 9}}, {3, 3, 2, 2, 2}},
    {"equi programs of one client each = group 0", "equipartition", 16, 1, 3,
     {{.group = 4}, {.group = 5}, {.group = 6}}, {6, 5, 5}},
    /* One weighted partition, not one per program: a bounded worker's excess goes to every other client by
     * weight (its fellow worker a third, the program two), as a bounded client's always has. */
    {"equi a pool's bounded worker leaves its part to all by weight", "equipartition", 16, 1, 3,
     {{.group = 2, .bound = 1}, {.group = 2}, {0}}, {1, 5, 10}},
    {"equi a pool of workers of one thread (Dask's) leaves the rest to the program", "equipartition", 16, 1, 3,
     {{.group = 2, .bound = 1}, {.group = 2, .bound = 1}, {0}}, {1, 1, 14}},
    {"equi more clients than contexts: 1 each", "equipartition", 3, 1, 4,
     {{.group = 1}, {.group = 1}, {.group = 1}, {0}}, {1, 1, 1, 1}},
    /*
     * speedup: Amdahl through one point, sigma = (1/E - 1) / (p' - 1), contexts one at a time to the
     * largest S(p + 1) - S(p). E 0.9 at 8: sigma 0.016; E 0.5 at 8: sigma 0.143, whose 3rd thread adds
     * 0.58 while the other's 15th adds 0.66.
     */
    {"ep vs crit on 4", "speedup", 4, 1, 2, {F(2, 0.95, 0, 0, 0), F(2, 0.60, 0, 0, 0)}, {3, 1}},
    {"0.9 vs 0.5 at 8 on 16", "speedup", 16, 1, 2, {F(8, 0.9, 0, 0, 0), F(8, 0.5, 0, 0, 0)}, {14, 2}},
    /*
     * The same on 8 cores x 2 (chunk 2): past the cores the first one's curve, measured at 8 only, adds a
     * quarter of what Amdahl says (SMT_YIELD): 0.2 per context, under the second one's 0.25 from 6 to 8.
     */
    {"same, chunk 2: unmeasured SMT siblings are worth a quarter", "speedup", 16, 2, 2, {F(8, 0.9, 0, 0, 0), F(8, 0.5, 0, 0, 0)}, {8, 8}},
    /* Measured past the cores (at 12), its curve stands up to there: the measurement beats the prior. */
    {"chunk 2, measured past the cores: the curve up to its point", "speedup", 16, 2, 2, {F(12, 0.9, 0, 0, 0), F(4, 0.8, 0, 0, 0)}, {12, 4}},
    {"single client takes all", "speedup", 16, 1, 1, {F(8, 0.3, 0, 0, 0)}, {16}},
    {"single client up to its bound", "speedup", 16, 1, 1, {F(8, 0.9, 0, 5, 0)}, {5}},
    {"k > N gives 1", "speedup", 3, 1, 5, {F(2, 0.9, 0, 0, 0), F(2, 0.1, 0, 0, 0), F(0, UNKNOWN, 0, 0, 0), F(2, 0.5, 0, 0, 0), F(2, 0.7, 0, 0, 0)}, {1, 1, 1, 1, 1}},
    {"all unknown = equipartition", "speedup", 16, 1, 3, {F(0, UNKNOWN, 0, 0, 0), F(0, UNKNOWN, 0, 0, 0), F(0, UNKNOWN, 0, 0, 0)}, {6, 5, 5}},
    /* Unknown, a pool of four beside a program: a program's equal share each (a static split's), not 16/5. */
    {"all unknown, a pool beside a program", "speedup", 16, 1, 5,
     {{.p = 0, .e = UNKNOWN, .group = 3}, {.p = 0, .e = UNKNOWN, .group = 3}, {.p = 0, .e = UNKNOWN, .group = 3},
      {.p = 0, .e = UNKNOWN, .group = 3}, {.p = 0, .e = UNKNOWN}},
     {2, 2, 2, 2, 8}},
    /* Known alike, the same pool: programs of different sizes are no reason to keep unequal shares; the curves
     * decide, and like curves give each client the same. */
    {"known alike, a pool beside a program", "speedup", 16, 1, 4,
     {{.p = 4, .e = 0.8, .group = 3}, {.p = 4, .e = 0.8, .group = 3}, {.p = 4, .e = 0.8, .group = 3},
      {.p = 4, .e = 0.8}},
     {4, 4, 4, 4}},
    /*
     * The known clients of one program split what they hold equally: a pool's workers on reports 2% apart run
     * the same tasks in turn, and greedy on their noise alone gave them 4 to 6 of 24 (the pool's total, 18, is
     * still the curves' call).
     */
    {"a pool's workers on reports 2% apart split their program's contexts equally", "speedup", 24, 1, 5,
     {{.p = 4, .e = 0.80, .group = 3}, {.p = 4, .e = 0.78, .group = 3}, {.p = 4, .e = 0.82, .group = 3},
      {.p = 4, .e = 0.79, .group = 3}, {.p = 8, .e = 0.6}},
     {5, 5, 5, 5, 4}},
    /*
     * Equal whole chunks only: what is left over goes where the other curves gain. Greedy gives three workers 17
     * of 24 (6, 6, 5); 5 each, and the job beside them takes the remainder.
     */
    {"a pool's remainder after equal shares goes to the others", "speedup", 24, 1, 4,
     {{.p = 4, .e = 0.80, .group = 3}, {.p = 4, .e = 0.78, .group = 3}, {.p = 4, .e = 0.82, .group = 3},
      {.p = 8, .e = 0.7}},
     {5, 5, 5, 9}},
    /* Alone, nobody else takes it: back to the pool, one chunk at a time to its first clients. */
    {"a pool alone keeps its remainder", "speedup", 16, 1, 3,
     {{.p = 4, .e = 0.80, .group = 3}, {.p = 4, .e = 0.78, .group = 3}, {.p = 4, .e = 0.82, .group = 3}},
     {6, 5, 5}},
    /*
     * Five workers of one pool (Amdahl f 0.9: E 0.75 at 4, 0.5625 at 8) and a job (f 0.95, E 0.633 at 12) on
     * 48 contexts; the first worker is back from its shrink probe at 4. Moving it back to its fellows' share
     * gains 0.1 of a summed speedup of 26, under damping's 1%, so damping keeps the previous allocation; the
     * program's equal split of what it keeps still applies.
     */
    {"a worker back from its shrink probe rejoins its program's equal split", "speedup", 48, 1, 6,
     {{.p = 4, .e = 0.75, .prev = 4, .e_sd = 0.005, .group = 2}, {.p = 8, .e = 0.5625, .prev = 8, .e_sd = 0.005, .group = 2},
      {.p = 8, .e = 0.5625, .prev = 8, .e_sd = 0.005, .group = 2}, {.p = 8, .e = 0.5625, .prev = 8, .e_sd = 0.005, .group = 2},
      {.p = 8, .e = 0.5625, .prev = 8, .e_sd = 0.005, .group = 2}, {.p = 12, .e = 0.633, .prev = 12, .e_sd = 0.005}},
     {8, 7, 7, 7, 7, 12}},
    {"unknown gets an equal share", "speedup", 24, 1, 3, {F(8, 0.9, 0, 0, 0), F(8, 0.9, 0, 0, 0), F(0, UNKNOWN, 0, 0, 0)}, {8, 8, 8}},
    {"NaN efficiency is unknown", "speedup", 24, 1, 3, {F(8, 0.9, 0, 0, 0), F(8, 0.9, 0, 0, 0), F(8, NAN, 0, 0, 0)}, {8, 8, 8}},
    {"p'=1 without history is unknown", "speedup", 24, 1, 3, {F(8, 0.9, 0, 0, 0), F(8, 0.9, 0, 0, 0), F(1, 1.0, 0, 0, 0)}, {8, 8, 8}},
    {"p'=1 keeps a non-scaler down (prev_coef = E(2))", "speedup", 8, 1, 2, {F(1, 1.0, 1, 0, 0.3), F(4, 0.9, 7, 0, 0)}, {1, 7}},
    {"unknown beside known, equal share one chunk: two to learn its curve", "speedup", 8, 1, 5, {F(2, 0.9, 0, 0, 0), F(2, 0.9, 0, 0, 0), F(2, 0.9, 0, 0, 0), F(2, 0.9, 0, 0, 0), F(1, 1.0, 0, 0, 0)}, {2, 2, 1, 1, 2}},
    {"unknown gets two only while the known first chunks leave room", "speedup", 5, 1, 5, {F(2, 0.9, 0, 0, 0), F(2, 0.9, 0, 0, 0), F(2, 0.9, 0, 0, 0), F(2, 0.9, 0, 0, 0), F(0, UNKNOWN, 0, 0, 0)}, {1, 1, 1, 1, 1}},
    {"unknown at its bound of one keeps one", "speedup", 8, 1, 5, {F(2, 0.9, 0, 0, 0), F(2, 0.9, 0, 0, 0), F(2, 0.9, 0, 0, 0), F(2, 0.9, 0, 0, 0), F(0, UNKNOWN, 0, 1, 0)}, {2, 2, 2, 1, 1}},
    {"damping: a move that takes from nobody hands out what was idle", "speedup", 16, 1, 4, {F(3, 0.443, 3, 0, 0), F(3, 0.443, 3, 0, 0), F(3, 0.443, 3, 0, 0), F(3, 0.443, 3, 0, 0)}, {4, 4, 4, 4}},
    {"damping: a move within noise that takes from one is held", "speedup", 16, 1, 2, {F(8, 0.5, 8, 0, 0), F(8, 0.55, 8, 0, 0)}, {8, 8}},
    {"damping: from an allocation that left contexts idle, the move goes", "speedup", 16, 1, 2, {F(8, 0.5, 6, 0, 0), F(8, 0.55, 6, 0, 0)}, {7, 9}},
    {"damping reads both points of a curve pessimistically: an SMT pair back to 8 + 8", "speedup", 16, 2, 2, {FAN(10, 0.776, 8, 0.925, 10, 0.023), FAN(6, 0.6, 8, 0.525, 6, 0.018)}, {8, 8}},
    /* The compute program fitted through 10 and 14 alone reads S(8) 6.6: 10 + 6 holds. Its run at 8 says 7.4. */
    {"an SMT pair fitted through 10 and 14 stays at 10 + 6", "speedup", 16, 2, 2, {FAN(10, 0.78, 14, 0.6, 10, 0.02), FAN(6, 0.6, 8, 0.525, 6, 0.02)}, {10, 6}},
    {"the same pair with its measured 8 beside: back to 8 + 8", "speedup", 16, 2, 2, {FAS(10, 0.78, 14, 0.6, 8, 0.925, 10, 0.02), FAS(6, 0.6, 8, 0.525, 2, 0.89, 6, 0.02)}, {8, 8}},
    /*
     * A program alone on 256 contexts: its report at 144, a point at 72 and one at 146 read 4% low. The curve
     * through all three dips between 144 and 146 and rises beyond; one context at a time, greedy stopped at the
     * dip and left 112 contexts idle. Read off the curve's concave majorant, it takes the machine. Without the
     * dip (no side point) it always did.
     */
    {"alone, a dip read beside the report does not leave the machine idle", "speedup", 256, 1, 1,
     {FAS(144, 0.408, 72, 0.586, 146, 0.386, 144, 0.0014)}, {256}},
    {"alone, the same curve without the dip", "speedup", 256, 1, 1, {FAN(144, 0.408, 72, 0.586, 144, 0.0014)}, {256}},
    /* A curve that truly peaks (two far points, the larger slower) is not lifted by the majorant: it stays. */
    {"alone, past a measured peak: held below it", "speedup", 64, 1, 1, {FAN(32, 0.2, 16, 0.5, 32, 0.01)}, {16}},
    {"a side point that says a larger team ran faster is not believed", "speedup", 16, 2, 2, {FAS(10, 0.78, 14, 0.6, 8, 0.5, 10, 0.02), FAN(6, 0.6, 8, 0.525, 6, 0.02)}, {10, 6}},
    {"damping: alone, a growth noise could explain is still held", "speedup", 128, 1, 1, {FN(64, 0.05, 64, 0.01)}, {64}},
    {"p'=1: a prev_coef outside (0, 1] is none", "speedup", 8, 1, 2, {F(1, 1.0, 1, 0, -0.5), F(4, 0.9, 0, 0, 0)}, {4, 4}},
    {"E p' < 1 gets one chunk", "speedup", 8, 1, 2, {F(4, 0.1, 0, 0, 0), F(4, 0.9, 0, 0, 0)}, {1, 7}},
    {"E p' < 1, chunk 2", "speedup", 8, 2, 2, {F(4, 0.1, 0, 0, 0), F(4, 0.9, 0, 0, 0)}, {2, 6}},
    /*
     * E p' < 1 is a team measured slower than the program's own serial time: a peak at one thread. It gets
     * no spare context once E + 2 sd (sd 0.05 unknown) still says so; what no one gains from stays idle.
     */
    {"nobody gains: only the one within noise of serial takes the rest", "speedup", 8, 1, 2, {F(4, 0.1, 0, 0, 0), F(4, 0.2, 0, 0, 0)}, {1, 7}},
    {"both slower than serial: the rest stays idle", "speedup", 8, 1, 2, {F(4, 0.1, 0, 0, 0), F(4, 0.1, 0, 0, 0)}, {1, 1}},
    {"alone, slower than serial at 2: one thread", "speedup", 2, 1, 1, {F(2, 0.3, 0, 0, 0)}, {1}},
    /* S(8) = 0.8: the curve peaked below 8; the coherency-only curve through the point peaks at 2.5 (S(3) 1.53). */
    {"alone, slower than serial at 8 on 16 (sd 0.01): the peak the point allows", "speedup", 16, 1, 1, {FN(8, 0.1, 0, 0.01)}, {3}},
    /* E 0.0025 at 256 (S 0.63), a memory-bound program on a whole large machine: straight to the peak, 13. */
    {"alone, slower than serial at 256: the peak the point allows", "speedup", 256, 1, 1, {FN(256, 0.0025, 0, 0.0005)}, {13}},
    /*
     * Below E 0.05 a point is read with the coherency-only curve too: a lock-bound newcomer at E 0.026 on 128 of
     * 256 contexts (S 3.3, its peak near 22) goes to the peak its point allows, 21, beside a program at E 0.139
     * there; Amdahl through it gave it 32. Alone, once its sd is known, the rest stays idle (Amdahl: 256).
     */
    {"a point below E 0.05: the coherency-only curve, the peak it allows", "speedup", 256, 1, 2,
     {F(128, 0.139, 0, 0, 0), F(128, 0.026, 0, 0, 0)}, {235, 21}},
    {"alone below E 0.05, sd known: the peak its point allows, the rest idle", "speedup", 256, 1, 1,
     {FN(128, 0.026, 0, 0.001)}, {21}},
    {"alone below E 0.05, sd unknown: within noise of 0.05, takes all", "speedup", 256, 1, 1,
     {FN(128, 0.026, 0, 0)}, {256}},
    {"alone at 8, sd unknown: 0.05 is 0.4 of speedup, within noise", "speedup", 16, 1, 1, {F(8, 0.1, 0, 0, 0)}, {16}},
    {"alone at 2 and slower: drops to one despite damping", "speedup", 2, 1, 1, {F(2, 0.3, 2, 0, 0)}, {1}},
    {"alone, slower only within noise: takes all", "speedup", 2, 1, 1, {FN(2, 0.45, 0, 0.05)}, {2}},
    {"alone, slower but noisy: takes all", "speedup", 2, 1, 1, {FN(2, 0.3, 0, 0.15)}, {2}},
    {"alone, slower than serial, chunk 2: one chunk", "speedup", 8, 2, 1, {F(4, 0.1, 0, 0, 0)}, {2}},
    {"held at one thread, its curve falls: alone it stays down", "speedup", 2, 1, 1, {F(1, 1.0, 1, 0, 0.3)}, {1}},
    {"held at one thread, its curve rises: alone it takes all", "speedup", 2, 1, 1, {F(1, 1.0, 1, 0, 0.6)}, {2}},
    {"held at one thread and probed: alone it takes all", "speedup", 2, 1, 1, {FP(1, 1.0, 1, 0, 0.3)}, {2}},
    {"E > 1 read as 1", "speedup", 8, 1, 2, {F(4, 1.5, 0, 0, 0), F(4, 1.0, 0, 0, 0)}, {4, 4}},
    {"equal E, equal p' = equipartition", "speedup", 16, 1, 3, {F(5, 0.8, 0, 0, 0), F(5, 0.8, 0, 0, 0), F(5, 0.8, 0, 0, 0)}, {6, 5, 5}},
    {"bound excess to the others", "speedup", 16, 1, 3, {F(8, 0.9, 0, 3, 0), F(8, 0.5, 0, 0, 0), F(8, 0.5, 0, 0, 0)}, {3, 7, 6}},
    /* S(4) 0.4 peaks at 1.15 (one thread), S(4) 0.8 at 1.7 (S(2) 1.2): each at the peak its point allows. */
    {"known non-scalers, unknown newcomer", "speedup", 12, 1, 3, {F(4, 0.1, 0, 0, 0), F(4, 0.2, 0, 0, 0), F(0, UNKNOWN, 0, 0, 0)}, {1, 2, 9}},
    /*
     * Saturation seen: E 0.304 at 16 and 0.119 at 32 (S 4.9 then 3.8: the larger team is slower). The USL
     * curve through both peaks near 13, and the speedup policy leaves the rest idle.
     */
    {"two points, slower at 32: stops at the peak", "speedup", 32, 1, 1, {FA(16, 0.304, 32, 0.119)}, {13}},
    {"the same seen from 32", "speedup", 32, 1, 1, {FA(32, 0.119, 16, 0.304)}, {13}},
    {"two close points that rise: Amdahl, takes all", "speedup", 32, 1, 1, {FA(16, 0.5, 12, 0.6)}, {32}},
    /* S 6.4 at 8, 8 at 16: sigma 0.005, kappa 0.0039, the peak at 16. */
    {"two far points that rise: the curve flattens", "speedup", 32, 1, 1, {FA(16, 0.5, 8, 0.8)}, {16}},
    /* A larger team at a higher E than the smaller one: a phase changed since the older point. */
    {"a second point that contradicts the report is ignored", "speedup", 32, 1, 2, {FA(32, 0.9, 16, 0.1), F(32, 0.9, 0, 0, 0)}, {16, 16}},
    {"a second point at the same p' is ignored", "speedup", 32, 1, 1, {FA(16, 0.304, 16, 0.9)}, {32}},
    {"saturating next to a scaler", "speedup", 32, 1, 2, {FA(16, 0.304, 32, 0.119), F(16, 0.9, 0, 0, 0)}, {3, 29}},
    /* Probes (src/policy/probe.c): a probed client is unknown, so it gets an equal share. */
    {"probe: one-thread non-scaler gets an equal share", "speedup", 8, 1, 2, {FP(1, 1.0, 1, 0, 0.3), F(4, 0.9, 7, 0, 0)}, {4, 4}},
    {"probe: the others share the rest", "speedup", 12, 1, 3, {FP(1, 1.0, 1, 0, 0.3), F(4, 0.9, 6, 0, 0), F(4, 0.9, 5, 0, 0)}, {4, 4, 4}},
    {"probe: reports during the probe are set aside", "speedup", 8, 1, 2, {FP(2, 0.1, 4, 0, 0.3), F(4, 0.9, 4, 0, 0)}, {4, 4}},
    {"after the probe a fresh report decides", "speedup", 8, 1, 2, {F(4, 0.1, 4, 0, 0.3), F(4, 0.9, 4, 0, 0)}, {1, 7}},
    {"probe: fresh report that scales", "speedup", 8, 1, 2, {FP(4, 0.9, 4, 0, 0.3), F(4, 0.9, 4, 0, 0)}, {4, 4}},
    {"probe: among non-scalers it takes the rest", "speedup", 8, 1, 2, {FP(1, 1.0, 1, 0, 0.3), F(4, 0.1, 7, 0, 0)}, {7, 1}},
    {"probe: chunk 2", "speedup", 8, 2, 2, {FP(2, 1.0, 2, 0, 0.3), F(4, 0.9, 4, 0, 0)}, {4, 4}},
    {"probe: never kept by damping", "speedup", 4, 1, 2, {FP(1, 1.0, 1, 0, 0.3), F(2, 0.95, 3, 0, 0)}, {2, 2}},
    {"no probe: the ratchet case stays down", "speedup", 8, 1, 2, {F(1, 1.0, 1, 0, 0.3), F(4, 0.9, 7, 0, 0)}, {1, 7}},
    /*
     * Shrink probes: to two thirds in whole chunks (x1.5 away, where two points are fitted; at most the equal
     * share), then held; the others take the rest.
     */
    {"shrink: alone, to two thirds", "speedup", 32, 1, 1, {{.p = 32, .e = 0.3, .prev = 32, .probe = SCAF_PROBE_SHRINK}}, {21}},
    /*
     * Below E 0.05, lower where the coherency-only curve through the report peaks lower: E 0.04 at 32,
     * peak 6.4. At E 0.12 (peak 11.6), two thirds.
     */
    {"shrink: to the point's peak when lower", "speedup", 32, 1, 1,
     {{.p = 32, .e = 0.04, .prev = 32, .probe = SCAF_PROBE_SHRINK}}, {7}},
    {"shrink: above E 0.05, two thirds though the point's peak is lower", "speedup", 32, 1, 1,
     {{.p = 32, .e = 0.12, .prev = 32, .probe = SCAF_PROBE_SHRINK}}, {21}},
    {"shrink: a lock-bound newcomer at E 0.025 on 128 goes to 21", "speedup", 256, 1, 2,
     {{.p = 128, .e = 0.025, .prev = 128, .probe = SCAF_PROBE_SHRINK}, FN(128, 0.9, 128, 0.01)}, {21, 235}},
    {"shrink: held where it was put", "speedup", 32, 1, 1, {{.p = 32, .e = 0.12, .prev = 16, .probe = SCAF_PROBE_HOLD}}, {16}},
    {"shrink: chunk 4, two thirds in whole chunks", "speedup", 32, 4, 1, {{.p = 28, .e = 0.12, .prev = 28, .probe = SCAF_PROBE_SHRINK}}, {16}},
    {"shrink: the other takes what is freed", "speedup", 16, 1, 2, {{.p = 12, .e = 0.2, .prev = 12, .probe = SCAF_PROBE_SHRINK}, F(4, 0.9, 4, 0, 0)}, {8, 8}},
    {"shrink: at most the equal share", "speedup", 12, 1, 3, {{.p = 10, .e = 0.2, .prev = 10, .probe = SCAF_PROBE_SHRINK}, F(0, UNKNOWN, 0, 0, 0), F(0, UNKNOWN, 0, 0, 0)}, {4, 4, 4}},
    {"shrink: below two chunks it is not shrunk", "speedup", 8, 2, 1, {{.p = 2, .e = 0.45, .prev = 2, .probe = SCAF_PROBE_SHRINK}}, {8}},
    /*
     * Damping: the move to {14,2} is followed only if it still gains when the client that gains threads
     * is read at E - 2 sd and the one that loses them at E + 2 sd.
     */
    {"noise: a move within 2 sd of E is not followed", "speedup", 16, 1, 2, {FN(8, 0.9, 8, 0.35), FN(8, 0.5, 8, 0.35)}, {8, 8}},
    {"noise: the same move, quiet estimates", "speedup", 16, 1, 2, {FN(8, 0.9, 8, 0.01), FN(8, 0.5, 8, 0.01)}, {14, 2}},
    {"noise: unknown sd is read as 0.05", "speedup", 16, 1, 2, {FN(8, 0.9, 8, 0), FN(8, 0.5, 8, 0)}, {14, 2}},
    /*
     * Unknown sd at a small E is a tenth of E: a client just moved to 14 threads reads E 0.01 (S 0.14), its sd not
     * known yet. Read at E + 0.1 (0.05 absolute) it would be at S 1.54 and held there against the other's small
     * gain; read at E + 0.002 it is slower than serial, and both moves go through at once.
     */
    {"noise: unknown sd at a small E is a tenth of it", "speedup", 16, 1, 2, {FN(14, 0.01, 14, 0), FN(2, 0.55, 2, 0.01)}, {1, 15}},
    {"noise: a known sd at a small E stands", "speedup", 16, 1, 2, {FN(14, 0.01, 14, 0.05), FN(2, 0.55, 2, 0.01)}, {14, 2}},
    {"noise: E that wanders over its whole range never moves", "speedup", 16, 1, 2, {FN(8, 0.9, 8, 5.0), FN(8, 0.2, 8, 5.0)}, {8, 8}},
    {"damping keeps prev", "speedup", 16, 1, 2, {F(8, 0.9, 10, 0, 0), F(8, 0.5, 6, 0, 0)}, {10, 6}},
    {"damping lets a real change through", "speedup", 16, 1, 2, {F(8, 0.9, 8, 0, 0), F(8, 0.2, 8, 0, 0)}, {15, 1}},
    {"damping: arrival re-partitions", "speedup", 16, 1, 3, {F(8, 0.8, 8, 0, 0), F(8, 0.8, 8, 0, 0), F(0, UNKNOWN, 0, 0, 0)}, {6, 5, 5}},
    {"damping: prev sum != N is ignored", "speedup", 15, 1, 2, {F(8, 0.8, 8, 0, 0), F(8, 0.8, 8, 0, 0)}, {8, 7}},
    /*
     * consumption (min_gain 0.5): one point per client, Amdahl through it, sigma = (1/E - 1) / (p' - 1).
     * E = 0.4 at 16: sigma = 0.1, S(p) = 10p / (9 + p), S(p+1) - S(p) = 90 / ((10 + p)(9 + p)):
     * 0.58 at p = 3, 0.49 at p = 4, so it stops at 4.
     */
    {"cons: perfect scaler takes all", "consumption", 16, 1, 1, {F(8, 1.0, 0, 0, 0)}, {16}},
    {"cons: E > 1 read as 1", "consumption", 16, 1, 1, {F(8, 1.7, 0, 0, 0)}, {16}},
    {"cons: saturating alone stops at 4", "consumption", 16, 1, 1, {F(16, 0.4, 0, 0, 0)}, {4}},
    {"cons: two saturating, 8 idle", "consumption", 16, 1, 2, {F(16, 0.4, 0, 0, 0), F(16, 0.4, 0, 0, 0)}, {4, 4}},
    {"cons: a perfect scaler outbids", "consumption", 16, 1, 2, {F(16, 0.4, 0, 0, 0), F(8, 1.0, 0, 0, 0)}, {1, 15}},
    {"cons: unknown gets an equal share", "consumption", 16, 1, 2, {F(0, UNKNOWN, 0, 0, 0), F(16, 0.4, 0, 0, 0)}, {8, 4}},
    {"cons: all unknown = equipartition", "consumption", 16, 1, 3, {F(0, UNKNOWN, 0, 0, 0), F(0, UNKNOWN, 0, 0, 0), F(1, 1.0, 0, 0, 0)}, {6, 5, 5}},
    {"cons: probed = unknown", "consumption", 16, 1, 2, {FP(8, 0.1, 1, 0, 0.5), F(16, 0.4, 0, 0, 0)}, {8, 4}},
    {"cons: p'=1 uses prev_coef = E(2)", "consumption", 16, 1, 1, {F(1, 1.0, 4, 0, 1.0 / 1.1)}, {4}},
    {"cons: chunk 2 steps in 2s", "consumption", 16, 2, 1, {F(16, 0.4, 0, 0, 0)}, {4}},
    {"cons: bound", "consumption", 16, 1, 1, {F(8, 1.0, 0, 5, 0)}, {5}},
    {"cons: E = 0 gets one chunk", "consumption", 8, 2, 2, {F(4, 0.0, 0, 0, 0), F(0, UNKNOWN, 0, 0, 0)}, {2, 4}},
    /* sigma 0.066, kappa 0.0054: the 4th thread adds 0.59, the 5th 0.47. */
    {"cons: two points, slower at 32", "consumption", 32, 1, 1, {FA(16, 0.304, 32, 0.119)}, {4}},
    {"cons: k > N gives 1", "consumption", 2, 1, 3, {F(8, 1.0, 0, 0, 0), F(0, UNKNOWN, 0, 0, 0), F(4, 0.1, 0, 0, 0)}, {1, 1, 1}},
};

static void run_table(void)
{
    for (size_t n = 0; n < sizeof(cases) / sizeof(cases[0]); n++) {
        const struct tcase *tc = &cases[n];
        struct scaf_policy_client cl[6];
        uint32_t out[6];
        double coef[6];
        char got[64], want[64], msg[200];

        to_clients(tc->c, tc->k, cl);
        if (scaf_policy_run(tc->policy, tc->available, tc->chunk, tc->k, cl, out, coef) != 0) {
            fail(tc->name, strerror(errno));
            continue;
        }
        if (memcmp(out, tc->want, tc->k * sizeof(*out)) != 0) {
            fmt(got, sizeof(got), out, tc->k);
            fmt(want, sizeof(want), tc->want, tc->k);
            snprintf(msg, sizeof(msg), "[%s N=%u chunk=%u] got {%s}, want {%s}", tc->policy, tc->available,
                     tc->chunk, got, want);
            fail(tc->name, msg);
        }
    }
}

static int near(double a, double b)
{
    return fabs(a - b) < 1e-9 * (1 + fabs(b));
}

static void run_model(void)
{
    struct cl c[4] = {F(8, 0.9, 0, 0, 0), F(1, 1.0, 0, 0, -0.25), F(4, 0.1, 0, 0, 0), F(0, UNKNOWN, 0, 0, 0)};
    struct scaf_policy_client cl[4];
    struct scaf_policy_input in = {16, 1, 4, cl, 0};
    double coef[4], exact[4], c0 = 1.0 / (1.0 + (1.0 / 0.9 - 1.0) / 7.0), c2 = 1.0 / (1.0 + 2.0 * (1.0 / 0.1 - 1.0) / 12.0);
    char msg[200];

    to_clients(c, 4, cl);
    if (scaf_policy_speedup_model(&in, coef, exact) != 0) {
        fail("model", strerror(errno));
        return;
    }
    /*
     * coef = E(2) of the fitted curve, 1 / (1 + sigma + 2 kappa); 0 = no curve (a prev_coef outside (0, 1],
     * unknown). The third client is slower than serial (S(4) = 0.4): its curve is the coherency-only one through
     * the point, kappa = (1 / E - 1) / (p' (p' - 1)).
     */
    if (!near(coef[0], c0) || coef[1] != 0 || !near(coef[2], c2) || coef[3] != 0) {
        snprintf(msg, sizeof(msg), "coef %.6f %.6f %.6f %.6f, want %.6f 0 %.6f 0", coef[0], coef[1], coef[2], coef[3],
                 c0, c2);
        fail("model coefficients", msg);
    }
    /* Undamped: the unknown two an equal share (4), the falling curve one thread, the scaler the rest. */
    if (exact[0] != 7 || exact[1] != 4 || exact[2] != 1 || exact[3] != 4) {
        snprintf(msg, sizeof(msg), "exact %.4f %.4f %.4f %.4f, want 7 4 1 4", exact[0], exact[1], exact[2], exact[3]);
        fail("model exact shares", msg);
    }
    /* No known client: coef 0 (no model), equal shares. */
    struct cl u[2] = {F(0, UNKNOWN, 0, 0, 0), F(1, 1.0, 0, 0, 0)};
    to_clients(u, 2, cl);
    in.nclients = 2;
    if (scaf_policy_speedup_model(&in, coef, exact) != 0 || coef[0] != 0 || coef[1] != 0 || exact[0] != 8 ||
        exact[1] != 8)
        fail("model with nothing known", "want coef 0 and exact 8 each");
}

/* S(p) of a client's curve passes through what was measured, and keeps the USL shape between and beyond. */
static void run_curve_at(void)
{
    /* Near-linear to 8, flat after (SMT past the cores): no USL curve with sigma >= 0 passes both points. */
    struct scaf_policy_client knee = {.max_threads = 64, .eff_team = 12, .efficiency = 0.679,
                                      .alt_team = 8, .alt_efficiency = 0.925};
    struct scaf_policy_client one = {.max_threads = 64, .eff_team = 8, .efficiency = 0.9};
    struct scaf_policy_client none = {.max_threads = 64};
    double sigma, kappa, u16, s16;
    char msg[200];

    if (scaf_policy_curve(&knee, &sigma, &kappa) != 2 || sigma != 0.0 || !(kappa > 0.0))
        fail("curve: knee", "want a two-point fit on the sigma = 0 boundary");
    if (!near(scaf_policy_curve_at(&knee, 8, 16, 1), 0.925 * 8) || !near(scaf_policy_curve_at(&knee, 12, 16, 1), 0.679 * 12)) {
        snprintf(msg, sizeof(msg), "S(8) %.4f, S(12) %.4f: want the measured 7.4 and 8.148",
                 scaf_policy_curve_at(&knee, 8, 16, 1), scaf_policy_curve_at(&knee, 12, 16, 1));
        fail("curve: through the measured points", msg);
    }
    /* Beyond the larger point: the USL shape, shifted by the residual at 12. */
    u16 = 16.0 / (1.0 + kappa * 16 * 15);
    s16 = u16 + 0.679 * 12 - 12.0 / (1.0 + kappa * 12 * 11);
    if (!near(scaf_policy_curve_at(&knee, 16, 16, 1), s16))
        fail("curve: beyond the points", "not the USL shape from the last point");
    if (!near(scaf_policy_curve_at(&one, 8, 16, 1), 7.2) || !near(scaf_policy_curve_at(&one, 16, 16, 1), 16.0 / (1.0 + 15.0 / 63)))
        fail("curve: one point", "want Amdahl through (8, 7.2)");
    if (!isnan(scaf_policy_curve_at(&none, 4, 16, 1)) || !isnan(scaf_policy_curve_at(NULL, 4, 16, 1)))
        fail("curve: none", "want NaN");
    /*
     * SMT's prior, 16 contexts in chunks of 2 (8 cores): up to the cores and the last measured point as without it, past both a quarter of
     * the slope. The one-point curve measured at 8 grows from 7.2 at 8 at a quarter of Amdahl's rate; the knee
     * curve, measured at 12, from its point at 12.
     */
    if (!near(scaf_policy_curve_at(&one, 6, 16, 2), scaf_policy_curve_at(&one, 6, 16, 1)) ||
        !near(scaf_policy_curve_at(&one, 8, 16, 2), 7.2) ||
        !near(scaf_policy_curve_at(&one, 16, 16, 2), 7.2 + 0.25 * (16.0 / (1.0 + 15.0 / 63) - 7.2)))
        fail("curve: SMT's prior, one point", "want Amdahl to the cores, a quarter of its slope past them");
    if (!near(scaf_policy_curve_at(&knee, 12, 16, 2), 0.679 * 12) ||
        !near(scaf_policy_curve_at(&knee, 16, 16, 2), 0.679 * 12 + 0.25 * (s16 - 0.679 * 12)))
        fail("curve: SMT's prior, measured past the cores", "want the curve to its point at 12, a quarter past it");
}

static void run_errors_and_registry(void)
{
    struct scaf_policy_client cl[2] = {{.max_threads = 4}, {.max_threads = 4}};
    uint32_t out[2];

    for (size_t p = 0; p < scaf_policy_count(); p++) {
        const struct scaf_policy *pol = scaf_policy_at(p);
        struct scaf_policy_input zero_n = {0, 1, 2, cl, 0}, zero_chunk = {4, 0, 2, cl, 0}, no_clients = {4, 1, 2, NULL, 0};
        struct scaf_policy_input none = {4, 1, 0, NULL, 0};

        errno = 0;
        if (pol->decide(&zero_n, out, NULL) != -1 || errno != EINVAL)
            fail(pol->name, "contexts 0 must be EINVAL");
        errno = 0;
        if (pol->decide(&zero_chunk, out, NULL) != -1 || errno != EINVAL)
            fail(pol->name, "chunk 0 must be EINVAL");
        errno = 0;
        if (pol->decide(&no_clients, out, NULL) != -1 || errno != EINVAL)
            fail(pol->name, "NULL clients must be EINVAL");
        if (pol->decide(&none, NULL, NULL) != 0)
            fail(pol->name, "no clients must succeed");
        if (scaf_policy_lookup(pol->name) != pol)
            fail(pol->name, "lookup by name");
    }
    if (scaf_policy_count() != 3 || strcmp(scaf_policy_at(0)->name, "speedup") != 0 ||
        strcmp(scaf_policy_at(1)->name, "equipartition") != 0 || strcmp(scaf_policy_at(2)->name, "consumption") != 0 ||
        scaf_policy_at(3) != NULL || !scaf_policy_at(0)->leaves_idle || scaf_policy_at(1)->leaves_idle ||
        !scaf_policy_at(2)->leaves_idle)
        fail("registry", "want speedup (default), equipartition, consumption (speedup and consumption may leave contexts idle)");
    errno = 0;
    if (scaf_policy_lookup("nosuch") != NULL || errno != ENOENT)
        fail("registry", "unknown name must be NULL with ENOENT");
    errno = 0;
    if (scaf_policy_run("nosuch", 4, 1, 2, cl, out, NULL) != -1 || errno != ENOENT)
        fail("registry", "run of unknown name must be -1 with ENOENT");
    if (scaf_policy_client_size() != sizeof(struct scaf_policy_client))
        fail("registry", "scaf_policy_client_size");
}

/* Values no sane caller sends still give a valid allocation, never an error or UB. */
static void run_garbage(void)
{
    struct scaf_policy_client cl[4] = {
        {.max_threads = 0, .prev = UINT32_MAX, .eff_team = UINT32_MAX, .efficiency = 1e308, .prev_coef = 1e308},
        {.max_threads = UINT32_MAX, .prev = 3, .eff_team = 2, .efficiency = -INFINITY, .prev_coef = -1e308,
         .alt_team = 7, .alt_efficiency = 1e-300},
        {.max_threads = 1, .prev = 0, .eff_team = 0, .efficiency = INFINITY, .prev_coef = NAN},
        {.max_threads = 2, .prev = 1, .eff_team = 1, .efficiency = NAN, .prev_coef = 1e308,
         .alt_team = UINT32_MAX, .alt_efficiency = -INFINITY},
    };

    for (size_t p = 0; p < scaf_policy_count(); p++) {
        const struct scaf_policy *pol = scaf_policy_at(p);
        struct scaf_policy_input in = {64, 3, 4, cl, 0};
        uint32_t out[4];
        double coef[4];
        char msg[200];

        if (pol->decide(&in, out, coef) != 0) {
            fail(pol->name, "garbage fields must still give an allocation");
            continue;
        }
        if ((pol->leaves_idle ? out[0] + out[1] + out[2] + out[3] > 64 : out[0] + out[1] + out[2] + out[3] != 64) ||
            out[2] != 1 || out[3] > 2 || !out[0] || !out[1]) {
            snprintf(msg, sizeof(msg), "garbage fields gave %u %u %u %u", out[0], out[1], out[2], out[3]);
            fail(pol->name, msg);
        }
        for (int i = 0; i < 4; i++)
            if (!isfinite(coef[i]))
                fail(pol->name, "coef must stay finite");
    }
}

static uint64_t rng_state = 0x9011C7ULL;

static uint32_t rnd(uint32_t bound)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32) % bound;
}

static double urand(void)
{
    return rnd(1u << 30) / (double)(1u << 30);
}

/* Every policy, random snapshots: >= 1 each, bounds, no context twice, exact use, determinism. */
static void run_properties(uint32_t rounds)
{
    uint32_t checked = 0, equal_checked = 0;

    for (uint32_t r = 0; r < rounds && failures < 20; r++) {
        uint32_t k = 1 + rnd(MAXK), n = rnd(4) == 0 ? 1 + rnd(k) : 1 + rnd(512), chunk = 1 + rnd(4);
        struct scaf_policy_client cl[MAXK];
        uint32_t out[MAXK], again[MAXK], eq[MAXK];
        uint64_t sum_cap = 0;
        int bounded = rnd(3) == 0;
        char where[96], msg[200];

        for (uint32_t i = 0; i < k; i++) {
            cl[i] = (struct scaf_policy_client){
                .max_threads = bounded && rnd(2) ? 1 + rnd(n + 2) : n,
                .prev = rnd(3) ? rnd(n + 1) : 0,
                .eff_team = rnd(n + 2),
                .efficiency = rnd(5) == 0 ? -1.0 : rnd(10) == 0 ? NAN : 1.3 * urand(),
                .prev_coef = rnd(3) == 0 ? 4 * urand() - 1 : 0,
                .alt_team = rnd(4) == 0 ? rnd(n + 2) : 0,
                .alt_efficiency = rnd(10) == 0 ? NAN : 1.3 * urand(),
            };
            sum_cap += cl[i].max_threads < n ? cl[i].max_threads : n;
        }
        for (size_t p = 0; p < scaf_policy_count(); p++) {
            const struct scaf_policy *pol = scaf_policy_at(p);
            struct scaf_policy_input in = {n, chunk, k, cl, 0};
            uint64_t sum = 0;

            snprintf(where, sizeof(where), "%s round %u (N=%u k=%u chunk=%u)", pol->name, r, n, k, chunk);
            if (pol->decide(&in, out, NULL) != 0 || pol->decide(&in, again, NULL) != 0) {
                fail(where, strerror(errno));
                continue;
            }
            checked++;
            if (memcmp(out, again, k * sizeof(*out)) != 0)
                fail(where, "not deterministic");
            for (uint32_t i = 0; i < k; i++) {
                sum += out[i];
                if (out[i] < 1)
                    fail(where, "a client got 0");
                if (k <= n && out[i] > cl[i].max_threads) {
                    snprintf(msg, sizeof(msg), "client %u got %u over its bound %u", i, out[i], cl[i].max_threads);
                    fail(where, msg);
                }
                if (k > n && out[i] != 1)
                    fail(where, "k > N must give everyone 1");
            }
            if (k <= n && pol->leaves_idle ? sum > n : k <= n && sum != (sum_cap < n ? sum_cap : n)) {
                snprintf(msg, sizeof(msg), "sum %llu, want %llu (contexts given twice or left idle)",
                         (unsigned long long)sum, (unsigned long long)(sum_cap < n ? sum_cap : n));
                fail(where, msg);
            }
        }
        /*
         * Equal efficiencies at equal p', new clients: speedup must be exactly equipartition, or one chunk
         * each when that team was measured slower than serial even read 2 sd (0.05 unknown) high.
         */
        {
            struct scaf_policy_input in = {n, chunk, k, cl, 0};
            double e = 1.2 * urand();
            uint32_t p = rnd(n + 2);

            for (uint32_t i = 0; i < k; i++) {
                cl[i].efficiency = e;
                cl[i].eff_team = p;
                cl[i].prev = 0;
                cl[i].prev_coef = 0;
                cl[i].alt_team = 0;
            }
            if (scaf_policy_speedup(&in, out, NULL) != 0 || scaf_policy_equipartition(&in, eq, NULL) != 0) {
                fail("equal efficiencies", strerror(errno));
                continue;
            }
            if (p >= 2 && (e + 0.1) * p < 1.0 && k <= n)
                for (uint32_t i = 0; i < k; i++)
                    eq[i] = (uint64_t)k * chunk <= n ? (chunk < cl[i].max_threads ? chunk : cl[i].max_threads) : 1;
            equal_checked++;
            if (memcmp(out, eq, k * sizeof(*out)) != 0) {
                char a[200], b[200];

                fmt(a, sizeof(a), out, k);
                fmt(b, sizeof(b), eq, k);
                snprintf(msg, sizeof(msg), "E=%.3f p'=%u: speedup {%.60s} != equipartition {%.60s}", e, p, a, b);
                fail("equal efficiencies", msg);
            }
        }
    }
    printf("policy properties: %u random decisions checked, %u equal-efficiency snapshots == equipartition\n",
           checked, equal_checked);
}

/*
 * Noisy equal efficiencies, fed back as a daemon would: p' = prev = last
 * allocation, prev_coef = last coef. Counts rounds where any allocation
 * changed, with the real (damped) policy and with the same model rounded
 * without damping.
 */
static uint32_t noisy_rounds(uint32_t n, uint32_t k, uint32_t chunk, int damped, uint32_t rounds)
{
    struct scaf_policy_client cl[MAXK];
    struct scaf_policy_input in = {n, chunk, k, cl, 0};
    uint32_t out[MAXK], last[MAXK], changes = 0;
    double coef[MAXK], exact[MAXK];

    for (uint32_t i = 0; i < k; i++)
        cl[i] = (struct scaf_policy_client){.max_threads = n, .efficiency = -1.0};
    for (uint32_t r = 0; r < rounds; r++) {
        uint64_t sum = 0;
        int rc;

        if (damped) {
            rc = scaf_policy_speedup(&in, out, coef);
        } else {
            uint32_t bound[MAXK];

            for (uint32_t i = 0; i < k; i++)
                bound[i] = cl[i].max_threads;
            rc = scaf_policy_speedup_model(&in, coef, exact);
            if (rc == 0)
                rc = scaf_intpart_chunked(exact, k, n, chunk, bound, out);
        }
        if (rc != 0) {
            fail("damping", strerror(errno));
            return 0;
        }
        for (uint32_t i = 0; i < k; i++)
            sum += out[i];
        if (sum != n)
            fail("damping", "sum invariant broken");
        if (r > 0 && memcmp(out, last, k * sizeof(*out)) != 0)
            changes++;
        memcpy(last, out, k * sizeof(*out));
        for (uint32_t i = 0; i < k; i++) {
            cl[i].prev = out[i];
            cl[i].eff_team = out[i];
            cl[i].prev_coef = coef[i];
            cl[i].efficiency = 0.8 + 0.1 * (urand() - 0.5); /* 0.8 +- 0.05 */
        }
    }
    return changes;
}

/* The consumption policy's threshold: (min_gain, want) for one client with E = 0.4 at 16 on 16 contexts. */
static void run_min_gain(void)
{
    static const struct {
        double min_gain;
        uint32_t want;
    } rows[] = {
        {0.5, 4},    /* the default, named */
        {0.0, 4},    /* 0 = the default */
        {NAN, 4},    /* not finite = the default */
        {-1.0, 4},   /* negative = the default */
        {0.3, 8},    /* 90 / ((10 + p)(9 + p)) >= 0.3 up to p = 7 */
        {0.9, 1},    /* even the second thread adds only 0.82 */
        {0.001, 16}, /* a tiny threshold gives everything that helps at all */
    };
    struct scaf_policy_client cl = {.max_threads = 64, .eff_team = 16, .efficiency = 0.4};
    char msg[120];

    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        uint32_t out = 0;
        double coef = 0;

        if (scaf_policy_run_gain("consumption", 16, 1, rows[r].min_gain, 1, &cl, &out, &coef) != 0 ||
            out != rows[r].want || fabs(coef - 1.0 / 1.1) > 1e-12) {
            snprintf(msg, sizeof(msg), "min_gain %g: got %u (coef %g), want %u (coef E(2) = 1/1.1)",
                     rows[r].min_gain, out, coef, rows[r].want);
            fail("consumption min_gain", msg);
        }
    }
    /* Other policies ignore it. */
    {
        uint32_t out = 0;

        if (scaf_policy_run_gain("speedup", 16, 1, 0.9, 1, &cl, &out, NULL) != 0 || out != 16)
            fail("min_gain", "speedup must ignore it");
    }
}

static void run_damping(void)
{
    static const struct {
        uint32_t n, k, chunk;
    } setups[] = {{16, 2, 1}, {64, 4, 1}, {48, 3, 2}, {128, 2, 1}, {256, 8, 1}};
    const uint32_t rounds = 200, limit = 5;
    char msg[200];

    for (size_t s = 0; s < sizeof(setups) / sizeof(setups[0]); s++) {
        uint64_t seed = rng_state;
        uint32_t d = noisy_rounds(setups[s].n, setups[s].k, setups[s].chunk, 1, rounds);

        rng_state = seed; /* the same noise for both */
        uint32_t u = noisy_rounds(setups[s].n, setups[s].k, setups[s].chunk, 0, rounds);

        printf("damping N=%-3u k=%u chunk=%u, E=0.8+-0.05, %u rounds: %u changes damped, %u undamped\n",
               setups[s].n, setups[s].k, setups[s].chunk, rounds, d, u);
        if (d > limit) {
            snprintf(msg, sizeof(msg), "N=%u k=%u: %u changes in %u rounds (limit %u)", setups[s].n, setups[s].k, d,
                     rounds, limit);
            fail("damping", msg);
        }
    }
    /* Damping must not hide a real change: one client's efficiency collapses. */
    {
        struct scaf_policy_client cl[2] = {
            {.max_threads = 16, .prev = 8, .eff_team = 8, .efficiency = 0.8},
            {.max_threads = 16, .prev = 8, .eff_team = 8, .efficiency = 0.25},
        };
        struct scaf_policy_input in = {16, 1, 2, cl, 0};
        uint32_t out[2];

        if (scaf_policy_speedup(&in, out, NULL) != 0 || out[1] >= 8)
            fail("damping", "a collapsed efficiency must lose threads at once");
    }
}

/* The probe clock: rounds of (time, previous allocation, p' reported) and whether each is a probe. */
struct probe_round {
    uint64_t t_ms;
    uint32_t prev, p;
    int want;
};

static void run_probe_table(void)
{
    static const struct {
        const char *name;
        uint32_t chunk;
        struct probe_round r[10];
        int n;
    } cases[] = {
        {"never at one chunk: no probe", 1, {{0, 4, 4, 0}, {20000, 3, 3, 0}, {40000, 2, 2, 0}}, 3},
        {"new client (prev 0): no probe", 1, {{0, 0, 0, 0}, {20000, 0, 0, 0}}, 2},
        {"at one chunk 10 s: probed until it reports from 2+", 1,
         {{0, 1, 1, 0}, {9999, 1, 1, 0}, {10000, 1, 1, 1}, {10250, 2, 1, 1}, {10500, 2, 2, 1}, {11000, 2, 2, 0},
          {11250, 1, 2, 0}, {30999, 1, 1, 0}, {31000, 1, 1, 1}},
         9},
        {"a report that never comes: the probe ends after 5 s", 1,
         {{0, 1, 1, 0}, {10000, 1, 1, 1}, {14999, 2, 1, 1}, {15000, 2, 1, 0}, {15250, 1, 1, 0}, {35000, 1, 1, 1}},
         6},
        {"probes that end at one chunk back off: 10, 20, 40, 40 s", 1,
         {{0, 1, 1, 0}, {10000, 1, 1, 1}, {11000, 2, 2, 0}, {31000, 1, 1, 1}, {32000, 2, 2, 0}, {72000, 1, 1, 1},
          {73000, 2, 2, 0}, {112999, 1, 1, 0}, {113000, 1, 1, 1}},
         9},
        {"a probe after which it stays up resets the backoff", 1,
         {{0, 1, 1, 0}, {10000, 1, 1, 1}, {11000, 2, 2, 0}, {31000, 1, 1, 1}, {32000, 2, 2, 0}, {32250, 2, 2, 0},
          {34000, 2, 2, 0}, {35000, 1, 1, 0}, {45000, 1, 1, 1}},
         9},
        {"leaving one chunk resets the clock", 1,
         {{0, 1, 1, 0}, {8000, 1, 1, 0}, {9000, 3, 3, 0}, {10000, 1, 3, 0}, {19999, 1, 1, 0}, {20000, 1, 1, 1}},
         6},
        {"chunk 2: one chunk is 2", 2, {{0, 2, 2, 0}, {10000, 2, 2, 1}, {11000, 4, 4, 0}}, 3},
    };
    const struct scaf_probe_timing tm = {10000000000ull, 1000000000ull, 5000000000ull};

    for (size_t n = 0; n < sizeof(cases) / sizeof(cases[0]); n++) {
        struct scaf_probe st = {0};

        for (int j = 0; j < cases[n].n; j++) {
            const struct probe_round *r = &cases[n].r[j];
            int got = scaf_probe_step(&st, 1000000000ull + r->t_ms * 1000000ull, r->prev, cases[n].chunk, r->p, &tm);
            char msg[160];

            snprintf(msg, sizeof(msg), "round %d (t=%llu ms, prev %u, p' %u): probe %d, want %d", j,
                     (unsigned long long)r->t_ms, r->prev, r->p, got, r->want);
            if (got != r->want)
                fail(cases[n].name, msg);
        }
    }
    {
        struct scaf_probe st = {0};
        const struct scaf_probe_timing off = {0, 1, 1};
        int any = 0;

        for (uint64_t t = 0; t < 100; t++)
            any |= scaf_probe_step(&st, t * 1000000000ull, 1, 1, 1, &off);
        if (any)
            fail("interval 0 never probes", "probed");
        if (scaf_probe_step(NULL, 1, 1, 1, 1, &tm) != 0 || scaf_probe_step(&st, 1, 1, 1, 1, NULL) != 0)
            fail("NULL arguments", "probed");
    }
}

/* The shrink clock: rounds of (time, prev, p', E, alt_team) and what it returns. */
static void run_shrink_table(void)
{
    static const struct {
        const char *name;
        struct {
            uint32_t t_ms, prev, p;
            double e;
            uint32_t alt;
            int want;
        } r[8];
        int n;
    } cases[] = {
        {"steady 10 s x E / 0.5 at low E: probe, hold until it reports from the half",
         {{0, 32, 32, 0.4, 0, 0}, {7999, 32, 32, 0.4, 0, 0}, {8000, 32, 32, 0.4, 0, 1}, {8250, 16, 32, 0.4, 0, 2},
          {8500, 16, 32, 0.4, 0, 2}, {9000, 16, 16, 0.6, 32, 0}, {9250, 12, 16, 0.6, 32, 0}},
         7},
        {"E 0.05: after the hold (1 s), not sooner", {{0, 256, 256, 0.05, 0, 0}, {999, 256, 256, 0.05, 0, 0},
                                                         {1000, 256, 256, 0.05, 0, 1}}, 3},
        /* Below E 0.05 the floor shrinks with E: 0.2 s at E 0.01, as 10 s x E / 0.5 is. */
        {"E 0.01: after 0.2 s", {{0, 256, 256, 0.01, 0, 0}, {199, 256, 256, 0.01, 0, 0}, {200, 256, 256, 0.01, 0, 1}},
         3},
        {"E 0.002: the floor, 40 ms", {{0, 256, 256, 0.002, 0, 0}, {39, 256, 256, 0.002, 0, 0},
                                       {40, 256, 256, 0.002, 0, 1}}, 3},
        {"E 0.1: after 10 s x E / 0.5 = 2 s", {{0, 64, 64, 0.1, 0, 0}, {1999, 64, 64, 0.1, 0, 0},
                                              {2000, 64, 64, 0.1, 0, 1}}, 3},
        {"E >= 0.5: never", {{0, 32, 32, 0.5, 0, 0}, {20000, 32, 32, 0.5, 0, 0}}, 2},
        {"a far second point already: never", {{0, 32, 32, 0.1, 16, 0}, {20000, 32, 32, 0.1, 16, 0},
                                                {40000, 32, 32, 0.1, 48, 0}}, 3},
        {"a close second point does not stop it", {{0, 32, 32, 0.1, 24, 0}, {2500, 32, 32, 0.1, 24, 1}}, 2},
        {"the allocation moved: the clock restarts", {{0, 32, 32, 0.25, 0, 0}, {4000, 30, 30, 0.25, 0, 0},
                                                      {8999, 30, 30, 0.25, 0, 0}, {9000, 30, 30, 0.25, 0, 1}}, 4},
        {"report from another team: never", {{0, 32, 32, 0.1, 0, 0}, {20000, 32, 16, 0.1, 0, 0}}, 2},
        {"too small to halve", {{0, 3, 3, 0.1, 0, 0}, {20000, 3, 3, 0.1, 0, 0}}, 2},
        {"no report comes: the probe ends after 5 s", {{0, 32, 32, 0.1, 0, 0}, {2500, 32, 32, 0.1, 0, 1},
                                                        {7499, 16, 32, 0.1, 0, 2}, {7500, 16, 32, 0.1, 0, 0}}, 4},
    };
    const struct scaf_probe_timing tm = {10000000000ull, 1000000000ull, 5000000000ull};

    for (size_t n = 0; n < sizeof(cases) / sizeof(cases[0]); n++) {
        struct scaf_shrink st = {0};

        for (int j = 0; j < cases[n].n; j++) {
            int got = scaf_shrink_step(&st, 1000000000ull + cases[n].r[j].t_ms * 1000000ull, cases[n].r[j].prev, 1,
                                       cases[n].r[j].p, cases[n].r[j].e, cases[n].r[j].alt, false, &tm);
            char msg[120];

            snprintf(msg, sizeof(msg), "round %d (t=%u ms): %d, want %d", j, cases[n].r[j].t_ms, got,
                     cases[n].r[j].want);
            if (got != cases[n].r[j].want)
                fail(cases[n].name, msg);
        }
    }
    if (scaf_shrink_step(NULL, 1, 32, 1, 32, 0.1, 0, false, &tm) != 0)
        fail("shrink: NULL state", "probed");
    {
        struct scaf_shrink st = {0};

        for (uint32_t t_ms = 0; t_ms <= 20000; t_ms += 250)
            if (scaf_shrink_step(&st, 1000000000ull + t_ms * 1000000ull, 32, 1, 32, 0.1, 24, true, &tm) != 0)
                fail("shrink: a close smaller team measured slower (climbing)", "probed");
    }
}

/* Whether a client measured first at FIRST_TEAM (E around FIRST_E), then held at THEN_TEAM (E around THEN_E),
 * is shrink-probed within 30 s of its holding, the real state stepped at 4 Hz with a little noise. */
static int probed_after(uint32_t first_team, double first_e, uint32_t then_team, double then_e)
{
    struct scaf_client_state st;
    struct scaf_policy_client pol;
    uint64_t now = 1000000000ull;

    memset(&st, 0, sizeof st);
    for (int k = 0; k < 12; k++, now += 250000000ull) {
        memset(&pol, 0, sizeof pol);
        scaf_client_state_step(&st, now, 10000000000ull, first_team, 1, first_team, first_e + (k % 2 ? 0.002 : -0.002),
                               &pol);
    }
    for (int k = 0; k < 120; k++, now += 250000000ull) {
        memset(&pol, 0, sizeof pol);
        scaf_client_state_step(&st, now, 10000000000ull, then_team, 1, then_team, then_e + (k % 2 ? 0.002 : -0.002),
                               &pol);
        if (pol.probe == SCAF_PROBE_SHRINK)
            return 1;
    }
    return 0;
}

/*
 * The climbing gate through the state the daemon steps: no shrink probe where a team on the other side was
 * measured slower beyond noise, since the curve still rises into the allocation. From below: a job held at 144
 * of 256 at E 0.41, its run at 128 measured first; at E 0.443 there (speedup 56.7 against 59.0, beyond twice the
 * noise) no probe comes in 30 s; at E 0.5 there (64 against 59: past a peak) one comes. From above: the job
 * beside a pool on 256 contexts, held at 128 at E 0.44, its run at 147 measured first at E 0.403 (speedup 59.2
 * against 56.3 at 128: a curve that peaks once still rises into 128); at E 0.36 there (52.9: it may peak below
 * 128) a probe comes.
 */
static void shrink_climbing(void)
{
    static const struct {
        uint32_t first_team;
        double first_e;
        uint32_t then_team;
        double then_e;
        int probed;
        const char *why;
    } ROWS[] = {
        {128, 0.443, 144, 0.41, 0, "climbing (E 0.443 at 128, 0.41 at 144)"},
        {128, 0.5, 144, 0.41, 1, "past a peak (E 0.5 at 128, 0.41 at 144)"},
        {147, 0.403, 128, 0.44, 0, "a larger team faster, climbing (E 0.403 at 147, 0.44 at 128)"},
        {147, 0.36, 128, 0.44, 1, "a larger team slower (E 0.36 at 147, 0.44 at 128)"},
    };

    for (size_t i = 0; i < sizeof ROWS / sizeof *ROWS; i++) {
        int got = probed_after(ROWS[i].first_team, ROWS[i].first_e, ROWS[i].then_team, ROWS[i].then_e);

        if (got != ROWS[i].probed)
            fail(ROWS[i].why, got ? "probed" : "never probed");
    }
}

/*
 * The ratchet, closed loop: a client whose curve fell is put on one thread;
 * then its program changes phase and would scale. With the probe clock fed
 * as the daemon feeds it, it must regain a share; without, it never does.
 */
static void run_ratchet(void)
{
    for (int with_probe = 0; with_probe <= 1; with_probe++) {
        struct scaf_probe st = {0};
        const struct scaf_probe_timing tm = {with_probe ? 10000000000ull : 0, 1000000000ull, 5000000000ull};
        struct scaf_policy_client cl[2] = {{.max_threads = 8, .prev = 4, .eff_team = 4, .efficiency = 0.1},
                                           {.max_threads = 8, .prev = 4, .eff_team = 4, .efficiency = 0.9}};
        uint32_t out[2];
        double coef[2];
        double late_sum = 0;
        int late_n = 0;

        for (int round = 0; round < 240; round++) { /* 4 Hz for 60 s; phase change at 20 s */
            uint64_t now = 1000000000ull + (uint64_t)round * 250000000ull;
            int scalable = round >= 80;

            /* What the layer reports: from the team it was given, one thread says nothing. */
            cl[0].eff_team = cl[0].prev;
            cl[0].efficiency = cl[0].prev <= 1 ? 1.0 : scalable ? 0.9 : 0.1;
            cl[0].probe = (uint32_t)scaf_probe_step(&st, now, cl[0].prev, 1, cl[0].eff_team, &tm);
            if (scaf_policy_run("speedup", 8, 1, 2, cl, out, coef) != 0) {
                fail("ratchet loop", strerror(errno));
                return;
            }
            for (int i = 0; i < 2; i++) {
                cl[i].prev = out[i];
                cl[i].prev_coef = coef[i];
            }
            cl[1].eff_team = out[1];
            if (round >= 160) {
                late_sum += out[0];
                late_n++;
            }
            if (round == 79 && out[0] != 1)
                fail("ratchet loop", "the non-scaling phase should hold one thread");
        }
        if (with_probe && late_sum / late_n < 3.5) {
            char msg[100];
            snprintf(msg, sizeof(msg), "mean threads after the phase change %.2f, want >= 3.5", late_sum / late_n);
            fail("probe breaks the ratchet", msg);
        }
        if (!with_probe && late_sum / late_n != 1.0)
            fail("without probes the ratchet holds (the loop models it)", "it moved");
    }
}

static void run_noise(void)
{
    struct scaf_noise st = {0};
    double sd = 0.0;

    for (int i = 0; i < 20; i++)
        sd = scaf_noise_update(&st, 4, 0.7, 0.05);
    if (sd != 0.0)
        fail("noise: constant E", "sd not 0");
    for (int i = 0; i < 400; i++)
        sd = scaf_noise_update(&st, 4, i % 2 ? 0.6 : 0.4, 0.05);
    if (!(sd > 0.07 && sd < 0.11)) {
        char msg[80];
        snprintf(msg, sizeof msg, "E 0.5 +- 0.1 alternating: sd %.4f, want about 0.1", sd);
        fail("noise: alternating E", msg);
    }
    if (scaf_noise_update(&st, 3, 0.5, 0.05) != 0.0)
        fail("noise: a new p' starts over", "sd reported at once");
    for (int i = 1; i < SCAF_NOISE_MIN_SAMPLES - 1; i++)
        if (scaf_noise_update(&st, 3, i % 2 ? 0.3 : 0.7, 0.05) != 0.0)
            fail("noise: too few samples", "sd reported");
    if (scaf_noise_update(&st, 3, 0.3, 0.05) <= 0.0)
        fail("noise: enough samples", "no sd");
    if (scaf_noise_update(&st, 1, 0.3, 0.05) != 0.0 || scaf_noise_update(&st, 4, NAN, 0.05) != 0.0 ||
        scaf_noise_update(&st, 4, 0.3, 0.0) != 0.0 || scaf_noise_update(NULL, 4, 0.3, 0.05) != 0.0)
        fail("noise: p' < 2, NaN, bad alpha, NULL", "sd reported");
}

/* The composed per-round step the daemon and the simulator call: each piece reaches the policy input. */
static void run_client_state(void)
{
    struct scaf_client_state st = {0};
    struct scaf_policy_client pol = {0};
    const uint64_t s = 1000000000ull, interval = 10 * s;
    uint64_t t = s;

    /* No estimate: no noise, no second point, no probe. */
    scaf_client_state_step(&st, t, interval, 32, 1, 0, -1.0, &pol);
    if (pol.probe || pol.e_sd != 0.0 || pol.alt_team)
        fail("state: no estimate", "something came out of nothing");
    /* A point at 16, then steady at 32 with E 0.1: the 16 is the second point, the noise becomes known. */
    scaf_client_state_step(&st, t += s / 4, interval, 16, 1, 16, 0.3, &pol);
    for (int r = 0; r < 12; r++)
        scaf_client_state_step(&st, t += s / 4, interval, 32, 1, 32, r % 2 ? 0.11 : 0.09, &pol);
    if (pol.alt_team != 16 || !near(pol.alt_efficiency, 0.3) || !(pol.e_sd > 0.0))
        fail("state: points and noise", "the second point or the noise of E did not reach the policy input");
    /* The 16 is x2 away, so no shrink probe; without it, one comes after the (E-scaled) wait. */
    if (pol.probe)
        fail("state: far point", "shrink-probed although a point x2 away exists");
    {
        struct scaf_client_state fresh = {0};
        int seen = 0;

        for (int r = 0; r < 20 && !seen; r++) {
            scaf_client_state_step(&fresh, s + (uint64_t)r * s / 4, interval, 32, 1, 32, 0.1, &pol);
            seen = pol.probe == SCAF_PROBE_SHRINK;
        }
        if (!seen)
            fail("state: shrink", "no shrink probe within 5 s at E 0.1");
    }
    /* At one chunk past the interval: a grow probe. */
    {
        struct scaf_client_state one = {0};

        for (uint64_t r = 0; r <= 44; r++)
            scaf_client_state_step(&one, s + r * s / 4, interval, 1, 1, 1, 1.0, &pol);
        if (pol.probe != SCAF_PROBE_GROW)
            fail("state: grow", "no grow probe after 11 s at one chunk");
    }
    if (scaf_client_state_size() != sizeof(struct scaf_client_state))
        fail("state: size", "scaf_client_state_size");
    scaf_client_state_step(NULL, t, interval, 1, 1, 1, 1.0, &pol); /* no crash */
}

/* The caller's points: rounds of (t s, p', E) and the second and side points it must hand the policy. */
static void run_points(void)
{
    static const struct {
        const char *name;
        struct {
            uint32_t t_s, p;
            double e;
            uint32_t want_p;
            double want_e;
            uint32_t side_p;
            double side_e;
        } r[6];
        int n;
    } cases[] = {
        {"one team size: no second point", {{0, 8, 0.9, 0, 0, 0, 0}, {1, 8, 0.8, 0, 0, 0, 0}}, 2},
        {"a rising curve: the furthest other size, then the nearest",
         {{0, 4, 0.9, 0, 0, 0, 0}, {1, 8, 0.8, 4, 0.9, 0, 0}, {2, 16, 0.7, 4, 0.9, 8, 0.8}, {3, 6, 0.85, 16, 0.7, 8, 0.8}}, 4},
        {"an SMT pair's 8, 14 and 10: 14 is fitted, 8 is where a move down lands",
         {{0, 8, 0.925, 0, 0, 0, 0}, {1, 14, 0.6, 8, 0.925, 0, 0}, {2, 10, 0.78, 14, 0.6, 8, 0.925}}, 3},
        {"both on one side: the furthest, then the nearest", {{0, 4, 0.9, 0, 0, 0, 0}, {1, 6, 0.85, 4, 0.9, 0, 0}, {2, 8, 0.8, 4, 0.9, 6, 0.85}}, 3},
        {"the furthest wins over the freshest", {{0, 16, 0.3, 0, 0, 0, 0}, {1, 32, 0.12, 16, 0.3, 0, 0}, {2, 24, 0.19, 16, 0.3, 32, 0.12}}, 3},
        {"as far on both sides: the one that shows a slowdown, the other is the side point",
         {{0, 8, 0.5, 0, 0, 0, 0}, {1, 32, 0.2, 8, 0.5, 0, 0}, {2, 16, 0.4, 32, 0.2, 8, 0.5}, {3, 16, 0.45, 32, 0.2, 8, 0.5}}, 4},
        {"p' < 2 and bad E record nothing", {{0, 8, 0.9, 0, 0, 0, 0}, {1, 1, 1.0, 0, 0, 0, 0}, {2, 4, NAN, 0, 0, 0, 0}, {3, 4, 0.95, 8, 0.9, 0, 0}}, 4},
        {"E > 1 is kept as 1", {{0, 4, 1.4, 0, 0, 0, 0}, {1, 8, 0.5, 4, 1.0, 0, 0}}, 2},
        {"points older than the limit are forgotten", {{0, 4, 0.9, 0, 0, 0, 0}, {31, 8, 0.8, 0, 0, 0, 0}}, 2},
        {"a higher E at a larger team: a new phase, the old points go",
         {{0, 4, 0.5, 0, 0, 0, 0}, {1, 128, 0.01, 4, 0.5, 0, 0}, {2, 8, 0.97, 0, 0, 0, 0}, {3, 16, 0.95, 8, 0.97, 0, 0}}, 4},
        {"within noise it is kept", {{0, 4, 0.9, 0, 0, 0, 0}, {1, 8, 0.93, 4, 0.9, 0, 0}}, 2},
        /* A serial phase at 14 then 5 threads, then the program scales at 5: its old point at 14 goes. */
        {"E at one team jumps from one report to the next: a new phase, the old points go",
         {{0, 14, 0.134, 0, 0, 0, 0}, {1, 5, 0.33, 14, 0.134, 0, 0}, {2, 5, 0.86, 0, 0, 0, 0}, {3, 8, 0.9, 5, 0.86, 0, 0}}, 4},
        {"E at one team within noise from one report to the next: kept",
         {{0, 14, 0.134, 0, 0, 0, 0}, {1, 5, 0.33, 14, 0.134, 0, 0}, {2, 5, 0.37, 14, 0.134, 0, 0}}, 3},
        /* Back at 63 after a probe at 32: its first report there may straddle the move, and is no phase. */
        {"back at a team left earlier, a change is not compared",
         {{0, 63, 0.62, 0, 0, 0, 0}, {1, 32, 0.78, 63, 0.62, 0, 0}, {2, 63, 0.544, 32, 0.78, 0, 0}}, 3},
        {"five sizes: the stalest goes",
         {{0, 2, 0.9, 0, 0, 0, 0}, {1, 3, 0.9, 2, 0.9, 0, 0}, {2, 4, 0.9, 2, 0.9, 3, 0.9}, {3, 5, 0.9, 2, 0.9, 4, 0.9},
          {4, 6, 0.9, 3, 0.9, 5, 0.9}, {5, 2, 0.95, 6, 0.9, 4, 0.9}}, 6},
    };

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct scaf_points st = {0};

        for (int j = 0; j < cases[c].n; j++) {
            uint32_t ap = 99, sp = 99;
            double ae = 99, se = 99;
            char msg[160];

            scaf_points_update(&st, 1000000000ull + cases[c].r[j].t_s * 1000000000ull, cases[c].r[j].p,
                               cases[c].r[j].e, SCAF_POINTS_MAX_AGE_NS, &ap, &ae, &sp, &se);
            if (ap != cases[c].r[j].want_p || (ap && !near(ae, cases[c].r[j].want_e))) {
                snprintf(msg, sizeof(msg), "round %d: second point (%u, %.3f), want (%u, %.3f)", j, ap, ae,
                         cases[c].r[j].want_p, cases[c].r[j].want_e);
                fail(cases[c].name, msg);
            }
            if (sp != cases[c].r[j].side_p || (sp && !near(se, cases[c].r[j].side_e)) || (!sp && se != 0.0)) {
                snprintf(msg, sizeof(msg), "round %d: side point (%u, %.3f), want (%u, %.3f)", j, sp, se,
                         cases[c].r[j].side_p, cases[c].r[j].side_e);
                fail(cases[c].name, msg);
            }
        }
    }
    /* NULL state: no point, no crash. */
    {
        uint32_t ap = 5, sp = 5;
        double ae = 5, se = 5;

        scaf_points_update(NULL, 1, 4, 0.5, 1, &ap, &ae, &sp, &se);
        if (ap != 0 || ae != 0.0 || sp != 0 || se != 0.0)
            fail("points: NULL state", "a point came back");
    }
}

int main(void)
{
    run_points();
    run_shrink_table();
    shrink_climbing();
    run_client_state();
    run_noise();
    run_probe_table();
    run_ratchet();
    run_table();
    run_min_gain();
    run_model();
    run_curve_at();
    run_errors_and_registry();
    run_garbage();
    run_properties(5000);
    run_damping();
    return check_exit("test_policy");
}
