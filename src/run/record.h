/* record.h — a replay record of `scaf run` (python/scaf/lib/replay.py writes it): found, read, and checked against the command, the environment and the files now. */
#ifndef SCAF_RUN_RECORD_H
#define SCAF_RUN_RECORD_H

#include <stddef.h>
#include <stdint.h>

/* The record's layout version; the Python writer's replay.VERSION. */
#define SCAF_RUN_RECORD_MAGIC "scaf-run-replay-v3"
#define SCAF_RUN_RECORD_FOLDER "run-v3"

/* What a record says to do. Every string points into `buf`; the arrays are allocated. */
struct scaf_run_plan {
    char *buf;
    const char *path;         /* the program to start */
    const char **argv;        /* its argv, NULL-terminated */
    int nsets;
    const char **sets;        /* 2 * nsets: name, value; added to the environment, replacing */
    const char *daemon;       /* "own", "shared" or "none" (--no-start) */
    const char *sock;
    int ask;                  /* ask the daemon for a start team */
    int fixed;                /* the user's word: the program keeps its team */
    int malleable;            /* the user's word: the program is malleable (its OpenMP starts as its own) */
    int user_count;           /* the user set OMP_NUM_THREADS: their count stands */
    const char *key_exe;      /* the command as the kernel runs it, to name the program */
    int nkey;
    const char **key_words;   /* nkey words, NULL-terminated */
    int nsteered;
    const char **steered;     /* the pool counts set to the start team too */
};

/* The outcome of scaf_run_record_load. */
enum scaf_run_record_status {
    SCAF_RUN_RECORD_OK = 0,   /* *plan filled: replay it */
    SCAF_RUN_RECORD_NONE,     /* no record of this command here (or no cache folder) */
    SCAF_RUN_RECORD_STALE,    /* another scaf's, or the command, the environment, the CPUs or a file it rests on
                               * changed */
    SCAF_RUN_RECORD_UNSAFE,   /* not this user's, or writable by others: never trusted */
    SCAF_RUN_RECORD_DAMAGED,  /* not a record of this version, cut short, or too large */
};

/* What choicecache.stamp gives PATH now, as the record writes it: "dev ino size mtime_ns ctime_ns", or "-". */
void scaf_run_record_stamp(const char *path, char *buf, size_t len);

/* The fingerprint of an environment: replay.env_hash, over `NAME=VALUE` entries in name order. */
uint64_t scaf_run_record_env_hash(char *const *envp);

/*
 * Writes the record's path for `scaf run ARGS[0..nargs-1]` in CWD into buf: $XDG_CACHE_HOME/scaf (an absolute
 * one), else $HOME/.cache/scaf, then run-v3/ and the hash of ARGS and CWD. Returns 0, or -1 when there is no
 * cache folder or the path does not fit.
 */
int scaf_run_record_path(int nargs, char *const *args, const char *cwd, char *buf, size_t len);

/*
 * Reads the record at FILE and checks it against HOME (the folder this scaf-run and its layers are in, real
 * path), `scaf run ARGS` in CWD, the environment ENVP and the CPUs this process may run on (CPUS): returns
 * SCAF_RUN_RECORD_OK with *plan filled (release it with scaf_run_plan_free), or why not (then *plan is
 * empty).
 */
enum scaf_run_record_status scaf_run_record_load(const char *file, const char *home, int nargs, char *const *args,
                                                 const char *cwd, char *const *envp, unsigned cpus,
                                                 struct scaf_run_plan *plan);

void scaf_run_plan_free(struct scaf_run_plan *plan);

#endif
