/* test_rules.c — rules files row by row (src/common/rules.c): which file and line speak for a program, how a line reads and why it is malformed, which files are read at all. */
#include "scaf/rules.h"

#include <errno.h>
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
    const char *where; /* after "<folder>/" */
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

/* One line each: its kind, and the rule or the words its reason holds. */
static void lines(void)
{
    static const struct {
        const char *text;
        int kind;
        const char *want; /* a RULE's "word pattern"; a MALFORMED line's reason holds it */
    } L[] = {
        {"", SCAF_RULES_BLANK, ""},
        {"   \t ", SCAF_RULES_BLANK, ""},
        {"# a comment", SCAF_RULES_BLANK, ""},
        {"malleable ep", SCAF_RULES_RULE, "malleable ep"},
        {"  fixed\t\tconvert*   ", SCAF_RULES_RULE, "fixed convert*"},
        {"fixed ep#no space before the comment", SCAF_RULES_RULE, "fixed ep"},
        {"fixed ep\r", SCAF_RULES_RULE, "fixed ep"},
        {"fixed ep\vx", SCAF_RULES_MALFORMED, "more than one pattern"},
        {"fixed", SCAF_RULES_MALFORMED, "'fixed' without a pattern: want 'fixed PATTERN'"},
        {"malleable   # pattern commented out", SCAF_RULES_MALFORMED, "without a pattern"},
        {"fixed a b", SCAF_RULES_MALFORMED, "more than one pattern"},
        {"Fixed ep", SCAF_RULES_MALFORMED, "'Fixed' must be lowercase"},
        {"MALLEABLE ep", SCAF_RULES_MALFORMED, "'MALLEABLE' must be lowercase"},
        {"steer ep", SCAF_RULES_MALFORMED, "'steer' is not 'malleable' or 'fixed'"},
        {"fixed=ep", SCAF_RULES_MALFORMED, "'fixed=ep' is not"},
        {"fixedfixedfixedfixedfixedfixedfixedfixedfixed ep", SCAF_RULES_MALFORMED,
         "'fixedfixedfixedfixedfixedfixedfixedfi...' is not"},
    };
    struct scaf_rules_line l;
    char got[2 * SCAF_RULES_LINE_MAX];

    for (size_t i = 0; i < sizeof L / sizeof L[0]; i++) {
        int kind = scaf_rules_parse(L[i].text, strlen(L[i].text), &l);

        CHECK(kind == L[i].kind && l.kind == kind, "'%s': kind %d, want %d (%s)", L[i].text, kind, L[i].kind, l.why);
        if (kind == SCAF_RULES_RULE) {
            snprintf(got, sizeof got, "%s %s", l.word, l.pattern);
            CHECK(strcmp(got, L[i].want) == 0, "'%s': '%s'", L[i].text, got);
        } else if (kind == SCAF_RULES_MALFORMED) {
            CHECK(strstr(l.why, L[i].want) != NULL, "'%s': why '%s', want '%s'", L[i].text, l.why, L[i].want);
        }
    }
    CHECK(scaf_rules_parse("fixed ep", 8, &l) == SCAF_RULES_RULE && l.verdict == SCAF_VERDICT_FIXED, "fixed");
    CHECK(scaf_rules_parse("malleable ep", 12, &l) == SCAF_RULES_RULE && l.verdict == SCAF_VERDICT_MALLEABLE,
          "malleable");
    /* A NUL ends the line as a C string does; the bytes after it are not read. */
    CHECK(scaf_rules_parse("fixed ep\0 more words", 20, &l) == SCAF_RULES_RULE && strcmp(l.pattern, "ep") == 0,
          "NUL: %s", l.why);
    /* The longest line is a rule; one byte more is malformed by its length, whatever it holds. */
    memset(got, 'x', sizeof got);
    memcpy(got, "fixed ", 6);
    CHECK(scaf_rules_parse(got, SCAF_RULES_LINE_MAX, &l) == SCAF_RULES_RULE &&
              strlen(l.pattern) == SCAF_RULES_LINE_MAX - 6,
          "longest line: %s", l.why);
    CHECK(scaf_rules_parse(got, SCAF_RULES_LINE_MAX + 1, &l) == SCAF_RULES_MALFORMED &&
              strcmp(l.why, "line longer than 1022 bytes") == 0,
          "too long: %s", l.why);
    CHECK(scaf_rules_line_size() == sizeof(struct scaf_rules_line), "size");
}

/* The search path, position by position. */
static void locations(void)
{
    struct scaf_rules_env env = {"::/a:/b::/c", NULL, "/h"};
    char buf[PATH_MAX], small[4];
    static const char nine[] = "/r0:/r1:/r2:/r3:/r4:/r5:/r6:/r7:/r8:/r9";

    CHECK(scaf_rules_locate(&env, 0, buf, sizeof buf) == SCAF_RULES_SLOT_READ && strcmp(buf, "/a") == 0, "0: %s", buf);
    CHECK(scaf_rules_locate(&env, 2, buf, sizeof buf) == SCAF_RULES_SLOT_READ && strcmp(buf, "/c") == 0, "2: %s", buf);
    CHECK(scaf_rules_locate(&env, 3, buf, sizeof buf) == SCAF_RULES_SLOT_END, "3: the end");
    CHECK(scaf_rules_locate(&env, 1, small, sizeof small) == SCAF_RULES_SLOT_READ, "a name that fits");
    env.list = "/long-name";
    CHECK(scaf_rules_locate(&env, 0, small, sizeof small) == -1 && errno == ENAMETOOLONG, "too long");
    env.list = "";
    CHECK(scaf_rules_locate(&env, 0, buf, sizeof buf) == SCAF_RULES_SLOT_END, "set but empty: no file");
    env.list = nine;
    CHECK(scaf_rules_locate(&env, 7, buf, sizeof buf) == SCAF_RULES_SLOT_READ && strcmp(buf, "/r7") == 0, "8th");
    CHECK(scaf_rules_locate(&env, 8, buf, sizeof buf) == SCAF_RULES_SLOT_UNREAD && strcmp(buf, "/r8") == 0, "9th");
    CHECK(scaf_rules_locate(&env, 9, buf, sizeof buf) == SCAF_RULES_SLOT_UNREAD, "10th");
    CHECK(scaf_rules_locate(&env, 10, buf, sizeof buf) == SCAF_RULES_SLOT_END, "11th");
    env.list = NULL;
    CHECK(scaf_rules_locate(&env, 0, buf, sizeof buf) == SCAF_RULES_SLOT_READ &&
              strcmp(buf, "/h/.config/scaf/rules") == 0,
          "HOME: %s", buf);
    CHECK(scaf_rules_locate(&env, 1, buf, sizeof buf) == SCAF_RULES_SLOT_READ && strcmp(buf, "/etc/scaf/rules") == 0,
          "then /etc: %s", buf);
    CHECK(scaf_rules_locate(&env, 2, buf, sizeof buf) == SCAF_RULES_SLOT_END, "two defaults");
    env.xdg = "/x";
    CHECK(scaf_rules_user(&env, buf, sizeof buf) == 0 && strcmp(buf, "/x/scaf/rules") == 0, "XDG: %s", buf);
    env.xdg = "x";
    CHECK(scaf_rules_user(&env, buf, sizeof buf) == 0 && strcmp(buf, "/h/.config/scaf/rules") == 0,
          "a relative XDG_CONFIG_HOME is ignored: %s", buf);
    env.home = "";
    CHECK(scaf_rules_user(&env, buf, sizeof buf) == -1 && errno == ENOENT, "no user file");
    CHECK(scaf_rules_locate(&env, 0, buf, sizeof buf) == SCAF_RULES_SLOT_READ && strcmp(buf, "/etc/scaf/rules") == 0,
          "only /etc: %s", buf);
    CHECK(scaf_rules_locate(&env, 1, buf, sizeof buf) == SCAF_RULES_SLOT_END, "only one");
    env.home = "/a/home/far/too/long";
    CHECK(scaf_rules_locate(&env, 0, small, sizeof small) == -1 && errno == ENAMETOOLONG, "user file too long");
    CHECK(scaf_rules_locate(&env, 2, small, sizeof small) == SCAF_RULES_SLOT_END, "it still takes its position");
    {
        char a[] = "HOME=/first", b[] = "SCAF_RULES=", c[] = "HOME=/second", d[] = "XDG_CONFIG_HOMEX=/no";
        char *envp[] = {a, b, c, d, NULL};

        scaf_rules_env_of(envp, &env);
        CHECK(env.home && strcmp(env.home, "/first") == 0 && env.list && !*env.list && !env.xdg, "env_of");
        scaf_rules_env_of(NULL, &env);
        CHECK(!env.home && !env.list && !env.xdg, "env_of NULL");
    }
}

/* What the reader visits. */
struct seen {
    int rules, malformed, unreadable;
    unsigned last_line;
    char why[SCAF_RULES_WHY_MAX];
};

static int count(const struct scaf_rules_line *l, void *ctx)
{
    struct seen *s = ctx;

    s->rules += l->kind == SCAF_RULES_RULE;
    s->malformed += l->kind == SCAF_RULES_MALFORMED;
    s->unreadable += l->kind == SCAF_RULES_UNREADABLE;
    s->last_line = l->line;
    snprintf(s->why, sizeof s->why, "%s", l->why);
    return 0;
}

static int stop_at_first(const struct scaf_rules_line *l, void *ctx)
{
    count(l, ctx);
    return 1;
}

/* Files the reader cannot read as rules files, and the lines it visits. */
static void problems(void)
{
    char path[PATH_MAX], link[PATH_MAX];
    struct seen s;
    int rc;

    snprintf(path, sizeof path, "%s/a", dir);
    put("a", "fixed ep\nbogus line here\n\nmalleable cg\nfixed");
    memset(&s, 0, sizeof s);
    rc = scaf_rules_read(path, count, &s);
    CHECK(rc == SCAF_RULES_DONE && s.rules == 2 && s.malformed == 2 && s.last_line == 5, "read: %d %d %d %u", rc,
          s.rules, s.malformed, s.last_line);
    memset(&s, 0, sizeof s);
    CHECK(scaf_rules_read(path, stop_at_first, &s) == SCAF_RULES_STOPPED && s.rules == 1 && s.last_line == 1,
          "stopped");
    /* A line longer than the longest is one malformed line, and the next line keeps its number. */
    {
        static char big[3000];

        memset(big, 'x', sizeof big - 20);
        memcpy(big, "fixed ", 6);
        snprintf(big + sizeof big - 20, 20, "\nfixed ep\n");
        put("a", big);
        memset(&s, 0, sizeof s);
        CHECK(scaf_rules_read(path, count, &s) == SCAF_RULES_DONE && s.malformed == 1 && s.rules == 1 &&
                  s.last_line == 2,
              "long line: %d %d %u", s.malformed, s.rules, s.last_line);
    }
    /* Missing: nothing visited. A dangling link is missing too; a link to a file is that file. */
    memset(&s, 0, sizeof s);
    snprintf(link, sizeof link, "%s/link", dir);
    CHECK(symlink("nowhere", link) == 0, "symlink");
    CHECK(scaf_rules_read("/nonexistent/rules", count, &s) == SCAF_RULES_ABSENT && !s.unreadable, "absent");
    CHECK(scaf_rules_read(link, count, &s) == SCAF_RULES_ABSENT && !s.unreadable, "dangling link");
    unlink(link);
    put("a", "fixed ep\n");
    CHECK(symlink(path, link) == 0, "symlink");
    CHECK(scaf_rules_read(link, count, &s) == SCAF_RULES_DONE && s.rules == 1, "a link to a file");
    unlink(link);
    /* A directory, a FIFO (it would block a reader that waited for a writer): one UNREADABLE line each. */
    memset(&s, 0, sizeof s);
    CHECK(scaf_rules_read(dir, count, &s) == SCAF_RULES_SKIPPED && s.unreadable == 1 && s.last_line == 0 &&
              strcmp(s.why, "is a directory, not a rules file") == 0,
          "directory: %s", s.why);
    snprintf(link, sizeof link, "%s/fifo", dir);
    CHECK(mkfifo(link, 0600) == 0, "mkfifo");
    memset(&s, 0, sizeof s);
    CHECK(scaf_rules_read(link, count, &s) == SCAF_RULES_SKIPPED && s.unreadable == 1 &&
              strstr(s.why, "not a regular file") != NULL,
          "fifo: %s", s.why);
    unlink(link);
    /* A file this process may not read (root may read any: then it is a file like another). */
    if (geteuid() != 0) {
        chmod(path, 0);
        memset(&s, 0, sizeof s);
        CHECK(scaf_rules_read(path, count, &s) == SCAF_RULES_SKIPPED && strstr(s.why, "cannot be read") != NULL,
              "unreadable: %s", s.why);
        chmod(path, 0600);
    }
    /* scaf_rules_find passes the problems it meets before the rule to its visitor, then stops. */
    {
        char list[2 * PATH_MAX + 2];
        struct scaf_rules_env env = {list, NULL, NULL};
        struct scaf_rules_line rule;

        put("a", "Fixed ep\nfixed ep\nbogus\n");
        snprintf(list, sizeof list, "%s:%s", dir, path);
        memset(&s, 0, sizeof s);
        CHECK(scaf_rules_find(&env, "/bin/ep", &rule, count, &s) == 1 && rule.line == 2 && s.unreadable == 1 &&
                  s.malformed == 1,
              "find's problems: %d %d", s.unreadable, s.malformed);
    }
    CHECK(scaf_rules_match("ep", "/opt/w/ep") && !scaf_rules_match("w/ep", "/opt/w/ep") &&
              scaf_rules_match("/opt/*", "/opt/w/ep") && scaf_rules_match("[[:lower:]]p", "ep") &&
              scaf_rules_match("*", "/opt/w/.hidden") && !scaf_rules_match("EP", "/x/ep"),
          "match");
}

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
        char list[3 * PATH_MAX], want[2 * PATH_MAX], got[2 * PATH_MAX];
        struct scaf_rules_env env = {NULL, rows[i].xdg ? dir : "relative/is/ignored",
                                     rows[i].xdg ? "/nonexistent" : dir};
        struct scaf_rules_line rule;
        int found;

        put("a", rows[i].a);
        put("b", rows[i].b);
        if (rows[i].list) {
            snprintf(list, sizeof list, rows[i].list, dir, dir);
            env.list = list;
        }
        found = scaf_rules_find(&env, rows[i].exe, &rule, NULL, NULL);
        CHECK(found == (rows[i].verdict != NO), "%s: found %d", rows[i].what, found);
        if (!found)
            continue;
        snprintf(want, sizeof want, "%s/%s", dir, rows[i].where);
        snprintf(got, sizeof got, "%s:%u: %s %s", rule.file, rule.line, rule.word, rule.pattern);
        CHECK(rule.verdict == rows[i].verdict, "%s: verdict %u, want %u", rows[i].what, rule.verdict, rows[i].verdict);
        CHECK(strcmp(got, want) == 0, "%s: rule '%s', want '%s'", rows[i].what, got, want);
    }

    lines();
    locations();
    problems();

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
    return check_exit("test_rules");
}
