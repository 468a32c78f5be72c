/* test_layer_rules.c — rules files row by row (malleable/rules.c): which file and line speak for a program, and what is ignored. */
#include "../../src/layer/malleable/rules.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "scaf/proto.h"

enum { NO = 0, MALL = SCAF_VERDICT_MALLEABLE, FIX = SCAF_VERDICT_FIXED };

static char dir[] = "/tmp/scaf-test-rules-XXXXXX";

/* Writes dir/name with `text`; a NULL text removes it. */
static void put(const char *name, const char *text)
{
    char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!text) {
        unlink(path);
        return;
    }
    f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        fail("write", path);
}

static const struct {
    const char *what;
    const char *a, *b; /* the contents of files a and b (NULL: no such file) */
    const char *list;  /* SCAF_RULES, with %s for the folder; NULL: the default locations */
    int xdg;           /* default locations: 1 = $XDG_CONFIG_HOME is the folder, 0 = $HOME is */
    const char *exe;
    uint32_t verdict;  /* NO: no rule speaks */
    const char *where; /* after "rule <folder>/" */
} rows[] = {
    {"base name", "fixed is\n", NULL, "%s/a", 0, "/opt/npb/is", FIX, "a:1: fixed is"},
    {"glob on the base name", "malleable np?-*\n", NULL, "%s/a", 0, "/opt/bin/npb-cg", MALL, "a:1: malleable np?-*"},
    {"a pattern with a slash matches the whole path", "fixed /opt/*/is\n", NULL, "%s/a", 0, "/opt/npb/is", FIX,
     "a:1: fixed /opt/*/is"},
    {"a path pattern does not match the base name", "fixed */is\n", NULL, "%s/a", 0, "is", NO, NULL},
    {"no match", "fixed cg\nmalleable ep\n", NULL, "%s/a", 0, "/bin/lu", NO, NULL},
    {"first match wins", "malleable l*\nfixed lu\n", NULL, "%s/a", 0, "/bin/lu", MALL, "a:1: malleable l*"},
    {"comments, blank lines and malformed lines are skipped, line numbers kept",
     "# rules\n\n   \nfixd lu\nfixed\nfixed lu extra\nmalleable lu # a comment\n", NULL, "%s/a", 0, "/bin/lu", MALL,
     "a:7: malleable lu"},
    {"a comment hides the rule", "#fixed lu\n", NULL, "%s/a", 0, "/bin/lu", NO, NULL},
    {"the second file of the list", "fixed cg\n", "fixed lu\n", "%s/a:%s/b", 0, "/bin/lu", FIX, "b:1: fixed lu"},
    {"the first file of the list first", "malleable lu\n", "fixed lu\n", "%s/a:%s/b", 0, "/bin/lu", MALL,
     "a:1: malleable lu"},
    {"a missing file is no rule", NULL, "fixed lu\n", "%s/a:%s/b", 0, "/bin/lu", FIX, "b:1: fixed lu"},
    {"empty entries of the list are skipped", NULL, "fixed lu\n", "::%s/b:", 0, "/bin/lu", FIX, "b:1: fixed lu"},
    /* The default locations: $XDG_CONFIG_HOME/scaf/rules, else $HOME/.config/scaf/rules (then /etc/scaf/rules). */
    {"XDG_CONFIG_HOME", NULL, NULL, NULL, 1, "/bin/scaf-test-xdg", FIX, "scaf/rules:2: fixed scaf-test-xdg"},
    {"HOME", NULL, NULL, NULL, 0, "/bin/scaf-test-home", MALL, ".config/scaf/rules:1: malleable scaf-test-home"},
};

int main(void)
{
    char path[PATH_MAX];

    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof path, "%s/scaf", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/.config", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/.config/scaf", dir);
    mkdir(path, 0700);
    put("scaf/rules", "malleable scaf-test-home\nfixed scaf-test-xdg\n");
    put(".config/scaf/rules", "malleable scaf-test-home\n");

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char list[3 * PATH_MAX], reason[SCAF_REASON_MAX], want[SCAF_REASON_MAX];
        uint32_t verdict = NO;
        int found;

        put("a", rows[i].a);
        put("b", rows[i].b);
        if (rows[i].list)
            snprintf(list, sizeof list, rows[i].list, dir, dir);
        reason[0] = 0;
        found = scaf_rules_find(rows[i].list ? list : NULL, rows[i].xdg ? dir : "relative/is/ignored",
                                rows[i].xdg ? "/nonexistent" : dir, rows[i].exe, &verdict, reason, sizeof reason);
        CHECK(found == (rows[i].verdict != NO), "%s: found %d", rows[i].what, found);
        if (!found)
            continue;
        snprintf(want, sizeof want, "rule %s/%s", dir, rows[i].where);
        CHECK(verdict == rows[i].verdict, "%s: verdict %u, want %u", rows[i].what, verdict, rows[i].verdict);
        CHECK(strcmp(reason, want) == 0, "%s: reason '%s', want '%s'", rows[i].what, reason, want);
    }

    /* A reason is cut to the buffer it is given, never past it. */
    {
        char small[12], list[PATH_MAX];
        uint32_t verdict = NO;

        put("a", "fixed lu\n");
        snprintf(list, sizeof list, "%s/a", dir);
        CHECK(scaf_rules_find(list, NULL, NULL, "/bin/lu", &verdict, small, sizeof small) == 1, "short buffer: no rule");
        CHECK(strlen(small) == sizeof small - 1 && strncmp(small, "rule ", 5) == 0, "short buffer: '%s'", small);
    }

    put("a", NULL);
    put("b", NULL);
    put("scaf/rules", NULL);
    put(".config/scaf/rules", NULL);
    snprintf(path, sizeof path, "%s/.config/scaf", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/.config", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/scaf", dir);
    rmdir(path);
    rmdir(dir);
    return check_exit("test_layer_rules");
}
