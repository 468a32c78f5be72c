/* startenv.c — every parallel runtime that reads its count once, in one table, and the start environment that gives each the program's share. */
#include "scaf/startenv.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

/*
 * Each row was read in the runtime's source or measured with its release
 * (docs/runtimes.md has the evidence for each): the variable its pool reads
 * when it is built, and how the layer knows it is there. `objects` are
 * basenames of the shared objects that carry the runtime (a Python wheel's
 * extension, libjvm.so); `marker` a string a program's executable holds when
 * the runtime is linked into it (Rust and Go executables).
 */
static const struct scaf_startenv_runtime table[SCAF_RT_COUNT] = {
    [SCAF_RT_RAYON] = {"rayon", "RAYON_NUM_THREADS", "%u", 0, NULL, NULL, NULL, "RAYON_NUM_THREADS", SCAF_FOLLOW_START},
    [SCAF_RT_POLARS] = {"polars", "POLARS_MAX_THREADS", "%u", 0, NULL, NULL, "_polars_runtime*.so:polars.abi3.so",
                        NULL, SCAF_FOLLOW_START},
    [SCAF_RT_ONNXRUNTIME] = {"onnxruntime", "ORT_INTRA_OP_NUM_THREADS", "%u", 0, NULL, NULL,
                             "onnxruntime_pybind11_state*.so:libonnxruntime.so*", NULL, SCAF_FOLLOW_START, NULL, 0, 1},
    /* Its prange rounds run on the first pool its import finds: oneTBB, OpenMP or its own workqueue, which alone
     * keeps the count it read. */
    [SCAF_RT_NUMBA] = {"numba", "NUMBA_NUM_THREADS", "%u", 0, NULL, NULL,
                       "workqueue.cpython-*.so:omppool.cpython-*.so:tbbpool.cpython-*.so", NULL, SCAF_FOLLOW_START,
                       .on_openmp = "omppool.cpython-*.so", .on_tbb = "tbbpool.cpython-*.so"},
    /* numexpr takes OMP_NUM_THREADS when its own variable is not set. */
    [SCAF_RT_NUMEXPR] = {"numexpr", "NUMEXPR_NUM_THREADS", "%u", 0, NULL, "OMP_NUM_THREADS",
                         "interpreter.cpython-*.so", NULL, SCAF_FOLLOW_START},
    /* No variable: the layer answers std::thread::hardware_concurrency(), which DuckDB reads for its threads. */
    [SCAF_RT_DUCKDB] = {"duckdb", NULL, NULL, 0, NULL, NULL, "_duckdb*.so:libduckdb.so*", NULL, SCAF_FOLLOW_START,
                        NULL, 0, 1},
    /* No variable of its own (it reads OpenMP's): the layer sets its CPU pool's capacity, and follows the share. */
    [SCAF_RT_ARROW] = {"arrow", NULL, NULL, 0, NULL, NULL, "libarrow.so*", NULL, SCAF_FOLLOW_LAYER},
    [SCAF_RT_GO] = {"go", "GOMAXPROCS", "%u", 0, NULL, NULL, NULL, "GOMAXPROCS", SCAF_FOLLOW_START},
    [SCAF_RT_JVM] = {"jvm", "JAVA_TOOL_OPTIONS", "-XX:ActiveProcessorCount=%u", 1, "ActiveProcessorCount", NULL,
                     "libjvm.so", NULL, SCAF_FOLLOW_START, "java", 1},
    [SCAF_RT_DOTNET] = {"dotnet", "DOTNET_PROCESSOR_COUNT", "%u", 0, NULL, NULL, "libcoreclr.so", NULL,
                        SCAF_FOLLOW_START, "dotnet"},
    [SCAF_RT_JULIA] = {"julia", "JULIA_NUM_THREADS", "%u", 0, NULL, NULL, "libjulia.so*:libjulia-internal.so*",
                       NULL, SCAF_FOLLOW_START, "julia"},
};

const struct scaf_startenv_runtime *scaf_startenv_table(void)
{
    return table;
}

/* The user's value of `name` in envp, NULL when unset. */
static const char *lookup(const char *const *envp, const char *name)
{
    size_t n = strlen(name);

    for (; envp && *envp; envp++)
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}

static int add(struct scaf_startenv_var *out, unsigned *n, unsigned max, const char *name, const char *value)
{
    if (*n >= max || strlen(name) >= sizeof out->name || strlen(value) >= sizeof out->value)
        return -1;
    snprintf(out[*n].name, sizeof out[*n].name, "%s", name);
    snprintf(out[*n].value, sizeof out[*n].value, "%s", value);
    (*n)++;
    return 0;
}

unsigned scaf_startenv_build(unsigned share, unsigned count, uint32_t found, int all, const char *const *envp,
                             struct scaf_startenv_var *out, unsigned max)
{
    unsigned n = 0;
    char value[sizeof out->value], number[64];

    if (share == 0 || share >= count)
        return 0;
    for (int i = 0; i < SCAF_RT_COUNT; i++) {
        const struct scaf_startenv_runtime *r = &table[i];
        const char *user;

        if (!r->var || (!all && !r->spins) || (r->also && lookup(envp, r->also)) ||
            (r->when_found && !(found & (1u << i))))
            continue;
        user = lookup(envp, r->var);
        if (user && (!r->append || !r->count_in || strstr(user, r->count_in)))
            continue; /* the user's count stands */
        snprintf(number, sizeof number, r->format, share);
        if (r->append && user && *user) {
            if ((size_t)snprintf(value, sizeof value, "%s %s", user, number) >= sizeof value)
                continue; /* too long to add to: the user's value stands as it is */
        } else {
            snprintf(value, sizeof value, "%s", number);
        }
        (void)add(out, &n, max, r->var, value);
    }
    snprintf(number, sizeof number, "%u", share);
    (void)add(out, &n, max, "SCAF_START_SHARE", number);
    return n;
}

/* Whether `name` matches one of the ':'-separated globs of `list`. */
static int matches(const char *list, const char *name)
{
    const char *p = list;
    char glob[64];

    while (p && *p) {
        size_t len = strcspn(p, ":");

        if (len < sizeof glob) {
            memcpy(glob, p, len);
            glob[len] = '\0';
            if (fnmatch(glob, name, 0) == 0)
                return 1;
        }
        p += len;
        if (*p == ':')
            p++;
    }
    return 0;
}

uint32_t scaf_startenv_objects(const char *name)
{
    uint32_t bits = 0;

    if (!name || !*name)
        return 0;
    for (int i = 0; i < SCAF_RT_COUNT; i++)
        if (matches(table[i].objects, name))
            bits |= 1u << i;
    return bits;
}

uint32_t scaf_startenv_carried(const char *name, int carrier)
{
    uint32_t bits = 0;

    if (!name || !*name)
        return 0;
    for (int i = 0; i < SCAF_RT_COUNT; i++)
        if (matches(carrier == SCAF_CARRIER_TBB ? table[i].on_tbb : table[i].on_openmp, name))
            bits |= 1u << i;
    return bits;
}

uint32_t scaf_startenv_programs(const char *name)
{
    uint32_t bits = 0;

    if (!name || !*name)
        return 0;
    for (int i = 0; i < SCAF_RT_COUNT; i++)
        if (matches(table[i].programs, name))
            bits |= 1u << i;
    return bits;
}

uint32_t scaf_startenv_markers(const void *p, size_t len)
{
    uint32_t bits = 0;

    for (int i = 0; i < SCAF_RT_COUNT; i++)
        if (table[i].marker && p && memmem(p, len, table[i].marker, strlen(table[i].marker)))
            bits |= 1u << i;
    return bits;
}

uint32_t scaf_startenv_bits(const char *names)
{
    uint32_t bits = 0;

    while (names && *names) {
        size_t len = strcspn(names, ",");

        for (int i = 0; i < SCAF_RT_COUNT; i++)
            if (strlen(table[i].name) == len && strncmp(table[i].name, names, len) == 0)
                bits |= 1u << i;
        names += len;
        if (*names == ',')
            names++;
    }
    return bits;
}

void scaf_startenv_names(uint32_t bits, char *buf, size_t len)
{
    size_t off = 0;

    if (!len)
        return;
    buf[0] = '\0';
    for (int i = 0; i < SCAF_RT_COUNT && off + 1 < len; i++)
        if (bits & (1u << i))
            off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "", table[i].name);
}
