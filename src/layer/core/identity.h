/* identity.h — this program's key for the daemon's memory (include/scaf/progkey.h), as the layer's HELLO carries it. */
#ifndef SCAF_LAYER_IDENTITY_H
#define SCAF_LAYER_IDENTITY_H

#include <stdint.h>

/*
 * Once, from the constructor: remembers the directory the program started in
 * (one getcwd), so that a script named relative to it is found after the
 * program changed directory (R's setwd(), Python's os.chdir()).
 */
void scaf_identity_init(void);

/*
 * The key (0: SCAF_MEMORY=0, or a program that cannot be named), computed
 * once on first use from /proc/self/exe and /proc/self/cmdline. Thread-safe;
 * no allocation. `name`, when not NULL, gets how status names the program.
 */
uint64_t scaf_identity_key(const char **name);

/*
 * The same key whatever SCAF_MEMORY says (0 only for a program that cannot
 * be named): what the SCAF_REPORT line carries, so that `scaf check`, whose
 * runs keep no memory, records its verdict under the key of the process that
 * ran the regions (R's engine for an Rscript command, not Rscript).
 */
uint64_t scaf_identity_program(const char **name);

#endif
