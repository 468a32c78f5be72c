/* test_estimate_math.c — region efficiency, the window mix and the RC filter the layer's estimator uses. */
#include "../../src/layer/estimate/estimate_math.h"
#include "scaf/proto.h"

#include <math.h>
#include <stdio.h>

#include "check.h"

static int near(double a, double b, double tol)
{
    return fabs(a - b) <= tol;
}

static void region_efficiency(void)
{
    static const struct {
        uint64_t serial;
        unsigned threads;
        uint64_t par;
        double want;
    } cases[] = {
        {4000, 4, 1000, 1.0},  /* perfect scaling */
        {4000, 4, 2000, 0.5},  /* half */
        {1000, 2, 1000, 0.5},  /* no speedup at 2 */
        {1000, 2, 2000, 0.25}, /* slower than serial */
        {9000, 2, 1000, 4.5},  /* an instance smaller than the site's mean: not clamped (the window is) */
        {1000, 1, 1000, 1.0},  /* one thread */
        {0, 2, 1000, -1.0},    /* no baseline */
        {1000, 0, 1000, -1.0}, /* no team */
        {1000, 2, 0, -1.0},    /* no time */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double e = scaf_region_efficiency(cases[i].serial, cases[i].threads, cases[i].par);
        CHECK(near(e, cases[i].want, 1e-12), "case %zu: got %g want %g", i, e, cases[i].want);
    }
}

static void mix(void)
{
    struct scaf_mix m;
    double e = -7;
    unsigned team = 99;

    scaf_mix_reset(&m);
    CHECK(!scaf_mix_value(&m, &e, &team), "empty window has no value");
    scaf_mix_add_serial(&m, 1000, 4);
    CHECK(!scaf_mix_value(&m, &e, &team) && e == -7 && team == 99, "serial time alone says nothing");
    scaf_mix_add_region(&m, 500, -1.0, 4);
    CHECK(!scaf_mix_value(&m, &e, &team), "unmeasured region time alone says nothing");
    CHECK(m.w_unknown == 500, "unmeasured time is kept apart");

    /* 3000 ns at E=0.8 on 4 threads, 1000 ns serial on 4 contexts: (2400 + 250) / 4000. */
    scaf_mix_add_region(&m, 3000, 0.8, 4);
    CHECK(scaf_mix_value(&m, &e, &team), "value once a measured region is in");
    CHECK(near(e, 2650.0 / 4000.0, 1e-12), "time-weighted mix: got %g", e);
    CHECK(team == 4, "team %u", team);

    /* Time-weighted: a long bad region outweighs a short good one. */
    scaf_mix_reset(&m);
    scaf_mix_add_region(&m, 100, 1.0, 2);
    scaf_mix_add_region(&m, 900, 0.2, 2);
    CHECK(scaf_mix_value(&m, &e, &team) && near(e, 0.28, 1e-12), "got %g", e);

    /* The team is the rounded time-weighted mean. */
    scaf_mix_reset(&m);
    scaf_mix_add_region(&m, 300, 0.5, 2);
    scaf_mix_add_region(&m, 700, 0.5, 4);
    CHECK(scaf_mix_value(&m, &e, &team) && team == 3, "team %u", team);

    /* The CPU view, where present, gives the regions' efficiency; wall time still weighs them. */
    scaf_mix_reset(&m);
    scaf_mix_add_region(&m, 3000, 0.2, 2); /* wall view says 0.2 (time-sliced) */
    scaf_mix_add_cpu(&m, 900, 1000);       /* CPU view: 0.9 */
    scaf_mix_add_serial(&m, 1000, 2);
    CHECK(scaf_mix_value(&m, &e, &team) && near(e, (3000 * 0.9 + 500) / 4000.0, 1e-12), "cpu view: %g", e);
    scaf_mix_add_cpu(&m, 0, 1000); /* nothing to compare: ignored */
    scaf_mix_add_cpu(&m, 5000, 1000);
    CHECK(scaf_mix_value(&m, &e, &team) && near(e, (3000 * 1.0 + 500) / 4000.0, 1e-12), "clamped: %g", e);
    scaf_mix_reset(&m);
    scaf_mix_add_cpu(&m, 900, 1000);
    CHECK(!scaf_mix_value(&m, &e, &team), "CPU view without region time says nothing");

    /* The wall view is clamped for the window, not for each instance: instances of one site that differ in
     * size read above and below its efficiency, and only their time-weighted mean is it. */
    scaf_mix_reset(&m);
    scaf_mix_add_region(&m, 100, 3.0, 2); /* a small instance of a site whose mean gives E = 0.6 */
    scaf_mix_add_region(&m, 900, 0.3, 2); /* and a large one */
    CHECK(scaf_mix_value(&m, &e, &team) && near(e, (300.0 + 270.0) / 1000.0, 1e-12), "unclamped mix: %g", e);
    scaf_mix_add_region(&m, 1000, 4.0, 2);
    CHECK(scaf_mix_value(&m, &e, &team) && near(e, 1.0, 1e-12), "window clamped at 1: %g", e);

    /* A 0-context serial stretch counts as one context, never a division by zero. */
    scaf_mix_reset(&m);
    scaf_mix_add_region(&m, 100, 1.0, 1);
    scaf_mix_add_serial(&m, 100, 0);
    CHECK(scaf_mix_value(&m, &e, &team) && near(e, 1.0, 1e-12) && team == 1, "e %g team %u", e, team);
}

/* A site's serial samples: faded mean, and how many it takes before the mean is known. */
static void samples(void)
{
    struct scaf_samples st = {0, 0, 0};
    int more;

    CHECK(scaf_samples_mean(&st) == 0.0, "no samples: mean 0");
    CHECK(scaf_samples_want_more(&st, 0.1, 16, 1000), "no samples: want one");
    scaf_samples_add(&st, 30.0, 1.0);
    scaf_samples_add(&st, 90.0, 1.0);
    CHECK(near(scaf_samples_mean(&st), 60.0, 1e-12), "mean %g", scaf_samples_mean(&st));
    /* Fading: after one interval the old ones count e^-1 each. */
    scaf_samples_add(&st, 60.0, exp(-1.0));
    CHECK(near(st.n, 2.0 * exp(-1.0) + 1.0, 1e-12), "faded count %g", st.n);
    CHECK(near(scaf_samples_mean(&st), 60.0, 1e-12), "faded mean %g", scaf_samples_mean(&st));

    /* Equal samples: known once the minimum is reached, not before (a rare large instance may be unseen). */
    st = (struct scaf_samples){0, 0, 0};
    for (int i = 0; i < 15; i++)
        scaf_samples_add(&st, 100.0, 1.0);
    CHECK(scaf_samples_want_more(&st, 0.1, 16, 1000), "15 equal samples: one more");
    scaf_samples_add(&st, 100.0, 1.0);
    CHECK(!scaf_samples_want_more(&st, 0.1, 16, 1000), "16 equal samples: enough");

    /* A skewed site (nine small instances for each one ten times larger, coefficient of variation ~1.5):
     * a relative standard error of 0.1 needs about 230 samples. */
    st = (struct scaf_samples){0, 0, 0};
    more = 0;
    for (int i = 0; i < 2000 && scaf_samples_want_more(&st, 0.1, 16, 1000); i++, more++)
        scaf_samples_add(&st, i % 10 == 9 ? 1000.0 : 100.0, 1.0);
    CHECK(more > 150 && more < 300, "skewed site took %d samples", more);
    CHECK(near(scaf_samples_mean(&st), 190.0, 10.0), "skewed mean %g", scaf_samples_mean(&st));
    /* Never beyond the cap. */
    st = (struct scaf_samples){0, 0, 0};
    for (int i = 0; i < 50; i++)
        scaf_samples_add(&st, i % 2 ? 1.0 : 1e6, 1.0);
    CHECK(!scaf_samples_want_more(&st, 0.1, 16, 50), "cap reached");
    CHECK(scaf_samples_want_more(&st, 0.1, 16, 1000), "under the cap, the spread wants more");
}

/* The pick of extra samples: by instance number, about one in N, not periodic. */
static void pick(void)
{
    unsigned n = 0, gaps_seen[64] = {0}, distinct = 0;
    uint64_t last = 0;

    for (uint64_t i = 1; i <= 160000; i++) {
        if (!scaf_samples_pick(0x7f0012345160ull, i, 16))
            continue;
        n++;
        if (last && i - last < 64 && !gaps_seen[i - last]++)
            distinct++;
        last = i;
    }
    CHECK(n > 9000 && n < 11000, "%u of 160000 picked at one in 16", n);
    CHECK(distinct > 30, "only %u distinct gaps: periodic", distinct);
    CHECK(scaf_samples_pick(1, 5, 16) == scaf_samples_pick(1, 5, 16), "the same instance, the same answer");
    CHECK(scaf_samples_pick(1, 5, 1) && scaf_samples_pick(1, 6, 0), "one in 1 (or 0): every instance");
}

static void rc(void)
{
    double y;

    CHECK(scaf_rc_filter(0.3, 0, 0.9, 1.0, 1.0) == 0.9, "first sample starts the filter");
    CHECK(scaf_rc_filter(0.3, 1, 0.9, 1.0, 0.0) == 0.9, "tau 0 passes through");
    CHECK(scaf_rc_filter(0.3, 1, 0.9, 0.0, 1.0) == 0.3, "dt 0 changes nothing");
    /* Step response: 1 - 1/e of the way after one time constant. */
    y = scaf_rc_filter(0.0, 1, 1.0, 2.0, 2.0);
    CHECK(near(y, 1.0 - exp(-1.0), 1e-12), "step after tau: %g", y);
    /* Exact discretisation: two half steps equal one whole step, whatever the publishing rate. */
    {
        double a = scaf_rc_filter(0.2, 1, 0.7, 0.4, 1.5);
        double b = scaf_rc_filter(scaf_rc_filter(0.2, 1, 0.7, 0.2, 1.5), 1, 0.7, 0.2, 1.5);
        double c = 0.2;
        for (int i = 0; i < 40; i++)
            c = scaf_rc_filter(c, 1, 0.7, 0.01, 1.5);
        CHECK(near(a, b, 1e-12) && near(a, c, 1e-12), "rate independence: %g %g %g", a, b, c);
    }
    /* Monotone approach, never overshoot. */
    y = 0.1;
    for (int i = 0; i < 1000; i++) {
        double n = scaf_rc_filter(y, 1, 0.6, 0.05, 0.5);
        CHECK(n >= y && n <= 0.6, "overshoot at %d: %g", i, n);
        y = n;
    }
    CHECK(near(y, 0.6, 1e-9), "converges: %g", y);
}

static void ppm(void)
{
    static const struct {
        double e;
        uint32_t want;
    } cases[] = {{0.0, 0}, {-1.0, 0}, {NAN, 0}, {0.5, 500000}, {0.1234564, 123456}, {1.0, 1000000}, {7.0, 1000000}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(scaf_efficiency_to_ppm(cases[i].e) == cases[i].want, "case %zu: %u", i, scaf_efficiency_to_ppm(cases[i].e));
}

int main(void)
{
    region_efficiency();
    mix();
    samples();
    pick();
    rc();
    ppm();
    return check_exit("test_estimate_math");
}
