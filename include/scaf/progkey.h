/* progkey.h — what identifies a program and its code between runs: the key the daemon's memory keeps it under, for the layer, the daemon and scaf alike. */
#ifndef SCAF_PROGKEY_H
#define SCAF_PROGKEY_H

#include <stddef.h>
#include <stdint.h>

/*
 * A program is its executable's code, plus, for an interpreter, the script or
 * module it runs: the same binaries run again and again (a job array, a
 * nightly R script, a notebook's cell), and what scaf learned of them holds
 * while their code stays the same. Code is named by its GNU build ID, or,
 * where it has none, by its path, size and modification time. docs/memory.md
 * has the rules; the layer (from /proc/self/exe and /proc/self/cmdline) and
 * `scaf run` (from the command it is about to exec, through libscaf_key.so)
 * both call scaf_progkey_of, so both name a program the same way.
 *
 * No allocation, no stdio: the layer calls it from a program's first OpenMP
 * call, which may come from another library's constructor.
 */

#define SCAF_PROGKEY_TEXT 384 /* the canonical text a key hashes, NUL included */
#define SCAF_PROGKEY_NAME 48  /* == SCAF_MEMORY_NAME: how status names the program */

struct scaf_progkey {
    uint64_t key;                   /* never 0 for a program that could be named */
    char text[SCAF_PROGKEY_TEXT];   /* "exe=<build id or path:size:mtime>" [ "\nscript=<path:size:mtime>" ] */
    char name[SCAF_PROGKEY_NAME];   /* the executable's basename [ " " the script's basename ] */
};

/*
 * The key of `exe` (a path; "/proc/self/exe" in the layer) run with argv[0 ..
 * argc-1]. Returns 0, or -1 with errno set when the executable cannot be read
 * (then *out is zeroed: such a program is never remembered). A program that
 * cannot be named although its executable can (an interpreter reading its
 * code from stdin or a terminal, a script that is not there) gets key 0 with
 * its text filled: it is not remembered either.
 */
int scaf_progkey_of(const char *exe, const char *const *argv, int argc, struct scaf_progkey *out);

/*
 * The same, with relative paths (exe, a script) taken from `cwd` (an absolute
 * directory; NULL: the current one). The layer passes the directory the
 * program started in: an R script's setwd() or a Python script's os.chdir()
 * before its first OpenMP call must not change the key.
 */
int scaf_progkey_of_at(const char *cwd, const char *exe, const char *const *argv, int argc,
                       struct scaf_progkey *out);

/* The interpreters whose script is part of the program (docs/memory.md), by the executable's basename. */
enum scaf_progkey_interp {
    SCAF_INTERP_NONE = 0,
    SCAF_INTERP_PYTHON = 1,  /* python*, pypy* */
    SCAF_INTERP_R = 2,       /* R (the engine that Rscript and the R shell script end in) */
    SCAF_INTERP_RSCRIPT = 3, /* Rscript */
    SCAF_INTERP_JULIA = 4,   /* julia* */
    SCAF_INTERP_OCTAVE = 5,  /* octave* (octave-cli, octave-gui) */
};

/* The name, then nothing or a character that is not a letter: python3.11, octave-cli, but not Rgui. */
int scaf_progkey_interpreter(const char *basename);

/* What an interpreter's argv names as the code it runs. */
enum scaf_progkey_kind {
    SCAF_PROGKEY_PLAIN = 0,  /* not an interpreter: the executable alone */
    SCAF_PROGKEY_SCRIPT = 1, /* a script file: part[0] */
    SCAF_PROGKEY_MODULE = 2, /* python -m MODULE, julia -m MODULE: part[0] */
    SCAF_PROGKEY_CODE = 3,   /* -c / -e / --eval code: every part, in order */
    SCAF_PROGKEY_STDIN = 4,  /* code from stdin or a terminal, or an argv it cannot read: unnameable */
};

#define SCAF_PROGKEY_PARTS 8

struct scaf_progkey_source {
    int kind;  /* enum scaf_progkey_kind */
    int parts; /* the strings that name it, each argv[arg] + off */
    struct {
        int arg, off;
    } part[SCAF_PROGKEY_PARTS];
};

/*
 * Pure: which of argv[1 .. argc-1] name the code interpreter `interp` runs,
 * by its option rules (docs/memory.md, "What identifies a program"; tested row
 * by row in tests/unit/test_progkey.c).
 */
void scaf_progkey_source(int interp, const char *const *argv, int argc, struct scaf_progkey_source *out);

/*
 * The identity of one loaded object's code, for the sites of a region that
 * lives in it (struct scaf_site_memo.object): the FNV-1a hash of its build ID
 * note's bytes, found among the program headers (`phdr`, `phnum`) of an object
 * loaded at `base` (dl_iterate_phdr's view); 0 when it has no build ID, and
 * then its sites are not remembered.
 */
uint64_t scaf_progkey_object(uintptr_t base, const void *phdr, size_t phnum);

/* 64-bit FNV-1a over n bytes, continued from h (start with SCAF_FNV_OFFSET). */
#define SCAF_FNV_OFFSET 0xcbf29ce484222325ull
uint64_t scaf_progkey_fnv(uint64_t h, const void *p, size_t n);

/* sizeof(struct scaf_progkey), for python/scaf/lib/progkey.py's check of its ctypes mirror. */
size_t scaf_progkey_size(void);

#endif
