/* say.h — the layer's diagnostics on stderr: silent unless SCAF_VERBOSE asks, except for a user's malformed setting. */
#ifndef SCAF_LAYER_SAY_H
#define SCAF_LAYER_SAY_H

#include <stddef.h>

/* Everything in the layer is hidden except the interposed entry points. */
#define SCAF_EXPORT __attribute__((visibility("default")))

/* Nonzero with SCAF_VERBOSE=1. Set once by scaf_say_init, before any other thread exists. */
extern int scaf_layer_verbose;

void scaf_say_init(int verbose);

/*
 * One line "scaf[PID]: ..." on stderr when SCAF_VERBOSE=1, else nothing.
 * A single write(2), no stdio buffer: the program's own output stays untouched.
 */
void scaf_layer_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * One line on stderr whatever SCAF_VERBOSE says: only for the user's own
 * mistakes (a malformed setting), which silence would hide.
 */
void scaf_say_always(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* snprintf for texts that may be cut short on purpose (reasons, paths in reasons): no truncation warning. */
void scaf_say_into(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
