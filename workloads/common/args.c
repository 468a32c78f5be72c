/* args.c — command-line parsing shared by every workload (--size, --scale, --until, --help, --file). */
#include "args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Bounds of --scale: beyond them a run is either empty or would not end in a day. */
#define SCALE_MIN 1e-4
#define SCALE_MAX 1e4

static void usage(const struct wl_spec *spec, FILE *f)
{
    fprintf(f, "%s: %s\n", spec->name, spec->description);
    fprintf(f, "usage: %s [--size S|W|A] [--scale F]%s%s%s [--help]\n", spec->name,
            spec->takes_switch ? " [--switch PATH]" : "", spec->takes_until ? " [--until PATH]" : "",
            spec->takes_file ? " [--file PATH]" : "");
    fprintf(f, "  --size S|W|A  problem size: S < 0.5 s, W 3-10 s, A about 4x W, all at one\n"
               "                thread on a 2-core test machine (default W)\n");
    fprintf(f, "  --scale F     multiply the size's work by F (%g to %g; default $WL_SCALE, else 1):\n"
               "                0.25 runs as the size would on a machine 4 times faster\n",
            SCALE_MIN, SCALE_MAX);
    if (spec->takes_switch)
        fprintf(f, "  --switch PATH after the first phase's rounds, go on with more until PATH exists\n");
    if (spec->takes_until)
        fprintf(f, "  --until PATH  after the size's rounds, go on with more (each verified) until PATH\n"
                   "                exists\n");
    if (spec->takes_file)
        fprintf(f, "  --file PATH   file the parallel region appends to (default %s)\n",
                spec->file_default);
    fprintf(f, "Threads come from OpenMP (OMP_NUM_THREADS). The output ends with\n"
               "  checksum=<hex, identical for any team sizes>\n"
               "  name=%s threads=T time_s=SECONDS verified=yes|no\n"
               "Exit status: 0 verified, 1 verification failed, 2 bad arguments.\n",
            spec->name);
}

static int parse_size(const char *v, enum wl_size *size)
{
    if (strcmp(v, "S") == 0)
        *size = WL_SIZE_S;
    else if (strcmp(v, "W") == 0)
        *size = WL_SIZE_W;
    else if (strcmp(v, "A") == 0)
        *size = WL_SIZE_A;
    else
        return -1;
    return 0;
}

/* A scale from text: a finite number within the bounds, nothing after it. */
static int parse_scale(const char *v, double *scale)
{
    char *end;
    double d;

    if (!v || !*v)
        return -1;
    d = strtod(v, &end);
    if (*end != '\0' || !isfinite(d) || d < SCALE_MIN || d > SCALE_MAX)
        return -1;
    *scale = d;
    return 0;
}

long wl_scaled(const struct wl_args *args, long n, long min, long multiple)
{
    double d = (double)n * args->scale;
    long r;

    if (multiple < 1)
        multiple = 1;
    r = d >= 9e15 ? (long)9e15 : (long)llround(d);
    r = (r + multiple / 2) / multiple * multiple;
    if (r < min)
        r = (min + multiple - 1) / multiple * multiple;
    return r;
}

int wl_round_runs(const char *until, long r, long rounds)
{
    static struct timespec next;
    struct timespec now;

    if (r < rounds)
        return 1;
    if (!until)
        return 0;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec < next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec < next.tv_nsec))
        return 1;
    if (access(until, F_OK) == 0)
        return 0;
    next = now;
    next.tv_nsec += 10 * 1000 * 1000;
    if (next.tv_nsec >= 1000000000L) {
        next.tv_sec++;
        next.tv_nsec -= 1000000000L;
    }
    return 1;
}

int wl_job_again(const char *name, const char *until, long *jobs, uint64_t h, uint64_t *first, int *ok)
{
    if (*jobs == 0)
        *first = h;
    else if (h != *first) {
        fprintf(stderr, "%s: job %ld gave checksum %016llx, the first %016llx\n", name, *jobs,
                (unsigned long long)h, (unsigned long long)*first);
        *ok = 0;
    }
    return wl_round_runs(until, ++*jobs, 1);
}

/* Accepts "--opt VALUE" and "--opt=VALUE"; returns the value or NULL. */
static const char *option_value(int argc, char **argv, int *i, const char *opt)
{
    size_t n = strlen(opt);
    if (strncmp(argv[*i], opt, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != '\0' || *i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

enum wl_args_status wl_args_parse(int argc, char **argv, const struct wl_spec *spec,
                                  struct wl_args *out)
{
    const char *env = getenv("WL_SCALE");

    out->size = WL_SIZE_W;
    out->scale = 1.0;
    out->file = spec->file_default;
    out->until = NULL;
    out->phase_until = NULL;
    if (env && *env && parse_scale(env, &out->scale) != 0) {
        fprintf(stderr, "%s: WL_SCALE='%s' is not a number from %g to %g\n", spec->name, env,
                SCALE_MIN, SCALE_MAX);
        goto bad;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(spec, stdout);
            return WL_ARGS_HELP;
        }
        if (strncmp(a, "--size", 6) == 0 && (a[6] == '\0' || a[6] == '=')) {
            v = option_value(argc, argv, &i, "--size");
            if (!v || parse_size(v, &out->size) != 0) {
                fprintf(stderr, "%s: --size needs one of S, W, A\n", spec->name);
                goto bad;
            }
            continue;
        }
        if (strncmp(a, "--scale", 7) == 0 && (a[7] == '\0' || a[7] == '=')) {
            v = option_value(argc, argv, &i, "--scale");
            if (parse_scale(v, &out->scale) != 0) {
                fprintf(stderr, "%s: --scale needs a number from %g to %g\n", spec->name, SCALE_MIN,
                        SCALE_MAX);
                goto bad;
            }
            continue;
        }
        {
            /* The options whose value is a path: which the workload takes, and where each goes. */
            const struct {
                int taken;
                const char *opt;
                const char **to;
            } paths[] = {
                {spec->takes_until, "--until", &out->until},
                {spec->takes_switch, "--switch", &out->phase_until},
                {spec->takes_file, "--file", &out->file},
            };
            int matched = 0;
            for (size_t k = 0; k < sizeof paths / sizeof paths[0] && !matched; k++) {
                size_t n = strlen(paths[k].opt);
                if (!paths[k].taken || strncmp(a, paths[k].opt, n) != 0 || (a[n] != '\0' && a[n] != '='))
                    continue;
                v = option_value(argc, argv, &i, paths[k].opt);
                if (!v || !*v) {
                    fprintf(stderr, "%s: %s needs a path\n", spec->name, paths[k].opt);
                    goto bad;
                }
                *paths[k].to = v;
                matched = 1;
            }
            if (matched)
                continue;
        }
        fprintf(stderr, "%s: unknown argument '%s'\n", spec->name, a);
        goto bad;
    }
    return WL_ARGS_RUN;
bad:
    fprintf(stderr, "usage: %s [--size S|W|A] [--scale F]%s%s%s [--help]\n", spec->name,
            spec->takes_switch ? " [--switch PATH]" : "", spec->takes_until ? " [--until PATH]" : "",
            spec->takes_file ? " [--file PATH]" : "");
    return WL_ARGS_BAD;
}
