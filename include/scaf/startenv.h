/* startenv.h — every parallel runtime that reads its count once, in one table: the variable it honours, how the layer recognises it, and the start environment that gives it the program's share. */
#ifndef SCAF_STARTENV_H
#define SCAF_STARTENV_H

#include <stddef.h>
#include <stdint.h>

/*
 * Why (docs/runtimes.md): onnxruntime, polars and every rayon pool, numba,
 * numexpr, DuckDB, Arrow, Go, the JVM, .NET and Julia size a pool from the
 * CPUs they see, most of them once, when the pool is built. The start is the
 * one moment such a count can be chosen, so a program that scaf run starts
 * gets its share there, through what each runtime itself honours, exactly as
 * a careful user's static split gives it: the runtime's own variable, or,
 * for the two that have none, the layer (DuckDB's count of CPUs, Arrow's
 * pool capacity). A variable the user set stands. The one table of them is
 * here; scaf run (through libscaf_launch.so), its replay scaf-run, the layer
 * and the bench's static split all read it.
 */

/* The runtimes of the table, by bit (the page's `runtimes` word, status). */
enum scaf_startenv_id {
    SCAF_RT_RAYON = 0,
    SCAF_RT_POLARS,
    SCAF_RT_ONNXRUNTIME,
    SCAF_RT_NUMBA,
    SCAF_RT_NUMEXPR,
    SCAF_RT_DUCKDB,
    SCAF_RT_ARROW,
    SCAF_RT_GO,
    SCAF_RT_JVM,
    SCAF_RT_DOTNET,
    SCAF_RT_JULIA,
    SCAF_RT_COUNT,
};

/* How a runtime's pool follows the program's share. */
enum scaf_startenv_follow {
    SCAF_FOLLOW_START = 0, /* its count is read once: the share at its start, fixed for the run */
    SCAF_FOLLOW_LAYER = 1, /* the layer resizes its pool when the share changes (Arrow) */
};

struct scaf_startenv_runtime {
    const char *name;    /* "polars" */
    const char *var;     /* the variable that sets its count, NULL: none (the layer gives it) */
    const char *format;  /* the value, from the share: "%u", or for an option appended to the user's, " -XX:...=%u" */
    int append;          /* the value is added to the user's value of `var` (JAVA_TOOL_OPTIONS) */
    const char *count_in; /* a user's value of `var` that holds this word already sets the count, NULL: any value */
    const char *also;    /* another variable of the user's that the runtime reads for its count, NULL: none */
    const char *objects; /* loaded objects that are this runtime: basename globs, ':' between them; NULL: none */
    const char *marker;  /* a string the program's executable holds when it has this runtime built in; NULL */
    int follow;          /* enum scaf_startenv_follow */
    const char *programs; /* executables that load it later (java dlopens libjvm.so): basename globs; NULL */
    int when_found;      /* set only for a program known to have it: the variable has another effect (the JVM
                          * says on stderr that it picked up JAVA_TOOL_OPTIONS) */
    int spins;           /* its pool's threads spin while they wait for work: beside another program, a pool
                          * larger than its share burns the other's CPUs, so it starts with the share. A pool whose
                          * threads sleep loses more by a count fixed below the machine (every moment it runs
                          * alone) than by time-slicing: it starts with its own count (docs/runtimes.md has the
                          * measurements) */
    /* Loaded objects that mean its pool runs on a runtime the layer steers, so that it follows the share and
     * is no fixed team: `on_openmp`, its work is OpenMP regions (numba's omppool); `on_tbb`, it is oneTBB's,
     * which follows once that oneTBB asks TCM for its workers (numba's tbbpool). Globs as `objects`; NULL: none */
    const char *on_openmp;
    const char *on_tbb;
};

enum scaf_startenv_carrier {
    SCAF_CARRIER_OPENMP = 0, /* the row's on_openmp */
    SCAF_CARRIER_TBB = 1,    /* the row's on_tbb */
};

/* The table, SCAF_RT_COUNT rows in the order of enum scaf_startenv_id. */
const struct scaf_startenv_runtime *scaf_startenv_table(void);

/* One variable of the start environment. */
struct scaf_startenv_var {
    char name[32];
    char value[512];
};

#define SCAF_STARTENV_MAX (SCAF_RT_COUNT + 1)

/*
 * The variables to add to the environment of a program started with `share`
 * of the `count` CPUs it may run on, given the user's environment `envp`
 * (NAME=VALUE strings, NULL-terminated): the variable of each runtime whose
 * pool spins (or of every runtime, with `all`: a static split's) at the
 * share, unless the user set it (or the variable the runtime also reads),
 * and SCAF_START_SHARE, which the layer reads for the runtimes without one.
 * `found`: the runtimes the program is known to have (1 << id); a variable
 * marked when_found is set only for them, every other one for any program
 * (its pool may come with a library loaded later, and the variable is inert
 * where there is none).
 * Nothing when the share is 0 or not below `count` (the program would see
 * as many anyway). A user's value too long to append to is left as it is.
 * Returns how many were written to out (at most `max`). Pure
 * (tests/unit/test_startenv.c).
 */
unsigned scaf_startenv_build(unsigned share, unsigned count, uint32_t found, int all, const char *const *envp,
                             struct scaf_startenv_var *out, unsigned max);

/* The bits of the runtimes named in `names` ("polars,jvm": SCAF_RUNTIMES), unknown names ignored. Pure. */
uint32_t scaf_startenv_bits(const char *names);

/* The bits (1 << enum scaf_startenv_id) of the runtimes whose objects match the basename `name`. Pure. */
uint32_t scaf_startenv_objects(const char *name);

/* The bits of the runtimes whose pool runs on `carrier` (enum scaf_startenv_carrier) when the object of basename
 * `name` is loaded. Pure. */
uint32_t scaf_startenv_carried(const char *name, int carrier);

/* The bits of the runtimes that the executable of basename `name` loads after its start (java: the JVM). Pure. */
uint32_t scaf_startenv_programs(const char *name);

/* The bits of the runtimes whose marker string lies in [p, p + len): the executable's read-only data. Pure. */
uint32_t scaf_startenv_markers(const void *p, size_t len);

/* "polars,duckdb" for the bits (a name per runtime of the table, in its order), into buf. */
void scaf_startenv_names(uint32_t bits, char *buf, size_t len);

#endif
