/* rules.c — the one reader of rules files: where they are, how a line reads, and the first rule that speaks for a program (include/scaf/rules.h). */
#include "scaf/rules.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scaf/proto.h"

extern char **environ;

#define SYSTEM_FILE "/etc/scaf/rules"
/* A word quoted in a reason is cut to this many bytes, "..." included. */
#define SHOWN_MAX 40

static const char WANT[] = "want 'malleable PATTERN' or 'fixed PATTERN'";

size_t scaf_rules_line_size(void)
{
    return sizeof(struct scaf_rules_line);
}

/* The value of NAME in ENVP, NULL when it is not there. */
static const char *env_value(char *const envp[], const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; envp && envp[i]; i++)
        if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
            return envp[i] + n + 1;
    return NULL;
}

void scaf_rules_env_of(char *const envp[], struct scaf_rules_env *out)
{
    out->list = env_value(envp, "SCAF_RULES");
    out->xdg = env_value(envp, "XDG_CONFIG_HOME");
    out->home = env_value(envp, "HOME");
}

/* snprintf into BUF that says whether it fit: 0, or -1 with errno = ENAMETOOLONG. */
__attribute__((format(printf, 3, 4))) static int put(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int scaf_rules_user(const struct scaf_rules_env *env, char *buf, size_t len)
{
    if (env->xdg && env->xdg[0] == '/')
        return put(buf, len, "%s/scaf/rules", env->xdg);
    if (env->home && *env->home)
        return put(buf, len, "%s/.config/scaf/rules", env->home);
    errno = ENOENT;
    return -1;
}

int scaf_rules_locate(const struct scaf_rules_env *env, unsigned i, char *buf, size_t len)
{
    if (env->list) {
        const char *p = env->list;
        unsigned at = 0;

        while (*p) {
            size_t n = strcspn(p, ":");

            if (n > 0 && at++ == i)
                return put(buf, len, "%.*s", (int)n, p) < 0 ? -1
                       : i < SCAF_RULES_FILES_MAX         ? SCAF_RULES_SLOT_READ
                                                          : SCAF_RULES_SLOT_UNREAD;
            p += n + (p[n] == ':');
        }
        return SCAF_RULES_SLOT_END;
    }
    /* The user's file, when there is one (one too long to name still takes its position), then the system's. */
    int user = scaf_rules_user(env, buf, len) == 0 ? 1 : errno == ENAMETOOLONG ? -1 : 0;

    if (user) {
        if (i == 0)
            return user < 0 ? -1 : SCAF_RULES_SLOT_READ;
        i--;
    }
    if (i == 0)
        return put(buf, len, "%s", SYSTEM_FILE) < 0 ? -1 : SCAF_RULES_SLOT_READ;
    return SCAF_RULES_SLOT_END;
}

/* ASCII white space, as C's isspace in the C locale (and Python's bytes.split): the program's locale never counts. */
static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Whether the N bytes at S spell WORD, ASCII letters of either case. */
static int same_word_any_case(const char *s, size_t n, const char *word)
{
    if (n != strlen(word))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
        if (c != word[i])
            return 0;
    }
    return 1;
}

/* WORD (N bytes) as a reason quotes it: cut to SHOWN_MAX bytes, "..." included, when longer. */
static const char *shown(const char *word, size_t n, char out[SHOWN_MAX + 1])
{
    if (n > SHOWN_MAX)
        snprintf(out, SHOWN_MAX + 1, "%.*s...", SHOWN_MAX - 3, word);
    else
        snprintf(out, SHOWN_MAX + 1, "%.*s", (int)n, word);
    return out;
}

int scaf_rules_parse(const char *text, size_t len, struct scaf_rules_line *out)
{
    const char *start[3] = {NULL, NULL, NULL};
    size_t n[3] = {0, 0, 0}, end;
    unsigned words = 0;
    char word[SHOWN_MAX + 1];

    out->file[0] = '\0';
    out->line = 0;
    out->verdict = 0;
    out->word[0] = out->pattern[0] = out->why[0] = '\0';
    out->kind = SCAF_RULES_BLANK;
    if (len > SCAF_RULES_LINE_MAX) {
        snprintf(out->why, sizeof out->why, "line longer than %d bytes", SCAF_RULES_LINE_MAX);
        out->kind = SCAF_RULES_MALFORMED;
        return out->kind;
    }
    /* A C string ends at a NUL; a comment at '#'. */
    end = strnlen(text, len);
    for (size_t i = 0; i < end; i++)
        if (text[i] == '#') {
            end = i;
            break;
        }
    for (size_t i = 0; i < end;) {
        size_t j;

        while (i < end && blank(text[i]))
            i++;
        if (i == end)
            break;
        for (j = i; j < end && !blank(text[j]); j++)
            ;
        if (words < 3) {
            start[words] = text + i;
            n[words] = j - i;
        }
        words++;
        i = j;
    }
    if (words == 0)
        return out->kind;
    if (!(n[0] == 9 && memcmp(start[0], "malleable", 9) == 0) && !(n[0] == 5 && memcmp(start[0], "fixed", 5) == 0)) {
        int lower = same_word_any_case(start[0], n[0], "malleable") || same_word_any_case(start[0], n[0], "fixed");

        snprintf(out->why, sizeof out->why, lower ? "'%s' must be lowercase: %s" : "'%s' is not 'malleable' or 'fixed': %s",
                 shown(start[0], n[0], word), WANT);
        out->kind = SCAF_RULES_MALFORMED;
        return out->kind;
    }
    if (words != 2) {
        if (words == 1)
            snprintf(out->why, sizeof out->why, "'%.*s' without a pattern: want '%.*s PATTERN'", (int)n[0], start[0],
                     (int)n[0], start[0]);
        else
            snprintf(out->why, sizeof out->why,
                     "more than one pattern (a pattern cannot contain spaces; write one rule per line, or use ? for "
                     "a space)");
        out->kind = SCAF_RULES_MALFORMED;
        return out->kind;
    }
    snprintf(out->word, sizeof out->word, "%.*s", (int)n[0], start[0]);
    memcpy(out->pattern, start[1], n[1]);
    out->pattern[n[1]] = '\0';
    out->verdict = n[0] == 5 ? SCAF_VERDICT_FIXED : SCAF_VERDICT_MALLEABLE;
    out->kind = SCAF_RULES_RULE;
    return out->kind;
}

/* The file as a whole cannot be read: one UNREADABLE line, then SKIPPED. */
static int skipped(struct scaf_rules_line *l, scaf_rules_visit_fn visit, void *ctx, const char *why, int err)
{
    l->line = 0;
    l->kind = SCAF_RULES_UNREADABLE;
    l->word[0] = l->pattern[0] = '\0';
    if (err)
        snprintf(l->why, sizeof l->why, "%s (%s): skipped", why, strerror(err));
    else
        snprintf(l->why, sizeof l->why, "%s", why);
    visit(l, ctx);
    return SCAF_RULES_SKIPPED;
}

int scaf_rules_read(const char *path, scaf_rules_visit_fn visit, void *ctx)
{
    struct scaf_rules_line line, *l = &line;
    char text[SCAF_RULES_LINE_MAX + 1];
    FILE *f = NULL;
    struct stat st;
    unsigned lineno = 0;
    int fd = -1, c = 0, rc;

    memset(l, 0, sizeof *l);
    snprintf(l->file, sizeof l->file, "%s", path);
    /* O_NONBLOCK: a FIFO named as a rules file must not hang the program at open; it is refused below. */
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        rc = errno == ENOENT || errno == ENOTDIR ? SCAF_RULES_ABSENT : skipped(l, visit, ctx, "cannot be read", errno);
        goto cleanup;
    }
    if (fstat(fd, &st) != 0) {
        rc = skipped(l, visit, ctx, "cannot be read", errno);
        goto cleanup;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = skipped(l, visit, ctx, "is a directory, not a rules file", 0);
        goto cleanup;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = skipped(l, visit, ctx, "is not a regular file: skipped", 0);
        goto cleanup;
    }
    f = fdopen(fd, "r");
    if (!f) {
        rc = skipped(l, visit, ctx, "cannot be read", errno);
        goto cleanup;
    }
    fd = -1;
    rc = SCAF_RULES_DONE;
    while (c != EOF) {
        size_t len = 0;

        /* Bytes past SCAF_RULES_LINE_MAX + 1 are counted out, not kept: the line is malformed by its length. */
        while ((c = getc(f)) != EOF && c != '\n')
            if (len <= SCAF_RULES_LINE_MAX)
                text[len++] = (char)c;
        if (c == EOF && (ferror(f) || len == 0))
            break;
        lineno++;
        if (scaf_rules_parse(text, len, l) == SCAF_RULES_BLANK)
            continue;
        snprintf(l->file, sizeof l->file, "%s", path);
        l->line = lineno;
        if (visit(l, ctx)) {
            rc = SCAF_RULES_STOPPED;
            break;
        }
    }
    if (rc == SCAF_RULES_DONE && ferror(f)) {
        snprintf(l->file, sizeof l->file, "%s", path);
        rc = skipped(l, visit, ctx, "cannot be read to its end", errno);
    }
cleanup:
    if (f)
        fclose(f);
    if (fd >= 0)
        close(fd);
    return rc;
}

int scaf_rules_match(const char *pattern, const char *exe)
{
    const char *slash = strrchr(exe, '/');

    return fnmatch(pattern, strchr(pattern, '/') ? exe : slash ? slash + 1 : exe, 0) == 0;
}

struct finding {
    const char *exe;
    struct scaf_rules_line *out;
    scaf_rules_visit_fn problem;
    void *ctx;
    int found;
};

static int find_visit(const struct scaf_rules_line *l, void *arg)
{
    struct finding *fi = arg;

    if (l->kind != SCAF_RULES_RULE) {
        if (fi->problem)
            fi->problem(l, fi->ctx);
        return 0;
    }
    if (!scaf_rules_match(l->pattern, fi->exe))
        return 0;
    *fi->out = *l;
    fi->found = 1;
    return 1;
}

int scaf_rules_find(const struct scaf_rules_env *env, const char *exe, struct scaf_rules_line *out,
                    scaf_rules_visit_fn problem, void *ctx)
{
    struct finding fi = {exe, out, problem, ctx, 0};
    char file[PATH_MAX];

    for (unsigned i = 0; !fi.found; i++) {
        int slot = scaf_rules_locate(env, i, file, sizeof file);

        if (slot == SCAF_RULES_SLOT_END || slot == SCAF_RULES_SLOT_UNREAD)
            break;
        if (slot == SCAF_RULES_SLOT_READ)
            scaf_rules_read(file, find_visit, &fi);
    }
    return fi.found;
}

int scaf_rules_find_self(const char *list, struct scaf_rules_line *out, scaf_rules_visit_fn problem, void *ctx)
{
    struct scaf_rules_env env;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

    if (n <= 0)
        return 0;
    exe[n] = 0;
    scaf_rules_env_of(environ, &env);
    env.list = list;
    return scaf_rules_find(&env, exe, out, problem, ctx);
}
