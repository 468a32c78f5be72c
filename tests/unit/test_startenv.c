/* test_startenv.c — the runtimes' start environment, row by row: which variables a share sets, what the user's own stand on, and how the layer recognises each runtime. */
#include "scaf/startenv.h"

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "scaf/startrule.h"

/* The value of NAME in out[0..n), NULL when not set. */
static const char *got(const struct scaf_startenv_var *out, unsigned n, const char *name)
{
    for (unsigned i = 0; i < n; i++)
        if (strcmp(out[i].name, name) == 0)
            return out[i].value;
    return NULL;
}

static void builds(void)
{
    struct scaf_startenv_var out[SCAF_STARTENV_MAX];
    const char *none[] = {NULL};
    const char *user[] = {"POLARS_MAX_THREADS=3", "JAVA_TOOL_OPTIONS=-Xmx1g", "HOME=/h", NULL};
    const char *java_count[] = {"JAVA_TOOL_OPTIONS=-XX:ActiveProcessorCount=7", NULL};
    const char *omp[] = {"OMP_NUM_THREADS=4", NULL};
    char longv[600] = "JAVA_TOOL_OPTIONS=";
    const char *too_long[] = {longv, NULL};
    unsigned n;

    /* scaf run's start: only the runtimes whose pools spin get the share (onnxruntime by its variable, DuckDB by
     * the layer's count: SCAF_START_SHARE); those whose threads sleep keep their own count. */
    n = scaf_startenv_build(1, 2, ~0u, 0, none, out, SCAF_STARTENV_MAX);
    CHECK(n == 2 && got(out, n, "ORT_INTRA_OP_NUM_THREADS") && got(out, n, "SCAF_START_SHARE"),
          "the spinning runtimes: %u", n);
    CHECK(!got(out, n, "POLARS_MAX_THREADS") && !got(out, n, "GOMAXPROCS"), "not the sleeping ones");
    /* A static split (all): every runtime's variable at the share, and SCAF_START_SHARE for the layer. */
    n = scaf_startenv_build(1, 2, 1u << SCAF_RT_JVM, 1, none, out, SCAF_STARTENV_MAX);
    CHECK(n == 10, "nine variables and the share: %u", n);
    CHECK(got(out, n, "RAYON_NUM_THREADS") && strcmp(got(out, n, "RAYON_NUM_THREADS"), "1") == 0, "rayon");
    CHECK(got(out, n, "POLARS_MAX_THREADS") && strcmp(got(out, n, "POLARS_MAX_THREADS"), "1") == 0, "polars");
    CHECK(got(out, n, "ORT_INTRA_OP_NUM_THREADS") != NULL, "onnxruntime");
    CHECK(got(out, n, "GOMAXPROCS") && got(out, n, "NUMBA_NUM_THREADS") && got(out, n, "NUMEXPR_NUM_THREADS") &&
              got(out, n, "DOTNET_PROCESSOR_COUNT") && got(out, n, "JULIA_NUM_THREADS"),
          "go, numba, numexpr, dotnet, julia");
    CHECK(got(out, n, "JAVA_TOOL_OPTIONS") && strcmp(got(out, n, "JAVA_TOOL_OPTIONS"), "-XX:ActiveProcessorCount=1") == 0,
          "the JVM's option alone: %s", got(out, n, "JAVA_TOOL_OPTIONS"));
    CHECK(got(out, n, "SCAF_START_SHARE") && strcmp(got(out, n, "SCAF_START_SHARE"), "1") == 0, "the share");
    CHECK(!got(out, n, "OMP_NUM_THREADS"), "OpenMP's count is the start rule's, not this table's");

    /* Nothing when the share is not below the count, or unknown. */
    CHECK(scaf_startenv_build(2, 2, ~0u, 1, none, out, SCAF_STARTENV_MAX) == 0, "share = count");
    CHECK(scaf_startenv_build(3, 2, ~0u, 1, none, out, SCAF_STARTENV_MAX) == 0, "share > count");
    CHECK(scaf_startenv_build(0, 2, ~0u, 1, none, out, SCAF_STARTENV_MAX) == 0, "no share");

    /* The user's count stands; the JVM's option is added to the user's others. */
    n = scaf_startenv_build(2, 8, ~0u, 1, user, out, SCAF_STARTENV_MAX);
    CHECK(!got(out, n, "POLARS_MAX_THREADS"), "the user's POLARS_MAX_THREADS stands");
    CHECK(got(out, n, "JAVA_TOOL_OPTIONS") &&
              strcmp(got(out, n, "JAVA_TOOL_OPTIONS"), "-Xmx1g -XX:ActiveProcessorCount=2") == 0,
          "added to the user's JAVA_TOOL_OPTIONS: %s", got(out, n, "JAVA_TOOL_OPTIONS"));
    n = scaf_startenv_build(2, 8, ~0u, 1, java_count, out, SCAF_STARTENV_MAX);
    CHECK(!got(out, n, "JAVA_TOOL_OPTIONS"), "the user's ActiveProcessorCount stands");
    /* numexpr reads OpenMP's count when its own is unset: a user's OMP_NUM_THREADS speaks for it. */
    n = scaf_startenv_build(2, 8, ~0u, 1, omp, out, SCAF_STARTENV_MAX);
    CHECK(!got(out, n, "NUMEXPR_NUM_THREADS") && got(out, n, "POLARS_MAX_THREADS"), "numexpr under OMP_NUM_THREADS");
    /* A user's value too long to add to stands as it is. */
    memset(longv + strlen(longv), 'x', 520);
    longv[sizeof longv - 1] = '\0';
    n = scaf_startenv_build(2, 8, ~0u, 1, too_long, out, SCAF_STARTENV_MAX);
    CHECK(!got(out, n, "JAVA_TOOL_OPTIONS"), "a long JAVA_TOOL_OPTIONS left as it is");
    /* The JVM's option only for a program known to have a JVM: the JVM says on stderr it picked it up. */
    n = scaf_startenv_build(1, 2, 1u << SCAF_RT_POLARS, 1, none, out, SCAF_STARTENV_MAX);
    CHECK(n == 9 && !got(out, n, "JAVA_TOOL_OPTIONS"), "no JAVA_TOOL_OPTIONS without a JVM: %u", n);
    CHECK(scaf_startenv_bits("polars,jvm,nosuch") == ((1u << SCAF_RT_POLARS) | (1u << SCAF_RT_JVM)), "names to bits");
    CHECK(scaf_startenv_bits("") == 0 && scaf_startenv_bits(NULL) == 0, "no names");
    /* A short out[]: no more than it holds. */
    CHECK(scaf_startenv_build(1, 2, ~0u, 1, none, out, 3) == 3, "max respected");
}

static void recognises(void)
{
    static const struct {
        const char *name;
        uint32_t bits;
    } objects[] = {
        {"_polars_runtime.abi3.so", 1u << SCAF_RT_POLARS},
        {"_duckdb.cpython-311-x86_64-linux-gnu.so", 1u << SCAF_RT_DUCKDB},
        {"onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so", 1u << SCAF_RT_ONNXRUNTIME},
        {"libonnxruntime.so.1.31.1", 1u << SCAF_RT_ONNXRUNTIME},
        {"libarrow.so.2600", 1u << SCAF_RT_ARROW},
        {"libjvm.so", 1u << SCAF_RT_JVM},
        {"libcoreclr.so", 1u << SCAF_RT_DOTNET},
        {"libjulia-internal.so.1.11", 1u << SCAF_RT_JULIA},
        {"workqueue.cpython-311-x86_64-linux-gnu.so", 1u << SCAF_RT_NUMBA},
        {"libgomp.so.1", 0},
        {"libopenblas.so.0", 0},
        {"", 0},
        {NULL, 0},
    };
    static const char go_exe[] = "...runtime: GOMAXPROCS=...", rust_exe[] = "RAYON_NUM_THREADS\0rayon";
    char names[128];

    for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++) {
        uint32_t b = scaf_startenv_objects(objects[i].name);
        CHECK(b == objects[i].bits, "%s: %#x, want %#x", objects[i].name ? objects[i].name : "(null)", b,
              objects[i].bits);
    }
    CHECK(scaf_startenv_carried("omppool.cpython-311-x86_64-linux-gnu.so", SCAF_CARRIER_OPENMP) == 1u << SCAF_RT_NUMBA,
          "numba on OpenMP");
    CHECK(scaf_startenv_carried("tbbpool.cpython-311-x86_64-linux-gnu.so", SCAF_CARRIER_TBB) == 1u << SCAF_RT_NUMBA,
          "numba on oneTBB");
    CHECK(scaf_startenv_carried("tbbpool.cpython-311-x86_64-linux-gnu.so", SCAF_CARRIER_OPENMP) == 0, "not OpenMP");
    CHECK(scaf_startenv_carried("workqueue.cpython-311-x86_64-linux-gnu.so", SCAF_CARRIER_TBB) == 0 &&
              scaf_startenv_carried("workqueue.cpython-311-x86_64-linux-gnu.so", SCAF_CARRIER_OPENMP) == 0,
          "numba's own workqueue is carried by nothing");
    CHECK(scaf_startenv_carried(NULL, SCAF_CARRIER_TBB) == 0, "no name");
    CHECK(scaf_startenv_markers(go_exe, sizeof go_exe) == 1u << SCAF_RT_GO, "a Go executable");
    CHECK(scaf_startenv_markers(rust_exe, sizeof rust_exe) == 1u << SCAF_RT_RAYON, "a rayon executable");
    CHECK(scaf_startenv_markers("nothing here", 12) == 0, "no marker");
    scaf_startenv_names((1u << SCAF_RT_POLARS) | (1u << SCAF_RT_JVM), names, sizeof names);
    CHECK(strcmp(names, "polars,jvm") == 0, "names: %s", names);
    scaf_startenv_names(0, names, sizeof names);
    CHECK(names[0] == '\0', "no names");
    /* The table is whole: a name for every runtime, in the order of its bits. */
    for (int i = 0; i < SCAF_RT_COUNT; i++)
        CHECK(scaf_startenv_table()[i].name != NULL, "row %d", i);
}

/* scaf run's words for the start rule's decisions. */
static void words(void)
{
    static const struct {
        const char *what;
        struct scaf_start_in in;
        const char *user, *want;
    } rows[] = {
        {"remembered fixed", {.nthreads = 4, .asked = 1, .start_team = 2, .memory_runs = 3,
                              .memory_verdict = SCAF_VERDICT_FIXED, .memory_source = SCAF_SOURCE_EVIDENCE},
         NULL, "remembered fixed from 3 runs"},
        {"one run", {.nthreads = 4, .asked = 1, .start_team = 2, .memory_runs = 1,
                     .memory_verdict = SCAF_VERDICT_FIXED, .memory_source = SCAF_SOURCE_EVIDENCE},
         NULL, "remembered fixed from 1 run"},
        {"by check", {.nthreads = 4, .asked = 1, .start_team = 2, .memory_runs = 1,
                      .memory_verdict = SCAF_VERDICT_FIXED, .memory_source = SCAF_SOURCE_CHECK},
         NULL, "remembered fixed by scaf check"},
        {"check's malleable", {.nthreads = 4, .asked = 1, .start_team = 2, .memory_runs = 1,
                               .memory_verdict = SCAF_VERDICT_MALLEABLE, .memory_source = SCAF_SOURCE_CHECK},
         NULL, "remembered malleable by scaf check: steered from its first region"},
        {"malleable", {.nthreads = 4, .asked = 1, .start_team = 2, .memory_runs = 2,
                       .memory_verdict = SCAF_VERDICT_MALLEABLE, .memory_source = SCAF_SOURCE_EVIDENCE},
         NULL, "remembered malleable from 2 runs"},
        {"nothing", {.nthreads = 4, .asked = 1, .start_team = 2}, NULL, "nothing is remembered of it"},
        {"the user's word", {.nthreads = 4, .asked = 1, .start_team = 2, .user_fixed = 1}, "fixed by --fixed",
         "fixed by --fixed"},
        {"no start team", {.nthreads = 4, .asked = 1, .user_fixed = 1}, "fixed by --fixed",
         "fixed by --fixed, but the daemon offers no start team"},
        {"not smaller", {.nthreads = 2, .asked = 1, .start_team = 2, .user_fixed = 1}, "fixed by --fixed",
         "fixed by --fixed, but its share (2) is not below its count (2)"},
    };
    char buf[256];

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct scaf_start out = scaf_start_decide(&rows[i].in);

        scaf_start_words(&rows[i].in, &out, rows[i].user, buf, sizeof buf);
        CHECK(strcmp(buf, rows[i].want) == 0, "%s: '%s', want '%s'", rows[i].what, buf, rows[i].want);
    }
}

/* SCAF_MALLEABLE's words, for the layer and scaf run alike. */
static void user_words(void)
{
    static const struct {
        const char *v;
        int want;
    } rows[] = {{"yes", 1}, {"TRUE", 1}, {"On", 1}, {"1", 1}, {"malleable", 1}, {"no", 0}, {"False", 0}, {"off", 0},
                {"0", 0}, {"fixed", 0}, {"auto", -1}, {"", -1}, {NULL, -1}, {"maybe", -2}, {"yes ", -2}};

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        CHECK(scaf_start_word(rows[i].v) == rows[i].want, "'%s': %d, want %d", rows[i].v ? rows[i].v : "(null)",
              scaf_start_word(rows[i].v), rows[i].want);
}

int main(void)
{
    user_words();
    builds();
    recognises();
    words();
    return check_exit("test_startenv");
}
