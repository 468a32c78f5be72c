/* rules.h — rules files (`malleable PATTERN` / `fixed PATTERN`): where they are, how a line reads, which rule speaks for a program. */
#ifndef SCAF_RULES_H
#define SCAF_RULES_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The one reader of rules files (docs/layer.md, "The user's word"): the layer
 * asks it at its first connect which rule speaks for the program, and the scaf
 * command (python/scaf/lib/rules.py, through libscaf_launch.so) lists the same
 * files, lines and problems with it, so that `scaf rules --which` names the
 * rule the layer picks. Writing a rule (`scaf check --save`) is Python's alone;
 * what it writes is read back by scaf_rules_parse before it is kept.
 */

/* The files of SCAF_RULES that are read; the others are named by scaf_rules_locate, never read. */
#define SCAF_RULES_FILES_MAX 8
/* The longest line, its newline not counted: a longer one is malformed as a whole. */
#define SCAF_RULES_LINE_MAX 1022
/* Room for a problem's one-line reason, NUL included. */
#define SCAF_RULES_WHY_MAX 192
/* Room for a verdict word, NUL included. */
#define SCAF_RULES_WORD_MAX 16

/* Where the rules files are, from three variables as the process found them (pointers into its strings). */
struct scaf_rules_env {
    const char *list; /* SCAF_RULES: NULL when unset; set, even empty, it replaces the two defaults */
    const char *xdg;  /* XDG_CONFIG_HOME: used only when it is an absolute path (the XDG spec) */
    const char *home; /* HOME */
};

/* Fills OUT from ENVP ("NAME=VALUE" strings, NULL-terminated; NULL: none): the first of each name counts. */
void scaf_rules_env_of(char *const envp[], struct scaf_rules_env *out);

/* What scaf_rules_locate says of a position of the search path. */
enum scaf_rules_slot {
    SCAF_RULES_SLOT_END = 0,    /* there is no such position */
    SCAF_RULES_SLOT_READ = 1,   /* a file that is read, in this order */
    SCAF_RULES_SLOT_UNREAD = 2, /* a file SCAF_RULES names beyond the SCAF_RULES_FILES_MAX that are read */
};

/*
 * The file at position I (from 0) of the search path, into BUF: with `list`,
 * its items (colon-separated, empty items skipped), of which the first
 * SCAF_RULES_FILES_MAX are read; else the user's file (scaf_rules_user) when
 * there is one, then /etc/scaf/rules. Returns an enum scaf_rules_slot, or -1
 * with errno = ENAMETOOLONG when the name does not fit in LEN bytes (the
 * position still counts).
 */
int scaf_rules_locate(const struct scaf_rules_env *env, unsigned i, char *buf, size_t len);

/*
 * The user's own rules file, into BUF: $XDG_CONFIG_HOME/scaf/rules when
 * XDG_CONFIG_HOME is absolute, else $HOME/.config/scaf/rules when HOME is set
 * and not empty. Returns 0; -1 with errno = ENOENT when there is none, or
 * ENAMETOOLONG when it does not fit in LEN bytes.
 */
int scaf_rules_user(const struct scaf_rules_env *env, char *buf, size_t len);

/* What one line of a rules file is (and what a file that cannot be read is). */
enum scaf_rules_kind {
    SCAF_RULES_BLANK = 0,      /* nothing but spaces and a comment */
    SCAF_RULES_RULE = 1,       /* `malleable PATTERN` or `fixed PATTERN` */
    SCAF_RULES_MALFORMED = 2,  /* anything else: ignored, with why */
    SCAF_RULES_UNREADABLE = 3, /* the file as a whole (line 0): a directory, not a file, a read error */
};

/* One line of a rules file, or a file that cannot be read. */
struct scaf_rules_line {
    char file[PATH_MAX];                   /* the file it is in ("" from scaf_rules_parse) */
    unsigned line;                         /* its number, from 1; 0 for the file as a whole */
    int kind;                              /* enum scaf_rules_kind */
    uint32_t verdict;                      /* a RULE's: SCAF_VERDICT_MALLEABLE or SCAF_VERDICT_FIXED (scaf/proto.h) */
    char word[SCAF_RULES_WORD_MAX];        /* a RULE's verdict as written: "malleable" or "fixed" */
    char pattern[SCAF_RULES_LINE_MAX + 1]; /* a RULE's pattern */
    char why[SCAF_RULES_WHY_MAX];          /* a MALFORMED line's or an UNREADABLE file's reason, one line */
};

/* sizeof(struct scaf_rules_line): what the ctypes mirror checks itself against. */
size_t scaf_rules_line_size(void);

/*
 * One line: TEXT holds LEN bytes, its newline not among them. Everything from
 * a NUL or the first '#' on is ignored; the rest is split on ASCII white space
 * (locale-independent). No word is BLANK; exactly two words, the first
 * `malleable` or `fixed` (lowercase), is a RULE; anything else, and a line
 * longer than SCAF_RULES_LINE_MAX bytes, is MALFORMED with a reason in
 * out->why. Fills OUT (its file "" and line 0) and returns its kind.
 */
int scaf_rules_parse(const char *text, size_t len, struct scaf_rules_line *out);

/* Called for each line a file holds that is not BLANK; a nonzero return stops the reading there. */
typedef int (*scaf_rules_visit_fn)(const struct scaf_rules_line *line, void *ctx);

/* What scaf_rules_read did. */
enum scaf_rules_read_status {
    SCAF_RULES_ABSENT = 0,     /* no such file (ENOENT, ENOTDIR): nothing visited */
    SCAF_RULES_DONE = 1,       /* read to its end */
    SCAF_RULES_STOPPED = 2,    /* the visitor stopped it */
    SCAF_RULES_SKIPPED = 3,    /* it cannot be read: one UNREADABLE line (line 0) was visited */
};

/*
 * Reads the rules file PATH line by line, the lines as scaf_rules_parse reads
 * them, and calls VISIT with each RULE and MALFORMED line in order. A file
 * that exists but is not a regular file (a directory, a FIFO, which would
 * block), or cannot be opened or read, is visited once as UNREADABLE. Never
 * loads or runs anything. Returns an enum scaf_rules_read_status.
 */
int scaf_rules_read(const char *path, scaf_rules_visit_fn visit, void *ctx);

/*
 * Whether PATTERN speaks for the program EXE (its absolute executable path,
 * links resolved): fnmatch(3) with flags 0 against EXE when the pattern holds
 * a '/', else against EXE's last component. Returns 1 or 0.
 */
int scaf_rules_match(const char *pattern, const char *exe);

/*
 * The first RULE of the search path (files in scaf_rules_locate's order, lines
 * in file order) that matches EXE, into OUT. PROBLEM (NULL: none) is called
 * with each MALFORMED line and UNREADABLE file met before it. Returns 1 when a
 * rule matches, else 0.
 */
int scaf_rules_find(const struct scaf_rules_env *env, const char *exe, struct scaf_rules_line *out,
                    scaf_rules_visit_fn problem, void *ctx);

/*
 * scaf_rules_find for this process: /proc/self/exe, LIST as SCAF_RULES (the
 * layer's copy of it), $XDG_CONFIG_HOME and $HOME. 0 also when its executable
 * cannot be named.
 */
int scaf_rules_find_self(const char *list, struct scaf_rules_line *out, scaf_rules_visit_fn problem, void *ctx);

#endif
