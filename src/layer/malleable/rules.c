/* rules.c — reads the rules files and finds the first rule that speaks for a program (docs/layer.md, "The user's word"). */
#include "rules.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/say.h"
#include "scaf/proto.h"

/*
 * One rules file: "malleable PATTERN" or "fixed PATTERN" per line, '#'
 * comments. Returns 1 and fills *verdict/where on the first match, else 0.
 */
static int rules_match(const char *file, const char *exe, const char *base, uint32_t *verdict,
                       char *where, size_t wlen)
{
    FILE *f = fopen(file, "re");
    char line[1024];
    int lineno = 0, found = 0;

    if (!f)
        return 0;
    while (!found && fgets(line, sizeof line, f)) {
        char word[32], pat[PATH_MAX], extra[2];
        char *hash = strchr(line, '#');
        int n;

        lineno++;
        if (hash)
            *hash = 0;
        n = sscanf(line, "%31s %4095s %1s", word, pat, extra);
        if (n <= 0)
            continue;
        if (n != 2 || (strcmp(word, "malleable") != 0 && strcmp(word, "fixed") != 0)) {
            scaf_layer_log("%s:%d: not a rule (want 'malleable PATTERN' or 'fixed PATTERN'): ignored",
                           file, lineno);
            continue;
        }
        if (fnmatch(pat, strchr(pat, '/') ? exe : base, 0) == 0) {
            *verdict = strcmp(word, "fixed") == 0 ? SCAF_VERDICT_FIXED : SCAF_VERDICT_MALLEABLE;
            scaf_say_into(where, wlen, "%s:%d: %s %s", file, lineno, word, pat);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

int scaf_rules_find(const char *list, const char *xdg, const char *home, const char *exe, uint32_t *verdict,
                    char *reason, size_t len)
{
    char files[8][PATH_MAX], where[PATH_MAX + 64];
    const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    int nfiles = 0;

    if (list) {
        /* SCAF_RULES: a colon-separated list (up to 8 files), replacing the default locations. */
        const char *p = list;
        while (*p && nfiles < 8) {
            size_t n = strcspn(p, ":");
            if (n > 0 && n < PATH_MAX)
                scaf_say_into(files[nfiles++], PATH_MAX, "%.*s", (int)n, p);
            p += n + (p[n] == ':');
        }
    } else {
        if (xdg && *xdg == '/')
            scaf_say_into(files[nfiles++], PATH_MAX, "%s/scaf/rules", xdg);
        else if (home && *home)
            scaf_say_into(files[nfiles++], PATH_MAX, "%s/.config/scaf/rules", home);
        scaf_say_into(files[nfiles++], PATH_MAX, "/etc/scaf/rules");
    }
    for (int i = 0; i < nfiles; i++)
        if (rules_match(files[i], exe, base, verdict, where, sizeof where)) {
            scaf_say_into(reason, len, "rule %s", where);
            return 1;
        }
    return 0;
}

int scaf_rules_find_self(const char *list, uint32_t *verdict, char *reason, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

    if (n <= 0)
        return 0;
    exe[n] = 0;
    return scaf_rules_find(list, getenv("XDG_CONFIG_HOME"), getenv("HOME"), exe, verdict, reason, len);
}
