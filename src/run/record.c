/* record.c — reads a replay record of `scaf run` and checks everything it rests on, so that scaf-run starts the program exactly as the Python `scaf run` decided, or not at all. */
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scaf/progkey.h"

/* A record is a few kilobytes; one larger than this was not written by scaf. */
#define RECORD_MAX (1u << 20)
/* Counts in a record: more is damage, not a command. */
#define COUNT_MAX 65536u

/* replay.UNHASHED and UNHASHED_PREFIXES: what a shell or a batch system changes between identical commands. */
static const char *const unhashed[] = {"_", "OLDPWD", "PWD", "SHLVL"};
static const char *const unhashed_prefixes[] = {"SLURM_", "PBS_"};

static size_t name_len(const char *entry)
{
    const char *eq = strchr(entry, '=');

    return eq ? (size_t)(eq - entry) : strlen(entry);
}

static int hashed(const char *entry)
{
    size_t n = name_len(entry);

    for (size_t i = 0; i < sizeof unhashed / sizeof *unhashed; i++)
        if (strlen(unhashed[i]) == n && memcmp(entry, unhashed[i], n) == 0)
            return 0;
    for (size_t i = 0; i < sizeof unhashed_prefixes / sizeof *unhashed_prefixes; i++)
        if (n >= strlen(unhashed_prefixes[i]) && memcmp(entry, unhashed_prefixes[i], strlen(unhashed_prefixes[i])) == 0)
            return 0;
    return 1;
}

/* By name, bytewise, a name before every longer name it begins (Python's order of bytes). */
static int by_name(const void *a, const void *b)
{
    const unsigned char *x = *(const unsigned char *const *)a, *y = *(const unsigned char *const *)b;

    for (;; x++, y++) {
        int ex = *x == '=' || *x == 0, ey = *y == '=' || *y == 0;

        if (ex || ey)
            return ey - ex;
        if (*x != *y)
            return *x < *y ? -1 : 1;
    }
}

uint64_t scaf_run_record_env_hash(char *const *envp)
{
    size_t n = 0, k = 0;
    const char **sorted;
    uint64_t h = SCAF_FNV_OFFSET;

    while (envp && envp[n])
        n++;
    sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted)
        return 0; /* no record has hash 0 to within 2^-64: a miss */
    for (size_t i = 0; i < n; i++)
        if (strchr(envp[i], '=') && hashed(envp[i]))
            sorted[k++] = envp[i];
    qsort(sorted, k, sizeof *sorted, by_name);
    for (size_t i = 0; i < k; i++)
        h = scaf_progkey_fnv(h, sorted[i], strlen(sorted[i]) + 1);
    free(sorted);
    return h;
}

int scaf_run_record_path(int nargs, char *const *args, const char *cwd, char *buf, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    uint64_t h = SCAF_FNV_OFFSET;
    int n;

    for (int i = 0; i < nargs; i++)
        h = scaf_progkey_fnv(h, args[i], strlen(args[i]) + 1);
    h = scaf_progkey_fnv(h, "cwd", 4);
    h = scaf_progkey_fnv(h, cwd, strlen(cwd) + 1);
    if (xdg && xdg[0] == '/')
        n = snprintf(buf, len, "%s/scaf/%s/%016llx", xdg, SCAF_RUN_RECORD_FOLDER, (unsigned long long)h);
    else if (home && home[0] == '/')
        n = snprintf(buf, len, "%s/.cache/scaf/%s/%016llx", home, SCAF_RUN_RECORD_FOLDER, (unsigned long long)h);
    else
        return -1;
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* The record's words, one after the other. */
struct words {
    char *at, *end;
};

static const char *next(struct words *w)
{
    char *s = w->at, *nul;

    if (s >= w->end || !(nul = memchr(s, '\0', (size_t)(w->end - s))))
        return NULL;
    w->at = nul + 1;
    return s;
}

/* A count word, at most COUNT_MAX; -1 when it is not one. */
static long count_of(struct words *w)
{
    const char *s = next(w);
    char *end;
    unsigned long v;

    if (!s || !*s || *s == '-')
        return -1;
    errno = 0;
    v = strtoul(s, &end, 10);
    return errno || *end || v > COUNT_MAX ? -1 : (long)v;
}

/* N words into a new NULL-terminated array; NULL when the record ends first (or no memory). */
static const char **list_of(struct words *w, long n)
{
    const char **out = calloc((size_t)n + 1, sizeof *out);

    for (long i = 0; out && i < n; i++)
        if (!(out[i] = next(w))) {
            free(out);
            return NULL;
        }
    return out;
}

void scaf_run_record_stamp(const char *path, char *buf, size_t len)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        snprintf(buf, len, "-");
        return;
    }
    snprintf(buf, len, "%llu %llu %lld %lld %lld", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
             (long long)st.st_size, (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
             (long long)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec);
}

static int word_is(const char *w, const char *want)
{
    return w && strcmp(w, want) == 0;
}

void scaf_run_plan_free(struct scaf_run_plan *plan)
{
    free(plan->buf);
    free(plan->argv);
    free(plan->sets);
    free(plan->key_words);
    free(plan->steered);
    memset(plan, 0, sizeof *plan);
}

/* The file's bytes, if it is this user's alone; *status says why not. */
static char *read_record(const char *file, size_t *len, enum scaf_run_record_status *status)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    char *buf = NULL;
    size_t got = 0;

    if (fd < 0) {
        *status = errno == ELOOP ? SCAF_RUN_RECORD_UNSAFE : SCAF_RUN_RECORD_NONE;
        return NULL;
    }
    *status = SCAF_RUN_RECORD_UNSAFE;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
        goto out;
    *status = SCAF_RUN_RECORD_DAMAGED;
    if (st.st_size <= 0 || (unsigned long long)st.st_size > RECORD_MAX || !(buf = malloc((size_t)st.st_size)))
        goto out;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got != (size_t)st.st_size || buf[got - 1] != '\0') {
        free(buf);
        buf = NULL;
        goto out;
    }
    *len = got;
    *status = SCAF_RUN_RECORD_OK;
out:
    close(fd);
    return buf;
}

enum scaf_run_record_status scaf_run_record_load(const char *file, const char *home, int nargs, char *const *args,
                                                 const char *cwd, char *const *envp, unsigned cpus,
                                                 struct scaf_run_plan *plan)
{
    enum scaf_run_record_status status;
    struct words w;
    size_t len = 0;
    long n;
    char now[128], hash[32];
    const char *s;

    memset(plan, 0, sizeof *plan);
    plan->buf = read_record(file, &len, &status);
    if (!plan->buf)
        return status;
    w = (struct words){plan->buf, plan->buf + len};
    status = SCAF_RUN_RECORD_DAMAGED;
    if (!word_is(next(&w), SCAF_RUN_RECORD_MAGIC))
        goto fail;
    if (!(s = next(&w)) || strcmp(s, home) != 0) {
        status = s ? SCAF_RUN_RECORD_STALE : SCAF_RUN_RECORD_DAMAGED;
        goto fail;
    }
    if ((n = count_of(&w)) < 0)
        goto fail;
    /* Two commands whose words hash alike: another command's record. */
    if (n != nargs) {
        status = SCAF_RUN_RECORD_STALE;
        goto fail;
    }
    for (long i = 0; i < n; i++)
        if (!(s = next(&w)) || strcmp(s, args[i]) != 0) {
            status = s ? SCAF_RUN_RECORD_STALE : SCAF_RUN_RECORD_DAMAGED;
            goto fail;
        }
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)scaf_run_record_env_hash(envp));
    snprintf(now, sizeof now, "%u", cpus);
    if (!(s = next(&w)) || strcmp(s, cwd) != 0 || !(s = next(&w)) || strcmp(s, hash) != 0 ||
        !(s = next(&w)) || strcmp(s, now) != 0) {
        status = s ? SCAF_RUN_RECORD_STALE : SCAF_RUN_RECORD_DAMAGED;
        goto fail;
    }
    if ((n = count_of(&w)) < 0)
        goto fail;
    for (long i = 0; i < n; i++) {
        const char *path = next(&w), *was = next(&w);

        if (!path || !was)
            goto fail;
        scaf_run_record_stamp(path, now, sizeof now);
        if (strcmp(now, was) != 0) {
            status = SCAF_RUN_RECORD_STALE;
            goto fail;
        }
    }
    if (!(plan->path = next(&w)) || (n = count_of(&w)) < 1 || !(plan->argv = list_of(&w, n)))
        goto fail;
    if ((n = count_of(&w)) < 0 || !(plan->sets = list_of(&w, 2 * n)))
        goto fail;
    plan->nsets = (int)n;
    plan->daemon = next(&w);
    plan->sock = next(&w);
    if (!(word_is(plan->daemon, "own") || word_is(plan->daemon, "shared") || word_is(plan->daemon, "none")) ||
        !plan->sock)
        goto fail;
    s = next(&w);
    plan->ask = word_is(s, "1");
    if (!plan->ask && !word_is(s, "0"))
        goto fail;
    s = next(&w);
    plan->fixed = word_is(s, "1");
    if (!plan->fixed && !word_is(s, "0"))
        goto fail;
    s = next(&w);
    plan->malleable = word_is(s, "1");
    if (!plan->malleable && !word_is(s, "0"))
        goto fail;
    s = next(&w);
    plan->user_count = word_is(s, "1");
    if (!plan->user_count && !word_is(s, "0"))
        goto fail;
    if (!(plan->key_exe = next(&w)) || (n = count_of(&w)) < 0 || !(plan->key_words = list_of(&w, n)))
        goto fail;
    plan->nkey = (int)n;
    if ((n = count_of(&w)) < 0 || !(plan->steered = list_of(&w, n)))
        goto fail;
    plan->nsteered = (int)n;
    if (!word_is(next(&w), "end") || w.at != w.end)
        goto fail;
    return SCAF_RUN_RECORD_OK;
fail:
    scaf_run_plan_free(plan);
    return status;
}
