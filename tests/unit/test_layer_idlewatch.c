/* test_layer_idlewatch.c — when an idle client's CPU without regions sends the WAKE, sample by sample. */
#include "../../src/layer/core/idlewatch.h"

#include <string.h>

#include "check.h"

#define MS 1000000ull
#define WINDOW (100 * MS)
#define HALF 0.5

/* One sample: the page's idle word, the clock, the process's CPU, and whether a WAKE is due. */
struct sample {
    uint32_t idle;
    uint64_t now, cpu;
    int wake;
};

static const struct {
    const char *what;
    struct sample s[12];
    unsigned n;
} rows[] = {
    {"not idle: nothing is judged", {{0, 0, 0, 0}, {0, 200 * MS, 200 * MS, 0}}, 2},
    {"idle and quiet", {{3, 0, 0, 0}, {3, 50 * MS, 1 * MS, 0}, {3, 100 * MS, 2 * MS, 0}, {3, 150 * MS, 3 * MS, 0}}, 4},
    {"a whole CPU without regions: the WAKE once a window has passed",
     {{3, 0, 0, 0}, {3, 40 * MS, 40 * MS, 0}, {3, 80 * MS, 80 * MS, 0}, {3, 120 * MS, 120 * MS, 1}}, 4},
    {"the WAKE goes once per idle period",
     {{3, 0, 0, 0}, {3, 120 * MS, 120 * MS, 1}, {3, 240 * MS, 240 * MS, 0}, {3, 360 * MS, 360 * MS, 0}}, 4},
    {"a new idle period watches afresh",
     {{3, 0, 0, 0}, {3, 120 * MS, 120 * MS, 1}, {0, 130 * MS, 130 * MS, 0}, {4, 140 * MS, 140 * MS, 0},
      {4, 260 * MS, 260 * MS, 1}}, 5},
    {"a burst shorter than half the window (handing a result back) stays idle",
     {{3, 0, 0, 0}, {3, 20 * MS, 20 * MS, 0}, {3, 40 * MS, 40 * MS, 0}, {3, 60 * MS, 40 * MS, 0},
      {3, 80 * MS, 40 * MS, 0}, {3, 100 * MS, 40 * MS, 0}, {3, 120 * MS, 40 * MS, 0}}, 7},
    {"exactly half a context is not over half",
     {{3, 0, 0, 0}, {3, 100 * MS, 50 * MS, 0}, {3, 200 * MS, 100 * MS, 0}}, 3},
    {"just over half",
     {{3, 0, 0, 0}, {3, 100 * MS, 50 * MS, 0}, {3, 200 * MS, 101 * MS, 1}}, 3},
    {"two threads of serial work count as more than one context: WAKE",
     {{3, 0, 0, 0}, {3, 100 * MS, 200 * MS, 1}}, 2},
    {"the span judged is the newest whole window, not the whole history: quiet at first, busy later",
     {{3, 0, 0, 0}, {3, 100 * MS, 0, 0}, {3, 200 * MS, 0, 0}, {3, 300 * MS, 0, 0}, {3, 340 * MS, 40 * MS, 0},
      {3, 380 * MS, 80 * MS, 0}, {3, 420 * MS, 120 * MS, 1}}, 7},
    {"a clock that goes back judges nothing", {{3, 100 * MS, 100 * MS, 0}, {3, 0, 200 * MS, 0}}, 2},
    {"CPU time that goes back judges nothing", {{3, 0, 500 * MS, 0}, {3, 200 * MS, 0, 0}}, 2},
};

/* Far more samples than the watch holds: the oldest go, and the judgement still takes a whole window. */
static void many_samples(void)
{
    struct scaf_idlewatch w;
    uint64_t t = 0, cpu = 0;
    int got = 0;

    memset(&w, 0, sizeof w);
    for (unsigned k = 0; k < 5 * SCAF_IDLEWATCH_SAMPLES; k++, t += 10 * MS)
        CHECK(scaf_idlewatch_step(&w, 7, t, 0, WINDOW, HALF) == 0, "quiet sample %u woke", k);
    CHECK(w.n == SCAF_IDLEWATCH_SAMPLES, "held %u samples", w.n);
    /* Now a whole CPU: the WAKE comes once the newest whole window burned over half of it, not before. */
    for (unsigned k = 0; k < 20 && !got; k++) {
        t += 10 * MS;
        cpu += 10 * MS;
        got = scaf_idlewatch_step(&w, 7, t, cpu, WINDOW, HALF);
        if (got)
            CHECK(cpu > WINDOW / 2 && cpu <= WINDOW / 2 + 10 * MS, "woke after %llu ms of CPU",
                  (unsigned long long)(cpu / MS));
    }
    CHECK(got, "never woke");
}

/* A WAKE that could not go (the connection busy with a reconnect) is asked for again by the next busy sample, and
 * only once more: once gone, the period says no more. */
static void unsent(void)
{
    struct scaf_idlewatch w;
    uint64_t t = 0;

    memset(&w, 0, sizeof w);
    CHECK(scaf_idlewatch_step(&w, 3, t, 0, WINDOW, HALF) == 0, "the first sample woke");
    t += WINDOW;
    CHECK(scaf_idlewatch_step(&w, 3, t, WINDOW, WINDOW, HALF) == 1, "a whole CPU for a window did not wake");
    scaf_idlewatch_unsent(&w);
    t += 10 * MS;
    CHECK(scaf_idlewatch_step(&w, 3, t, WINDOW + 10 * MS, WINDOW, HALF) == 1, "an unsent WAKE was not asked again");
    t += 10 * MS;
    CHECK(scaf_idlewatch_step(&w, 3, t, WINDOW + 20 * MS, WINDOW, HALF) == 0, "a WAKE gone was asked again");
}

int main(void)
{
    many_samples();
    unsent();
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct scaf_idlewatch w;

        memset(&w, 0, sizeof w);
        for (unsigned k = 0; k < rows[i].n; k++) {
            const struct sample *s = &rows[i].s[k];
            int got = scaf_idlewatch_step(&w, s->idle, s->now, s->cpu, WINDOW, HALF);

            CHECK(got == s->wake, "%s: sample %u: %d, want %d", rows[i].what, k, got, s->wake);
        }
    }
    return check_exit("test_layer_idlewatch");
}
