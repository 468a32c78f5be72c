/* args.c — command-line parsing shared by every workload (--size, --help, --file). */
#include "args.h"

#include <stdio.h>
#include <string.h>

static void usage(const struct wl_spec *spec, FILE *f)
{
    fprintf(f, "%s: %s\n", spec->name, spec->description);
    fprintf(f, "usage: %s [--size S|W|A]%s [--help]\n", spec->name,
            spec->takes_file ? " [--file PATH]" : "");
    fprintf(f, "  --size S|W|A  problem size: S < 0.5 s, W 3-10 s, A about 4x W, all at one\n"
               "                thread on a 2-core test machine (default W)\n");
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
    out->size = WL_SIZE_W;
    out->file = spec->file_default;
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
        if (spec->takes_file && strncmp(a, "--file", 6) == 0 && (a[6] == '\0' || a[6] == '=')) {
            v = option_value(argc, argv, &i, "--file");
            if (!v || !*v) {
                fprintf(stderr, "%s: --file needs a path\n", spec->name);
                goto bad;
            }
            out->file = v;
            continue;
        }
        fprintf(stderr, "%s: unknown argument '%s'\n", spec->name, a);
        goto bad;
    }
    return WL_ARGS_RUN;
bad:
    fprintf(stderr, "usage: %s [--size S|W|A]%s [--help]\n", spec->name,
            spec->takes_file ? " [--file PATH]" : "");
    return WL_ARGS_BAD;
}
