/* test_layer_reason.c — the reason texts of the malleability verdict (malleable/reason.c), one row per rule, and how code is named. */
#include "../../src/layer/malleable/reason.h"

#include <string.h>

#include "scaf/startrule.h"
#include "../../src/layer/core/verdict.h"
#include "check.h"
#include "scaf/proto.h"

/* Addresses that belong to no object: dladdr names none, so the texts show them as %p does. */
#define A1 ((void *)0x1000)
#define A2 ((void *)0x2000)

static const struct scaf_reason_facts none = {0};
static const struct scaf_reason_facts queried = {.query_caller = A1};
static const struct scaf_reason_facts in_region = {.query_caller = A1, .query_in_region = 1};
static const struct scaf_reason_facts set4 = {.query_caller = A1, .set_count = 4, .set_caller = A1,
                                              .tid_fn = A2, .tid_only_fn = A2};

static const struct {
    const char *what;
    int why;
    void *fn;
    unsigned team;
    const struct scaf_reason_facts *f;
    const char *want;
} rows[] = {
    {"escaped", SCAF_WHY_ESCAPED, A2, 3, &none,
     "region 0x2000 read the team size (3) without thread numbers: watching each region once"},
    {"escaped after thread numbers", SCAF_WHY_ESCAPED_TID, A2, 3, &queried,
     "a region numbers threads without omp_get_num_threads(); region 0x2000 read the team size without thread numbers"},
    {"thread numbers only, after a query", SCAF_WHY_TID_ONLY, A2, 0, &queried,
     "region 0x2000 numbers threads without omp_get_num_threads(); omp_get_max_threads() outside regions from 0x1000"},
    {"thread numbers only, the first such region named", SCAF_WHY_TID_ONLY, NULL, 0, &set4,
     "region 0x2000 numbers threads without omp_get_num_threads(); omp_set_num_threads(4) outside regions from 0x1000"},
    {"thread numbers only, count read in a region", SCAF_WHY_TID_ONLY, A2, 0, &in_region,
     "region 0x2000 numbers threads without omp_get_num_threads(); region 0x1000 read the team size"},
    {"thread numbers after a set", SCAF_WHY_SET_TID, NULL, 0, &set4,
     "region 0x2000 numbers threads; omp_set_num_threads(4) outside regions from 0x1000"},
    {"thread numbers after a set, no region named yet", SCAF_WHY_SET_TID, A1, 0,
     &(const struct scaf_reason_facts){.set_count = 2},
     "region 0x1000 numbers threads; omp_set_num_threads(2) outside regions from (nil)"},
    {"thread-local state carried", SCAF_WHY_TLS_CARRIED, A2, 0, &none,
     "region 0x2000 depends on thread-local (threadprivate) data left by earlier regions"},
    {"thread-local state unchecked", SCAF_WHY_TLS_UNCHECKED, A2, 0, &none,
     "region 0x2000 runs in code with thread-local (threadprivate) data that could not be checked"},
    {"thread-local state being checked", SCAF_WHY_TLS_WAIT, A2, 0, &(const struct scaf_reason_facts){.tls_held = 1},
     "1 site held for the thread-local check: region 0x2000 runs in code with thread-local (threadprivate) data, "
     "checking whether it outlives the region"},
    {"a site settled while others are held", SCAF_WHY_TLS_HELD, A2, 0, &(const struct scaf_reason_facts){.tls_held = 2},
     "2 sites still held for the thread-local check (region 0x2000 was settled)"},
    {"clean after a query", SCAF_WHY_CLEAN, A2, 0, &queried,
     "omp_get_max_threads() outside regions from 0x1000, but every region seen reads its own team size or none"},
    {"clean after a TLS check", SCAF_WHY_CLEAN, A2, 0, &none,
     "its thread-local data is per-region scratch (region 0x2000 checked)"},
    {"the memory recalls scaf check's malleable", SCAF_WHY_CHECKED, NULL, 0, &queried,
     "scaf check found it malleable (remembered)"},
    {"no rule", SCAF_WHY_NONE, NULL, 0, &none, "region (nil)"},
};

int main(void)
{
    char out[SCAF_REASON_MAX];

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        scaf_reason_for(rows[i].why, rows[i].fn, rows[i].team, rows[i].f, out, sizeof out);
        CHECK(strcmp(out, rows[i].want) == 0, "%s:\n  got  '%s'\n  want '%s'", rows[i].what, out, rows[i].want);
    }

    scaf_reason_count_known(A1, 0, 0, out, sizeof out);
    CHECK(strcmp(out, "omp_get_max_threads() outside regions from 0x1000: watching each region once") == 0,
          "query: '%s'", out);
    scaf_reason_count_known(A1, 1, 6, out, sizeof out);
    CHECK(strcmp(out, "omp_set_num_threads(6) outside regions from 0x1000: watching each region once") == 0,
          "set: '%s'", out);

    /* Code of this program: its symbol where the program exports it, else its file's name and the offset. */
    scaf_reason_describe((void *)main, out, sizeof out);
    CHECK(strncmp(out, "test_layer_reason+0x", 20) == 0 || strcmp(out, "main (test_layer_reason)") == 0, "main: '%s'",
          out);
    /* A program started with its share (client/start.c): why it keeps it. */
    {
        static const struct {
            unsigned team, contexts;
            int keep;
            unsigned runs;
            const char *user, *want;
        } started[] = {
            {1, 2, SCAF_KEEP_REMEMBERED, 3, NULL, "started with 1 of 2 contexts: remembered fixed from 3 runs; cannot grow"},
            {4, 16, SCAF_KEEP_REMEMBERED, 1, NULL, "started with 4 of 16 contexts: remembered fixed from 1 run; cannot grow"},
            {2, 8, SCAF_KEEP_REMEMBERED, 0, NULL,
             "started with 2 of 8 contexts by scaf run: remembered fixed; cannot grow"},
            {1, 2, SCAF_KEEP_CHECKED, 2, NULL, "started with 1 of 2 contexts: remembered fixed by scaf check; cannot grow"},
            {1, 2, SCAF_KEEP_USER, 0, "SCAF_MALLEABLE=no (scaf run --fixed)",
             "started with 1 of 2 contexts: SCAF_MALLEABLE=no (scaf run --fixed); cannot grow"},
            {3, 4, SCAF_KEEP_USER, 0, "rule /etc/scaf/rules:2: fixed gm",
             "started with 3 of 4 contexts: rule /etc/scaf/rules:2: fixed gm; cannot grow"},
        };
        for (size_t i = 0; i < sizeof started / sizeof started[0]; i++) {
            scaf_reason_started(started[i].team, started[i].contexts, started[i].keep, started[i].runs,
                                started[i].user, out, sizeof out);
            CHECK(strcmp(out, started[i].want) == 0, "started %zu:\n  got  '%s'\n  want '%s'", i, out,
                  started[i].want);
        }
    }
    /* A text is cut to the buffer it is given. */
    scaf_reason_for(SCAF_WHY_TLS_CARRIED, A2, 0, &none, out, 10);
    CHECK(strcmp(out, "region 0x") == 0, "short buffer: '%s'", out);
    return check_exit("test_layer_reason");
}
