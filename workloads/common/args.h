/* args.h — command-line parsing shared by every workload (--size, --help, --file). */
#ifndef WL_ARGS_H
#define WL_ARGS_H

/* Workloads are stand-ins for unmodified third-party programs, so their
 * helpers use a wl_ prefix instead of scaf_: the layer preloaded into them
 * exports scaf_* symbols, and a workload must never interpose on those. */

enum wl_size { WL_SIZE_S = 0, WL_SIZE_W = 1, WL_SIZE_A = 2 };

struct wl_spec {
    const char *name;        /* program name, as in the result line */
    const char *description; /* one line: the behaviour, printed first by --help */
    int takes_file;          /* 1: accepts --file PATH (chatty) */
    const char *file_default;
};

struct wl_args {
    enum wl_size size;
    const char *file; /* only when spec->takes_file */
};

enum wl_args_status { WL_ARGS_RUN = 0, WL_ARGS_HELP = 1, WL_ARGS_BAD = 2 };

/* Parses argv. WL_ARGS_HELP: usage printed on stdout, exit 0.
 * WL_ARGS_BAD: message printed on stderr, exit 2. Default size is W. */
enum wl_args_status wl_args_parse(int argc, char **argv, const struct wl_spec *spec,
                                  struct wl_args *out);

/* The common prologue of main(): 1 when the workload should run; otherwise 0
 * with *exit_code set (0 after --help, 2 on bad arguments). */
static inline int wl_args_ready(int argc, char **argv, const struct wl_spec *spec,
                                struct wl_args *out, int *exit_code)
{
    enum wl_args_status st = wl_args_parse(argc, argv, spec, out);

    *exit_code = st == WL_ARGS_HELP ? 0 : 2;
    return st == WL_ARGS_RUN;
}

/* Picks the entry for the parsed size from a three-entry table {S, W, A}. */
#define WL_PICK(size, s, w, a) ((size) == WL_SIZE_S ? (s) : (size) == WL_SIZE_W ? (w) : (a))

#endif
