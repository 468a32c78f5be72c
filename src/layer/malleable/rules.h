/* rules.h — rules files (`malleable PATTERN` / `fixed PATTERN`): which rule, if any, speaks for a program. */
#ifndef SCAF_LAYER_RULES_H
#define SCAF_LAYER_RULES_H

#include <stddef.h>
#include <stdint.h>

/*
 * The first rule for the program `exe` (a full path) in the files that `list`
 * names (SCAF_RULES: colon-separated, up to 8) or, when `list` is NULL, in the
 * user's file ($XDG_CONFIG_HOME/scaf/rules when `xdg` is an absolute path,
 * else $HOME/.config/scaf/rules when `home` is set) and then /etc/scaf/rules.
 * Each file holds "malleable PATTERN" or "fixed PATTERN" lines and '#'
 * comments; a pattern with a '/' is matched (fnmatch) against `exe`, any other
 * against its base name; a malformed line is logged and skipped, a missing
 * file is no rule. Returns 1 with *verdict (SCAF_VERDICT_FIXED or
 * SCAF_VERDICT_MALLEABLE) and `reason` ("rule FILE:LINE: WORD PATTERN"),
 * or 0 when no rule matches.
 */
int scaf_rules_find(const char *list, const char *xdg, const char *home, const char *exe, uint32_t *verdict,
                    char *reason, size_t len);

/* scaf_rules_find for this process: /proc/self/exe, $XDG_CONFIG_HOME and $HOME. 0 also when exe is unreadable. */
int scaf_rules_find_self(const char *list, uint32_t *verdict, char *reason, size_t len);

#endif
