/* check.h — the few helpers every C unit test shares: a non-fatal CHECK, failure count, list formatting. */
#ifndef SCAF_TEST_CHECK_H
#define SCAF_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>

static int failures;

/* Non-fatal: a table-driven test reports every failing row, not just the first. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                  \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static inline void fail(const char *what, const char *detail)
{
    fprintf(stderr, "FAIL %s: %s\n", what, detail);
    failures++;
}

/* "a,b,c" into buf, for failure messages. */
static inline void fmt(char *buf, size_t len, const uint32_t *v, uint32_t n)
{
    size_t off = 0;

    buf[0] = 0;
    for (uint32_t i = 0; i < n && off + 12 < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%u", i ? "," : "", v[i]);
}

/* The exit status of a test program. */
static inline int check_exit(const char *name)
{
    if (failures)
        fprintf(stderr, "%s: %d failure(s)\n", name, failures);
    else
        printf("%s: all passed\n", name);
    return failures != 0;
}

#endif
