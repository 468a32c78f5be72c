/* policy.h — allocation policies: pure functions from an explicit snapshot to integer team sizes. */
#ifndef SCAF_POLICY_H
#define SCAF_POLICY_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The policy module does no I/O and keeps no global state. The daemon, the
 * unit tests, `scaf allocate` and the simulator (through libscaf_policy.so and
 * ctypes) all call exactly these functions.
 */

struct scaf_policy_client {
    uint32_t max_threads; /* its bound: never allocate more than this; >= 1 */
    uint32_t prev;        /* this client's previous share; 0 = new client */
    uint32_t eff_team;    /* p': the team its efficiency was measured at; 0 = none */
    /*
     * Nonzero: probe this client this round. SCAF_PROBE_SHRINK: it gets two
     * thirds of its previous allocation (in chunks, at least one; lower below
     * E SCAF_SHRINK_E_FAST, see docs/policy.md), so that it is
     * measured at a smaller team (scaf_shrink_step); SCAF_PROBE_HOLD: it
     * keeps its previous allocation while that happens. Any other nonzero value
     * (SCAF_PROBE_GROW): its estimate and its prev_coef are ignored, so it is
     * treated as unknown and gets an equal share it can be measured at again
     * (scaf_probe_step). Zero: no probe.
     */
    uint32_t probe;
    double efficiency; /* E at p'; < 0 (or NaN) = unknown */
    /*
     * The coef[] this client got from the previous decide() call, fed back by
     * the caller; 0 = none. The speedup policy uses it when p' = 1, where a
     * one-thread reading says nothing about scaling: without it a client that
     * the model put on one thread would bounce between 1 and an average share.
     */
    double prev_coef;
    /*
     * How much E at this p' wanders from one round to the next: its standard
     * deviation as the caller observed it (scaf_noise_update), 0 = not known.
     * The speedup policy's damping keeps an allocation while its target moves
     * by less than twice what this noise alone would move it.
     */
    double e_sd;
    /*
     * A second point of the same client's curve: E measured earlier at another
     * team size (alt_team >= 2, != eff_team; 0 = none), chosen by the
     * caller (scaf_points_update). The speedup and consumption policies fit a
     * curve that can fall through both points when the larger team was
     * measured no faster than the smaller: saturation is believed when seen.
     * Zero: the one-point model.
     */
    double alt_efficiency;
    uint32_t alt_team;
    /*
     * The program this client is a process of: clients with the same nonzero
     * group share one program's equal share (a pool's parent and its
     * workers, which a static split gives one share, not one each); 0: a
     * program of its own. The caller numbers them (the daemon from the
     * process tree, docs/policy.md "Programs, not processes").
     */
    uint32_t group;
    /*
     * A third measured point: the team size nearest the report's besides
     * alt_team (side_team >= 2, != eff_team, != alt_team; 0 = none), chosen
     * by the caller (scaf_points_update). It is not fitted: the curve passes
     * through it, so that a move toward it is read off what was measured
     * there, not off a curve drawn through points further away. An SMT
     * pair's compute program measured at 8, 10 and 14 threads, fitted
     * through 10 and 14, was read at S 6.6 on 8 threads where it had run at
     * 7.4, and kept 2 threads its partner gained more from.
     */
    double side_efficiency;
    uint32_t side_team;
    uint32_t reserved2; /* 0 */
};

/* python/scaf/lib/policy.py mirrors this layout with ctypes (and checks the size at load). */
static_assert(sizeof(struct scaf_policy_client) == 72, "struct scaf_policy_client layout is mirrored by ctypes");
static_assert(offsetof(struct scaf_policy_client, side_efficiency) == 56, "ctypes mirror");
static_assert(offsetof(struct scaf_policy_client, side_team) == 64, "ctypes mirror");
static_assert(offsetof(struct scaf_policy_client, eff_team) == 8, "ctypes mirror");
static_assert(offsetof(struct scaf_policy_client, alt_efficiency) == 40, "ctypes mirror");
static_assert(offsetof(struct scaf_policy_client, alt_team) == 48, "ctypes mirror");
static_assert(offsetof(struct scaf_policy_client, probe) == 12, "ctypes mirror");
static_assert(offsetof(struct scaf_policy_client, efficiency) == 16, "ctypes mirror");
static_assert(offsetof(struct scaf_policy_client, prev_coef) == 24, "ctypes mirror");
static_assert(offsetof(struct scaf_policy_client, e_sd) == 32, "ctypes mirror");

struct scaf_policy_input {
    uint32_t available; /* contexts clients may use (cpus after foreign load), >= 1 */
    uint32_t chunk;     /* allocation granularity (SMT width), >= 1 */
    uint32_t nclients;  /* may exceed available */
    const struct scaf_policy_client *clients;
    /*
     * The consumption policy's threshold: the smallest speedup one more
     * context must add for a client to get it (0, negative or not finite =
     * SCAF_MIN_GAIN_DEFAULT). Other policies ignore it.
     */
    double min_gain;
};

#define SCAF_MIN_GAIN_DEFAULT 0.5

/*
 * A policy fills share[i] (>= 1 for every client: the contexts it gives
 * client i) and coef[i] (its model coefficient, or 0 where the policy has
 * none) for i < nclients.
 * Guarantees, tested in tests/unit: every client gets >= 1; when
 * nclients <= available the sum is <= available (exactly available unless the
 * bounds (max_threads) leave some unused); when nclients > available every client gets 1.
 * Returns 0, or -1 with errno = EINVAL on an input it cannot use.
 */
typedef int (*scaf_policy_fn)(const struct scaf_policy_input *in, uint32_t *share, double *coef);

struct scaf_policy {
    const char *name;        /* "equipartition", "speedup" */
    const char *description; /* one line for --help */
    scaf_policy_fn decide;
    /*
     * Nonzero: the policy may leave contexts idle (the sum can be below
     * `available` even without bounds); every other guarantee holds.
     */
    int leaves_idle;
};

/* NULL with errno = ENOENT when no policy has that name. */
const struct scaf_policy *scaf_policy_lookup(const char *name);
/* Registered policies in a fixed order; NULL past the end. SIGUSR1 cycles them. */
const struct scaf_policy *scaf_policy_at(size_t index);
size_t scaf_policy_count(void);

/*
 * C-friendly entry point for ctypes: run policy `name` on arrays.
 * Returns 0, or -1 with errno set (ENOENT unknown name, EINVAL bad input).
 */
int scaf_policy_run(const char *name, uint32_t available, uint32_t chunk, uint32_t nclients,
                    const struct scaf_policy_client *clients, uint32_t *share, double *coef);

/* The same with the consumption policy's min_gain (see struct scaf_policy_input). */
int scaf_policy_run_gain(const char *name, uint32_t available, uint32_t chunk, double min_gain, uint32_t nclients,
                         const struct scaf_policy_client *clients, uint32_t *share, double *coef);

/* sizeof(struct scaf_policy_client), so that ctypes mirrors can check their layout. */
size_t scaf_policy_client_size(void);

/* The registered policies, callable directly (the daemon may also go through the registry). */
int scaf_policy_speedup(const struct scaf_policy_input *in, uint32_t *share, double *coef);
int scaf_policy_equipartition(const struct scaf_policy_input *in, uint32_t *share, double *coef);
/* How many of in's clients belong to client i's program (its group; 1 for group 0). Pure. */
uint32_t scaf_policy_group_size(const struct scaf_policy_input *in, uint32_t i);
int scaf_policy_consumption(const struct scaf_policy_input *in, uint32_t *share, double *coef);

/*
 * The speedup policy before damping: coef[i] is E(2) = 1 / (1 + sigma) of the
 * curve it read for client i (0 = none, see scaf_policy_curve) and exact[i]
 * the allocation it would make if no previous allocation were kept (whole
 * numbers, as doubles). Either output may be NULL. Returns 0, or -1 with
 * errno = EINVAL. See docs/policy.md for every edge case.
 */
int scaf_policy_speedup_model(const struct scaf_policy_input *in, double *coef, double *exact);

/*
 * The curve the speedup and consumption policies read from one client:
 * S(p) = p / (1 + sigma (p - 1) + kappa p (p - 1)), before the correction
 * that makes it pass through the measured points (scaf_policy_curve_at).
 * Returns 0 (no curve:
 * unknown, probed, p' < 2 without a usable prev_coef), 1 (through its report
 * alone, or carried over: kappa = 0) or 2 (through its report and its second
 * point). For `scaf allocate --verbose`; sigma and kappa may be NULL.
 */
int scaf_policy_curve(const struct scaf_policy_client *cl, double *sigma, double *kappa);

/*
 * S(p) of that curve as the policies read it: the USL curve corrected to pass
 * through the client's measured points (its report, and its second point
 * unless it contradicts the report), and, on `available` contexts in SMT
 * chunks of `chunk` > 1, past both the cores (available / chunk) and its last
 * measured point growing at a quarter of that slope (docs/policy.md, "SMT's
 * prior"): the curve a decision on that input reads. NaN when there is no
 * curve.
 */
double scaf_policy_curve_at(const struct scaf_policy_client *cl, double p, uint32_t available, uint32_t chunk);

/*
 * Integer partition of `total` closest to the real shares `exact` (n entries,
 * finite, >= 0; they are weights: scaled to sum to `total`, all-zero = equal).
 * bound may be NULL; bound[i] = 0 means no bound. Result in out[0..n):
 *   - n <= total < n*chunk: the chunk is 1 instead of `chunk`, every entry >= 1;
 *   - total >= n*chunk: the chunk is `chunk`, every entry >= min(chunk, bound);
 *   - total < n: every entry is 1 (the only way to give everyone a thread;
 *     the sum then exceeds total);
 *   - otherwise the sum is exactly `total`, unless the bounds sum to less, in
 *     which case every entry is its bound.
 * Entries are multiples of the chunk except an entry at its bound and at most one
 * entry holding total mod chunk. Rounding is largest-error-first: floors in
 * chunks, then one chunk at a time to the largest (target - entry), ties to the
 * lowest index; deterministic. Returns 0, or -1 with errno = EINVAL (NULL
 * arrays, chunk 0, negative or non-finite exact).
 */
int scaf_intpart_chunked(const double *exact, uint32_t n, uint32_t total, uint32_t chunk,
                         const uint32_t *bound, uint32_t *out);

/*
 * The real-valued targets scaf_intpart_chunked rounds: the weights scaled to
 * `total`, then water-filled within [min(chunk, bound), bound] (a bounded client's
 * excess goes to the others in proportion to their weights). Same arguments
 * and errors; 1.0 each when total < n; the bounds when they sum to <= total.
 */
int scaf_intpart_targets(const double *exact, uint32_t n, uint32_t total, uint32_t chunk, const uint32_t *bound,
                         double *target);

/*
 * Re-probing a client held at one chunk (src/policy/probe.c). The caller keeps
 * one struct scaf_probe per client (zeroed at arrival) and calls
 * scaf_probe_step once per round, before the policy, with the client's
 * previous allocation, the chunk and the p' of its report;
 * the result is the round's `probe` field. Pure: time comes in as now_ns.
 */
struct scaf_probe {
    uint64_t low_since_ns;   /* when it was last seen arriving at one chunk; 0 = not at one chunk */
    uint64_t probe_since_ns; /* when the running probe began; 0 = none */
    uint64_t probe_end_ns;   /* when the last probe ended; 0 = none yet */
    uint32_t backoff;        /* probes in a row that put it back at one chunk (the interval doubles) */
    uint32_t reserved;
};

struct scaf_probe_timing {
    uint64_t interval_ns; /* at one chunk this long, probe; 0 = never. Doubles after each probe that
                           * ends back at one chunk, up to 4 x (SCAF_PROBE_BACKOFF_MAX doublings) */
    uint64_t hold_min_ns; /* a probe lasts at least this long ... */
    uint64_t hold_max_ns; /* ... and at most this long, report or not */
};

#define SCAF_PROBE_BACKOFF_MAX 2

/*
 * The noise of one client's reported E, tracked by the caller per round
 * (src/policy/noise.c): an exponentially weighted mean and variance of E at
 * one p', restarted when p' changes. scaf_noise_update returns the standard
 * deviation once SCAF_NOISE_MIN_SAMPLES rounds at this p' were seen, else 0
 * (not known yet: the damping then falls back to its fixed fraction).
 */
struct scaf_noise {
    uint32_t p;   /* p' the samples are from; 0 = none */
    uint32_t n;   /* samples at p' since it was last changed */
    double mean;
    double var;
};

#define SCAF_NOISE_MIN_SAMPLES 8

double scaf_noise_update(struct scaf_noise *st, uint32_t p, double e, double alpha);

/*
 * Shrink probes (src/policy/probe.c): a client that has held the same
 * allocation of 2 chunks or more for `interval_ns` x E / SCAF_SHRINK_E_MAX (at
 * least `hold_min_ns`), runs at E below
 * SCAF_SHRINK_E_MAX there, and has no second point of its curve x1.5 away
 * (alt_team), nor a smaller team measured slower or a larger one faster
 * beyond noise (`climbing`: its curve still rises into the allocation, so it
 * is not past a peak), is
 * run for one probe at two thirds of its allocation (x1.5 below it, where the
 * policy fits two points), so that the policy gets
 * the second point that shows whether its curve has peaked (a memory-bound
 * program alone on a large machine). The probe ends like an up-probe: a
 * report from the smaller team after hold_min_ns, or hold_max_ns. Returns 1
 * in the round the probe starts (the caller sets the client's `probe` field to
 * SCAF_PROBE_SHRINK), 2 in its later rounds (SCAF_PROBE_HOLD: the smaller
 * allocation is kept while the client is measured), else 0. Pure: time comes
 * in as now_ns; zero the struct at arrival.
 */
struct scaf_shrink {
    uint64_t steady_since_ns; /* when it arrived at its current allocation */
    uint64_t probe_since_ns;  /* when the running shrink probe began; 0 = none */
    uint32_t steady_at;       /* that allocation; 0 = none yet */
    uint32_t reserved;
};

#define SCAF_SHRINK_E_MAX 0.5
#define SCAF_SHRINK_E_FAST 0.05 /* below this E the wait's floor (hold_min_ns) shrinks in proportion */
#define SCAF_PROBE_GROW 1   /* `probe` value: unknown this round, an equal share */
#define SCAF_PROBE_SHRINK 2 /* `probe` value: two thirds of its previous allocation this round */
#define SCAF_PROBE_HOLD 3   /* `probe` value: its previous allocation again (a shrink probe measuring) */

int scaf_shrink_step(struct scaf_shrink *st, uint64_t now_ns, uint32_t prev, uint32_t chunk, uint32_t eff_team,
                     double efficiency, uint32_t alt_team, bool climbing, const struct scaf_probe_timing *tm);

int scaf_probe_step(struct scaf_probe *st, uint64_t now_ns, uint32_t prev, uint32_t chunk, uint32_t eff_team,
                    const struct scaf_probe_timing *tm);

/*
 * The points of one client's curve the caller has seen (src/policy/points.c):
 * the latest E at each of up to SCAF_POINTS_MAX team sizes, with when it was
 * last seen. Zeroed at arrival. scaf_points_update records this round's
 * report (p >= 2) and returns in *alt_p and *alt_e the point at another team
 * size, no older than max_age_ns, furthest from it in team size (ratio;
 * between two as far, the one that shows a larger team no faster than a
 * smaller one), which bends the fitted curve by more than noise (*alt_p = 0:
 * none), and in *side_p and *side_e the point nearest the report among
 * the others (*side_p = 0: none; any of the four may be NULL). A report whose E is higher than at a smaller team, or lower than at
 * a larger one, by more than SCAF_POINTS_NOISE, cannot lie on the same curve:
 * the program changed phase, and every other point is forgotten; so it is when
 * E at the team of the last report moves by more than SCAF_POINTS_NOISE from
 * that report to this one. Points older than max_age_ns are forgotten, so
 * that a phase change is not judged by the last phase's curve.
 */
#define SCAF_POINTS_MAX 4

struct scaf_points {
    uint32_t p[SCAF_POINTS_MAX]; /* 0 = empty slot */
    double e[SCAF_POINTS_MAX];
    uint64_t seen_ns[SCAF_POINTS_MAX];
};

void scaf_points_update(struct scaf_points *st, uint64_t now_ns, uint32_t p, double e, uint64_t max_age_ns,
                        uint32_t *alt_p, double *alt_e, uint32_t *side_p, double *side_e);

/*
 * How long a point at another team size stays evidence (the daemon's and the
 * simulator's setting): long enough to space shrink probes of a program whose
 * curve rises, short enough that a phase change the check above misses is
 * forgotten soon.
 */
#define SCAF_POINTS_MAX_AGE_NS 30000000000ull
#define SCAF_POINTS_NOISE 0.05

/*
 * Everything a caller of the model policies keeps per client between rounds
 * (zeroed at arrival), and the one step that turns this round's report into
 * the client's `probe`, `e_sd`, and its `alt_` and `side_` points
 * (src/policy/state.c). The daemon and the simulator both call it, so the
 * simulator feeds the policy exactly what scafd does. efficiency < 0 or NaN:
 * no estimate this round. A grow probe (scaf_probe_step, interval_ns) wins
 * over a shrink probe (scaf_shrink_step); both hold at least
 * SCAF_PROBE_HOLD_MIN_NS and at most SCAF_PROBE_HOLD_MAX_NS.
 */
struct scaf_client_state {
    struct scaf_probe probe;
    struct scaf_noise noise;
    struct scaf_points points;
    struct scaf_shrink shrink;
};

/* python/scaf/lib/policy.py mirrors this layout with ctypes (and checks the size at load). */
static_assert(sizeof(struct scaf_client_state) == 160, "struct scaf_client_state layout is mirrored by ctypes");

/* A probe lasts until the client reports from the new team: 1 s lets the layer apply it and publish. */
#define SCAF_PROBE_HOLD_MIN_NS 1000000000ull
#define SCAF_PROBE_HOLD_MAX_NS 5000000000ull
/* Weight of a new sample in the noise of E: about the last 20 rounds (5 s at 4 Hz). */
#define SCAF_NOISE_ALPHA 0.05

void scaf_client_state_step(struct scaf_client_state *st, uint64_t now_ns, uint64_t interval_ns, uint32_t prev,
                            uint32_t chunk, uint32_t eff_team, double efficiency,
                            struct scaf_policy_client *pol);

/* sizeof(struct scaf_client_state), for ctypes mirrors. */
size_t scaf_client_state_size(void);

/*
 * scaf_start_outlasts: a running client whose remembered run ends within this
 * fraction of a newcomer's remembered run is not counted in the newcomer's
 * start team (docs/memory.md, "A program about to end", has the sums). When
 * its fixed team holds every context, the two take turns whatever the
 * newcomer's team, and a whole machine's turns cost the newcomer nothing
 * against half a machine's: a half leaves room for the memory's error. When
 * it leaves the newcomer its share, the newcomer's whole machine makes turns
 * that cost the other one; a quarter keeps that under what the newcomer gains
 * once the other ends.
 */
#define SCAF_START_ENDING_HELD 0.5
#define SCAF_START_ENDING 0.25
/* ...and past this many times its remembered run, a client counts again: this run is not like those. */
#define SCAF_START_OVERRUN 1.5

/*
 * The team a program starts with (docs/memory.md, "The start team"): the share
 * a static split would give it, floor(available / (1 + max(busy, peers))),
 * clamped to [1, bound]. `available` is the contexts clients may use now (0 is
 * read as 1), `busy` the other clients running now, `peers` the (rounded)
 * mean of other busy clients while the program ran before, 0 when nothing is
 * remembered, `bound` the program's max_threads (0 = none). Counting the
 * programs it usually runs beside keeps a program that starts first from
 * taking the whole machine it will share a moment later. Pure.
 */
uint32_t scaf_start_team(uint32_t available, uint32_t busy, uint32_t peers, uint32_t bound);

/*
 * A client running now counts in a newcomer's `busy` unless it is expected to
 * end early in the newcomer's run (docs/memory.md, "A program about to end"):
 * both runs remembered, the client's remembered run, `expect_s`, less the
 * `elapsed_s` since its arrival, at most SCAF_START_ENDING_HELD (`held`: its
 * fixed team holds every context) or SCAF_START_ENDING (otherwise) of the
 * newcomer's remembered run `newcomer_s`, and the client not past
 * SCAF_START_OVERRUN times its own. A program that starts with its share keeps
 * that team for its whole run: started with half the machine beside one that
 * ends a moment later, it then runs alone on half. Unknown (0 or not finite)
 * times count, as a static split counts every program. Returns true when the
 * client counts. Pure.
 */
bool scaf_start_outlasts(double elapsed_s, double expect_s, double newcomer_s, bool held);

#endif
