/* chatty.c — parallel regions that print to stdout and append to a file, one line per region instance. */
#include "common/args.h"
#include "common/hash.h"
#include "common/result.h"

#include <errno.h>
#include <fcntl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each instance's master prints one numbered line and appends one numbered
 * line to the file from inside the region. A serial experiment that lets a
 * forked child write, or that flushes inherited stdio buffers, shows up as
 * a repeated instance number. stdout is left to stdio's own buffering on
 * purpose: a pipe then holds earlier lines in the buffer when a child forks. */

static const struct wl_spec spec = {
    .name = "chatty",
    .description = "parallel regions that print and append to a file from inside the region, "
                   "one numbered line per instance (tests that forked experiments never "
                   "duplicate output)",
    .takes_file = 1,
    .file_default = "chatty.out",
};

#define BLOCK 65536

static int append_line(const char *path, const char *line)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t len = strlen(line);
    ssize_t w = write(fd, line, len);
    int saved = errno;
    close(fd);
    errno = saved;
    return w == (ssize_t)len ? 0 : -1;
}

static void format_line(char *buf, size_t cap, int inst, uint64_t sum)
{
    snprintf(buf, cap, "chatty instance=%d sum=%llu\n", inst, (unsigned long long)sum);
}

/* Reads the file back: exactly `instances` lines, line i for instance i. */
static int verify_file(const char *path, int instances, const uint64_t *expect)
{
    FILE *f = fopen(path, "r");
    char line[256], want[256];
    int n = 0, ok = 1;
    if (!f) {
        fprintf(stderr, "chatty: cannot read back %s: %s\n", path, strerror(errno));
        return 0;
    }
    while (fgets(line, sizeof line, f)) {
        if (n < instances) {
            format_line(want, sizeof want, n, expect[n]);
            if (strcmp(line, want) != 0) {
                fprintf(stderr, "chatty: line %d of %s is \"%.*s\", expected \"%.*s\"\n", n + 1,
                        path, (int)strcspn(line, "\n"), line, (int)strcspn(want, "\n"), want);
                ok = 0;
            }
        }
        n++;
    }
    fclose(f);
    if (n != instances) {
        fprintf(stderr, "chatty: %s has %d lines, expected %d\n", path, n, instances);
        ok = 0;
    }
    return ok;
}

int main(int argc, char **argv)
{
    struct wl_args args;
    int rc;
    if (!wl_args_ready(argc, argv, &spec, &args, &rc))
        return rc;
    const int instances = (int)wl_scaled(&args, WL_PICK(args.size, 16, 400, 1600), 1, 1);
    /* About 10 ms per instance at one thread: threads x time stays well above
     * the few milliseconds under which scaf times a region in place instead
     * of forking a serial experiment. */
    const long n = 1L << 24;
    const long nb = n / BLOCK;
    uint64_t *x = malloc((size_t)n * sizeof *x);
    uint64_t *partial = malloc((size_t)nb * sizeof *partial);
    uint64_t *sums = calloc((size_t)instances, sizeof *sums);
    uint64_t *expect = malloc((size_t)instances * sizeof *expect);
    if (!x || !partial || !sums || !expect) {
        fprintf(stderr, "chatty: out of memory\n");
        return wl_result_print(spec.name, 0.0, 0);
    }
    int fd = open(args.file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "chatty: cannot create %s: %s\n", args.file, strerror(errno));
        return wl_result_print(spec.name, 0.0, 0);
    }
    close(fd);
    uint64_t base = 0; /* sum of x */
    for (long i = 0; i < n; i++) {
        x[i] = wl_mix64((uint64_t)i) >> 8;
        base += x[i];
    }

    int write_errors = 0;
    double t0 = wl_clock_now();
    for (int inst = 0; inst < instances; inst++) {
        /* Instance inst sums (inst+1)*x[i] + i: exact integer arithmetic. */
#pragma omp parallel
        {
            wl_team_note();
#pragma omp for schedule(static)
            for (long b = 0; b < nb; b++) {
                uint64_t s = 0;
                for (long i = b * BLOCK; i < (b + 1) * BLOCK; i++)
                    s += (uint64_t)(inst + 1) * x[i] + (uint64_t)i;
                partial[b] = s;
            }
#pragma omp master
            {
                uint64_t s = 0;
                char line[128];
                for (long b = 0; b < nb; b++)
                    s += partial[b];
                sums[inst] = s;
                format_line(line, sizeof line, inst, s);
                fputs(line, stdout);
                if (append_line(args.file, line) != 0)
                    write_errors++;
            }
        }
    }
    double elapsed = wl_clock_now() - t0;

    /* sum over i of (inst+1)*x[i] + i = (inst+1)*base + n(n-1)/2 (mod 2^64) */
    int ok = write_errors == 0;
    uint64_t h = 0;
    for (int inst = 0; inst < instances; inst++) {
        expect[inst] = (uint64_t)(inst + 1) * base + (uint64_t)n * (uint64_t)(n - 1) / 2;
        if (sums[inst] != expect[inst]) {
            fprintf(stderr, "chatty: instance %d sum is wrong\n", inst);
            ok = 0;
        }
        h = wl_hash_u64(h, sums[inst]);
    }
    if (write_errors)
        fprintf(stderr, "chatty: %d appends to %s failed\n", write_errors, args.file);
    ok = verify_file(args.file, instances, expect) && ok;

    wl_checksum_print(h);
    printf("instances=%d file=%s\n", instances, args.file);
    free(x);
    free(partial);
    free(sums);
    free(expect);
    return wl_result_print(spec.name, elapsed, ok);
}
