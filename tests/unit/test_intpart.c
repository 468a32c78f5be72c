/* test_intpart.c — table and property tests for scaf_intpart_chunked (fixed-seed PRNG). */
#include "scaf/policy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define MAXN 64

struct tcase {
    const char *name;
    uint32_t n, total, chunk;
    double exact[8];
    uint32_t bound[8]; /* all zero = pass NULL */
    uint32_t want[8];
};

static const struct tcase cases[] = {
    {"equal 16/3", 3, 16, 1, {1, 1, 1}, {0}, {6, 5, 5}},
    {"equal chunked 10/3 c2", 3, 10, 2, {1, 1, 1}, {0}, {4, 4, 2}},
    {"proportional", 3, 10, 1, {0.5, 0.3, 0.2}, {0}, {5, 3, 2}},
    {"weights need not sum to total", 3, 10, 1, {50, 30, 20}, {0}, {5, 3, 2}},
    {"largest error first", 3, 10, 1, {4.2, 2.9, 2.9}, {0}, {4, 3, 3}},
    {"tie to lowest index", 2, 3, 1, {1, 1}, {0}, {2, 1}},
    {"remainder of chunk kept", 2, 7, 2, {3.5, 3.5}, {0}, {4, 3}},
    {"total < n gives 1 each", 3, 2, 1, {1, 5, 9}, {0}, {1, 1, 1}},
    {"total < n*chunk: chunk 1", 3, 5, 2, {1, 1, 1}, {0}, {2, 2, 1}},
    {"bound excess to the others", 3, 12, 1, {1, 1, 1}, {2, 0, 0}, {2, 5, 5}},
    {"bounds sum below total", 3, 12, 1, {1, 1, 1}, {2, 3, 1}, {2, 3, 1}},
    {"bound below one chunk", 2, 8, 4, {1, 1}, {2, 0}, {2, 6}},
    {"all-zero weights = equal", 4, 9, 1, {0, 0, 0, 0}, {0}, {3, 2, 2, 2}},
    {"tiny share still one", 2, 8, 1, {100, 0.001}, {0}, {7, 1}},
    {"zero weight gets one chunk", 2, 8, 2, {100, 0}, {0}, {6, 2}},
    {"single client takes all", 1, 9, 2, {0.3}, {0}, {9}},
    {"single client at its bound", 1, 9, 1, {1}, {4}, {4}},
    {"exactly one chunk each", 4, 8, 2, {9, 1, 1, 1}, {0}, {2, 2, 2, 2}},
    {"chunk 4, 2 clients, 3:1", 2, 16, 4, {3, 1}, {0}, {12, 4}},
    {"heavy client at its bound", 3, 16, 1, {10, 1, 1}, {4, 0, 0}, {4, 6, 6}},
};

static void run_table(void)
{
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const struct tcase *tc = &cases[c];
        uint32_t out[8];
        int have_bound = 0;
        char got[128], want[128];

        for (uint32_t i = 0; i < tc->n; i++)
            have_bound |= tc->bound[i] != 0;
        if (scaf_intpart_chunked(tc->exact, tc->n, tc->total, tc->chunk, have_bound ? tc->bound : NULL, out) != 0) {
            fail(tc->name, strerror(errno));
            continue;
        }
        fmt(got, sizeof(got), out, tc->n);
        fmt(want, sizeof(want), tc->want, tc->n);
        if (memcmp(out, tc->want, tc->n * sizeof(*out)) != 0) {
            char msg[300];

            snprintf(msg, sizeof(msg), "got {%s}, want {%s}", got, want);
            fail(tc->name, msg);
        }
    }
}

static void run_errors(void)
{
    double ok[2] = {1, 1}, neg[2] = {1, -1}, nan_[2] = {1, NAN}, inf_[2] = {INFINITY, 1};
    uint32_t out[2];

    struct {
        const char *name;
        const double *exact;
        uint32_t chunk;
        uint32_t *out;
    } bad[] = {
        {"negative weight", neg, 1, out}, {"NaN weight", nan_, 1, out}, {"infinite weight", inf_, 1, out},
        {"chunk 0", ok, 0, out},          {"NULL out", ok, 1, NULL},    {"NULL exact", NULL, 1, out},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        errno = 0;
        if (scaf_intpart_chunked(bad[i].exact, 2, 8, bad[i].chunk, NULL, bad[i].out) != -1 || errno != EINVAL)
            fail(bad[i].name, "expected -1 with EINVAL");
    }
    if (scaf_intpart_chunked(NULL, 0, 8, 1, NULL, NULL) != 0)
        fail("n = 0", "expected 0");
}

/* xorshift64*: fixed seed, so every run checks the same inputs. */
static uint64_t rng_state = 0x5CAF5EEDULL;

static uint32_t rnd(uint32_t bound)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32) % bound;
}

static void run_properties(uint32_t rounds)
{
    uint32_t checked = 0;

    for (uint32_t r = 0; r < rounds && failures < 20; r++) {
        uint32_t n = 1 + rnd(MAXN), chunk = 1 + rnd(8), total = rnd(4) == 0 ? rnd(n + 1) : 1 + rnd(4096);
        double exact[MAXN], scaled[MAXN], t[MAXN];
        uint32_t bound[MAXN], out[MAXN], again[MAXN], out2[MAXN], used, off_chunk = 0; /* used: the chunk the partition uses */
        uint64_t sum = 0, sum_bound = 0;
        int use_bound = rnd(3) == 0;
        char msg[400], where[64];

        for (uint32_t i = 0; i < n; i++) {
            exact[i] = rnd(5) == 0 ? 0.0 : rnd(1000000) / 1000.0;
            scaled[i] = exact[i] * 4.0; /* exact in binary floating point */
            bound[i] = use_bound && rnd(2) ? 1 + rnd(total / 2 + 2) : 0;
        }
        snprintf(where, sizeof(where), "round %u (n=%u total=%u chunk=%u)", r, n, total, chunk);
        if (scaf_intpart_chunked(exact, n, total, chunk, use_bound ? bound : NULL, out) != 0 ||
            scaf_intpart_chunked(exact, n, total, chunk, use_bound ? bound : NULL, again) != 0 ||
            scaf_intpart_chunked(scaled, n, total, chunk, use_bound ? bound : NULL, out2) != 0 ||
            scaf_intpart_targets(exact, n, total, chunk, use_bound ? bound : NULL, t) != 0) {
            fail(where, strerror(errno));
            continue;
        }
        checked++;
        if (memcmp(out, again, n * sizeof(*out)) != 0)
            fail(where, "not deterministic: same input, different output");
        if (memcmp(out, out2, n * sizeof(*out)) != 0)
            fail(where, "weights x4 changed the result");
        if (total < n) {
            for (uint32_t i = 0; i < n; i++)
                if (out[i] != 1)
                    fail(where, "total < n must give 1 each");
            continue;
        }
        used = (uint64_t)n * chunk <= total ? chunk : 1;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t hi = use_bound && bound[i] && bound[i] < total ? bound[i] : total;
            uint32_t lo = used < hi ? used : hi;

            sum += out[i];
            sum_bound += hi;
            if (out[i] < lo || out[i] > hi) {
                snprintf(msg, sizeof(msg), "entry %u = %u outside [%u, %u] (min chunk / bound)", i, out[i], lo, hi);
                fail(where, msg);
            }
            if (out[i] % used != 0 && out[i] != hi)
                off_chunk++;
            /* Largest remainder: no entry is a whole chunk or more away from its target. */
            if (fabs(out[i] - t[i]) > used + 1e-6) {
                snprintf(msg, sizeof(msg), "entry %u = %u, target %.4f: off by a chunk or more", i, out[i], t[i]);
                fail(where, msg);
            }
        }
        if (sum != (sum_bound < total ? sum_bound : total)) {
            snprintf(msg, sizeof(msg), "sum %llu, want %llu", (unsigned long long)sum,
                     (unsigned long long)(sum_bound < total ? sum_bound : total));
            fail(where, msg);
        }
        if (off_chunk > 1) {
            snprintf(msg, sizeof(msg), "%u entries below their bound are not multiples of chunk %u", off_chunk, used);
            fail(where, msg);
        }
    }
    printf("intpart properties: %u random inputs checked (exact sum, minimum chunk, bounds, determinism, "
           "scale invariance, at most one off-chunk entry, within one chunk of target)\n",
           checked);
}

int main(void)
{
    run_table();
    run_errors();
    run_properties(20000);
    return check_exit("test_intpart");
}
