/* args.h — command-line parsing shared by every workload (--size, --scale, --until, --help, --file). */
#ifndef WL_ARGS_H
#define WL_ARGS_H

#include <stdint.h>

/* Workloads are stand-ins for unmodified third-party programs, so their
 * helpers use a wl_ prefix instead of scaf_: the layer preloaded into them
 * exports scaf_* symbols, and a workload must never interpose on those. */

enum wl_size { WL_SIZE_S = 0, WL_SIZE_W = 1, WL_SIZE_A = 2 };

struct wl_spec {
    const char *name;        /* program name, as in the result line */
    const char *description; /* one line: the behaviour, printed first by --help */
    int takes_file;          /* 1: accepts --file PATH (chatty) */
    int takes_until;         /* 1: accepts --until PATH (its rounds can go on, each verified) */
    int takes_switch;        /* 1: accepts --switch PATH (its first phase can go on: phases) */
    const char *file_default;
};

struct wl_args {
    enum wl_size size;
    double scale;     /* --scale, else $WL_SCALE, else 1: multiplies the work of the chosen size */
    const char *file; /* only when spec->takes_file */
    const char *until; /* --until PATH, NULL without (only when spec->takes_until) */
    const char *phase_until; /* --switch PATH, NULL without (only when spec->takes_switch) */
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

/*
 * `n` times the scale, rounded, at least `min` and a multiple of `multiple`
 * (1 when any count will do). Each workload applies it to the one count that
 * makes it run longer or shorter the way a slower or faster CPU would: its
 * rounds, or the work inside each region where region length is the point
 * (docs/workloads.md, "Scale"). A scale of 0.25 is the machine 4 times faster.
 */
long wl_scaled(const struct wl_args *args, long n, long min, long multiple);

/*
 * Whether round `r` (from 0) of a workload that runs `rounds` should run:
 * always below `rounds`; past them, only while the file `until` names does
 * not exist yet (looked for at most every 10 ms; NULL: never past them). A
 * test that needs a program running until it has seen something (a verdict
 * reached, a window sampled) says so with a file instead of picking a size
 * that happens to last long enough. Rounds past `rounds` are verified like
 * the others; the result line's count says how many ran. Where they repeat
 * the same work (ep, tpcarry) the checksum is the one without --until;
 * elsewhere it covers every round run.
 */
int wl_round_runs(const char *until, long r, long rounds);

/*
 * For a workload that repeats its whole job under --until: records the
 * checksum `h` of job `*jobs` (the first one's in *first; a later one that
 * differs is reported on stderr and clears *ok), counts the job, and says
 * whether to run another.
 */
int wl_job_again(const char *name, const char *until, long *jobs, uint64_t h, uint64_t *first, int *ok);

#endif
